#include "kernels/operand_checks.hpp"

#include <fmt/format.h>

namespace tessera::kernels {
namespace {

std::string describe(const Registers& r, const OperandExtent& operand) {
  return fmt::format("$m{} ({}) [{:#x}, {:#x})", operand.reg, operand.role, r[operand.reg],
                     std::uint64_t{r[operand.reg]} + operand.bytes);
}

bool share_bytes(const Registers& r, const OperandExtent& a, const OperandExtent& b) {
  const std::uint64_t a_begin = r[a.reg];
  const std::uint64_t b_begin = r[b.reg];
  return a.bytes != 0 && b.bytes != 0 && a_begin < b_begin + b.bytes && b_begin < a_begin + a.bytes;
}

}  // namespace

Violation misaligned(const Registers& r, std::initializer_list<unsigned> regs, unsigned alignment) {
  for (const unsigned reg : regs) {
    if (r[reg] % alignment == 0) continue;
    if (alignment == 4) return fmt::format("$m{} = {:#x} is not word-aligned", reg, r[reg]);
    return fmt::format("$m{} = {:#x} is not {}-byte aligned", reg, r[reg], alignment);
  }
  return std::nullopt;
}

Violation beyond_address_space(const Registers& r, const OperandExtent& operand) {
  if (std::uint64_t{r[operand.reg]} + operand.bytes <= (std::uint64_t{1} << 32)) return std::nullopt;
  return fmt::format("{} reaches past the 32-bit address space ({} bytes)", describe(r, operand),
                     operand.bytes);
}

Violation overlaps_unless_aliased(const Registers& r, const OperandExtent& output,
                                  const OperandExtent& input) {
  if (r[output.reg] == r[input.reg] || !share_bytes(r, output, input)) return std::nullopt;
  return fmt::format("{} partially overlaps {}; an output may alias an input only exactly",
                     describe(r, output), describe(r, input));
}

Violation overlaps(const Registers& r, const OperandExtent& output, const OperandExtent& input) {
  if (!share_bytes(r, output, input)) return std::nullopt;
  return fmt::format("{} overlaps {}, which the kernel re-reads after writing outputs",
                     describe(r, output), describe(r, input));
}

Violation elementwise_binary_violation(const Registers& r, const OperandExtent& out,
                                       const OperandExtent& left, const OperandExtent& right) {
  if (auto v = misaligned(r, {out.reg, left.reg, right.reg}, 4)) return v;
  for (const auto& operand : {out, left, right}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  if (auto v = overlaps_unless_aliased(r, out, left)) return v;
  return overlaps_unless_aliased(r, out, right);
}

}  // namespace tessera::kernels
