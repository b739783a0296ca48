#pragma once
// One opened C600: the device node, its mapped configuration BAR and the
// kernel driver's ioctls (driver-host-protocol.md §1, §2.1, §4, §5.5).
//
// Threading: a Device is used by one thread at a time; the owner (the c600
// backend) serialises access. Ownership across processes is the backend's
// device lock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "driver/system.hpp"

namespace tessera::driver {

// Defaults from driver-host-protocol.md §5.8. A slow peer (a simulator
// behind the same interface) may need longer ones.
struct Timeouts {
  std::chrono::milliseconds hsp{10'000};
  std::chrono::milliseconds autoloader{2'000};
  std::chrono::milliseconds tdi{100};
  std::chrono::microseconds hsp_poll{100};
  std::chrono::microseconds autoloader_poll{100};
};

class Device {
 public:
  // Opens `path` (O_RDWR | O_CLOEXEC), maps the 512 KiB configuration BAR,
  // then USER_ATTACH(0) and SET_IPU_ID(0) (§1.1). Does not reset the device.
  static Device open(DeviceSystem& system, std::string path, Timeouts timeouts = {});
  ~Device();  // munmap, then close
  Device(Device&& other) noexcept;
  Device& operator=(Device&&) = delete;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& path() const noexcept { return path_; }
  const Timeouts& timeouts() const noexcept { return timeouts_; }
  DeviceSystem& system() noexcept { return *system_; }

  // §1.5: STOP_MONITORING, the ICU reset mailbox (reply checked),
  // START_MONITORING, ACCUMULATE_ERRORS, RESET_DEVICE(0), SET_SECONDARY_IPU_ID(&0).
  void initialize();

  // Volatile 32-bit accesses at BAR + offset; UsageError unless the offset is
  // 4-aligned and ≤ 0x7FFFC (§2.1).
  std::uint32_t read_config(std::uint32_t offset);
  void write_config(std::uint32_t offset, std::uint32_t value);
  // Writes, then reads back to flush the posted write; returns the read value.
  std::uint32_t write_config_flushed(std::uint32_t offset, std::uint32_t value);

  // --- HSP marks (§5.5) -------------------------------------------------------
  // `mark` is the GS1 or GS2 control offset; the count must fit 16 bits. The
  // write is flushed by a read-back.
  void write_mark(std::uint32_t mark, std::uint32_t count);
  std::uint16_t read_mark(std::uint32_t mark);
  // Polls (timeouts().hsp_poll) until the mark reads 0; false at the deadline.
  bool poll_mark_zero(std::uint32_t mark, std::chrono::milliseconds timeout);
  // As poll_mark_zero with timeouts().hsp, or DeviceTimeout naming `what`,
  // the register and the count last read.
  void wait_mark_zero(std::uint32_t mark, std::string_view what);

  // --- Host buffers (§4) ------------------------------------------------------
  // BUFFER_ATTACH: `address` must be host-page aligned, size nonzero and < 2^32.
  void attach_buffer(std::uint32_t index, void* address, std::size_t size);
  // BUFFER_DETACH; its result is ignored, as in the reference (a detach of a
  // buffer the driver no longer holds is not an error worth failing a cleanup for).
  void detach_buffer(std::uint32_t index) noexcept;
  void detach_all_buffers();

  // Raw access for the loader and the TDI helpers.
  std::string describe_register(std::uint32_t offset) const;

 private:
  Device(DeviceSystem& system, std::string path, Timeouts timeouts, int fd, void* bar);
  void ioctl_value(unsigned long command, std::uintptr_t value);
  void ioctl_pointer(unsigned long command, const void* argument);
  volatile std::uint32_t* word(std::uint32_t offset);

  DeviceSystem* system_;
  std::string path_;
  Timeouts timeouts_;
  int fd_ = -1;
  void* bar_ = nullptr;
};

// The register's name when the driver knows one ("GS1 (0x302c)", "TDI p12 reg 3
// (0x30303)"), else its offset.
std::string register_name(std::uint32_t offset);

}  // namespace tessera::driver
