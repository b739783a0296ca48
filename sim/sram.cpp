#include "sim/sram.hpp"

#include <cstring>

namespace tessera::sim {

TileSram::Page& TileSram::page_for_write(std::uint32_t index) {
  auto& page = pages_[index];
  if (!page) {
    page = std::make_unique<Page>();
    for (std::uint32_t i = 0; i < kPageBytes; ++i) page->bytes[i] = poison_byte(i);
    ++pages_in_use_;
  }
  return *page;
}

std::uint32_t TileSram::read_u32(std::uint32_t address, bool* initialized) const {
  const std::uint32_t offset = address - target::kSramBase;
  const Page* page = pages_[offset / kPageBytes].get();
  if (page == nullptr) {
    if (initialized != nullptr) *initialized = false;
    return poison_;
  }
  const std::uint32_t in_page = offset % kPageBytes;
  std::uint32_t value;
  std::memcpy(&value, page->bytes.data() + in_page, 4);  // little-endian host
  if (initialized != nullptr) {
    *initialized = page->written[in_page] && page->written[in_page + 1] &&
                   page->written[in_page + 2] && page->written[in_page + 3];
  }
  return value;
}

void TileSram::write_u32(std::uint32_t address, std::uint32_t value) {
  const std::uint32_t offset = address - target::kSramBase;
  Page& page = page_for_write(offset / kPageBytes);
  const std::uint32_t in_page = offset % kPageBytes;
  std::memcpy(page.bytes.data() + in_page, &value, 4);
  for (std::uint32_t i = 0; i < 4; ++i) page.written[in_page + i] = true;
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
    for (std::size_t k = 0; k < run; ++k) page.written[in_page + k] = true;
    i += run;
  }
}

bool TileSram::initialized(std::uint32_t address, std::uint32_t size) const {
  for (std::uint32_t i = 0; i < size; ++i) {
    const std::uint32_t offset = address + i - target::kSramBase;
    const Page* page = pages_[offset / kPageBytes].get();
    if (page == nullptr || !page->written[offset % kPageBytes]) return false;
  }
  return true;
}

void TileSram::clear() {
  for (auto& page : pages_) page.reset();
  pages_in_use_ = 0;
}

}  // namespace tessera::sim
