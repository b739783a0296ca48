#include "tests/kernels/kernel_case.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tessera::kernels::testing {

std::uint32_t KernelCase::address(unsigned reg) const {
  std::uint32_t next = kBufferBase;
  std::map<unsigned, std::uint32_t> placed;
  for (const CaseOperand& operand : operands) {
    if (operand.alias_of) {
      placed[operand.reg] = placed.at(*operand.alias_of);
    } else {
      placed[operand.reg] = next;
      next += (operand.size() + 63) / 64 * 64 + 64;
    }
  }
  const auto it = placed.find(reg);
  if (it == placed.end()) throw std::invalid_argument(fmt::format("no operand $m{}", reg));
  return it->second;
}

Registers KernelCase::registers() const {
  Registers r{};
  for (const CaseOperand& operand : operands) r[operand.reg] = address(operand.reg);
  for (const auto& [reg, value] : scalars) r[reg] = value;
  return r;
}

std::vector<Buffer> KernelCase::buffers(std::optional<unsigned> shrink_reg) const {
  std::vector<Buffer> result;
  for (const CaseOperand& operand : operands) {
    if (operand.alias_of) continue;
    std::uint32_t size = operand.size();
    if (shrink_reg == operand.reg) size -= operand.element_bytes;
    result.push_back(Buffer{operand.name, address(operand.reg), size, operand.contents});
  }
  return result;
}

CaseResult run_case(const KernelCase& c, sim::SimOptions options,
                    std::optional<unsigned> shrink_reg) {
  KernelRun run(c.kernel, c.registers(), c.buffers(shrink_reg), options);
  CaseResult result;
  result.halted = run.halted();
  result.fault = run.fault_text();
  if (!result.halted) result.kind = run.fault().kind;
  result.kernel_cycles = run.total_cycles() - run.supervisor_cycles();
  for (const CaseOperand& operand : c.operands) {
    result.operands[operand.reg] = run.read(c.address(operand.reg), operand.size());
  }
  return result;
}

void expect_each_short_operand_overruns(const KernelCase& c) {
  for (const CaseOperand& operand : c.operands) {
    if (operand.alias_of || operand.size() == 0) continue;
    const CaseResult result = run_case(c, {}, operand.reg);
    ASSERT_FALSE(result.halted) << c.kernel << ": $m" << operand.reg << " (" << operand.name
                                << ") one element short went unnoticed";
    EXPECT_EQ(result.kind, sim::FaultKind::kKernelOverrun) << result.fault;
    EXPECT_NE(result.fault.find(fmt::format("operand $m{} ", operand.reg)), std::string::npos)
        << result.fault;
  }
}

void expect_precondition_failure(std::string_view kernel, const Registers& registers,
                                 const std::string& reason) {
  KernelRun run(kernel, registers, {});
  ASSERT_FALSE(run.halted()) << kernel << " should refuse: " << reason;
  EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelPrecondition) << run.fault_text();
  EXPECT_NE(run.fault().message.find(reason), std::string::npos)
      << run.fault().message << "\n  expected: " << reason;
  EXPECT_NE(run.fault().message.find(kernel), std::string::npos);
}

}  // namespace tessera::kernels::testing
