#pragma once
// Host memory the device reads by DMA, owned by the driver: the loader's
// transport buffer (driver-host-protocol.md §3.3). The runtime's session pages
// are runtime::HostBuffer; the driver cannot depend on runtime/, so it keeps
// this small twin with the same rules (review-findings.md #9): page-aligned,
// zero-filled, MAP_SHARED, MADV_DONTFORK, and accessed only through fenced
// copies through a pointer the optimizer must treat as escaped.

#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera::driver {

class DmaBuffer {
 public:
  // `size` bytes (rounded up to whole pages in the mapping).
  explicit DmaBuffer(std::size_t size);
  ~DmaBuffer();
  DmaBuffer(const DmaBuffer&) = delete;
  DmaBuffer& operator=(const DmaBuffer&) = delete;

  std::size_t size() const noexcept { return size_; }
  // UsageError when the range leaves the buffer.
  void copy_in(std::size_t offset, std::span<const std::uint8_t> bytes);
  void fill(std::size_t offset, std::size_t size, std::uint8_t value);
  // For BUFFER_ATTACH only.
  void* device_address() noexcept { return bytes_; }

 private:
  void check_range(std::size_t offset, std::size_t size) const;

  std::uint8_t* bytes_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;
};

}  // namespace tessera::driver
