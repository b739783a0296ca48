#include "kernels/operand_checks.hpp"

#include <fmt/format.h>

namespace tessera::kernels {
namespace {

std::string describe(const Registers& r, const OperandExtent& operand) {
  return fmt::format("$m{} ({}) [{:#x}, {:#x})", operand.reg, operand.role, r[operand.reg],
                     std::uint64_t{r[operand.reg]} + operand.bytes);
}

}  // namespace

namespace detail {

std::string misaligned_reason(const Registers& r, unsigned reg, unsigned alignment) {
  if (alignment == 4) return fmt::format("$m{} = {:#x} is not word-aligned", reg, r[reg]);
  return fmt::format("$m{} = {:#x} is not {}-byte aligned", reg, r[reg], alignment);
}

std::string beyond_address_space_reason(const Registers& r, const OperandExtent& operand) {
  return fmt::format("{} reaches past the 32-bit address space ({} bytes)", describe(r, operand),
                     operand.bytes);
}

std::string partial_overlap_reason(const Registers& r, const OperandExtent& output,
                                   const OperandExtent& input) {
  return fmt::format("{} partially overlaps {}; an output may alias an input only exactly",
                     describe(r, output), describe(r, input));
}

std::string overlap_reason(const Registers& r, const OperandExtent& output,
                           const OperandExtent& input) {
  return fmt::format("{} overlaps {}, which the kernel re-reads after writing outputs",
                     describe(r, output), describe(r, input));
}

}  // namespace detail
}  // namespace tessera::kernels
