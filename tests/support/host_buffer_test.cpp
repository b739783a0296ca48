// Host buffers: page-aligned, zeroed, bounds-checked fenced copies.
#include <gtest/gtest.h>

#include <numeric>

#include "support/host_buffer.hpp"
#include "support/error.hpp"

namespace tessera {
namespace {

TEST(HostBuffer, StartsZeroedAndPageAligned) {
  HostBuffer buffer(10000);
  EXPECT_EQ(buffer.size(), 10000u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.device_memory().address) % 4096, 0u);
  std::vector<std::uint8_t> bytes(10000, 1);
  buffer.copy_out(0, bytes);
  EXPECT_EQ(std::count(bytes.begin(), bytes.end(), 0), 10000);
}

TEST(HostBuffer, CopiesInAndOutAndFills) {
  HostBuffer buffer(4096);
  std::vector<std::uint8_t> in(100);
  std::iota(in.begin(), in.end(), 0);
  buffer.copy_in(3996, in);
  buffer.fill(0, 4, 0xA5);
  std::vector<std::uint8_t> out(100);
  buffer.copy_out(3996, out);
  EXPECT_EQ(out, in);
  std::vector<std::uint8_t> head(5);
  buffer.copy_out(0, head);
  EXPECT_EQ(head, (std::vector<std::uint8_t>{0xA5, 0xA5, 0xA5, 0xA5, 0}));
}

TEST(HostBuffer, RefusesRangesOutsideItsBytes) {
  HostBuffer buffer(4096);
  std::vector<std::uint8_t> bytes(8);
  EXPECT_THROW(buffer.copy_in(4090, bytes), UsageError);
  EXPECT_THROW(buffer.copy_out(~std::size_t{0} - 2, bytes), UsageError);
  EXPECT_THROW(buffer.fill(4096, 1, 0), UsageError);
  buffer.fill(4096, 0, 0);  // empty at the end is fine
}

TEST(HostBuffer, MovesOwnership) {
  HostBuffer a(4096);
  a.fill(0, 1, 7);
  HostBuffer b = std::move(a);
  std::vector<std::uint8_t> byte(1);
  b.copy_out(0, byte);
  EXPECT_EQ(byte[0], 7);
}

}  // namespace
}  // namespace tessera
