// TileSram against a byte-per-byte oracle: contents, the poison of bytes
// never written, and which bytes were written, across page and 64-byte
// boundaries.
#include "sim/sram.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace tessera::sim {
namespace {

constexpr std::uint32_t kPage = TileSram::kPageBytes;
// A window of three pages in the middle of SRAM.
constexpr std::uint32_t kWindow = 0x60000 - kPage;
constexpr std::uint32_t kWindowBytes = 3 * kPage;

// Bytes, written flags, and the poison for the rest: what TileSram promises.
struct Oracle {
  std::uint32_t poison;
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(kWindowBytes);
  std::vector<bool> written = std::vector<bool>(kWindowBytes, false);

  void write(std::uint32_t address, const std::vector<std::uint8_t>& data) {
    for (std::size_t i = 0; i < data.size(); ++i) {
      bytes[address - kWindow + i] = data[i];
      written[address - kWindow + i] = true;
    }
  }
  std::uint8_t read(std::uint32_t address) const {
    const std::uint32_t i = address - kWindow;
    return written[i] ? bytes[i] : static_cast<std::uint8_t>(poison >> (8 * (address % 4)));
  }
  bool initialized(std::uint32_t address, std::uint32_t size) const {
    for (std::uint32_t i = 0; i < size; ++i) {
      if (!written[address - kWindow + i]) return false;
    }
    return true;
  }
};

TEST(TileSram, UnwrittenMemoryReadsAsThePoisonAndIsNotInitialized) {
  TileSram sram(0x11223344);
  bool initialized = true;
  EXPECT_EQ(sram.read_u32(0x60000, &initialized), 0x11223344u);
  EXPECT_FALSE(initialized);
  sram.write_u32(0x60008, 0xCAFEF00D);  // the page now exists
  EXPECT_EQ(sram.read_u32(0x60004, &initialized), 0x11223344u);
  EXPECT_FALSE(initialized);
  EXPECT_EQ(sram.read_u32(0x60008, &initialized), 0xCAFEF00Du);
  EXPECT_TRUE(initialized);
  EXPECT_FALSE(sram.initialized(0x60006, 4));
  EXPECT_TRUE(sram.initialized(0x60008, 4));
  EXPECT_EQ(sram.touched_bytes(), kPage);
}

RC_GTEST_PROP(TileSramProperties, MatchesAByteOracle, ()) {
  const auto poison = *rc::gen::arbitrary<std::uint32_t>();
  TileSram sram(poison);
  Oracle oracle{poison};
  const auto writes = *rc::gen::inRange<int>(0, 12);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;  // every write's, initialized
  for (int w = 0; w < writes; ++w) {
    const int kind = *rc::gen::inRange(0, 3);
    if (kind == 2) {
      // A kernel model's span: bytes in place, then marked written.
      const std::uint32_t offset = *rc::gen::inRange<std::uint32_t>(0, kWindowBytes);
      const std::uint32_t size =
          *rc::gen::inRange<std::uint32_t>(0, std::min(300u, kWindowBytes - offset) + 1);
      const auto data =
          *rc::gen::container<std::vector<std::uint8_t>>(size, rc::gen::arbitrary<std::uint8_t>());
      const auto span = sram.bytes(kWindow + offset, size);
      RC_ASSERT(span.size() == size);
      // Bytes never written read as the poison through the span, too.
      for (std::uint32_t i = 0; i < size; ++i)
        RC_ASSERT(span[i] == oracle.read(kWindow + offset + i));
      std::copy(data.begin(), data.end(), span.begin());
      sram.mark_written(kWindow + offset, size);
      oracle.write(kWindow + offset, data);
      ranges.emplace_back(kWindow + offset, size);
    } else if (kind == 1) {
      const std::uint32_t address =
          kWindow + 4 * *rc::gen::inRange<std::uint32_t>(0, kWindowBytes / 4);
      const auto value = *rc::gen::arbitrary<std::uint32_t>();
      sram.write_u32(address, value);
      std::vector<std::uint8_t> data(4);
      std::memcpy(data.data(), &value, 4);
      oracle.write(address, data);
      ranges.emplace_back(address, 4);
    } else {
      const std::uint32_t offset = *rc::gen::inRange<std::uint32_t>(0, kWindowBytes);
      const std::uint32_t limit = *rc::gen::arbitrary<bool>() ? 200 : kWindowBytes;
      const std::uint32_t size =
          *rc::gen::inRange<std::uint32_t>(0, std::min(limit, kWindowBytes - offset) + 1);
      const auto data =
          *rc::gen::container<std::vector<std::uint8_t>>(size, rc::gen::arbitrary<std::uint8_t>());
      sram.write(kWindow + offset, data);
      oracle.write(kWindow + offset, data);
      ranges.emplace_back(kWindow + offset, size);
    }
  }
  for (const auto& [address, size] : ranges) RC_ASSERT(sram.initialized(address, size));
  std::vector<std::uint8_t> bytes(kWindowBytes);
  sram.read(kWindow, bytes);
  for (std::uint32_t i = 0; i < kWindowBytes; ++i) RC_ASSERT(bytes[i] == oracle.read(kWindow + i));
  for (std::uint32_t address = kWindow; address < kWindow + kWindowBytes; address += 4) {
    bool initialized = false;
    const std::uint32_t value = sram.read_u32(address, &initialized);
    std::uint32_t expected = 0;
    for (std::uint32_t k = 0; k < 4; ++k)
      expected |= std::uint32_t{oracle.read(address + k)} << (8 * k);
    RC_ASSERT(value == expected);
    RC_ASSERT(initialized == oracle.initialized(address, 4));
  }
  for (int check = 0; check < 20; ++check) {
    const std::uint32_t offset = *rc::gen::inRange<std::uint32_t>(0, kWindowBytes);
    const std::uint32_t size = *rc::gen::inRange<std::uint32_t>(0, kWindowBytes - offset + 1);
    RC_ASSERT(sram.initialized(kWindow + offset, size) ==
              oracle.initialized(kWindow + offset, size));
  }
}

}  // namespace
}  // namespace tessera::sim

namespace tessera::sim {
namespace {

// The written summary (one bit per 512-byte block) only shortcuts the
// bitmap: a block written word by word, or span by span, answers the same.
TEST(TileSram, BlocksWrittenPieceByPieceAreInitialized) {
  TileSram sram;
  constexpr std::uint32_t kBlock = 0x60000;  // 512-byte aligned
  for (std::uint32_t at = kBlock; at < kBlock + 512; at += 4) {
    EXPECT_FALSE(sram.initialized(kBlock, 512));
    sram.write_u32(at, at);
  }
  EXPECT_TRUE(sram.initialized(kBlock, 512));
  EXPECT_TRUE(sram.initialized(kBlock + 100, 7));
  EXPECT_FALSE(sram.initialized(kBlock, 513));
  EXPECT_FALSE(sram.initialized(kBlock - 1, 2));
  // Spans: three pieces that together complete the next two blocks.
  const std::uint32_t next = kBlock + 512;
  (void)sram.bytes(next, 1024);
  sram.mark_written(next + 300, 724);
  EXPECT_FALSE(sram.initialized(next, 1024));
  EXPECT_TRUE(sram.initialized(next + 300, 724));
  sram.mark_written(next, 1);
  sram.mark_written(next + 1, 299);
  EXPECT_TRUE(sram.initialized(kBlock, 1536));
  EXPECT_FALSE(sram.initialized(kBlock, 1537));
  sram.mark_written(next, 1024);  // again: nothing changes
  EXPECT_TRUE(sram.initialized(kBlock, 1536));
  sram.clear();
  EXPECT_FALSE(sram.initialized(kBlock + 100, 7));
}

TEST(TileSram, ClearForgetsEverything) {
  TileSram sram(0xA5A5A5A5);
  const std::vector<std::uint8_t> data(10000, 7);
  sram.write(0x60000, data);
  EXPECT_GT(sram.touched_bytes(), 0u);
  sram.clear();
  EXPECT_EQ(sram.touched_bytes(), 0u);
  EXPECT_FALSE(sram.initialized(0x60000, 1));
  EXPECT_EQ(sram.read_u32(0x60000), 0xA5A5A5A5u);
  EXPECT_EQ(sram.bytes(0x60004, 4)[0], 0xA5) << "a materialised page holds the poison again";
  sram.write_u32(0x60000, 1);
  EXPECT_TRUE(sram.initialized(0x60000, 4));
  EXPECT_FALSE(sram.initialized(0x60000, 5));
}

TEST(TileSramWords, AnUnalignedWordAcrossAPageBoundaryStaysInBounds) {
  // Word accesses are meant to be aligned; an unaligned one across a page
  // boundary must split, never run past the page's buffer.
  TileSram sram;
  const std::uint32_t boundary = target::kSramBase + TileSram::kPageBytes;
  sram.write_u32(boundary - 2, 0xAABBCCDD);
  EXPECT_EQ(sram.read_u32(boundary - 2), 0xAABBCCDDu);
  EXPECT_EQ(sram.read_u32(boundary) & 0xFFFFu, 0xAABBu);
  bool initialized = false;
  (void)sram.read_u32(boundary - 2, &initialized);
  EXPECT_TRUE(initialized);
}

}  // namespace
}  // namespace tessera::sim
