// The .ipucfg parser on the real capture and on corrupted copies, and its
// replay against the fake device (driver-host-protocol.md §2.3).

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "driver/device.hpp"
#include "driver/errors.hpp"
#include "driver/ipucfg.hpp"
#include "driver/registers.hpp"
#include "support/little_endian.hpp"
#include "tests/driver/fake_device.hpp"

namespace tessera::driver {
namespace {

using testing::FakeDevice;

const char* const kCapture = TESSERA_DRIVER_TEST_DATA "/c600-init.ipucfg";

std::vector<std::uint8_t> capture_bytes() {
  std::ifstream in(kCapture, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Ipucfg, RealCaptureHasTheReferenceShape) {
  // §2.3: 16,036 B, 2,003 entries, 1,682 distinct offsets.
  const auto bytes = capture_bytes();
  ASSERT_EQ(bytes.size(), 16036u);
  const auto writes = read_ipucfg(kCapture);
  ASSERT_EQ(writes.size(), 2003u);
  std::set<std::uint32_t> distinct;
  for (const auto& w : writes) distinct.insert(w.offset);
  EXPECT_EQ(distinct.size(), 1682u);
  EXPECT_EQ(std::count_if(writes.begin(), writes.end(),
                          [](const ConfigWrite& w) { return w.offset < 0x30000; }),
            531);
  // 1,472 writes of 0x40000000 (DBG_RBRK.ATOV) to TDI reg 1 of every tile,
  // at 0x30004 + 0x40·t, between indices 528 and 2002 (in the capture's order,
  // interleaved with a few control writes).
  std::set<std::uint32_t> tdi_tiles;
  std::size_t first_tdi = writes.size(), last_tdi = 0;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].offset < 0x30000) continue;
    ASSERT_EQ((writes[i].offset - 0x30004) % 0x40, 0u) << i;
    EXPECT_EQ(writes[i].value, 0x40000000u) << i;
    tdi_tiles.insert((writes[i].offset - 0x30004) / 0x40);
    first_tdi = std::min(first_tdi, i);
    last_tdi = i;
  }
  EXPECT_EQ(tdi_tiles.size(), 1472u);
  EXPECT_EQ(*tdi_tiles.rbegin(), 1471u);
  EXPECT_EQ(first_tdi, 528u);
  EXPECT_EQ(last_tdi, 2002u);
  // The 8 HSP entries and the last four's values.
  std::vector<std::size_t> hsp;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].offset == reg::kHspGs1 || writes[i].offset == reg::kHspGs2) hsp.push_back(i);
  }
  EXPECT_EQ(hsp, (std::vector<std::size_t>{28, 29, 50, 51, 523, 524, 525, 526}));
  EXPECT_EQ(writes[523], (ConfigWrite{reg::kHspGs1, 0}));
  EXPECT_EQ(writes[524], (ConfigWrite{reg::kHspGs2, 0}));
  EXPECT_EQ(writes[525], (ConfigWrite{reg::kHspGs2, 1}));
  EXPECT_EQ(writes[526], (ConfigWrite{reg::kHspGs1, 1}));
}

TEST(Ipucfg, RealCaptureSampleValues) {
  // §2.3 "Other sample values" and the XB / four-register blocks.
  const auto writes = read_ipucfg(kCapture);
  const auto values_of = [&](std::uint32_t offset) {
    std::vector<std::uint32_t> values;
    for (const auto& w : writes) {
      if (w.offset == offset) values.push_back(w.value);
    }
    return values;
  };
  EXPECT_EQ(values_of(reg::kCcsr), (std::vector<std::uint32_t>{0, 0, 4, 4}));
  const struct {
    std::uint32_t offset, value;
  } kLast[] = {{0x2004, 0x8C},        {0x2010, 0x1444},     {0x403C, 0x212503D},
               {0x4018, 0xC00001BD},  {0x1B400, 0x400001B2}, {0xEC0C, 0x55003},
               {0xEC08, 0x108C2},     {0xEC04, 0x108C2},    {0xEC00, 1},
               {0x5404, 0x7FFFFFA},   {0x1B804, 0x7FFFFFA}};
  for (const auto& row : kLast) {
    SCOPED_TRACE(row.offset);
    const auto values = values_of(row.offset);
    ASSERT_FALSE(values.empty());
    EXPECT_EQ(values.back(), row.value);
  }
}

std::vector<std::uint8_t> corrupt_count(std::uint32_t count) {
  auto bytes = capture_bytes();
  store_u32_le(count, bytes.data() + 8);
  return bytes;
}

template <typename F>
std::string parse_error(F&& make) {
  try {
    parse_ipucfg(make());
  } catch (const ConfigurationFileError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Ipucfg, CorruptedCopiesAreClearErrors) {
  // Truncated by one byte: the size no longer matches the count.
  EXPECT_EQ(parse_error([] {
              auto b = capture_bytes();
              b.pop_back();
              return b;
            }),
            "count: 2003 entries need exactly 16036 bytes; the file has 16035");
  EXPECT_EQ(parse_error([] { return std::vector<std::uint8_t>{'I', 'P', 'U'}; }),
            "header: 3 bytes; the header alone takes 12");
  EXPECT_EQ(parse_error([] {
              auto b = capture_bytes();
              b[6] = '2';
              return b;
            }),
            "magic: the file does not start with \"IPUCFG1\\0\"");
  EXPECT_EQ(parse_error([] { return corrupt_count(0xFFFFFFFF); }),
            "count: 4294967295 entries need exactly 34359738372 bytes; the file has 16036");
  // Offset 0x80000 (one past the BAR) in entry 7, then an unaligned one.
  EXPECT_EQ(parse_error([] {
              auto b = capture_bytes();
              store_u32_le(0x80000, b.data() + 12 + 7 * 8);
              return b;
            }),
            "entries[7].offset: 0x80000 (file offset 0x44) is not a 4-aligned word inside the "
            "0x80000-byte BAR");
  EXPECT_EQ(parse_error([] {
              auto b = capture_bytes();
              store_u32_le(0x2002, b.data() + 12 + 2002 * 8);
              return b;
            }),
            "entries[2002].offset: 0x2002 (file offset 0x3e9c) is not a 4-aligned word inside "
            "the 0x80000-byte BAR");
  EXPECT_EQ(parse_ipucfg(std::vector<std::uint8_t>{'I', 'P', 'U', 'C', 'F', 'G', '1', 0, 0, 0,
                                                   0, 0})
                .size(),
            0u);
}

TEST(Ipucfg, MissingFileNamesThePath) {
  try {
    read_ipucfg("/nonexistent/c600.ipucfg");
    FAIL();
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/c600.ipucfg"), std::string::npos);
  }
}

RC_GTEST_PROP(Ipucfg, ArbitraryBytesNeverCrash, (std::vector<std::uint8_t> tail, bool magic)) {
  std::vector<std::uint8_t> bytes;
  if (magic) bytes.assign(kIpucfgMagic, kIpucfgMagic + 8);
  bytes.insert(bytes.end(), tail.begin(), tail.end());
  try {
    const auto writes = parse_ipucfg(bytes);
    RC_ASSERT(bytes.size() == 12 + 8 * writes.size());
    for (const auto& w : writes) RC_ASSERT(w.offset % 4 == 0 && w.offset < 0x80000);
  } catch (const ConfigurationFileError&) {
  }
}

TEST(Ipucfg, ReplayWritesEverythingButTheMarksThenClearsThem) {
  FakeDevice fake;
  auto device = Device::open(fake, FakeDevice::kDefaultPath);
  const auto writes = read_ipucfg(kCapture);
  fake.clear_records();
  EXPECT_EQ(replay_configuration(device, writes), 1995u);
  std::vector<FakeDevice::Access> expected;
  for (const auto& w : writes) {
    if (w.offset != reg::kHspGs1 && w.offset != reg::kHspGs2) expected.push_back({true, w.offset, w.value});
  }
  // Then GS1 = 0 and GS2 = 0, each read back.
  expected.push_back({true, reg::kHspGs1, 0});
  expected.push_back({false, reg::kHspGs1, 0});
  expected.push_back({true, reg::kHspGs2, 0});
  expected.push_back({false, reg::kHspGs2, 0});
  EXPECT_EQ(fake.accesses(), expected);
  EXPECT_EQ(fake.register_value(0x403C), 0x212503Du);
  EXPECT_TRUE(fake.violations().empty());
}

}  // namespace
}  // namespace tessera::driver
