#pragma once
// Runs a sequence of kernel calls the way emitted code does: one tile whose
// supervisor program loads $m2..$m9 and `call`s each kernel's symbol in
// turn, with the package's debug section recording every buffer as an
// allocation and one call site per call assigning each memory operand the
// buffer its pointer lies in — so every access of every model is checked,
// and each call sees the memory the calls before it left (ARCHITECTURE.md
// decision 3). KernelRun (kernel_runner.hpp) is the one-call case.

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/registry.hpp"
#include "sim/chip.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels::testing {

struct SequenceCall {
  std::string_view kernel;
  Registers registers{};
};

class KernelSequence {
 public:
  KernelSequence(const std::vector<SequenceCall>& calls, const std::vector<Buffer>& buffers,
                 sim::SimOptions options = {},
                 const KernelRegistry& registry = KernelRegistry::standard());

  bool halted() const { return result_.reason == sim::StopReason::kAllHalted; }
  const sim::Fault& fault() const;
  std::string fault_text() const;  // "" when the run halted cleanly
  // The index of the call the fault happened in (calls().size() when the
  // fault is not at a call).
  std::size_t faulting_call() const;
  std::vector<std::uint8_t> read(std::uint32_t address, std::uint32_t size);
  std::uint64_t total_cycles() const { return chip_.report().total_cycles; }
  std::uint64_t supervisor_cycles() const { return supervisor_instructions_ * 6; }
  std::uint32_t call_pc(std::size_t call) const { return call_pcs_.at(call); }

 private:
  sim::Chip chip_;
  sim::RunResult result_;
  std::vector<std::uint32_t> call_pcs_;
  std::uint64_t supervisor_instructions_ = 0;
};

}  // namespace tessera::kernels::testing
