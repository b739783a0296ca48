// The TDI debug window (driver-host-protocol.md §6) against the fake device.

#include <gtest/gtest.h>

#include "driver/device.hpp"
#include "driver/errors.hpp"
#include "driver/registers.hpp"
#include "driver/tdi.hpp"
#include "target/config_space.hpp"
#include "tests/driver/fake_device.hpp"

namespace tessera::driver {
namespace {

using target::PhysicalTile;
using testing::FakeDevice;

TEST(TdiWords, EncodersGiveTheReferenceConstants) {
  // §6.3.
  EXPECT_EQ(tdi_words::get_pc_m0(), 0x41000000u);
  EXPECT_EQ(tdi_words::get_status_m0(), 0x41000001u);
  EXPECT_EQ(tdi_words::load_m0_from_m1(), 0x01F01000u);
  EXPECT_EQ(tdi_words::store_m0_at_m1(), 0x4F10F000u);
  for (unsigned n = 0; n < 16; ++n) {
    EXPECT_EQ(tdi_words::get_debug_data(n), 0x41000070u | n << 16) << n;
    EXPECT_EQ(tdi_words::put_debug_data(n), 0x43008070u | n << 20) << n;
  }
  EXPECT_THROW(tdi_words::put_debug_data(16), UsageError);
}

TEST(TdiDecode, ContextStatusAndExceptionClassification) {
  // Context c in bits 2c..2c+1; ERERR in bits 27..29 (§6.1).
  const ContextStatus status{0b11'10'01'00'00'01'10u | 5u << 27};
  const TdiContextState expected[7] = {
      TdiContextState::kExceptedDebug, TdiContextState::kRunning,  TdiContextState::kInactive,
      TdiContextState::kInactive,      TdiContextState::kRunning,  TdiContextState::kExceptedDebug,
      TdiContextState::kExcepted};
  for (unsigned c = 0; c < 7; ++c) EXPECT_EQ(status.state(c), expected[c]) << c;
  EXPECT_EQ(status.ererr(), 5u);
  EXPECT_EQ(exchange_error_name(status.ererr()), "TEXCH_RERR_DBRK");
  // §6.5: ETYPE = (SSR >> 4) & 0xF, names and the debug kinds.
  const struct {
    unsigned code;
    const char* name;
    bool debug;
  } kTypes[] = {{0, "TEXCPT_NONE", false},         {1, "TEXCPT_RBRK", true},
                {2, "TEXCPT_PBRK0", true},         {3, "TEXCPT_PBRK1", true},
                {4, "TEXCPT_BOS", true},           {5, "TEXCPT_FP", false},
                {6, "TEXCPT_CONFLICT", false},     {7, "TEXCPT_EXCONF", false},
                {8, "TEXCPT_INVALID_ADDR", false}, {9, "TEXCPT_INVALID_OP", false},
                {10, "TEXCPT_INVALID_PC", false},  {11, "TEXCPT_DBRK", true},
                {12, "TEXCPT_INVALID_INSTR", false}, {13, "TEXCPT_EXERR", false},
                {14, "TEXCPT_MEMERR", false},      {15, "TEXCPT_IBRK", true}};
  for (const auto& row : kTypes) {
    const ExceptionType type = exception_type_of(row.code << 4 | 0xF00Fu);
    EXPECT_EQ(exception_type_name(type), row.name);
    EXPECT_EQ(is_debug_exception(type), row.debug) << row.name;
  }
  // A PBRK0 stop reads $SSR = 0x20 on hardware (§6.6).
  EXPECT_EQ(exception_type_of(0x20), ExceptionType::kPbrk0);
}

class TdiTest : public ::testing::Test {
 protected:
  static Timeouts fast() {
    Timeouts t;
    t.tdi = std::chrono::milliseconds(10);
    return t;
  }
  FakeDevice fake;
  Device device = Device::open(fake, FakeDevice::kDefaultPath, fast());
  Tdi tdi{device};
  static constexpr std::uint16_t kTile = 700;

  std::vector<std::uint32_t> injected() const {
    std::vector<std::uint32_t> words;
    for (const auto& access : fake.accesses()) {
      if (access.write && access.offset == target::tdi_register_offset(PhysicalTile(kTile), 3)) {
        words.push_back(access.value);
      }
    }
    return words;
  }
};

TEST_F(TdiTest, ReadWordFromAnInactiveWorkerSavesAndRestoresM0M1) {
  fake.write_sram(kTile, 0x60000, std::vector<std::uint8_t>{0x78, 0x56, 0x34, 0x12});
  fake.set_m(kTile, 2, 0, 0xAAAA0000);
  fake.set_m(kTile, 2, 1, 0xBBBB1111);
  fake.set_context_state(kTile, 0, 1);  // the supervisor runs; worker 2 is inactive
  EXPECT_EQ(tdi.inactive_worker(PhysicalTile(kTile)), 1u);
  fake.clear_records();
  EXPECT_EQ(tdi.read_word(PhysicalTile(kTile), 2, 0x60000), 0x12345678u);
  // §6.4: save m0, m1; DATA = addr, get m1; ld32; put DATA, m0; restore m1, m0.
  EXPECT_EQ(injected(), (std::vector<std::uint32_t>{0x43008070, 0x43108070, 0x41010070, 0x01F01000,
                                                    0x43008070, 0x41010070, 0x41000070}));
  EXPECT_EQ(fake.m(kTile, 2, 0), 0xAAAA0000u);
  EXPECT_EQ(fake.m(kTile, 2, 1), 0xBBBB1111u);
  EXPECT_EQ(fake.context_state(kTile, 0), 1u);  // not stopped: a worker did the read
  EXPECT_EQ(fake.writes_to(target::tdi_register_offset(PhysicalTile(kTile), 1)).size(), 0u);
  // Every injection cleared the status first and named the owner.
  EXPECT_EQ(fake.writes_to(target::tdi_register_offset(PhysicalTile(kTile), 9)),
            std::vector<std::uint32_t>(7, 6));
  EXPECT_EQ(fake.writes_to(target::tdi_register_offset(PhysicalTile(kTile), 4)),
            std::vector<std::uint32_t>(7, 2));
}

TEST_F(TdiTest, TheSupervisorIsStoppedForTheOperationAndResumed) {
  fake.set_context_state(kTile, 0, 1);
  fake.write_sram(kTile, 0x4C010, std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7, 8});
  fake.clear_records();
  EXPECT_EQ(tdi.read_words(PhysicalTile(kTile), 0, 0x4C010, 2),
            (std::vector<std::uint32_t>{0x04030201, 0x08070605}));
  // §6.2: RUN_BREAK bit 0 set, then restored, then EXCEPTION_CLEAR resumes.
  EXPECT_EQ(fake.writes_to(target::tdi_register_offset(PhysicalTile(kTile), 1)),
            (std::vector<std::uint32_t>{1, 0}));
  EXPECT_EQ(fake.writes_to(target::tdi_register_offset(PhysicalTile(kTile), 6)),
            (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(fake.context_state(kTile, 0), 1u);
}

TEST_F(TdiTest, WriteWordPcAndStatusOfAStoppedContext) {
  fake.set_context_state(kTile, 0, 3);
  fake.set_pc(kTile, 0, 0x4C100);
  fake.set_status_csr(kTile, 0, 8u << 4);
  fake.set_m(kTile, 0, 0, 77);
  tdi.write_word(PhysicalTile(kTile), 0, 0xE7FFC, 0xCAFEF00D);
  EXPECT_EQ(fake.sram_word(kTile, 0xE7FFC), 0xCAFEF00Du);
  EXPECT_EQ(tdi.read_pc(PhysicalTile(kTile), 0), 0x4C100u);
  EXPECT_EQ(exception_type_of(tdi.read_status(PhysicalTile(kTile), 0)), ExceptionType::kInvalidAddr);
  EXPECT_EQ(fake.m(kTile, 0, 0), 77u);
  // Already stopped: no run break was needed.
  EXPECT_TRUE(fake.writes_to(target::tdi_register_offset(PhysicalTile(kTile), 1)).empty());
}

TEST_F(TdiTest, ErrorsAreNamed) {
  fake.set_context_state(kTile, 3, 1);
  try {
    tdi.inject(PhysicalTile(kTile), 3, 0x41000000);
    FAIL();
  } catch (const DeviceError& error) {
    EXPECT_STREQ(error.what(),
                 "/dev/fake-ipu0: p700 context 3: injected 0x41000000 failed: TDI status 0x1");
  }
  EXPECT_THROW(tdi.read_word(PhysicalTile(kTile), 1, 0x60002), UsageError);
  EXPECT_THROW(tdi.read_word(PhysicalTile(kTile), 1, 0x4BFFC), UsageError);
  EXPECT_THROW(tdi.read_word(PhysicalTile(kTile), 1, 0xE8000), UsageError);
  EXPECT_THROW(tdi.read_word(PhysicalTile(1472), 1, 0x60000), UsageError);
  EXPECT_THROW(tdi.read_word(PhysicalTile(kTile), 7, 0x60000), UsageError);
  // A halted supervisor never reaches a stopped state: the stop times out.
  try {
    tdi.read_word(PhysicalTile(kTile), 0, 0x60000);
    FAIL();
  } catch (const DeviceTimeout& error) {
    EXPECT_STREQ(error.what(),
                 "/dev/fake-ipu0: p700 context 0 did not stop within 10 ms (state inactive)");
  }
  EXPECT_EQ(fake.register_value(target::tdi_register_offset(PhysicalTile(kTile), 1)), 0u);
}

}  // namespace
}  // namespace tessera::driver
