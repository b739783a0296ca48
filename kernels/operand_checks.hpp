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

// Every register in `regs` is a multiple of `alignment`.
Violation misaligned(const Registers& r, std::initializer_list<unsigned> regs, unsigned alignment);

// The operand's bytes end within the 32-bit address space, so the model's
// address arithmetic cannot wrap.
Violation beyond_address_space(const Registers& r, const OperandExtent& operand);

// The output either aliases the input exactly (same pointer: element i is
// read before element i is written, on every worker) or shares no byte with
// it. A partial overlap would make results depend on the worker order.
Violation overlaps_unless_aliased(const Registers& r, const OperandExtent& output,
                                  const OperandExtent& input);

// The output shares no byte with the input (an input re-read after outputs
// are written, such as a broadcast row).
Violation overlaps(const Registers& r, const OperandExtent& output, const OperandExtent& input);

// The rules of an element-wise kernel with two inputs of the output's size
// (add, mul): every pointer word-aligned, every operand inside the address
// space, and the output aliasing each input exactly or not at all.
Violation elementwise_binary_violation(const Registers& r, const OperandExtent& out,
                                       const OperandExtent& left, const OperandExtent& right);

}  // namespace tessera::kernels
