#pragma once
// One tile's 624 KiB of SRAM, sparse: 4 KiB pages are allocated on first
// write, so an idle tile costs nothing and a full chip costs what it touches.
// Every byte remembers whether it was ever written; reads of unwritten bytes
// return the poison pattern. Addresses are absolute tile addresses; callers
// check ranges (target::in_sram) before calling.

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "target/memory_map.hpp"

namespace tessera::sim {

class TileSram {
 public:
  static constexpr std::uint32_t kPageBytes = 4096;
  static constexpr std::uint32_t kPageCount = target::kSramSize / kPageBytes;

  explicit TileSram(std::uint32_t poison = 0xFFFFFFFF) : poison_(poison) {}

  // Word access at a 4-aligned SRAM address. `initialized`, when given, says
  // whether all four bytes were ever written.
  std::uint32_t read_u32(std::uint32_t address, bool* initialized = nullptr) const;
  void write_u32(std::uint32_t address, std::uint32_t value);

  void read(std::uint32_t address, std::span<std::uint8_t> bytes) const;
  void write(std::uint32_t address, std::span<const std::uint8_t> bytes);
  // Whether every byte of [address, address + size) was ever written.
  bool initialized(std::uint32_t address, std::uint32_t size) const;

  // Forgets everything (pages are freed).
  void clear();
  std::uint64_t touched_bytes() const noexcept { return std::uint64_t{pages_in_use_} * kPageBytes; }
  void set_poison(std::uint32_t poison) noexcept { poison_ = poison; }

 private:
  struct Page {
    std::array<std::uint8_t, kPageBytes> bytes;
    // Bit b % 64 of written[b / 64]: byte b of the page was written.
    std::array<std::uint64_t, kPageBytes / 64> written{};
  };
  // Marks, or tests, bytes [begin, begin + count) of one page as written.
  static void mark_written(Page& page, std::uint32_t begin, std::uint32_t count) noexcept;
  static bool all_written(const Page& page, std::uint32_t begin, std::uint32_t count) noexcept;
  std::uint8_t poison_byte(std::uint32_t address) const noexcept {
    return static_cast<std::uint8_t>(poison_ >> (8 * (address % 4)));
  }
  Page& page_for_write(std::uint32_t index);

  std::array<std::unique_ptr<Page>, kPageCount> pages_{};
  std::uint32_t pages_in_use_ = 0;
  std::uint32_t poison_;
};

}  // namespace tessera::sim
