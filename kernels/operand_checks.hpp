#pragma once
// Precondition pieces kernels share. Each returns the reason a call's
// registers violate it (the text of the KernelPrecondition fault), or nullopt.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/registry.hpp"

namespace tessera::kernels {

using Violation = std::optional<std::string>;

// A memory operand as one call sees it: its register, role and footprint.
struct OperandExtent {
  unsigned reg = kOutputRegister;
  std::string_view role;
  std::uint64_t bytes = 0;
};

// The reasons, formatted only when a check fails (operand_checks.cpp).
namespace detail {
[[gnu::cold]] std::string misaligned_reason(const Registers& r, unsigned reg, unsigned alignment);
[[gnu::cold]] std::string beyond_address_space_reason(const Registers& r,
                                                      const OperandExtent& operand);
[[gnu::cold]] std::string partial_overlap_reason(const Registers& r, const OperandExtent& output,
                                                 const OperandExtent& input);
[[gnu::cold]] std::string overlap_reason(const Registers& r, const OperandExtent& output,
                                         const OperandExtent& input);
}  // namespace detail

// The tests are inline: a precondition runs before every simulated call,
// and on success it costs a few compares (no call, no division for a
// constant alignment).

// Whether the operands' footprints share a byte (an empty one shares none).
inline bool share_bytes(const Registers& r, const OperandExtent& a, const OperandExtent& b) {
  const std::uint64_t a_begin = r[a.reg];
  const std::uint64_t b_begin = r[b.reg];
  return a.bytes != 0 && b.bytes != 0 && a_begin < b_begin + b.bytes && b_begin < a_begin + a.bytes;
}

// Every register in `regs` is a multiple of `alignment`.
inline Violation misaligned(const Registers& r, std::initializer_list<unsigned> regs,
                            unsigned alignment) {
  for (const unsigned reg : regs) {
    if (r[reg] % alignment != 0) [[unlikely]] {
      return detail::misaligned_reason(r, reg, alignment);
    }
  }
  return std::nullopt;
}

// The operand's bytes end within the 32-bit address space, so the model's
// address arithmetic cannot wrap.
inline Violation beyond_address_space(const Registers& r, const OperandExtent& operand) {
  if (std::uint64_t{r[operand.reg]} + operand.bytes <= (std::uint64_t{1} << 32)) [[likely]] {
    return std::nullopt;
  }
  return detail::beyond_address_space_reason(r, operand);
}

// The output either aliases the input exactly (same pointer: element i is
// read before element i is written, on every worker) or shares no byte with
// it. A partial overlap would make results depend on the worker order.
inline Violation overlaps_unless_aliased(const Registers& r, const OperandExtent& output,
                                         const OperandExtent& input) {
  if (r[output.reg] == r[input.reg] || !share_bytes(r, output, input)) [[likely]] {
    return std::nullopt;
  }
  return detail::partial_overlap_reason(r, output, input);
}

// The output shares no byte with the input (an input re-read after outputs
// are written, such as a broadcast row).
inline Violation overlaps(const Registers& r, const OperandExtent& output,
                          const OperandExtent& input) {
  if (!share_bytes(r, output, input)) [[likely]] return std::nullopt;
  return detail::overlap_reason(r, output, input);
}

// The rules of an element-wise kernel with two inputs of the output's size
// (add, mul): every pointer word-aligned, every operand inside the address
// space, and the output aliasing each input exactly or not at all.
inline Violation elementwise_binary_violation(const Registers& r, const OperandExtent& out,
                                              const OperandExtent& left,
                                              const OperandExtent& right) {
  if (auto v = misaligned(r, {out.reg, left.reg, right.reg}, 4)) return v;
  for (const auto& operand : {out, left, right}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  if (auto v = overlaps_unless_aliased(r, out, left)) return v;
  return overlaps_unless_aliased(r, out, right);
}

}  // namespace tessera::kernels
