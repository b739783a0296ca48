#pragma once
// The Graphcore kernel driver's ioctls, exactly as the driver expects them
// (driver-host-protocol.md §1.2–§1.4).
//
// The numbers are hard-coded, not derived from sizeof (review-findings.md
// #11). They follow Linux's generic _IOC layout (dir<<30 | size<<16 |
// type<<8 | nr, type 0xED, W=1, R=2), but several size fields do not describe
// what is passed, and that is what the kernel driver has been shown to accept
// on hardware (the prior art's hardware tests pass with these values):
//   * BUFFER_ATTACH and MAILBOX_WRITE_READ encode size 8 and receive a pointer
//     to a 16-byte struct. A correct _IOWR would give 0xC010ED0B/0xC010ED1F;
//     the kernel driver would then not recognise the command.
//   * SET_SECONDARY_IPU_ID encodes size 8 and receives a pointer to a 4-byte
//     u32.
//   * USER_ATTACH, SET_IPU_ID and RESET_DEVICE declare a size and direction
//     but receive the integer 0, not a pointer.
// [INF] The kernel driver declares these commands with an 8-byte
// (pointer/u64) type, or matches on the number only, and copies its own
// sizeof. Either way: do not "fix" these values.

#include <cstddef>
#include <cstdint>

namespace tessera::driver::ioctl {

// How the argument is passed.
enum class ArgumentKind : std::uint8_t { kValue, kPointer };

struct Command {
  const char* name;
  unsigned long number;
  ArgumentKind argument;
};

// _IOC(dir, 0xED, nr, size), for the table's self-check only.
constexpr unsigned long ioc(unsigned dir, unsigned nr, unsigned size) {
  return static_cast<unsigned long>(dir) << 30 | static_cast<unsigned long>(size) << 16 |
         0xEDul << 8 | nr;
}
inline constexpr unsigned kRead = 2;
inline constexpr unsigned kWrite = 1;

inline constexpr Command kUserAttach{"USER_ATTACH", 0xC008ED0A, ArgumentKind::kValue};
inline constexpr Command kBufferAttach{"BUFFER_ATTACH", 0xC008ED0B, ArgumentKind::kPointer};
inline constexpr Command kBufferDetach{"BUFFER_DETACH", 0xC008ED0C, ArgumentKind::kValue};
inline constexpr Command kSetIpuId{"SET_IPU_ID", 0xC008ED0E, ArgumentKind::kValue};
inline constexpr Command kBufferDetachAll{"BUFFER_DETACH_ALL", 0x0000ED12, ArgumentKind::kValue};
inline constexpr Command kMailboxWriteRead{"MAILBOX_WRITE_READ", 0xC008ED1F,
                                           ArgumentKind::kPointer};
inline constexpr Command kStopMonitoring{"STOP_MONITORING", 0x0000ED22, ArgumentKind::kValue};
inline constexpr Command kStartMonitoring{"START_MONITORING", 0x0000ED23, ArgumentKind::kValue};
inline constexpr Command kAccumulateErrors{"ACCUMULATE_ERRORS", 0x0000ED24,
                                           ArgumentKind::kValue};
// Defined by the kernel driver, never called (as in the reference, both revisions).
inline constexpr Command kSetHexoptIdentityTable{"SET_HEXOPT_IDENTITY_TABLE", 0x0000ED2C,
                                                 ArgumentKind::kValue};
// "Notify reset".
inline constexpr Command kResetDevice{"RESET_DEVICE", 0x4004ED2D, ArgumentKind::kValue};
inline constexpr Command kSetSecondaryIpuId{"SET_SECONDARY_IPU_ID", 0x4008ED2F,
                                            ArgumentKind::kPointer};

// The hard-coded numbers are the _IOC encodings the reference lists, size
// fields included (mismatched on purpose, see the file comment).
static_assert(kUserAttach.number == ioc(kRead | kWrite, 10, 8));
static_assert(kBufferAttach.number == ioc(kRead | kWrite, 11, 8));
static_assert(kBufferDetach.number == ioc(kRead | kWrite, 12, 8));
static_assert(kSetIpuId.number == ioc(kRead | kWrite, 14, 8));
static_assert(kBufferDetachAll.number == ioc(0, 18, 0));
static_assert(kMailboxWriteRead.number == ioc(kRead | kWrite, 31, 8));
static_assert(kStopMonitoring.number == ioc(0, 34, 0));
static_assert(kStartMonitoring.number == ioc(0, 35, 0));
static_assert(kAccumulateErrors.number == ioc(0, 36, 0));
static_assert(kSetHexoptIdentityTable.number == ioc(0, 44, 0));
static_assert(kResetDevice.number == ioc(kWrite, 45, 4));
static_assert(kSetSecondaryIpuId.number == ioc(kWrite, 47, 8));

// Every command, for lookups by number (the fake, logs).
inline constexpr Command kAllCommands[] = {
    kUserAttach,      kBufferAttach,     kBufferDetach,      kSetIpuId,
    kBufferDetachAll, kMailboxWriteRead, kStopMonitoring,    kStartMonitoring,
    kAccumulateErrors, kSetHexoptIdentityTable, kResetDevice, kSetSecondaryIpuId,
};
// The command's name, or nullptr.
constexpr const char* command_name(unsigned long number) {
  for (const auto& command : kAllCommands) {
    if (command.number == number) return command.name;
  }
  return nullptr;
}

// ---- Argument layouts (LP64, little-endian, C layout; §1.3) -------------------

// BUFFER_ATTACH: 16 bytes although the command encodes 8.
struct AttachBufferData {
  std::uint32_t index;
  std::uint32_t size;        // nonzero, fits u32
  std::uint64_t user_vaddr;  // page-aligned user memory the device will DMA into
};
static_assert(sizeof(AttachBufferData) == 16);
static_assert(offsetof(AttachBufferData, index) == 0);
static_assert(offsetof(AttachBufferData, size) == 4);
static_assert(offsetof(AttachBufferData, user_vaddr) == 8);

struct MailboxMessage {
  std::uint32_t words[5];
};
static_assert(sizeof(MailboxMessage) == 20);

// MAILBOX_WRITE_READ: 16 bytes although the command encodes 8.
struct MailboxArgument {
  const MailboxMessage* sent;
  MailboxMessage* received;
};
static_assert(sizeof(void*) == 8, "the kernel driver's ABI is LP64");
static_assert(sizeof(MailboxArgument) == 16);
static_assert(offsetof(MailboxArgument, sent) == 0);
static_assert(offsetof(MailboxArgument, received) == 8);

// SET_SECONDARY_IPU_ID: a pointer to this 4-byte value although the command encodes 8.
using SecondaryIpuId = std::uint32_t;
static_assert(sizeof(SecondaryIpuId) == 4);

// The ICU reset request of Device::initialize (§1.5) and the signature its
// reply must carry in the high half of word 0.
inline constexpr MailboxMessage kIcuResetRequest{{0x4078020E, 0, 0, 0, 0}};
inline constexpr std::uint32_t kIcuReplySignature = 0x40780000;
inline constexpr std::uint32_t kIcuReplySignatureMask = 0xFFFF0000;

}  // namespace tessera::driver::ioctl
