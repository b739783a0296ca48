// Step 5 of linking: one kernel call — its registers, the footprint assertion
// (review-findings #1: every operand's footprint from the kernel registry
// inside the operand's allocation, else a LinkError naming kernel, tile,
// provenance, operand, footprint and allocation) and its call site.
#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit::linking {

// One kernel call: registers, the footprint assertion (for a moving
// pointer in its first and its last iteration: the footprint moves
// monotonically between them), the call.
void Linker::emit_call(
    MainCode& main, PhysicalTile tile, const std::string& kernel,
    const std::vector<std::pair<unsigned, const schema::Allocation*>>& operand_allocations,
    const kernels::Registers& registers, std::uint32_t stub, std::uint32_t provenance,
    const std::map<unsigned, MovingPointer>& moving,
    const std::vector<std::pair<unsigned, std::uint32_t>>& scalars) const {
  const kernels::KernelSpec* spec = kernels::KernelRegistry::standard().find(kernel);
  if (spec == nullptr)
    throw LinkError(fmt::format("internal: no kernel '{}' in the registry", kernel));
  // With profile samples, a record before the call's register loads names
  // the call site that follows it: its index in the tile's call sites, which
  // are in pc order (schema::canonical), the order main emits them in.
  if (profiling() && kernel != kernels::kProfileSample) {
    const auto index = checked_cast<std::uint32_t>(main.sites.size() + 1, "call site index");
    emit_sample(main, tile, schema::sample_site(schema::SiteKind::kKernelCall, index), provenance);
    main.open_step.reset();
  }
  schema::CallSite site;
  site.kernel = kernel;
  site.provenance = provenance;
  for (const auto& operand : spec->operands) {
    const auto found = std::find_if(operand_allocations.begin(), operand_allocations.end(),
                                    [&](const auto& entry) { return entry.first == operand.reg; });
    if (found == operand_allocations.end()) {
      throw LinkError(fmt::format("internal: {} on {}: no allocation for operand $m{}", kernel,
                                  tile, operand.reg));
    }
    const schema::Allocation& held = *found->second;
    const std::uint32_t pointer = registers[operand.reg];
    const std::uint64_t footprint = operand.footprint(registers);
    const auto inside = [&](std::uint32_t at) {
      return at >= held.address &&
             std::uint64_t{at} + footprint <= std::uint64_t{held.address} + held.size;
    };
    const auto moves = moving.find(operand.reg);
    if (moves != moving.end() && !inside(moves->second.last)) {
      throw LinkError(fmt::format(
          "kernel {} on {} ({}): operand $m{} ({}) footprint {} in the loop's last iteration is "
          "not "
          "inside its allocation '{}' {}",
          kernel, tile,
          provenance < program_.provenance.size() ? program_.provenance[provenance] : "",
          operand.reg, operand.role, format_range(moves->second.last, footprint), held.name,
          format_range(held.address, held.size)));
    }
    if (!inside(pointer)) {
      throw LinkError(fmt::format(
          "kernel {} on {} ({}): operand $m{} ({}) footprint {} is not inside its allocation '{}' "
          "{}",
          kernel, tile,
          provenance < program_.provenance.size() ? program_.provenance[provenance] : "",
          operand.reg, operand.role, format_range(pointer, footprint), held.name,
          format_range(held.address, held.size)));
    }
    site.operands.push_back(
        schema::CallOperand{checked_cast<std::uint8_t>(operand.reg, "operand register"), held.id,
                            pointer, checked_cast<std::uint32_t>(footprint, "footprint"),
                            operand.access != kernels::Access::kRead});
  }
  for (unsigned reg = kernels::kOutputRegister; reg <= kernels::kLastArgumentRegister; ++reg) {
    if (const auto moves = moving.find(reg); moves != moving.end()) {
      // This iteration's pointer, from its cursor word (or a loaded
      // scalar, from its word).
      load_constant(main.code, static_cast<Reg>(reg), moves->second.cursor);
      main.code.push_back(
          isa::Ld32{static_cast<Reg>(reg), static_cast<Reg>(reg), isa::kZeroReg, 0});
      if (moves->second.add != 0) {
        main.code.push_back(
            isa::Add{static_cast<Reg>(reg), static_cast<Reg>(reg), moves->second.add});
      }
      continue;
    }
    // A zero register is skipped unless it is an operand or a scalar the
    // run sets (a scale or ε of 0 must not keep a previous call's value).
    if (registers[reg] != 0 ||
        std::any_of(spec->operands.begin(), spec->operands.end(),
                    [&](const auto& operand) { return operand.reg == reg; }) ||
        std::any_of(scalars.begin(), scalars.end(),
                    [&](const auto& scalar) { return scalar.first == reg; })) {
      load_constant(main.code, static_cast<Reg>(reg), registers[reg]);
    }
  }
  site.pc = checked_add(code_.at(tile).main, main_bytes(main.code), "call site pc");
  main.code.push_back(isa::Call{Reg::m10, stub});
  main.sites.push_back(std::move(site));
}

}  // namespace tessera::compiler::emit::linking
