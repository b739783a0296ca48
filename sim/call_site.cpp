#include "sim/call_site.hpp"

#include "target/memory_map.hpp"

namespace tessera::sim {

ResolvedCallSite ResolvedCallSite::resolve(const kernels::KernelSpec& kernel,
                                           const schema::CallSite* site, std::uint32_t pc,
                                           const TileDebugIndex& debug) {
  ResolvedCallSite resolved;
  resolved.kernel = &kernel;
  resolved.site = site;
  resolved.pc = pc;
  for (const kernels::OperandSpec& spec : kernel.operands) {
    if (spec.reg < resolved.operands.size() && resolved.operands[spec.reg].spec == nullptr) {
      resolved.operands[spec.reg].spec = &spec;
    }
  }
  if (site != nullptr) {
    for (const schema::CallOperand& operand : site->operands) {
      if (operand.reg >= resolved.operands.size()) continue;
      Operand& entry = resolved.operands[operand.reg];
      if (entry.recorded) continue;  // the first record for a register counts
      entry.recorded = true;
      entry.owned = debug.allocation(operand.allocation);
    }
  }
  for (Operand& entry : resolved.operands) {
    if (entry.spec == nullptr || site == nullptr || !entry.recorded || entry.owned == nullptr) {
      continue;
    }
    entry.begin = entry.owned->address;
    entry.end = entry.begin + entry.owned->size;
    if (entry.begin < target::kSramBase || entry.end > target::kSramEnd) continue;
    switch (entry.spec->access) {
      case kernels::Access::kRead:
        entry.allows = kAllowsRead;
        break;
      case kernels::Access::kWrite:
        entry.allows = kAllowsWrite;
        break;
      case kernels::Access::kReadWrite:
        entry.allows = kAllowsRead | kAllowsWrite;
        break;
    }
  }
  return resolved;
}

}  // namespace tessera::sim
