#pragma once
// A kernel call described by its operands, run through the simulator with
// KernelRun (every span checked against the call site's allocations), and the
// checks every kernel's tests share: each memory operand's allocation one
// element short is a KernelOverrun naming that operand.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "sim/options.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels::testing {

// One memory operand: its register, its element size (what "one element
// short" means), and its initial bytes (empty for an output never written
// before the call). `bytes` is the allocation's size when it differs from
// the contents' (an output). An operand that aliases another names it.
struct CaseOperand {
  unsigned reg = kOutputRegister;
  std::string name;
  unsigned element_bytes = 1;
  std::vector<std::uint8_t> contents;
  std::uint32_t bytes = 0;  // 0: contents.size()
  std::optional<unsigned> alias_of;

  std::uint32_t size() const {
    return bytes != 0 ? bytes : static_cast<std::uint32_t>(contents.size());
  }
};

// An input (or read-write operand) with its bytes; an output of `bytes`
// bytes, never written before the call; an operand at another's address.
inline CaseOperand input(unsigned reg, std::string name, unsigned element_bytes,
                         std::vector<std::uint8_t> contents) {
  CaseOperand operand;
  operand.reg = reg;
  operand.name = std::move(name);
  operand.element_bytes = element_bytes;
  operand.contents = std::move(contents);
  return operand;
}
inline CaseOperand output(unsigned reg, std::string name, unsigned element_bytes,
                          std::uint32_t bytes) {
  CaseOperand operand = input(reg, std::move(name), element_bytes, {});
  operand.bytes = bytes;
  return operand;
}
inline CaseOperand alias(unsigned reg, std::string name, unsigned element_bytes, unsigned of) {
  CaseOperand operand = input(reg, std::move(name), element_bytes, {});
  operand.alias_of = of;
  return operand;
}

struct KernelCase {
  std::string_view kernel;
  std::vector<CaseOperand> operands;
  std::vector<std::pair<unsigned, std::uint32_t>> scalars;

  // Buffers go one after another from kBufferBase, each 64-byte aligned with
  // a 64-byte gap, so a stray byte past one belongs to no allocation.
  std::uint32_t address(unsigned reg) const;
  Registers registers() const;
  // The allocations; `shrink_reg`'s one element short.
  std::vector<Buffer> buffers(std::optional<unsigned> shrink_reg = std::nullopt) const;
};

struct CaseResult {
  bool halted = false;
  std::string fault;  // "" when halted
  sim::FaultKind kind{};
  std::uint64_t kernel_cycles = 0;                         // total minus the supervisor's own
  std::map<unsigned, std::vector<std::uint8_t>> operands;  // every operand's bytes after the call

  template <typename T>
  std::vector<T> values(unsigned reg) const {
    const auto& bytes = operands.at(reg);
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
};

CaseResult run_case(const KernelCase& c, sim::SimOptions options = {},
                    std::optional<unsigned> shrink_reg = std::nullopt);

// Each operand that is not an alias, shrunk by one element, makes the call
// a KernelOverrun whose message names "operand $mN ".
void expect_each_short_operand_overruns(const KernelCase& c);

// The precondition refuses the registers with a message containing `reason`.
void expect_precondition_failure(std::string_view kernel, const Registers& registers,
                                 const std::string& reason);

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

}  // namespace tessera::kernels::testing
