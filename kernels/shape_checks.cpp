#include "kernels/shape_checks.hpp"

#include <fmt/format.h>

namespace tessera::kernels {

Violation overlaps_because(const Registers& r, const OperandExtent& a, const OperandExtent& b,
                           std::string_view why) {
  const std::uint64_t a_begin = r[a.reg];
  const std::uint64_t b_begin = r[b.reg];
  if (a.bytes == 0 || b.bytes == 0 || a_begin >= b_begin + b.bytes ||
      b_begin >= a_begin + a.bytes) {
    return std::nullopt;
  }
  return fmt::format("$m{} ({}) [{:#x}, {:#x}) overlaps $m{} ({}) [{:#x}, {:#x}): {}", a.reg,
                     a.role, a_begin, a_begin + a.bytes, b.reg, b.role, b_begin, b_begin + b.bytes,
                     why);
}

Violation not_multiple(const Registers& r, unsigned reg, std::string_view role, std::uint32_t unit,
                       std::string_view why) {
  if (r[reg] % unit == 0) return std::nullopt;
  return fmt::format("$m{} ({}) = {} is not a multiple of {}: {}", reg, role, r[reg], unit, why);
}

}  // namespace tessera::kernels
