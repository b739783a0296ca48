#pragma once
// One tile's 624 KiB of SRAM, as one contiguous host mapping so that kernel
// models work on checked spans of it directly (ARCHITECTURE.md decision 11).
// The mapping is reserved on first use and its 4 KiB pages are committed
// lazily: an idle tile costs nothing, a full chip costs what it touches. A
// page reads as the poison pattern until it is materialised (filled with the
// poison) by a write or a span. Every byte remembers whether it was ever
// written; reads of unwritten bytes return the poison. Guard pages on both
// sides of the mapping stop a runaway host access at the tile's edge instead
// of letting it reach another tile's memory. Addresses are absolute tile
// addresses; callers check ranges (target::in_sram) before calling.

#include <array>
#include <cstdint>
#include <span>

#include "target/memory_map.hpp"

namespace tessera::sim {

class TileSram {
 public:
  static constexpr std::uint32_t kPageBytes = 4096;
  static constexpr std::uint32_t kPageCount = target::kSramSize / kPageBytes;
  static_assert(target::kSramSize % kPageBytes == 0 && target::kSramBase % kPageBytes == 0);

  explicit TileSram(std::uint32_t poison = 0xFFFFFFFF) : poison_(poison) {}
  ~TileSram();
  TileSram(const TileSram&) = delete;
  TileSram& operator=(const TileSram&) = delete;

  // Word access at a 4-aligned SRAM address. `initialized`, when given, says
  // whether all four bytes were ever written.
  std::uint32_t read_u32(std::uint32_t address, bool* initialized = nullptr) const;
  void write_u32(std::uint32_t address, std::uint32_t value);

  void read(std::uint32_t address, std::span<std::uint8_t> bytes) const;
  void write(std::uint32_t address, std::span<const std::uint8_t> bytes);
  // Whether every byte of [address, address + size) was ever written.
  bool initialized(std::uint32_t address, std::uint32_t size) const;

  // The bytes [address, address + size) in place, for a kernel model: their
  // pages are materialised (never-written bytes hold the poison). Nothing is
  // marked written; the caller says what was with mark_written.
  std::span<std::uint8_t> bytes(std::uint32_t address, std::uint32_t size);
  void mark_written(std::uint32_t address, std::uint32_t size) noexcept;

  // Forgets everything (committed pages go back to the host).
  void clear();
  std::uint64_t touched_bytes() const noexcept { return std::uint64_t{pages_in_use_} * kPageBytes; }
  void set_poison(std::uint32_t poison) noexcept { poison_ = poison; }

 private:
  static constexpr std::uint32_t kWrittenWords = target::kSramSize / 64;  // one bit per byte

  std::uint32_t offset(std::uint32_t address) const noexcept { return address - target::kSramBase; }
  bool materialised(std::uint32_t page) const noexcept {
    return (present_[page / 64] >> (page % 64) & 1) != 0;
  }
  void reserve();
  void materialise(std::uint32_t first_page, std::uint32_t end_page);
  std::uint8_t poison_byte(std::uint32_t address) const noexcept {
    return static_cast<std::uint8_t>(poison_ >> (8 * (address % 4)));
  }

  // The mapping: a guard page, the SRAM's bytes, a guard page; then the
  // written-byte bitmap (zero pages from the host until written).
  std::uint8_t* mapping_ = nullptr;
  std::uint8_t* data_ = nullptr;  // SRAM byte 0 (address kSramBase)
  std::uint64_t* written_ = nullptr;
  std::array<std::uint64_t, (kPageCount + 63) / 64> present_{};
  std::uint32_t pages_in_use_ = 0;
  std::uint32_t poison_;
};

}  // namespace tessera::sim
