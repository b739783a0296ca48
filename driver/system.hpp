#pragma once
// The narrow interface through which the driver reaches the operating system
// and the device: open, ioctl, mmap, munmap, close, plus 32-bit MMIO on the
// mapped configuration BAR.
//
// MMIO is not a system call, but it is the device's other door, and the
// device's registers are not memory: AUTOLD_DATA is a FIFO (the same offset
// written 1024 times), AUTOLD_CSR's GO bit clears itself, the HSP marks count
// down as the device consumes credits, TDI registers execute instructions.
// A fake can only emulate that if it sees every access, so MMIO goes through
// read32/write32 here. The real implementation is the explicit volatile
// accessors below and nothing else (review-findings.md #10: no plain
// references into device memory).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace tessera::driver {

// One 32-bit volatile access; the compiler may neither merge, split, elide nor
// reorder it against other volatile accesses.
inline std::uint32_t mmio_read32(const volatile std::uint32_t* reg) noexcept { return *reg; }
inline void mmio_write32(volatile std::uint32_t* reg, std::uint32_t value) noexcept {
  *reg = value;
}

class DeviceSystem {
 public:
  virtual ~DeviceSystem() = default;

  // Each returns what the libc call returns and sets errno on failure.
  virtual int open(const char* path, int flags) = 0;
  // `argument` is either an integer value or a pointer, exactly as the kernel
  // driver expects for `request` (driver/ioctl.hpp).
  virtual int ioctl(int fd, unsigned long request, std::uintptr_t argument) = 0;
  // MAP_FAILED on failure.
  virtual void* mmap(std::size_t length, int protection, int flags, int fd, off_t offset) = 0;
  virtual int munmap(void* address, std::size_t length) = 0;
  virtual int close(int fd) = 0;

  virtual std::uint32_t read32(const volatile std::uint32_t* reg) { return mmio_read32(reg); }
  virtual void write32(volatile std::uint32_t* reg, std::uint32_t value) {
    mmio_write32(reg, value);
  }
};

// The real system: libc and volatile MMIO.
DeviceSystem& linux_system();

}  // namespace tessera::driver
