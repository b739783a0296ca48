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
  std::span<std::uint8_t> bytes(std::uint32_t address, std::uint32_t size) {
    if (size == 0) return {};
    const std::uint32_t begin = offset(address);
    const std::uint32_t first_page = begin / kPageBytes,
                        end_page = (begin + size - 1) / kPageBytes + 1;
    // A kernel called again on the same buffers finds its pages present.
    if (!pages_present(first_page, end_page)) materialise(first_page, end_page);
    return {data_ + begin, size};
  }
  // Marks [address, address + size) written.
  void mark_written(std::uint32_t address, std::uint32_t size) noexcept {
    if (mapping_ == nullptr || size == 0) return;  // nothing was granted, so nothing was written
    const std::uint32_t begin = offset(address), end = begin + size;
    // A span written again: its blocks are written already.
    if (blocks_written(begin / kBlockBytes, (end - 1) / kBlockBytes + 1)) return;
    mark_blocks(begin, end);
  }
  // Whether [address, address + size) has its pages materialised, so that
  // `bytes` would only point at them.
  bool present(std::uint32_t address, std::uint32_t size) const noexcept {
    if (size == 0) return true;
    const std::uint32_t begin = offset(address);
    return pages_present(begin / kPageBytes, (begin + size - 1) / kPageBytes + 1);
  }
  // The bytes in place, for a range `present` said is.
  std::span<std::uint8_t> present_bytes(std::uint32_t address, std::uint32_t size) noexcept {
    return {data_ + offset(address), size};
  }
  // Where SRAM byte 0 (address kSramBase) is on the host, null until the
  // mapping is reserved: for kernel spans over ranges `present` said are.
  std::uint8_t* host_data() noexcept { return data_; }

  // Forgets everything (committed pages go back to the host).
  void clear();
  std::uint64_t touched_bytes() const noexcept { return std::uint64_t{pages_in_use_} * kPageBytes; }
  void set_poison(std::uint32_t poison) noexcept { poison_ = poison; }

 private:
  static constexpr std::uint32_t kWrittenWords = target::kSramSize / 64;  // one bit per byte
  // The written bitmap's summary: one bit per block of kBlockBytes, set once
  // every byte of the block was written (bytes are never unwritten but by
  // clear()), so that marking and testing the spans a kernel is granted
  // again and again costs a few word tests instead of a pass over the bitmap.
  // A clear bit says nothing: the bitmap decides.
  static constexpr std::uint32_t kBlockBytes = 512;  // 8 bitmap words
  static constexpr std::uint32_t kBlockCount = target::kSramSize / kBlockBytes;
  static_assert(target::kSramSize % kBlockBytes == 0);

  std::uint32_t offset(std::uint32_t address) const noexcept { return address - target::kSramBase; }
  bool materialised(std::uint32_t page) const noexcept {
    return (present_[page / 64] >> (page % 64) & 1) != 0;
  }
  // Whether every bit [first, end) of `bits` is set; first < end.
  template <std::size_t N>
  static bool all_set(const std::array<std::uint64_t, N>& bits, std::uint32_t first,
                      std::uint32_t end) noexcept {
    const std::uint32_t first_word = first / 64, last_word = (end - 1) / 64;
    const std::uint64_t head = ~std::uint64_t{0} << (first % 64);
    const std::uint64_t tail = ~std::uint64_t{0} >> (63 - (end - 1) % 64);
    if (first_word == last_word) return (bits[first_word] & (head & tail)) == (head & tail);
    if ((bits[first_word] & head) != head || (bits[last_word] & tail) != tail) return false;
    for (std::uint32_t word = first_word + 1; word < last_word; ++word) {
      if (bits[word] != ~std::uint64_t{0}) return false;
    }
    return true;
  }
  bool pages_present(std::uint32_t first_page, std::uint32_t end_page) const noexcept {
    return all_set(present_, first_page, end_page);
  }
  // Blocks [first_block, end_block) all written.
  bool blocks_written(std::uint32_t first_block, std::uint32_t end_block) const noexcept {
    return all_set(full_, first_block, end_block);
  }
  void mark_bits(std::uint32_t begin, std::uint32_t end) noexcept;
  void mark_blocks(std::uint32_t begin, std::uint32_t end) noexcept;
  bool bits_set(std::uint32_t begin, std::uint32_t end) const noexcept;
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
  // Mutable: initialized() adds the blocks it finds written.
  mutable std::array<std::uint64_t, (kBlockCount + 63) / 64> full_{};
  std::uint32_t pages_in_use_ = 0;
  std::uint32_t poison_;
};

}  // namespace tessera::sim
