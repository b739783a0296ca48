#include "driver/device.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "driver/errors.hpp"
#include "driver/ioctl.hpp"
#include "driver/registers.hpp"
#include "target/config_space.hpp"

namespace tessera::driver {
namespace {

std::size_t host_page_size() {
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<std::size_t>(page) : 4096;
}

std::string command_label(unsigned long command) {
  const char* name = ioctl::command_name(command);
  return name != nullptr ? std::string(name) : fmt::format("ioctl {:#x}", command);
}

}  // namespace

std::string register_name(std::uint32_t offset) {
  switch (offset) {
    case reg::kCcsr: return fmt::format("CCSR ({:#x})", offset);
    case reg::kAutoloadCsr: return fmt::format("AUTOLD_CSR ({:#x})", offset);
    case reg::kAutoloadTarget: return fmt::format("AUTOLD_TARGET ({:#x})", offset);
    case reg::kAutoloadData: return fmt::format("AUTOLD_DATA ({:#x})", offset);
    case reg::kHspGs1: return fmt::format("HSP GS1 ({:#x})", offset);
    case reg::kHspGs2: return fmt::format("HSP GS2 ({:#x})", offset);
    case reg::kExchangeWindowBase: return fmt::format("EXCHANGE_WINDOW_BASE ({:#x})", offset);
    default: break;
  }
  const std::uint32_t tdi_end = target::kTdiBase + target::kTileCount * target::kTdiTileStride;
  if (offset >= target::kTdiBase && offset < tdi_end) {
    const std::uint32_t relative = offset - target::kTdiBase;
    return fmt::format("TDI p{} reg {} ({:#x})", relative / target::kTdiTileStride,
                       relative % target::kTdiTileStride / 4, offset);
  }
  return fmt::format("register {:#x}", offset);
}

Device Device::open(DeviceSystem& system, std::string path, Timeouts timeouts) {
  const int fd = system.open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    throw DriverIoError(fmt::format("cannot open IPU device {}: {}", path, std::strerror(error)),
                        error);
  }
  void* bar = system.mmap(target::kConfigSpaceSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (bar == MAP_FAILED) {
    const int error = errno;
    system.close(fd);
    throw DriverIoError(fmt::format("{}: cannot map the {:#x}-byte configuration BAR: {}", path,
                                    target::kConfigSpaceSize, std::strerror(error)),
                        error);
  }
  Device device(system, std::move(path), timeouts, fd, bar);
  device.ioctl_value(ioctl::kUserAttach.number, 0);
  device.ioctl_value(ioctl::kSetIpuId.number, 0);
  spdlog::debug("{}: attached", device.path_);
  return device;
}

Device::Device(DeviceSystem& system, std::string path, Timeouts timeouts, int fd, void* bar)
    : system_(&system), path_(std::move(path)), timeouts_(timeouts), fd_(fd), bar_(bar) {}

Device::Device(Device&& other) noexcept
    : system_(other.system_),
      path_(std::move(other.path_)),
      timeouts_(other.timeouts_),
      fd_(std::exchange(other.fd_, -1)),
      bar_(std::exchange(other.bar_, nullptr)) {}

Device::~Device() {
  if (bar_ != nullptr) system_->munmap(bar_, target::kConfigSpaceSize);
  if (fd_ >= 0) system_->close(fd_);
}

void Device::ioctl_value(unsigned long command, std::uintptr_t value) {
  if (system_->ioctl(fd_, command, value) != 0) {
    const int error = errno;
    throw DriverIoError(
        fmt::format("{}: {} failed: {}", path_, command_label(command), std::strerror(error)),
        error);
  }
}

void Device::ioctl_pointer(unsigned long command, const void* argument) {
  ioctl_value(command, reinterpret_cast<std::uintptr_t>(argument));
}

void Device::initialize() {
  ioctl_value(ioctl::kStopMonitoring.number, 0);
  ioctl::MailboxMessage reply{};
  const ioctl::MailboxArgument argument{&ioctl::kIcuResetRequest, &reply};
  ioctl_pointer(ioctl::kMailboxWriteRead.number, &argument);
  if ((reply.words[0] & ioctl::kIcuReplySignatureMask) != ioctl::kIcuReplySignature) {
    throw DeviceError(fmt::format(
        "{}: the ICU reset mailbox replied {:#010x}; expected {:#06x} in the high half", path_,
        reply.words[0], ioctl::kIcuReplySignature >> 16));
  }
  ioctl_value(ioctl::kStartMonitoring.number, 0);
  ioctl_value(ioctl::kAccumulateErrors.number, 0);
  ioctl_value(ioctl::kResetDevice.number, 0);
  const ioctl::SecondaryIpuId secondary = 0;
  ioctl_pointer(ioctl::kSetSecondaryIpuId.number, &secondary);
  spdlog::debug("{}: initialized", path_);
}

volatile std::uint32_t* Device::word(std::uint32_t offset) {
  if (!target::is_config_word_offset(offset)) {
    throw UsageError(fmt::format(
        "{}: configuration offset {:#x} is not a 4-aligned word offset at most {:#x}", path_,
        offset, target::kConfigLastWordOffset));
  }
  return reinterpret_cast<volatile std::uint32_t*>(static_cast<std::uint8_t*>(bar_) + offset);
}

std::uint32_t Device::read_config(std::uint32_t offset) { return system_->read32(word(offset)); }

void Device::write_config(std::uint32_t offset, std::uint32_t value) {
  system_->write32(word(offset), value);
}

std::uint32_t Device::write_config_flushed(std::uint32_t offset, std::uint32_t value) {
  write_config(offset, value);
  return read_config(offset);
}

std::string Device::describe_register(std::uint32_t offset) const {
  return fmt::format("{} {}", path_, register_name(offset));
}

void Device::write_mark(std::uint32_t mark, std::uint32_t count) {
  if (!target::is_hsp_mark_register(mark)) {
    throw UsageError(fmt::format("{}: {} is not an HSP mark", path_, register_name(mark)));
  }
  if (count > reg::kHspMarkMask) {
    throw UsageError(fmt::format("{}: HSP mark count {} does not fit 16 bits", path_, count));
  }
  write_config_flushed(mark, count);
}

std::uint16_t Device::read_mark(std::uint32_t mark) {
  if (!target::is_hsp_mark_register(mark)) {
    throw UsageError(fmt::format("{}: {} is not an HSP mark", path_, register_name(mark)));
  }
  return static_cast<std::uint16_t>(read_config(mark) & reg::kHspMarkMask);
}

bool Device::poll_mark_zero(std::uint32_t mark, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (read_mark(mark) == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(timeouts_.hsp_poll);
  }
}

void Device::wait_mark_zero(std::uint32_t mark, std::string_view what) {
  if (poll_mark_zero(mark, timeouts_.hsp)) return;
  throw DeviceTimeout(fmt::format("{}: {}: {} still reads {} after {} ms (expected 0)", path_,
                                  what, register_name(mark), read_mark(mark),
                                  timeouts_.hsp.count()));
}

void Device::attach_buffer(std::uint32_t index, void* address, std::size_t size) {
  const auto vaddr = reinterpret_cast<std::uintptr_t>(address);
  if (vaddr % host_page_size() != 0) {
    throw UsageError(fmt::format("{}: host buffer {} at {:#x} is not page-aligned", path_, index,
                                 vaddr));
  }
  if (size == 0 || size > 0xFFFFFFFFu) {
    throw UsageError(fmt::format(
        "{}: host buffer {} has {} bytes; BUFFER_ATTACH takes 1 to 2^32-1", path_, index, size));
  }
  const ioctl::AttachBufferData data{index, static_cast<std::uint32_t>(size), vaddr};
  ioctl_pointer(ioctl::kBufferAttach.number, &data);
}

void Device::detach_buffer(std::uint32_t index) noexcept {
  (void)system_->ioctl(fd_, ioctl::kBufferDetach.number, index);
}

void Device::detach_all_buffers() { ioctl_value(ioctl::kBufferDetachAll.number, 0); }

}  // namespace tessera::driver
