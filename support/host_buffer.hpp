#pragma once
// Host memory the device reads and writes by DMA (driver-host-protocol.md §4).
//
// Once attached, a buffer has a second writer the compiler cannot see: the
// device. So no plain reference to its bytes ever escapes this class
// (review-findings.md #9). The host copies in and out only through
// copy_in()/copy_out()/fill(), which
//   * issue a sequentially consistent fence before and after the copy, so that
//     host writes are visible before the HSP write that releases the device,
//     and device writes observed through a mark read are seen by the copy
//     that follows; and
//   * copy through a pointer the optimizer must treat as escaped and
//     clobbered (an empty asm with a "memory" clobber), so it cannot cache,
//     elide or reorder accesses across the copy.
// The memory is page-aligned, zero-filled, MAP_SHARED (a fork() cannot make
// the device's pages copy-on-write) and excluded from children (MADV_DONTFORK).
//
// Transports (and the C600 loader's transport buffer) receive the memory
// itself through device_memory(); that is the only door to it and is meant
// for BUFFER_ATTACH and the simulator's host link, nothing else. It lives in
// support/ because both driver/ and runtime/ hand such memory to a device.

#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera {

// The address range a transport hands to the device.
struct DeviceMemory {
  std::uint8_t* address = nullptr;
  std::size_t size = 0;
};

class HostBuffer {
 public:
  // `size` bytes, rounded up to whole host pages; at least one page.
  explicit HostBuffer(std::size_t size);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;

  // The size asked for (the mapping may be larger).
  std::size_t size() const noexcept { return size_; }

  // Copies with fences; UsageError when the range is outside the buffer.
  void copy_in(std::size_t offset, std::span<const std::uint8_t> bytes);
  void copy_out(std::size_t offset, std::span<std::uint8_t> bytes) const;
  void fill(std::size_t offset, std::size_t size, std::uint8_t value);

  // For a transport's attach only (see the file comment).
  DeviceMemory device_memory() noexcept { return {bytes_, size_}; }

 private:
  void check_range(std::size_t offset, std::size_t size, const char* what) const;
  void release() noexcept;

  std::uint8_t* bytes_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;
};

}  // namespace tessera
