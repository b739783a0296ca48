#include "sim/sram.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

#include "support/little_endian.hpp"

namespace tessera::sim {
namespace {

constexpr std::size_t kGuardBytes = TileSram::kPageBytes;
constexpr std::size_t kDataBytes = target::kSramSize;
constexpr std::size_t kBitmapBytes = target::kSramSize / 8;
// Guard, data, guard, bitmap (page-rounded).
constexpr std::size_t kBitmapOffset = kGuardBytes + kDataBytes + kGuardBytes;
constexpr std::size_t kMappingBytes = kBitmapOffset + (kBitmapBytes + TileSram::kPageBytes - 1) /
                                                          TileSram::kPageBytes *
                                                          TileSram::kPageBytes;

// The bits [offset, offset + count) of a 64-bit word; 1 ≤ count ≤ 64 − offset.
constexpr std::uint64_t bit_range(std::uint32_t offset, std::uint32_t count) noexcept {
  const std::uint64_t ones = count >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << count) - 1;
  return ones << offset;
}

}  // namespace

TileSram::~TileSram() {
  if (mapping_ != nullptr) ::munmap(mapping_, kMappingBytes);
}

void TileSram::reserve() {
  void* mapping =
      ::mmap(nullptr, kMappingBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  mapping_ = static_cast<std::uint8_t*>(mapping);
  if (::mprotect(mapping_ + kGuardBytes, kDataBytes, PROT_READ | PROT_WRITE) != 0 ||
      ::mprotect(mapping_ + kBitmapOffset, kMappingBytes - kBitmapOffset, PROT_READ | PROT_WRITE) !=
          0) {
    ::munmap(mapping_, kMappingBytes);
    mapping_ = nullptr;
    throw std::bad_alloc();
  }
  data_ = mapping_ + kGuardBytes;
  written_ = reinterpret_cast<std::uint64_t*>(mapping_ + kBitmapOffset);  // NOLINT: page-aligned
}

void TileSram::materialise(std::uint32_t first_page, std::uint32_t end_page) {
  if (mapping_ == nullptr) reserve();
  std::uint8_t pattern[4];
  for (std::uint32_t i = 0; i < 4; ++i) pattern[i] = poison_byte(i);
  for (std::uint32_t page = first_page; page < end_page; ++page) {
    if (materialised(page)) continue;
    // Pages start 4-aligned, so the pattern repeats every word.
    std::uint8_t* bytes = data_ + std::size_t{page} * kPageBytes;
    for (std::uint32_t i = 0; i < kPageBytes; i += 4) std::memcpy(bytes + i, pattern, 4);
    present_[page / 64] |= std::uint64_t{1} << (page % 64);
    ++pages_in_use_;
  }
}

// The written bitmap, one bit per byte: a range sets or tests its partial
// first and last words bit by bit and the words between whole. Offsets from
// SRAM byte 0; begin < end.
void TileSram::mark_bits(std::uint32_t begin, std::uint32_t end) noexcept {
  const std::uint32_t first = begin / 64, last = (end - 1) / 64;
  if (first == last) {
    written_[first] |= bit_range(begin % 64, end - begin);
    return;
  }
  written_[first] |= ~std::uint64_t{0} << (begin % 64);
  std::fill(written_ + first + 1, written_ + last, ~std::uint64_t{0});
  written_[last] |= bit_range(0, end - 64 * last);
}

bool TileSram::bits_set(std::uint32_t begin, std::uint32_t end) const noexcept {
  const std::uint32_t first = begin / 64, last = (end - 1) / 64;
  const auto all = [&](std::uint32_t word, std::uint64_t mask) {
    return (written_[word] & mask) == mask;
  };
  if (first == last) return all(first, bit_range(begin % 64, end - begin));
  if (!all(first, ~std::uint64_t{0} << (begin % 64))) return false;
  for (std::uint32_t word = first + 1; word < last; ++word) {
    if (written_[word] != ~std::uint64_t{0}) return false;
  }
  return all(last, bit_range(0, end - 64 * last));
}

// Blocks already written are skipped (the summary); the others get their
// bits, and become written in the summary when that completed them.
void TileSram::mark_blocks(std::uint32_t begin, std::uint32_t end) noexcept {
  const std::uint32_t first_block = begin / kBlockBytes, end_block = (end - 1) / kBlockBytes + 1;
  constexpr std::uint32_t kBlockWords = kBlockBytes / 64;
  for (std::uint32_t block = first_block; block < end_block; ++block) {
    if (blocks_written(block, block + 1)) continue;
    const std::uint32_t block_begin = block * kBlockBytes;
    mark_bits(std::max(begin, block_begin), std::min(end, block_begin + kBlockBytes));
    const std::uint64_t* words = written_ + std::size_t{block} * kBlockWords;
    if (std::all_of(words, words + kBlockWords,
                    [](std::uint64_t word) { return word == ~std::uint64_t{0}; })) {
      full_[block / 64] |= std::uint64_t{1} << (block % 64);
    }
  }
}

// Blocks the summary has written are skipped a summary word at a time;
// another block is tested whole first (and joins the summary when it is
// written: bytes stored word by word never pass through mark_blocks), then
// only where the range covers it.
bool TileSram::initialized(std::uint32_t address, std::uint32_t size) const {
  if (size == 0) return true;
  if (mapping_ == nullptr) return false;
  const std::uint32_t begin = offset(address), end = begin + size;
  const std::uint32_t end_block = (end - 1) / kBlockBytes + 1;
  constexpr std::uint32_t kBlockWords = kBlockBytes / 64;
  for (std::uint32_t block = begin / kBlockBytes; block < end_block;) {
    const auto written =
        static_cast<std::uint32_t>(std::countr_one(full_[block / 64] >> (block % 64)));
    if (written != 0) {
      block += std::min(written, 64 - block % 64);
      continue;
    }
    const std::uint64_t* words = written_ + std::size_t{block} * kBlockWords;
    if (std::all_of(words, words + kBlockWords,
                    [](std::uint64_t word) { return word == ~std::uint64_t{0}; })) {
      full_[block / 64] |= std::uint64_t{1} << (block % 64);
    } else {
      const std::uint32_t block_begin = block * kBlockBytes;
      if (!bits_set(std::max(begin, block_begin), std::min(end, block_begin + kBlockBytes))) {
        return false;
      }
    }
    ++block;
  }
  return true;
}

std::uint32_t TileSram::read_u32(std::uint32_t address, bool* initialized) const {
  if (address % 4 != 0) {
    // Callers pass aligned addresses; an unaligned one takes the byte path.
    std::array<std::uint8_t, 4> bytes{};
    read(address, bytes);
    if (initialized != nullptr) *initialized = this->initialized(address, 4);
    return load_u32_le(bytes.data());
  }
  const std::uint32_t at = offset(address);
  if (!materialised(at / kPageBytes)) {
    if (initialized != nullptr) *initialized = false;
    return poison_;
  }
  std::uint32_t value;
  std::memcpy(&value, data_ + at, 4);  // little-endian host
  if (initialized != nullptr) *initialized = (written_[at / 64] >> (at % 64) & 0xF) == 0xF;
  return value;
}

void TileSram::write_u32(std::uint32_t address, std::uint32_t value) {
  if (address % 4 != 0) {
    std::array<std::uint8_t, 4> bytes{};
    store_u32_le(value, bytes.data());
    write(address, bytes);
    return;
  }
  const std::uint32_t at = offset(address);
  if (!materialised(at / kPageBytes)) materialise(at / kPageBytes, at / kPageBytes + 1);
  std::memcpy(data_ + at, &value, 4);
  written_[at / 64] |= std::uint64_t{0xF} << (at % 64);
}

void TileSram::read(std::uint32_t address, std::span<std::uint8_t> bytes) const {
  for (std::size_t i = 0; i < bytes.size();) {
    const std::uint32_t at = offset(address) + static_cast<std::uint32_t>(i);
    const std::uint32_t in_page = at % kPageBytes;
    const std::size_t run = std::min<std::size_t>(bytes.size() - i, kPageBytes - in_page);
    if (!materialised(at / kPageBytes)) {
      for (std::size_t k = 0; k < run; ++k) {
        bytes[i + k] = poison_byte(static_cast<std::uint32_t>(at + k));
      }
    } else {
      std::memcpy(bytes.data() + i, data_ + at, run);
    }
    i += run;
  }
}

void TileSram::write(std::uint32_t address, std::span<const std::uint8_t> bytes) {
  if (bytes.empty()) return;
  const auto size = static_cast<std::uint32_t>(bytes.size());
  std::memcpy(this->bytes(address, size).data(), bytes.data(), bytes.size());
  mark_written(address, size);
}

void TileSram::clear() {
  if (mapping_ != nullptr && pages_in_use_ != 0) {
    // The host takes the pages back and hands out zero pages when they are
    // touched again: the data (re-poisoned when materialised) and the
    // written bitmap (zero: nothing written) both start afresh.
    ::madvise(data_, kDataBytes, MADV_DONTNEED);
    ::madvise(written_, kMappingBytes - kBitmapOffset, MADV_DONTNEED);
  }
  present_ = {};
  full_ = {};
  pages_in_use_ = 0;
}

}  // namespace tessera::sim
