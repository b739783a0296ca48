#pragma once
// Precondition pieces of the element-wise, layout, F143 and LayerNorm kernels,
// next to operand_checks.hpp's shared ones. Each returns the reason a call's
// registers violate it (the text of the KernelPrecondition fault), or nullopt.

#include <cstdint>
#include <string_view>

#include "kernels/operand_checks.hpp"

namespace tessera::kernels {

namespace detail {
[[gnu::cold]] std::string overlap_because_reason(const Registers& r, const OperandExtent& a,
                                                 const OperandExtent& b, std::string_view why);
[[gnu::cold]] std::string not_multiple_reason(const Registers& r, unsigned reg,
                                              std::string_view role, std::uint32_t unit,
                                              std::string_view why);
}  // namespace detail

// `a` and `b` share no byte; `why` says why not even an exact alias is
// allowed ("the element sizes differ", "rows are permuted across workers").
inline Violation overlaps_because(const Registers& r, const OperandExtent& a,
                                  const OperandExtent& b, std::string_view why) {
  if (!share_bytes(r, a, b)) [[likely]] return std::nullopt;
  return detail::overlap_because_reason(r, a, b, why);
}

// Register `reg` (its role named) is a multiple of `unit`; `why` gives the reason.
inline Violation not_multiple(const Registers& r, unsigned reg, std::string_view role,
                              std::uint32_t unit, std::string_view why) {
  if (r[reg] % unit == 0) [[likely]] return std::nullopt;
  return detail::not_multiple_reason(r, reg, role, unit, why);
}

}  // namespace tessera::kernels
