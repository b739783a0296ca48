// Tile::in_code against a brute-force oracle: the tile keeps its executable
// segments sorted and merged (touching and overlapping ones become one
// range) and answers by binary search; the oracle asks every segment as
// loaded. Segments overlap, touch, nest and are empty; spans straddle their
// edges.
#include "sim/tile.hpp"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "kernels/registry.hpp"
#include "target/memory_map.hpp"

namespace tessera::sim {
namespace {

// A 16 KiB window in SRAM, so that random segments and spans meet often.
constexpr std::uint32_t kWindow = 0x50000;
constexpr std::uint32_t kWindowBytes = 0x4000;

bool oracle(const std::vector<target::AddressRange>& segments, std::uint32_t address,
            std::uint32_t size) {
  const target::AddressRange touched{address, address + size};
  for (const auto& segment : segments) {
    if (segment.overlaps(touched)) return true;
  }
  return false;
}

RC_GTEST_PROP(CodeRanges, InCodeMatchesEverySegmentAsked, ()) {
  const SimOptions options;
  Tile tile(target::PhysicalTile(0), options, kernels::KernelRegistry::standard());
  tile.reset();
  std::vector<target::AddressRange> segments;
  const auto count = *rc::gen::inRange<std::size_t>(0, 40);
  for (std::size_t i = 0; i < count; ++i) {
    // Word-aligned starts and sizes from 0 (an empty segment) to 1 KiB, so
    // that segments touch as well as overlap.
    const std::uint32_t begin = kWindow + 4 * *rc::gen::inRange<std::uint32_t>(0, kWindowBytes / 4);
    const std::uint32_t size = 4 * *rc::gen::inRange<std::uint32_t>(0, 257);
    const std::uint32_t end = std::min(begin + size, kWindow + kWindowBytes);
    const std::vector<std::uint8_t> bytes(end - begin, 0);
    // A data segment between them changes nothing.
    const bool executable = *rc::gen::inRange(0, 4) != 0;
    tile.load_segment(begin, bytes, executable);
    if (executable) segments.push_back({begin, end});
  }
  for (int probe = 0; probe < 200; ++probe) {
    const std::uint32_t address =
        kWindow - 64 + *rc::gen::inRange<std::uint32_t>(0, kWindowBytes + 128);
    const std::uint32_t size = *rc::gen::inRange<std::uint32_t>(0, 600);
    RC_ASSERT(tile.in_code(address, size) == oracle(segments, address, size));
  }
}

TEST(CodeRanges, TouchingSegmentsMergeWithoutSwallowingTheGapsAround) {
  const SimOptions options;
  Tile tile(target::PhysicalTile(0), options, kernels::KernelRegistry::standard());
  tile.reset();
  const std::vector<std::uint8_t> bytes(0x100, 0);
  tile.load_segment(0x50100, bytes, true);  // [0x50100, 0x50200)
  tile.load_segment(0x50300, bytes, true);  // [0x50300, 0x50400)
  tile.load_segment(0x50200, bytes, true);  // fills the gap: one range [0x50100, 0x50400)
  tile.load_segment(0x50500, {}, true);     // empty: overlaps nothing
  EXPECT_FALSE(tile.in_code(0x500FC, 4));
  EXPECT_TRUE(tile.in_code(0x500FC, 5));
  EXPECT_TRUE(tile.in_code(0x501FC, 8));
  EXPECT_TRUE(tile.in_code(0x503FC, 4));
  EXPECT_FALSE(tile.in_code(0x50400, 0x100));
  EXPECT_FALSE(tile.in_code(0x50500, 4));
  EXPECT_FALSE(tile.in_code(0x50200, 0));  // an empty span touches nothing
}

}  // namespace
}  // namespace tessera::sim
