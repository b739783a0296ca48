// The loader (driver-host-protocol.md §3) against the fake device: frame
// bytes, autoloader words, the exchange-buffer guard and the GS1 handshakes.

#include <gtest/gtest.h>

#include <algorithm>

#include "driver/bootloader.hpp"
#include "driver/device.hpp"
#include "driver/errors.hpp"
#include "driver/ioctl.hpp"
#include "driver/loader.hpp"
#include "driver/registers.hpp"
#include "support/little_endian.hpp"
#include "tests/driver/elf_builder.hpp"
#include "tests/driver/fake_device.hpp"

namespace tessera::driver {
namespace {

using target::PhysicalTile;
using testing::FakeDevice;

Timeouts fast_timeouts() {
  Timeouts t;
  t.hsp = std::chrono::milliseconds(30);
  t.autoloader = std::chrono::milliseconds(30);
  t.tdi = std::chrono::milliseconds(30);
  t.hsp_poll = std::chrono::microseconds(10);
  t.autoloader_poll = std::chrono::microseconds(10);
  return t;
}

std::vector<std::uint8_t> image_for(std::uint16_t tile, std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(tile * 31 + i);
  return bytes;
}

std::vector<TileLoadImage> images(std::uint16_t first, std::size_t count, std::size_t size) {
  std::vector<TileLoadImage> out;
  // Given in reverse: the loader sorts by physical tile.
  for (std::size_t i = count; i-- > 0;) {
    const auto tile = static_cast<std::uint16_t>(first + i);
    out.push_back({PhysicalTile(tile), image_for(tile, size + i)});
  }
  return out;
}

TEST(Frames, HeaderPayloadAndTrailerAreTheReferenceFormat) {
  // §3.4; a 100-byte image is padded to 0x4134 bytes = 17 frames (§3.3).
  const auto image = image_for(9, 100);
  const auto framed = frame_tile(PhysicalTile(1234), image);
  ASSERT_EQ(framed.size(), 17u * 1024);
  for (std::uint32_t f = 0; f < 17; ++f) {
    SCOPED_TRACE(f);
    const std::uint8_t* frame = framed.data() + f * 1024;
    EXPECT_EQ(load_u32_le(frame), f);
    EXPECT_EQ(load_u32_le(frame + 4), 1234u);
    EXPECT_EQ(load_u32_le(frame + 8), f == 16 ? 0x08000000u : 0u);
    EXPECT_EQ(load_u32_le(frame + 12), 0u);
    EXPECT_TRUE(std::all_of(frame + 1008, frame + 1024, [](std::uint8_t b) { return b == 0xFF; }));
  }
  EXPECT_TRUE(std::equal(image.begin(), image.end(), framed.begin() + 16));
  EXPECT_TRUE(std::all_of(framed.begin() + 16 + 100, framed.begin() + 1008,
                          [](std::uint8_t b) { return b == 0; }));
}

TEST(Frames, CountsAtTheLimits) {
  // Rows: image bytes → frames (§3.3: ≥ 0x4134 B = 17 frames; ≤ 643 frames).
  const struct {
    std::size_t bytes;
    std::uint32_t frames;
  } kRows[] = {{0, 17}, {1, 17}, {0x4134, 17}, {17 * 992, 17}, {17 * 992 + 1, 18},
               {643 * 992, 643}};
  for (const auto& row : kRows) {
    EXPECT_EQ(frame_count(row.bytes, PhysicalTile(0)), row.frames) << row.bytes;
  }
  EXPECT_EQ(0x4C010u + 643 * 992, 0xE7BB0u);
  try {
    frame_count(643 * 992 + 1, PhysicalTile(77));
    FAIL();
  } catch (const ImageError& error) {
    EXPECT_STREQ(error.what(),
                 "tiles[p77]: a 637857-byte image needs 644 loader frames; at most 643 fit below "
                 "0xe7bb0");
  }
}

TEST(Autoloader, WordsAreTheReferenceFormulas) {
  // §3.2: zone 32<<20, kib, lp = (len/4 − 1) & 0x3F.
  const struct {
    std::size_t bytes;
    unsigned tiles;
    AutoloaderWords words;
  } kRows[] = {
      {4096, 1472, {0x02001000, 0x0010013F, 0x0209C004, 0x000B7F3F}},
      {3072, 64, {0x02000C00, 0x0010013F, 0x0209C003, 0x00007F3F}},
      {1024, 1, {0x02000400, 0x0010013F, 0x0209C001, 0x0000013F}},
  };
  for (const auto& row : kRows) {
    SCOPED_TRACE(row.bytes);
    const AutoloaderWords words = autoloader_words(row.bytes, row.tiles);
    EXPECT_EQ(words.stage_target, row.words.stage_target);
    EXPECT_EQ(words.stage_csr, row.words.stage_csr);
    EXPECT_EQ(words.install_target, row.words.install_target);
    EXPECT_EQ(words.install_csr, row.words.install_csr);
  }
}

class LoaderTest : public ::testing::Test {
 protected:
  FakeDevice fake;
  Device device = Device::open(fake, FakeDevice::kDefaultPath, fast_timeouts());
  Bootloader bootloader = parse_bootloader_elf(testing::bootloader_elf(3000));
};

TEST_F(LoaderTest, InstallsTheBootloaderThroughTheAutoloader) {
  fake.clear_records();
  install_bootloader(device, bootloader, 64);
  // CSR = 0; 768 data words with a CSR read-back after every 32; target; GO.
  std::vector<FakeDevice::Access> expected{{true, reg::kAutoloadCsr, 0}};
  for (std::size_t i = 0; i < 768; ++i) {
    expected.push_back({true, reg::kAutoloadData, load_u32_le(bootloader.image.data() + 4 * i)});
    if (i % 32 == 31) expected.push_back({false, reg::kAutoloadCsr, 0});
  }
  const auto prefix = std::vector<FakeDevice::Access>(
      fake.accesses().begin(),
      fake.accesses().begin() + static_cast<std::ptrdiff_t>(std::min(expected.size(), fake.accesses().size())));
  EXPECT_EQ(prefix, expected);
  EXPECT_EQ(fake.writes_to(reg::kAutoloadTarget),
            (std::vector<std::uint32_t>{0x02000C00, 0x0209C003}));
  EXPECT_EQ(fake.writes_to(reg::kAutoloadCsr),
            (std::vector<std::uint32_t>{0, 0x0010013F, 0x00007F3F}));
  EXPECT_EQ(fake.staged_bootloader(), bootloader.image);
  EXPECT_EQ(fake.installed_tiles(), 64u);
  EXPECT_TRUE(fake.violations().empty());
}

TEST_F(LoaderTest, AnAutoloaderThatStaysBusyTimesOut) {
  fake.autoloader_busy_reads = 1'000'000'000;
  try {
    install_bootloader(device, bootloader, 64);
    FAIL();
  } catch (const DeviceTimeout& error) {
    EXPECT_STREQ(error.what(),
                 "/dev/fake-ipu0: autoloader staging the bootloader: AUTOLD_CSR (0x2068) still "
                 "has GO set (0x10013f) after 30 ms");
  }
}

TEST_F(LoaderTest, TwoBatchesSentinelAndFinalMark) {
  const auto tiles = images(0, 128, 5000);
  fake.clear_records();
  {
    Loader loader(device);
    loader.load(bootloader, tiles);
    EXPECT_TRUE(fake.violations().empty()) << fake.violations().front();
    EXPECT_EQ(fake.batches_loaded(), 2u);
    EXPECT_TRUE(fake.sentinel_seen());
    EXPECT_FALSE(fake.started());
    // The transport stays attached as buffer 0 until the final mark.
    ASSERT_EQ(fake.attached().count(0), 1u);
    EXPECT_EQ(fake.attached().at(0).size, kTransportSize);
    loader.start(0);
  }
  EXPECT_TRUE(fake.started());
  EXPECT_EQ(fake.final_mark(), 2u);  // count / 64
  EXPECT_TRUE(fake.attached().empty());
  // GS1: one credit per batch, the sentinel's, then the final mark.
  EXPECT_EQ(fake.writes_to(reg::kHspGs1), (std::vector<std::uint32_t>{1, 1, 1, 2}));
  // Every tile's payload is in SRAM from 0x4C010, padded with zeros.
  for (const auto& tile : tiles) {
    SCOPED_TRACE(tile.tile.value);
    EXPECT_EQ(fake.sram(tile.tile.value, 0x4C010, tile.image.size()), tile.image);
    EXPECT_EQ(fake.frames_loaded(tile.tile.value), 17u);
    EXPECT_EQ(fake.context_state(tile.tile.value, 0), 0u);  // the empty script halts
  }
  // EXCHANGE_WINDOW_BASE = HEXOPT is written before the transport is attached.
  EXPECT_EQ(fake.writes_to(reg::kExchangeWindowBase), (std::vector<std::uint32_t>{0x800}));
}

TEST_F(LoaderTest, TheExchangeGuardRunsWithPrimaryId0AndSecondaryId63) {
  device.write_config(reg::kCcsr, 0x406);  // NO_SNOOP and ECRC set, plus bit 2
  fake.clear_records();
  Loader loader(device);
  loader.load(bootloader, images(0, 64, 100));
  // §3.5: all 16 DCXCRs to control(63), CCSR cleared and read back, 0–7 back to ID 0.
  for (unsigned i = 0; i < 16; ++i) {
    SCOPED_TRACE(i);
    const auto writes = fake.writes_to(reg::xb_dcxcr(i));
    ASSERT_FALSE(writes.empty());
    EXPECT_EQ(writes.front(), 0x7FFFFFAu);
    EXPECT_EQ(fake.register_value(reg::xb_dcxcr(i)), i < 8 ? 0x2u : 0x7FFFFFAu);
  }
  EXPECT_EQ(fake.writes_to(reg::kCcsr), (std::vector<std::uint32_t>{0x4}));
  loader.start(23);
  EXPECT_EQ(fake.final_mark(), 23u);
  // Restored: control(0) for 0–7, control(1) for 8–15, and the saved CCSR.
  for (unsigned i = 0; i < 16; ++i) {
    EXPECT_EQ(fake.register_value(reg::xb_dcxcr(i)), i < 8 ? 0x2u : 0x20820Au) << i;
  }
  EXPECT_EQ(fake.register_value(reg::kCcsr), 0x406u);
  // The DCXCR offsets of §2.2.
  EXPECT_EQ(reg::xb_dcxcr(0), 0x5404u);
  EXPECT_EQ(reg::xb_dcxcr(7), 0x7004u);
  EXPECT_EQ(reg::xb_dcxcr(8), 0x1B804u);
  EXPECT_EQ(reg::xb_dcxcr(15), 0x1D404u);
}

TEST_F(LoaderTest, TileCountsMustBeWholeBatches) {
  fake.clear_records();
  Loader loader(device);
  for (const std::size_t count : {std::size_t{0}, std::size_t{63}, std::size_t{65}}) {
    EXPECT_THROW(loader.load(bootloader, images(0, count, 10)), ImageError) << count;
  }
  auto duplicate = images(0, 64, 10);
  duplicate[5].tile = duplicate[6].tile;
  EXPECT_THROW(loader.load(bootloader, duplicate), ImageError);
  EXPECT_TRUE(fake.accesses().empty());  // refused before touching the device
}

TEST_F(LoaderTest, AStalledBatchTimesOutAndCleansUp) {
  fake.hsp_latency_reads = 1'000'000'000;
  device.write_config(reg::kCcsr, 0x402);
  Loader loader(device);
  try {
    loader.load(bootloader, images(64, 64, 10));
    FAIL();
  } catch (const DeviceTimeout& error) {
    EXPECT_STREQ(error.what(),
                 "/dev/fake-ipu0: bootloader batch 0 (tiles p64..p127): HSP GS1 (0x302c) still "
                 "reads 1 after 30 ms (expected 0)");
  }
  EXPECT_FALSE(loader.loaded());
  EXPECT_TRUE(fake.attached().empty());
  EXPECT_EQ(fake.register_value(reg::kCcsr), 0x402u);
  EXPECT_THROW(loader.start(0), UsageError);
}

TEST_F(LoaderTest, TheFakeBootloaderStallsOnABadFrame) {
  // The fake's frame checks are what the loader tests rely on; show they bite.
  install_bootloader(device, bootloader, 64);
  HostBuffer transport(kTransportSize);
  std::size_t cursor = kDescriptorAreaBytes;
  for (std::uint16_t slot = 0; slot < 64; ++slot) {
    auto frames = frame_tile(PhysicalTile(slot), image_for(slot, 10));
    if (slot == 9) frames[3 * 1024 + 1020] = 0xFE;  // frame 3's trailer
    std::uint8_t descriptor[8];
    store_u32_le(static_cast<std::uint32_t>(cursor), descriptor);
    store_u32_le(static_cast<std::uint32_t>(frames.size() / 1024), descriptor + 4);
    transport.copy_in(slot * 8u, descriptor);
    transport.copy_in(cursor, frames);
    cursor += frames.size();
  }
  device.attach_buffer(kTransportBufferIndex, transport.device_memory().address, kTransportSize);
  device.write_mark(reg::kHspGs1, 1);
  EXPECT_FALSE(device.poll_mark_zero(reg::kHspGs1, std::chrono::milliseconds(5)));
  EXPECT_EQ(fake.violations(),
            (std::vector<std::string>{"slot 9 frame 3: trailer is not 16 bytes of 0xFF"}));
  EXPECT_EQ(fake.batches_loaded(), 0u);
  device.detach_buffer(kTransportBufferIndex);
}

}  // namespace
}  // namespace tessera::driver
