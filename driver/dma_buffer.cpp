#include "driver/dma_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::driver {
namespace {

template <typename T>
T* opaque(T* pointer) noexcept {
  asm volatile("" : "+r"(pointer) : : "memory");
  return pointer;
}

}  // namespace

DmaBuffer::DmaBuffer(std::size_t size) : size_(size) {
  const long page_value = ::sysconf(_SC_PAGESIZE);
  const std::size_t page = page_value > 0 ? static_cast<std::size_t>(page_value) : 4096;
  const std::size_t rounded = checked_add<std::size_t>(size == 0 ? 1 : size, page - 1, "DMA buffer");
  mapped_ = rounded / page * page;
  void* memory = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    throw IoError(fmt::format("cannot map a DMA buffer of {} bytes: {}", mapped_,
                              std::strerror(errno)));
  }
  (void)::madvise(memory, mapped_, MADV_DONTFORK);
  bytes_ = static_cast<std::uint8_t*>(memory);
}

DmaBuffer::~DmaBuffer() {
  if (bytes_ != nullptr) ::munmap(bytes_, mapped_);
}

void DmaBuffer::check_range(std::size_t offset, std::size_t size) const {
  std::size_t end = 0;
  if (__builtin_add_overflow(offset, size, &end) || end > size_) {
    throw UsageError(fmt::format("DMA buffer: bytes [{:#x}, +{:#x}) are outside its {:#x} bytes",
                                 offset, size, size_));
  }
}

void DmaBuffer::copy_in(std::size_t offset, std::span<const std::uint8_t> bytes) {
  check_range(offset, bytes.size());
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::memcpy(opaque(bytes_) + offset, bytes.data(), bytes.size());
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void DmaBuffer::fill(std::size_t offset, std::size_t size, std::uint8_t value) {
  check_range(offset, size);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::memset(opaque(bytes_) + offset, value, size);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace tessera::driver
