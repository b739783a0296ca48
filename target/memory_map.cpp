#include "target/memory_map.hpp"

#include <ostream>

#include "support/checked.hpp"

namespace tessera::target {

namespace detail {

void throw_reversed_range(std::uint32_t begin, std::uint32_t end) {
  throw ArithmeticError(fmt::format("address range: end {:#x} is below begin {:#x}", end, begin));
}

void throw_bad_element(unsigned index) {
  throw UsageError(fmt::format("memory element {} does not exist (elements are 0..{})", index,
                               kElementCount - 1));
}

}  // namespace detail

AddressRange AddressRange::from_size(std::uint32_t first, std::uint32_t bytes,
                                     std::string_view what) {
  return AddressRange(first, checked_add(first, bytes, what));
}

std::ostream& operator<<(std::ostream& out, const AddressRange& range) {
  return out << fmt::format("{}", range);
}

std::ostream& operator<<(std::ostream& out, MemoryElement element) {
  return out << "element " << element.index();
}

std::uint32_t worker_stack_base(unsigned worker) {
  if (worker >= kWorkerCount) {
    throw UsageError(
        fmt::format("worker {} does not exist (workers are 0..{})", worker, kWorkerCount - 1));
  }
  return kWorkerStackBase0 + worker * kWorkerStackStride;
}

namespace {

void require_sram(std::uint32_t address) {
  if (!kSram.contains(address)) {
    throw AddressError(fmt::format("address {:#x} is outside tile SRAM {}", address, kSram));
  }
}

}  // namespace

MemoryRegion region_of(std::uint32_t address) {
  require_sram(address);
  return kStandardRegion.contains(address) ? MemoryRegion::kStandard : MemoryRegion::kInterleaved;
}

MemoryElement element_of(std::uint32_t address) {
  require_sram(address);
  if (kStandardRegion.contains(address)) {
    return MemoryElement((address - kStandardRegion.begin) / kStandardElementSize);
  }
  return MemoryElement(kStandardElementCount +
                       (address - kInterleavedRegion.begin) / kInterleavedElementSize);
}

// Element numbers rise with addresses and the regions are adjacent, so a range
// touches exactly the run from its first byte's element to its last byte's.
ElementSet elements_of(const AddressRange& range) {
  if (range.empty()) return ElementSet();
  if (!in_sram(range)) {
    throw AddressError(fmt::format("address range {} leaves tile SRAM {}", range, kSram));
  }
  return ElementSet::between(element_of(range.begin), element_of(range.end - 1));
}

}  // namespace tessera::target
