#pragma once
// Tile memory geometry (reference §2): the one owner of every address fact.
//
// Three kinds of fact live here:
//   * the chip's: SRAM, its two regions, memory elements, the executable range;
//   * the loader's: where images may be loaded and how frames are sized;
//   * the addresses Tessera reserves (§2.4, taken from the reference stack's
//     HEAD): entry trampoline, exchange window and its host-packet slots,
//     runtime state, worker stacks and the two linker regions.
// Anything else that needs an address includes this header instead of
// restating a number.
//
// Addresses are tile-local byte addresses (std::uint32_t). Ranges are
// half-open; building one checks that it neither wraps nor runs backwards.

#include <bit>
#include <cstdint>
#include <iosfwd>
#include <string_view>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::target {

namespace detail {
[[noreturn]] void throw_reversed_range(std::uint32_t begin, std::uint32_t end);
[[noreturn]] void throw_bad_element(unsigned index);
}  // namespace detail

// [begin, end). The constructors guarantee begin <= end; keep it when
// assigning the members directly.
struct AddressRange {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;

  constexpr AddressRange() = default;
  // Throws ArithmeticError when end < begin.
  constexpr AddressRange(std::uint32_t first, std::uint32_t last) : begin(first), end(last) {
    if (last < first) detail::throw_reversed_range(first, last);
  }
  // [first, first + bytes); ArithmeticError naming `what` when the end wraps 32 bits.
  static AddressRange from_size(std::uint32_t first, std::uint32_t bytes,
                                std::string_view what = "address range");

  constexpr std::uint32_t size() const noexcept { return end - begin; }
  constexpr bool empty() const noexcept { return begin == end; }
  constexpr bool contains(std::uint32_t address) const noexcept {
    return begin <= address && address < end;
  }
  // Bounds only: an empty range at either edge of this one is contained.
  constexpr bool contains(const AddressRange& other) const noexcept {
    return begin <= other.begin && other.end <= end;
  }
  // Empty ranges overlap nothing.
  constexpr bool overlaps(const AddressRange& other) const noexcept {
    return begin < other.end && other.begin < end && !empty() && !other.empty();
  }
  friend constexpr bool operator==(const AddressRange&, const AddressRange&) = default;
};

std::ostream& operator<<(std::ostream& out, const AddressRange& range);

// An address outside the memory it must lie in (SRAM, a window).
class AddressError : public InputError {
 public:
  using InputError::InputError;
};

// ---------------------------------------------------------------------------
// SRAM and elements (§2.1)

// 624 KiB of tile SRAM.
inline constexpr std::uint32_t kSramBase = 0x4C000;
inline constexpr std::uint32_t kSramSize = 0x9C000;
inline constexpr std::uint32_t kSramEnd = 0xE8000;
inline constexpr AddressRange kSram{kSramBase, kSramEnd};
static_assert(kSramBase + kSramSize == kSramEnd);

// Region 0: one 16 KiB element per 16 KiB; the only region instructions can be fetched from.
inline constexpr AddressRange kStandardRegion{kSramBase, 0x80000};
// Region 1: 64-bit words striped over a pair of physical elements (interleave factor 2).
inline constexpr AddressRange kInterleavedRegion{0x80000, kSramEnd};
// TMEM_ELEMSIZE, the physical element.
inline constexpr std::uint32_t kStandardElementSize = 0x4000;
// Two physical elements act as one for conflicts in the interleaved region.
inline constexpr std::uint32_t kInterleavedElementSize = 0x8000;
// The first interleaved effective element, kept for operands with Poplar's
// interleaved-memory constraint. A placement choice, not an architectural bound.
inline constexpr AddressRange kInterleavedOperandWindow{0x80000, 0x88000};
// Instruction fetch works only in the standard region.
inline constexpr AddressRange kExecutableRange = kStandardRegion;

// Elements are numbered in address order across both regions (OLD's scheme):
// standard 0..12, interleaved effective 13..25.
inline constexpr unsigned kStandardElementCount = kStandardRegion.size() / kStandardElementSize;
inline constexpr unsigned kInterleavedElementCount =
    kInterleavedRegion.size() / kInterleavedElementSize;
inline constexpr unsigned kElementCount = kStandardElementCount + kInterleavedElementCount;
static_assert(kStandardElementCount == 13 && kInterleavedElementCount == 13);
static_assert(kStandardRegion.size() % kStandardElementSize == 0 &&
              kInterleavedRegion.size() % kInterleavedElementSize == 0);

// ---------------------------------------------------------------------------
// Loader and image layout (§2.3)

// APPLICATION_LOAD_BASE: each image's lowest segment starts here [HW][SDK].
inline constexpr std::uint32_t kLoadBase = 0x4C010;
// Secondary loader frames: 16-byte header, payload, 16-byte 0xFF trailer.
inline constexpr std::uint32_t kLoaderFrameBytes = 1024;
inline constexpr std::uint32_t kLoaderFramePayload = 992;
inline constexpr std::uint32_t kLoaderMaxFrames = 643;
// The highest address the loader can populate, exclusive [HW][SDK].
inline constexpr std::uint32_t kLoadLimit = 0xE7BB0;
inline constexpr AddressRange kLoadable{kLoadBase, kLoadLimit};
static_assert(kLoadBase + kLoaderMaxFrames * kLoaderFramePayload == kLoadLimit);
static_assert(kLoaderFrameBytes == 16 + kLoaderFramePayload + 16);
static_assert(kSramEnd - kLoadLimit == 0x450);  // the unloadable tail of SRAM
// One-frame images stall the loader; payloads are padded to this size. Cause unknown [HW].
inline constexpr std::uint32_t kMinImagePayload = 0x4134;
// The bootloader ELF segment, installed by the PCI autoloader (zone 32) [HW].
inline constexpr std::uint32_t kBootloaderBase = 0x4C000;
inline constexpr std::uint32_t kBootloaderMaxSize = 4096;
// Supervisors start executing here, at the trampoline, not at the SDK's 0x4C014 symbol [INF].
inline constexpr std::uint32_t kEntryPoint = kLoadBase;

// ---------------------------------------------------------------------------
// The addresses Tessera reserves (§2.4, the reference stack's HEAD layout)

// `setzi $m0, <start>; br $m0`.
inline constexpr AddressRange kEntryTrampoline{kLoadBase, 0x4C018};
// Runtime and kernels.
inline constexpr AddressRange kLinkerRegion1{0x4C018, 0x50000};
// Host exchange aperture, reserved (EXCHANGE_WINDOW_BASE/BYTES).
inline constexpr AddressRange kExchangeWindow{0x50000, 0x58000};
// The part H2D packets can address: a 9-bit field in 32-byte units.
inline constexpr AddressRange kH2dWindow{0x50000, 0x54000};
inline constexpr std::uint32_t kH2dAddressUnit = 32;
static_assert(kH2dWindow.size() == 512 * kH2dAddressUnit);
// XREQ bitmap, two words.
inline constexpr std::uint32_t kXreqBitmap = 0x50000;
// Target packet headers, 8 bytes each.
inline constexpr std::uint32_t kTargetPacketHeaders = 0x50008;
// D2H "close" destination, the zero-byte read target.
inline constexpr std::uint32_t kD2hClose = 0x50160;
// H2D staging buffer, at most 4096 bytes.
inline constexpr std::uint32_t kH2dStaging = 0x50180;
inline constexpr std::uint32_t kH2dStagingMaxBytes = 4096;
static_assert(kH2dWindow.contains(AddressRange{kH2dStaging, kH2dStaging + kH2dStagingMaxBytes}));

// Runtime state. The completion word is set to 1 when the program ends; the run
// gate and run finish double as the profile's start and end cycle words.
inline constexpr std::uint32_t kCompletionWord = 0x58000;
inline constexpr std::uint32_t kRunGate = 0x58004;
inline constexpr std::uint32_t kRunFinish = 0x58008;
// Worker k's stack base is kWorkerStackBase0 + k·kWorkerStackStride (WORKER_STACK_HEADROOM 0xE0).
inline constexpr std::uint32_t kWorkerStackBase0 = 0x580E0;
inline constexpr std::uint32_t kWorkerStackStride = 0x100;
inline constexpr unsigned kWorkerCount = 6;
// $m11 at startup; the supervisor stack grows down from here.
inline constexpr std::uint32_t kSupervisorStackInitial =
    kWorkerStackBase0 + kWorkerCount * kWorkerStackStride;
// IPU21_DATA_BASE: planned data starts where runtime state ends.
inline constexpr std::uint32_t kDataBase = 0x586E0;
inline constexpr AddressRange kRuntimeState{kCompletionWord, kDataBase};
static_assert(kSupervisorStackInitial == kDataBase);
// Runtime-state end rounded up to an element; code and data in any free space below 0x80000.
inline constexpr AddressRange kLinkerRegion2{0x5C000, 0x80000};

// Worker k's stack base; UsageError for k ≥ 6.
std::uint32_t worker_stack_base(unsigned worker);

// ---------------------------------------------------------------------------
// Alignment (§2.5)

inline constexpr std::uint32_t kWordBytes = 4;
// Paired 64-bit sends and host packet addresses.
inline constexpr std::uint32_t kPairedAlignment = 8;
// H2D tile addresses and PACE (AMP) operands.
inline constexpr std::uint32_t kH2dAlignment = kH2dAddressUnit;
inline constexpr std::uint32_t kPaceOperandAlignment = 32;
// Guard after exchange-row tables: 8 × 8-byte supervisor fetch lookahead (HEAD codegen).
inline constexpr std::uint32_t kFetchLookahead = 64;

// `alignment` must be a power of two.
constexpr bool is_aligned(std::uint32_t address, std::uint32_t alignment) noexcept {
  return (address & (alignment - 1)) == 0;
}
constexpr bool is_word_aligned(std::uint32_t address) noexcept {
  return is_aligned(address, kWordBytes);
}

// ---------------------------------------------------------------------------
// Regions and predicates

enum class MemoryRegion : std::uint8_t { kStandard, kInterleaved };

// AddressError outside SRAM.
MemoryRegion region_of(std::uint32_t address);

constexpr bool in_sram(const AddressRange& range) noexcept { return kSram.contains(range); }
// Code may be fetched only from SRAM below 0x80000.
constexpr bool is_executable(const AddressRange& range) noexcept {
  return kExecutableRange.contains(range);
}
constexpr bool is_loadable(const AddressRange& range) noexcept { return kLoadable.contains(range); }
constexpr bool in_exchange_window(const AddressRange& range) noexcept {
  return kExchangeWindow.contains(range);
}
constexpr bool in_h2d_window(const AddressRange& range) noexcept {
  return kH2dWindow.contains(range);
}

// ---------------------------------------------------------------------------
// Memory elements: the unit of the TEXCPT_CONFLICT rules (§2.2)

// One element in the sequential numbering: 0..12 standard, 13..25 interleaved.
class MemoryElement {
 public:
  // UsageError for index ≥ 26.
  constexpr explicit MemoryElement(unsigned index) : index_(static_cast<std::uint8_t>(index)) {
    if (index >= kElementCount) detail::throw_bad_element(index);
  }
  constexpr unsigned index() const noexcept { return index_; }
  constexpr MemoryRegion region() const noexcept {
    return index_ < kStandardElementCount ? MemoryRegion::kStandard : MemoryRegion::kInterleaved;
  }
  friend constexpr auto operator<=>(const MemoryElement&, const MemoryElement&) = default;

 private:
  std::uint8_t index_;
};

std::ostream& operator<<(std::ostream& out, MemoryElement element);

// A set of elements as a 26-bit mask: the compiler and simulator intersect
// these for every send, receive and code fetch.
class ElementSet {
 public:
  constexpr ElementSet() = default;

  static constexpr ElementSet of(MemoryElement element) noexcept {
    return ElementSet(std::uint32_t{1} << element.index());
  }
  // Elements first..last inclusive; empty when last < first.
  static constexpr ElementSet between(MemoryElement first, MemoryElement last) noexcept {
    if (last < first) return ElementSet();
    const std::uint32_t up_to_last = (std::uint32_t{2} << last.index()) - 1;
    const std::uint32_t below_first = (std::uint32_t{1} << first.index()) - 1;
    return ElementSet(up_to_last & ~below_first);
  }

  constexpr bool contains(MemoryElement element) const noexcept {
    return ((mask_ >> element.index()) & 1u) != 0;
  }
  constexpr bool intersects(ElementSet other) const noexcept { return (mask_ & other.mask_) != 0; }
  constexpr bool empty() const noexcept { return mask_ == 0; }
  constexpr int count() const noexcept { return std::popcount(mask_); }
  // Bit i is element i.
  constexpr std::uint32_t mask() const noexcept { return mask_; }

  constexpr ElementSet& operator|=(ElementSet other) noexcept {
    mask_ |= other.mask_;
    return *this;
  }
  friend constexpr ElementSet operator|(ElementSet a, ElementSet b) noexcept { return a |= b; }
  friend constexpr ElementSet operator&(ElementSet a, ElementSet b) noexcept {
    return ElementSet(a.mask_ & b.mask_);
  }
  friend constexpr bool operator==(ElementSet, ElementSet) = default;

 private:
  constexpr explicit ElementSet(std::uint32_t mask) noexcept : mask_(mask) {}

  std::uint32_t mask_ = 0;
};

// The element holding `address`; AddressError outside SRAM.
MemoryElement element_of(std::uint32_t address);
// The elements a byte range touches: empty for an empty range, AddressError
// when a non-empty range leaves SRAM.
ElementSet elements_of(const AddressRange& range);
// The bytes an element covers (32 KiB for interleaved effective elements).
constexpr AddressRange element_range(MemoryElement element) noexcept {
  const unsigned i = element.index();
  if (i < kStandardElementCount) {
    const std::uint32_t begin = kStandardRegion.begin + i * kStandardElementSize;
    return AddressRange{begin, begin + kStandardElementSize};
  }
  const std::uint32_t begin =
      kInterleavedRegion.begin + (i - kStandardElementCount) * kInterleavedElementSize;
  return AddressRange{begin, begin + kInterleavedElementSize};
}

}  // namespace tessera::target

template <>
struct fmt::formatter<tessera::target::AddressRange> {
  constexpr auto parse(fmt::format_parse_context& context) {
    if (context.begin() != context.end() && *context.begin() != '}') {
      throw fmt::format_error("AddressRange takes no format specification");
    }
    return context.begin();
  }
  template <typename FormatContext>
  auto format(const tessera::target::AddressRange& range, FormatContext& context) const {
    return fmt::format_to(context.out(), "[{:#x}, {:#x})", range.begin, range.end);
  }
};
