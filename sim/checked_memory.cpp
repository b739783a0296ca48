#include "sim/checked_memory.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/tile.hpp"
#include "target/memory_map.hpp"

namespace tessera::sim {

CheckedKernelMemory::CheckedKernelMemory(Tile& tile, const kernels::KernelSpec& kernel,
                                         std::uint32_t pc, const schema::CallSite* site,
                                         std::uint64_t cycle)
    : tile_(tile), kernel_(kernel), pc_(pc), site_(site), cycle_(cycle) {}

void CheckedKernelMemory::overrun(std::string message, FaultKind kind) const {
  Fault fault;
  fault.kind = kind;
  fault.tile = tile_.id();
  fault.pc = pc_;
  fault.cycle = cycle_;
  fault.message = fmt::format("kernel '{}' called at {:#x}: {}", kernel_.name, pc_, message);
  if (site_ != nullptr) fault.provenance = tile_.debug_.provenance(site_->provenance);
  throw KernelFault(std::move(fault));
}

std::string CheckedKernelMemory::describe_allocation(const schema::Allocation* allocation) const {
  if (allocation == nullptr) return "no allocation";
  std::string text = fmt::format("allocation #{} '{}'", allocation->id, allocation->name);
  if (!allocation->tensor.empty()) text += fmt::format(" (tensor {})", allocation->tensor);
  text += fmt::format(" [{:#x}, {:#x})", allocation->address,
                      std::uint64_t{allocation->address} + allocation->size);
  const std::string& provenance = tile_.debug_.provenance(allocation->provenance);
  if (!provenance.empty()) text += fmt::format(" from '{}'", provenance);
  return text;
}

void CheckedKernelMemory::check(unsigned operand_register, std::uint32_t address,
                                std::uint64_t size, Direction direction) const {
  const char* verb = direction == Direction::kRead ? "read" : "wrote";
  const std::uint64_t end = std::uint64_t{address} + size;
  // Formatted only when a check fails: this runs on every access a kernel
  // model makes.
  const auto touched = [&] {
    return fmt::format("operand $m{} {} [{:#x}, {:#x}) ({} bytes)", operand_register, verb,
                       address, end, size);
  };
  if (address < target::kSramBase || end > target::kSramEnd) {
    overrun(fmt::format("{} outside SRAM {}", touched(), target::kSram));
  }
  if (tile_.in_code(address, static_cast<std::uint32_t>(size))) {
    overrun(fmt::format("{} inside the tile's code", touched()));
  }
  const auto spec = std::find_if(kernel_.operands.begin(), kernel_.operands.end(),
                                 [&](const auto& o) { return o.reg == operand_register; });
  if (spec == kernel_.operands.end()) {
    overrun(fmt::format("{}, but $m{} is not a memory operand of this kernel", touched(),
                        operand_register));
  }
  if (direction == Direction::kWrite && spec->access == kernels::Access::kRead) {
    overrun(fmt::format("{}, but the kernel's ABI declares $m{} ({}) read-only", touched(),
                        operand_register, spec->role));
  }
  if (direction == Direction::kRead && spec->access == kernels::Access::kWrite) {
    overrun(fmt::format("{}, but the kernel's ABI declares $m{} ({}) write-only", touched(),
                        operand_register, spec->role));
  }
  if (site_ == nullptr) {
    overrun(fmt::format("{}, but the package records no call site at {:#x}, so the operand's "
                        "allocation is unknown",
                        touched(), pc_));
  }
  const auto operand = std::find_if(site_->operands.begin(), site_->operands.end(),
                                    [&](const auto& o) { return o.reg == operand_register; });
  if (operand == site_->operands.end()) {
    overrun(fmt::format("{}, but the call site records no allocation for $m{}", touched(),
                        operand_register));
  }
  const schema::Allocation* owned = tile_.debug_.allocation(operand->allocation);
  const bool inside = owned != nullptr && address >= owned->address &&
                      end <= std::uint64_t{owned->address} + owned->size;
  if (!inside) {
    // Name the allocation the stray bytes actually hit: the first byte
    // outside the operand's own allocation.
    std::uint32_t stray = address;
    if (owned != nullptr && address >= owned->address && address < owned->address + owned->size) {
      stray = owned->address + owned->size;
    }
    overrun(fmt::format("{} outside its {}; the bytes at {:#x} belong to {}", touched(),
                        describe_allocation(owned), stray,
                        describe_allocation(tile_.debug_.allocation_containing(stray))));
  }
  if (direction == Direction::kRead && tile_.options_.check_uninitialized &&
      !tile_.sram_.initialized(address, static_cast<std::uint32_t>(size))) {
    overrun(fmt::format("{} of {} includes bytes nothing ever wrote", touched(),
                        describe_allocation(owned)),
            FaultKind::kUninitializedRead);
  }
}

void CheckedKernelMemory::read(unsigned operand_register, std::uint32_t address,
                               std::span<std::uint8_t> bytes) {
  check(operand_register, address, bytes.size(), Direction::kRead);
  tile_.sram_.read(address, bytes);
}

void CheckedKernelMemory::write(unsigned operand_register, std::uint32_t address,
                                std::span<const std::uint8_t> bytes) {
  check(operand_register, address, bytes.size(), Direction::kWrite);
  tile_.sram_.write(address, bytes);
}

}  // namespace tessera::sim
