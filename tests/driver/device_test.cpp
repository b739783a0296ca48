// The kernel-driver ABI against the fake device: ioctl numbers and argument
// styles, open/initialize/close sequences, register and mark access
// (driver-host-protocol.md §1, §2.1, §4, §5.5).

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "driver/device.hpp"
#include "driver/errors.hpp"
#include "driver/ioctl.hpp"
#include "driver/registers.hpp"
#include "tests/driver/fake_device.hpp"

namespace tessera::driver {
namespace {

using testing::FakeDevice;
namespace io = ioctl;

Timeouts fast_timeouts() {
  Timeouts t;
  t.hsp = std::chrono::milliseconds(20);
  t.autoloader = std::chrono::milliseconds(20);
  t.tdi = std::chrono::milliseconds(20);
  t.hsp_poll = std::chrono::microseconds(10);
  t.autoloader_poll = std::chrono::microseconds(10);
  return t;
}

TEST(Ioctl, NumbersAreTheReferenceTable) {
  // §1.2, one row per command: name, cmd, how the argument is passed.
  const struct {
    const io::Command& command;
    const char* name;
    unsigned long number;
    io::ArgumentKind argument;
  } kTable[] = {
      {io::kUserAttach, "USER_ATTACH", 0xC008ED0A, io::ArgumentKind::kValue},
      {io::kBufferAttach, "BUFFER_ATTACH", 0xC008ED0B, io::ArgumentKind::kPointer},
      {io::kBufferDetach, "BUFFER_DETACH", 0xC008ED0C, io::ArgumentKind::kValue},
      {io::kSetIpuId, "SET_IPU_ID", 0xC008ED0E, io::ArgumentKind::kValue},
      {io::kBufferDetachAll, "BUFFER_DETACH_ALL", 0x0000ED12, io::ArgumentKind::kValue},
      {io::kMailboxWriteRead, "MAILBOX_WRITE_READ", 0xC008ED1F, io::ArgumentKind::kPointer},
      {io::kStopMonitoring, "STOP_MONITORING", 0x0000ED22, io::ArgumentKind::kValue},
      {io::kStartMonitoring, "START_MONITORING", 0x0000ED23, io::ArgumentKind::kValue},
      {io::kAccumulateErrors, "ACCUMULATE_ERRORS", 0x0000ED24, io::ArgumentKind::kValue},
      {io::kSetHexoptIdentityTable, "SET_HEXOPT_IDENTITY_TABLE", 0x0000ED2C,
       io::ArgumentKind::kValue},
      {io::kResetDevice, "RESET_DEVICE", 0x4004ED2D, io::ArgumentKind::kValue},
      {io::kSetSecondaryIpuId, "SET_SECONDARY_IPU_ID", 0x4008ED2F, io::ArgumentKind::kPointer},
  };
  for (const auto& row : kTable) {
    SCOPED_TRACE(row.name);
    EXPECT_STREQ(row.command.name, row.name);
    EXPECT_EQ(row.command.number, row.number);
    EXPECT_EQ(row.command.argument, row.argument);
    EXPECT_STREQ(io::command_name(row.number), row.name);
  }
  // The correctly sized encodings are not what the kernel driver takes (§1.4).
  EXPECT_EQ(io::command_name(0xC010ED0B), nullptr);
  EXPECT_EQ(io::command_name(0xC010ED1F), nullptr);
}

TEST(Device, OpenInitializeCloseIsTheReferenceSequence) {
  FakeDevice fake;
  {
    auto device = Device::open(fake, FakeDevice::kDefaultPath);
    device.initialize();
    EXPECT_EQ(fake.ioctl_requests(),
              (std::vector<unsigned long>{
                  io::kUserAttach.number, io::kSetIpuId.number,               // §1.1
                  io::kStopMonitoring.number, io::kMailboxWriteRead.number,   // §1.5
                  io::kStartMonitoring.number, io::kAccumulateErrors.number,
                  io::kResetDevice.number, io::kSetSecondaryIpuId.number}));
    ASSERT_EQ(fake.mailbox_requests().size(), 1u);
    EXPECT_EQ(fake.mailbox_requests()[0],
              (std::array<std::uint32_t, 5>{0x4078020E, 0, 0, 0, 0}));
    EXPECT_EQ(fake.secondary_ids(), (std::vector<std::uint32_t>{0}));
    // Value-style arguments are the integer 0.
    for (const auto& call : fake.calls()) {
      if (call.kind == FakeDevice::CallKind::kIoctl &&
          (call.request == io::kUserAttach.number || call.request == io::kSetIpuId.number ||
           call.request == io::kResetDevice.number)) {
        EXPECT_EQ(call.argument, 0u);
      }
    }
  }
  std::vector<FakeDevice::CallKind> kinds;
  for (const auto& call : fake.calls()) {
    if (call.kind != FakeDevice::CallKind::kIoctl) kinds.push_back(call.kind);
  }
  EXPECT_EQ(kinds, (std::vector<FakeDevice::CallKind>{
                       FakeDevice::CallKind::kOpen, FakeDevice::CallKind::kMmap,
                       FakeDevice::CallKind::kMunmap, FakeDevice::CallKind::kClose}));
  EXPECT_TRUE(fake.violations().empty());
}

TEST(Device, OpenFailuresNameTheDevice) {
  FakeDevice fake;
  try {
    (void)Device::open(fake, "/dev/ipu7");
    FAIL();
  } catch (const DriverIoError& error) {
    EXPECT_EQ(error.error_number(), ENOENT);
    EXPECT_STREQ(error.what(), "cannot open IPU device /dev/ipu7: No such file or directory");
  }
  fake.ioctl_errors[io::kSetIpuId.number] = EPERM;
  try {
    (void)Device::open(fake, FakeDevice::kDefaultPath);
    FAIL();
  } catch (const DriverIoError& error) {
    EXPECT_STREQ(error.what(), "/dev/fake-ipu0: SET_IPU_ID failed: Operation not permitted");
  }
  // The failed open still unmapped and closed.
  EXPECT_EQ(fake.calls().back().kind, FakeDevice::CallKind::kClose);
}

TEST(Device, MailboxReplyWithoutTheSignatureIsADeviceError) {
  FakeDevice fake;
  fake.mailbox_reply_word0 = 0x1234020E;
  auto device = Device::open(fake, FakeDevice::kDefaultPath);
  try {
    device.initialize();
    FAIL();
  } catch (const DeviceError& error) {
    EXPECT_STREQ(error.what(),
                 "/dev/fake-ipu0: the ICU reset mailbox replied 0x1234020e; expected 0x4078 in "
                 "the high half");
  }
}

TEST(Device, RegisterOffsetsAreChecked) {
  FakeDevice fake;
  auto device = Device::open(fake, FakeDevice::kDefaultPath);
  device.write_config(0x7FFFC, 5);
  EXPECT_EQ(device.read_config(0x7FFFC), 5u);
  EXPECT_THROW(device.read_config(0x80000), UsageError);
  EXPECT_THROW(device.write_config(0x2002, 1), UsageError);
  EXPECT_THROW(device.write_mark(reg::kCcsr, 1), UsageError);
  EXPECT_THROW(device.write_mark(reg::kHspGs1, 0x10000), UsageError);
  EXPECT_TRUE(fake.violations().empty());
}

TEST(Device, MarkWritesAreFlushedAndAStalledMarkTimesOut) {
  FakeDevice fake;
  auto device = Device::open(fake, FakeDevice::kDefaultPath, fast_timeouts());
  fake.clear_records();
  device.write_mark(reg::kHspGs2, 1);
  EXPECT_EQ(fake.accesses(), (std::vector<FakeDevice::Access>{{true, reg::kHspGs2, 1},
                                                              {false, reg::kHspGs2, 1}}));
  // Nothing runs on the fake, so nobody takes the credit.
  try {
    device.wait_mark_zero(reg::kHspGs2, "host call run phase 0/3");
    FAIL();
  } catch (const DeviceTimeout& error) {
    EXPECT_STREQ(error.what(),
                 "/dev/fake-ipu0: host call run phase 0/3: HSP GS2 (0x3030) still reads 1 after "
                 "20 ms (expected 0)");
  }
}

TEST(Device, AttachChecksAlignmentAndPassesTheStruct) {
  FakeDevice fake;
  auto device = Device::open(fake, FakeDevice::kDefaultPath);
  void* memory = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  device.attach_buffer(3, memory, 5000);
  ASSERT_EQ(fake.attach_history().size(), 1u);
  EXPECT_EQ(fake.attach_history()[0].index, 3u);
  EXPECT_EQ(fake.attach_history()[0].size, 5000u);
  EXPECT_EQ(fake.attach_history()[0].vaddr, reinterpret_cast<std::uintptr_t>(memory));
  EXPECT_THROW(device.attach_buffer(4, static_cast<std::uint8_t*>(memory) + 16, 64), UsageError);
  EXPECT_THROW(device.attach_buffer(4, memory, 0), UsageError);
  EXPECT_THROW(device.attach_buffer(4, memory, std::size_t{1} << 32), UsageError);
  // Attaching an index twice is the kernel's EBUSY.
  EXPECT_THROW(device.attach_buffer(3, memory, 64), DriverIoError);
  device.detach_buffer(3);
  EXPECT_TRUE(fake.attached().empty());
  device.detach_buffer(3);  // ignored, as in the reference
  device.attach_buffer(1, memory, 64);
  device.detach_all_buffers();
  EXPECT_TRUE(fake.attached().empty());
  EXPECT_EQ(fake.ioctl_requests().back(), io::kBufferDetachAll.number);
  ::munmap(memory, 8192);
}

}  // namespace
}  // namespace tessera::driver
