#pragma once
// One Colossus relocation's field: the value's checks and the bits it writes
// (package-elf-profile.md §3.2). Every type is unsigned and absolute or
// image-relative; there are no PC-relative types. A value that is negative,
// misaligned for the type's scale, or too wide for its field is a LinkError
// naming the type, the value and the allowed range — never truncated, the
// prior art's one rule that its review praised without reservation.

#include <cstdint>
#include <span>

#include "compiler/elf/format.hpp"

namespace tessera::compiler::elf {

// The values a relocation type accepts: V in [lowest, highest], (V − lowest)
// a multiple of `step`. `highest` is UINT64_MAX for R_COLOSSUS_64.
struct RelocationRange {
  std::uint64_t lowest = 0;
  std::uint64_t highest = 0;
  std::uint64_t step = 1;
};
RelocationRange relocation_range(RelocationType type, std::uint32_t image_base = kImageBase);

// Writes V = S + A into `field` (exactly relocation_width(type) bytes,
// little-endian). The bits outside the type's field are kept; the field is
// cleared first, so the object's placeholder never leaks into the result.
// LinkError when V is out of the type's range or misaligned.
void apply_relocation(RelocationType type, std::int64_t value, std::span<std::uint8_t> field,
                      std::uint32_t image_base = kImageBase);

}  // namespace tessera::compiler::elf
