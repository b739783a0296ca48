#pragma once
// The memory a kernel model sees during one call (ARCHITECTURE.md decision
// 3). Every access names the operand register it goes through and must stay
// inside SRAM, outside the tile's code, inside the allocation the package's
// debug section assigns to that operand at this call site, and agree with
// the operand's declared access (an input is not written; an output is read
// only when the kernel's ABI says so). The first stray access throws
// KernelFault carrying a KernelOverrun fault that names tile, kernel, call pc,
// operand, the bytes touched, the allocation the operand owns and the
// allocation actually hit.

#include <cstdint>
#include <span>

#include "kernels/kernel_abi.hpp"
#include "kernels/registry.hpp"
#include "schema/model.hpp"
#include "sim/fault.hpp"

namespace tessera::sim {

class Tile;

// A fault raised inside a kernel model; the tile turns it into its fault.
class KernelFault : public std::exception {
 public:
  explicit KernelFault(Fault fault) : fault_(std::move(fault)) {}
  const Fault& fault() const noexcept { return fault_; }
  const char* what() const noexcept override { return fault_.message.c_str(); }

 private:
  Fault fault_;
};

class CheckedKernelMemory final : public kernels::KernelMemory {
 public:
  // `site` may be null when the package has no record for this call; every
  // memory access then faults, since no operand has a known allocation.
  CheckedKernelMemory(Tile& tile, const kernels::KernelSpec& kernel, std::uint32_t pc,
                      const schema::CallSite* site, std::uint64_t cycle);

  void read(unsigned operand_register, std::uint32_t address,
            std::span<std::uint8_t> bytes) override;
  void write(unsigned operand_register, std::uint32_t address,
             std::span<const std::uint8_t> bytes) override;

 private:
  enum class Direction { kRead, kWrite };
  void check(unsigned operand_register, std::uint32_t address, std::uint64_t size,
             Direction direction) const;
  [[noreturn]] void overrun(std::string message, FaultKind kind = FaultKind::kKernelOverrun) const;
  std::string describe_allocation(const schema::Allocation* allocation) const;

  Tile& tile_;
  const kernels::KernelSpec& kernel_;
  std::uint32_t pc_;
  const schema::CallSite* site_;
  std::uint64_t cycle_;
};

}  // namespace tessera::sim
