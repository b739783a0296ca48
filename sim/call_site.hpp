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
    // The span check's fast path, derived from the above: the accesses
    // (kAllowsRead, kAllowsWrite) the operand's ABI grants when the call site
    // records an allocation that lies inside SRAM, and that allocation's
    // bytes [begin, end). A span inside them with a granted access passes
    // every check but the code and alignment ones; anything else takes the
    // full check, which names what failed. 0: always the full check.
    std::uint8_t allows = 0;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    // The tile's span epoch (Tile::span_epoch) at which the whole allocation
    // was found clear of the tile's code with its pages materialised: spans
    // inside it then skip those two tests. Pages stay materialised and code
    // stays put until the epoch changes.
    mutable std::uint64_t prepared = 0;
    // The epoch at which every byte of the allocation was found written (no
    // byte is unwritten within an epoch): a kWhole span inside it then needs
    // no never-written test and no marking.
    mutable std::uint64_t written = 0;
  };
  static constexpr std::uint8_t kAllowsRead = 1;
  static constexpr std::uint8_t kAllowsWrite = 2;

  const kernels::KernelSpec* kernel = nullptr;
  const schema::CallSite* site = nullptr;  // null: the package records none at this pc
  std::uint32_t pc = 0;
  std::array<Operand, kernels::kRegisterCount> operands{};  // by register

  // The inline grant windows (kernels::SpanWindow), by register: an
  // operand's allocation once it is prepared in the epoch `windows_epoch`,
  // granting what the fast path would (its ABI's accesses; kWhole reads when
  // no never-written test is due, kWhole writes once the allocation is
  // written throughout). CheckedKernelMemory empties them when the tile's
  // epoch has moved on.
  mutable std::array<kernels::SpanWindow, kernels::kRegisterCount> windows{};
  mutable std::uint64_t windows_epoch = 0;

  // `site` and `debug` must outlive the result.
  static ResolvedCallSite resolve(const kernels::KernelSpec& kernel, const schema::CallSite* site,
                                  std::uint32_t pc, const TileDebugIndex& debug);
};

}  // namespace tessera::sim
