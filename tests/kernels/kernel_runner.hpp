#pragma once
// Runs one kernel the way emitted code does: a one-tile chip whose supervisor
// program loads $m2..$m9 and `call`s the kernel's symbol, with the package's
// debug section recording every buffer as an allocation and the call site
// assigning each memory operand the buffer its pointer lies in — so every
// access the host model makes is checked (ARCHITECTURE.md decision 3).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/registry.hpp"
#include "sim/chip.hpp"

namespace tessera::kernels::testing {

// A tensor allocation in tile SRAM with its initial contents (empty: never
// written, reads as the simulator's poison).
struct Buffer {
  std::string name;
  std::uint32_t address = 0;
  std::uint32_t size = 0;
  std::vector<std::uint8_t> contents;
};

// Where test buffers go: above the code, in standard memory.
inline constexpr std::uint32_t kBufferBase = 0x60000;

class KernelRun {
 public:
  // `registers[i]` is loaded into $m(i) for i in 2..9. The kernel comes from
  // `registry`, which must outlive the run.
  KernelRun(std::string_view kernel, const Registers& registers, const std::vector<Buffer>& buffers,
            sim::SimOptions options = {},
            const KernelRegistry& registry = KernelRegistry::standard());

  bool halted() const { return result_.reason == sim::StopReason::kAllHalted; }
  const sim::Fault& fault() const;
  std::string fault_text() const;  // "" when the run halted cleanly
  std::vector<std::uint8_t> read(std::uint32_t address, std::uint32_t size);
  // Whether every byte of the range was ever written.
  bool initialized(std::uint32_t address, std::uint32_t size) const;
  std::uint64_t total_cycles() const { return chip_.report().total_cycles; }
  std::uint32_t call_pc() const { return call_pc_; }
  // Cycles the supervisor spends on its own instructions: the register loads,
  // the call and the closing halt.
  std::uint64_t supervisor_cycles() const { return supervisor_instructions_ * 6; }

 private:
  sim::Chip chip_;
  sim::RunResult result_;
  std::uint32_t call_pc_ = 0;
  std::uint64_t supervisor_instructions_ = 0;
};

// Little-endian element vectors <-> bytes (1-, 2- or 4-byte elements).
std::vector<std::uint8_t> to_bytes(const std::vector<std::uint32_t>& elements,
                                   unsigned element_bytes);
std::vector<std::uint32_t> from_bytes(const std::vector<std::uint8_t>& bytes,
                                      unsigned element_bytes);

}  // namespace tessera::kernels::testing
