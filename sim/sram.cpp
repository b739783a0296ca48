#include "sim/sram.hpp"

#include <algorithm>
#include <cstring>

#include "support/little_endian.hpp"

namespace tessera::sim {
namespace {

// The bits [offset, offset + count) of a 64-bit word; 1 ≤ count ≤ 64 − offset.
constexpr std::uint64_t bit_range(std::uint32_t offset, std::uint32_t count) noexcept {
  const std::uint64_t ones = count >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << count) - 1;
  return ones << offset;
}

}  // namespace

void TileSram::mark_written(Page& page, std::uint32_t begin, std::uint32_t count) noexcept {
  for (std::uint32_t byte = begin, end = begin + count; byte < end;) {
    const std::uint32_t offset = byte % 64;
    const std::uint32_t run = std::min(end - byte, 64 - offset);
    page.written[byte / 64] |= bit_range(offset, run);
    byte += run;
  }
}

bool TileSram::all_written(const Page& page, std::uint32_t begin, std::uint32_t count) noexcept {
  for (std::uint32_t byte = begin, end = begin + count; byte < end;) {
    const std::uint32_t offset = byte % 64;
    const std::uint32_t run = std::min(end - byte, 64 - offset);
    const std::uint64_t mask = bit_range(offset, run);
    if ((page.written[byte / 64] & mask) != mask) return false;
    byte += run;
  }
  return true;
}

TileSram::Page& TileSram::page_for_write(std::uint32_t index) {
  auto& page = pages_[index];
  if (!page) {
    page = std::make_unique_for_overwrite<Page>();
    page->written.fill(0);
    // A new page reads as the poison (pages start 4-aligned, so its pattern
    // repeats every word).
    std::uint8_t pattern[4];
    for (std::uint32_t i = 0; i < 4; ++i) pattern[i] = poison_byte(i);
    for (std::uint32_t i = 0; i < kPageBytes; i += 4) {
      std::memcpy(page->bytes.data() + i, pattern, 4);
    }
    ++pages_in_use_;
  }
  return *page;
}

std::uint32_t TileSram::read_u32(std::uint32_t address, bool* initialized) const {
  if (address % 4 != 0) {
    // Callers pass aligned addresses; an unaligned one must still never read
    // past a page, so it takes the byte path.
    std::array<std::uint8_t, 4> bytes{};
    read(address, bytes);
    if (initialized != nullptr) *initialized = this->initialized(address, 4);
    return load_u32_le(bytes.data());
  }
  const std::uint32_t offset = address - target::kSramBase;
  const Page* page = pages_[offset / kPageBytes].get();
  if (page == nullptr) {
    if (initialized != nullptr) *initialized = false;
    return poison_;
  }
  const std::uint32_t in_page = offset % kPageBytes;
  std::uint32_t value;
  std::memcpy(&value, page->bytes.data() + in_page, 4);  // little-endian host
  if (initialized != nullptr) *initialized = all_written(*page, in_page, 4);
  return value;
}

void TileSram::write_u32(std::uint32_t address, std::uint32_t value) {
  if (address % 4 != 0) {
    std::array<std::uint8_t, 4> bytes{};
    store_u32_le(value, bytes.data());
    write(address, bytes);
    return;
  }
  const std::uint32_t offset = address - target::kSramBase;
  Page& page = page_for_write(offset / kPageBytes);
  const std::uint32_t in_page = offset % kPageBytes;
  std::memcpy(page.bytes.data() + in_page, &value, 4);
  mark_written(page, in_page, 4);
}

void TileSram::read(std::uint32_t address, std::span<std::uint8_t> bytes) const {
  for (std::size_t i = 0; i < bytes.size();) {
    const std::uint32_t offset = address + static_cast<std::uint32_t>(i) - target::kSramBase;
    const std::uint32_t in_page = offset % kPageBytes;
    const std::size_t run = std::min<std::size_t>(bytes.size() - i, kPageBytes - in_page);
    const Page* page = pages_[offset / kPageBytes].get();
    if (page == nullptr) {
      for (std::size_t k = 0; k < run; ++k) {
        bytes[i + k] = poison_byte(static_cast<std::uint32_t>(offset + k));
      }
    } else {
      std::memcpy(bytes.data() + i, page->bytes.data() + in_page, run);
    }
    i += run;
  }
}

void TileSram::write(std::uint32_t address, std::span<const std::uint8_t> bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    const std::uint32_t offset = address + static_cast<std::uint32_t>(i) - target::kSramBase;
    const std::uint32_t in_page = offset % kPageBytes;
    const std::size_t run = std::min<std::size_t>(bytes.size() - i, kPageBytes - in_page);
    Page& page = page_for_write(offset / kPageBytes);
    std::memcpy(page.bytes.data() + in_page, bytes.data() + i, run);
    mark_written(page, in_page, static_cast<std::uint32_t>(run));
    i += run;
  }
}

bool TileSram::initialized(std::uint32_t address, std::uint32_t size) const {
  for (std::uint32_t i = 0; i < size;) {
    const std::uint32_t offset = address + i - target::kSramBase;
    const std::uint32_t in_page = offset % kPageBytes;
    const std::uint32_t run = std::min(size - i, kPageBytes - in_page);
    const Page* page = pages_[offset / kPageBytes].get();
    if (page == nullptr || !all_written(*page, in_page, run)) return false;
    i += run;
  }
  return true;
}

void TileSram::clear() {
  for (auto& page : pages_) page.reset();
  pages_in_use_ = 0;
}

}  // namespace tessera::sim
