#include "sim/call_site.hpp"

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
  return resolved;
}

}  // namespace tessera::sim
