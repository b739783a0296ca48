#pragma once
// A typed view of tile memory that a kernel model was granted for one operand
// (ARCHITECTURE.md decision 11). The memory behind it was checked once, when
// the model asked for it (KernelMemory::span): inside SRAM, outside code,
// inside the operand's allocation, as the operand's ABI allows. The model
// then works on it with plain loads and stores.
//
// Staying inside the view is the model's side of the bargain. `subspan` is
// always checked (it is taken once per loop, not per element). Element access
// (`operator[]`) is checked in every build except Release (the macro
// TESSERA_CHECKED_SPANS, set by CMake): the tests run checked, so a model
// that indexes past its view fails there with a SpanOverrun (the simulator's
// KernelOverrun fault naming the operand), and benchmarks and the demo run
// the same arithmetic unchecked. A Release model that strays past its tile's
// SRAM reaches a guard page and stops the process, never another tile's
// memory (sim/sram.hpp).

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tessera::kernels {

#ifndef TESSERA_CHECKED_SPANS
#define TESSERA_CHECKED_SPANS 1
#endif

// A model indexed or sliced a span past its end. The simulator turns it into
// a KernelOverrun fault naming the operand, its span and the bytes asked for.
class SpanOverrun : public std::exception {
 public:
  SpanOverrun(unsigned reg, std::uint64_t span_address, std::uint64_t span_bytes,
              std::uint64_t touched_address, std::uint64_t touched_bytes)
      : reg_(reg),
        span_address_(span_address),
        span_bytes_(span_bytes),
        touched_address_(touched_address),
        touched_bytes_(touched_bytes) {}
  unsigned reg() const noexcept { return reg_; }
  std::uint64_t span_address() const noexcept { return span_address_; }
  std::uint64_t span_bytes() const noexcept { return span_bytes_; }
  std::uint64_t touched_address() const noexcept { return touched_address_; }
  std::uint64_t touched_bytes() const noexcept { return touched_bytes_; }
  const char* what() const noexcept override { return "kernel model touched past its span"; }

 private:
  unsigned reg_;
  std::uint64_t span_address_;
  std::uint64_t span_bytes_;
  std::uint64_t touched_address_;
  std::uint64_t touched_bytes_;
};

// Elements of type T (std::uint8_t, std::uint16_t for f16 bits, std::uint32_t,
// float; const for read-only views) at a tile address, through one operand
// register.
template <typename T>
class KernelSpan {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  using element_type = T;

  KernelSpan() = default;
  KernelSpan(T* data, std::size_t size, unsigned reg, std::uint64_t address) noexcept
      : data_(data), size_(size), reg_(reg), address_(address) {}
  // A read-only view of a writable one.
  template <typename U>
  requires std::is_same_v<const U, T> KernelSpan(const KernelSpan<U>& other)
  noexcept  // NOLINT(google-explicit-constructor)
      : data_(other.data()), size_(other.size()), reg_(other.reg()), address_(other.address()) {}

  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }
  unsigned reg() const noexcept { return reg_; }
  // The tile address of element 0.
  std::uint64_t address() const noexcept { return address_; }
  T* data() const noexcept { return data_; }
  T* begin() const noexcept { return data_; }
  T* end() const noexcept { return data_ + size_; }

  T& operator[](std::size_t index) const {
#if TESSERA_CHECKED_SPANS
    if (index >= size_) [[unlikely]] {
      overrun(index, 1);
    }
#endif
    return data_[index];
  }

  // Element `index`, checked in every build: for indices that come from data
  // (a move table), not from the model's own loop bounds.
  T& at(std::size_t index) const {
    if (index >= size_) overrun(index, 1);
    return data_[index];
  }

  // Elements [offset, offset + count): checked in every build.
  KernelSpan subspan(std::size_t offset, std::size_t count) const {
    if (offset > size_ || count > size_ - offset) overrun(offset, count);
    return KernelSpan(data_ + offset, count, reg_, address_ + offset * sizeof(T));
  }
  KernelSpan first(std::size_t count) const { return subspan(0, count); }

  std::span<T> std_span() const noexcept { return {data_, size_}; }

 private:
  [[noreturn]] void overrun(std::uint64_t index, std::uint64_t count) const {
    throw SpanOverrun(reg_, address_, size_bytes(), address_ + index * sizeof(T),
                      count * sizeof(T));
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  unsigned reg_ = 0;
  std::uint64_t address_ = 0;
};

}  // namespace tessera::kernels
