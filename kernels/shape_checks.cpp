#include "kernels/shape_checks.hpp"

#include <fmt/format.h>

namespace tessera::kernels::detail {

std::string overlap_because_reason(const Registers& r, const OperandExtent& a,
                                   const OperandExtent& b, std::string_view why) {
  const std::uint64_t a_begin = r[a.reg];
  const std::uint64_t b_begin = r[b.reg];
  return fmt::format("$m{} ({}) [{:#x}, {:#x}) overlaps $m{} ({}) [{:#x}, {:#x}): {}", a.reg,
                     a.role, a_begin, a_begin + a.bytes, b.reg, b.role, b_begin, b_begin + b.bytes,
                     why);
}

std::string not_multiple_reason(const Registers& r, unsigned reg, std::string_view role,
                                std::uint32_t unit, std::string_view why) {
  return fmt::format("$m{} ({}) = {} is not a multiple of {}: {}", reg, role, r[reg], unit, why);
}

}  // namespace tessera::kernels::detail
