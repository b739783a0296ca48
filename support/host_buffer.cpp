#include "support/host_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera {
namespace {

std::size_t page_size() {
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<std::size_t>(page) : 4096;
}

// The compiler must assume the pointed-to memory is read and written here by
// someone else (the device), so copies around it are neither cached nor
// elided nor moved across it.
template <typename T>
T* opaque(T* pointer) noexcept {
  asm volatile("" : "+r"(pointer) : : "memory");
  return pointer;
}

}  // namespace

HostBuffer::HostBuffer(std::size_t size) : size_(size) {
  const std::size_t page = page_size();
  const std::size_t pages = checked_add<std::size_t>(std::max<std::size_t>(size, 1), page - 1,
                                                     "host buffer size") / page;
  mapped_ = checked_mul<std::size_t>(pages, page, "host buffer size");
  void* memory = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    throw IoError(fmt::format("cannot map a host buffer of {} bytes: {}", mapped_,
                              std::strerror(errno)));
  }
  // Best effort: a child process must not share or copy the device's pages.
  (void)::madvise(memory, mapped_, MADV_DONTFORK);
  bytes_ = static_cast<std::uint8_t*>(memory);
}

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : bytes_(std::exchange(other.bytes_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    bytes_ = std::exchange(other.bytes_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void HostBuffer::release() noexcept {
  if (bytes_ != nullptr) ::munmap(bytes_, mapped_);
  bytes_ = nullptr;
}

void HostBuffer::check_range(std::size_t offset, std::size_t size, const char* what) const {
  std::size_t end = 0;
  if (__builtin_add_overflow(offset, size, &end) || end > size_) {
    throw UsageError(fmt::format("host buffer {}: bytes [{:#x}, +{:#x}) are outside its {:#x} bytes",
                                 what, offset, size, size_));
  }
}

void HostBuffer::copy_in(std::size_t offset, std::span<const std::uint8_t> bytes) {
  check_range(offset, bytes.size(), "copy in");
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::memcpy(opaque(bytes_) + offset, bytes.data(), bytes.size());
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void HostBuffer::copy_out(std::size_t offset, std::span<std::uint8_t> bytes) const {
  check_range(offset, bytes.size(), "copy out");
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::memcpy(bytes.data(), opaque(bytes_) + offset, bytes.size());
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void HostBuffer::fill(std::size_t offset, std::size_t size, std::uint8_t value) {
  check_range(offset, size, "fill");
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::memset(opaque(bytes_) + offset, value, size);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace tessera
