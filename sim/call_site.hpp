#pragma once
// A kernel call site as the checked memory needs it, resolved once per load
// rather than on every call: the kernel's spec, the package's call-site
// record, and for each register the operand's declared access and the
// allocation the call site assigns it (ARCHITECTURE.md decisions 3 and 11).

#include <array>
#include <cstdint>

#include "kernels/registry.hpp"
#include "schema/model.hpp"
#include "sim/tile_debug.hpp"

namespace tessera::sim {

struct ResolvedCallSite {
  struct Operand {
    const kernels::OperandSpec* spec = nullptr;  // null: not a memory operand of the kernel
    bool recorded = false;                       // the call site names an allocation for it
    const schema::Allocation* owned = nullptr;   // that allocation (null: no such id)
  };

  const kernels::KernelSpec* kernel = nullptr;
  const schema::CallSite* site = nullptr;  // null: the package records none at this pc
  std::uint32_t pc = 0;
  std::array<Operand, 16> operands{};  // by register

  // `site` and `debug` must outlive the result.
  static ResolvedCallSite resolve(const kernels::KernelSpec& kernel, const schema::CallSite* site,
                                  std::uint32_t pc, const TileDebugIndex& debug);
};

}  // namespace tessera::sim
