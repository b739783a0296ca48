#pragma once
// The whole-chip cost facts the planners share (compiler-prior-art.md §6,
// the prior art's HEAD cost.rs): one owner for the GEMM and attention
// planners' exchange model and FLOP bound. Kernel cycles come from kernels/.

#include <cstdint>

namespace tessera::compiler::plan {

// The prior art's per-phase exchange overhead (§6): the syncs and row setup.
inline constexpr std::uint64_t kExchangePhaseCycles = 600;
// The exchange rate of one tile: 4 bytes (one word) per cycle each way (§6).
inline constexpr std::uint64_t kExchangeBytesPerCycle = 4;
// The FLOP bound's rate: one f16 AMP at 128 FLOP per tile cycle.
inline constexpr std::uint64_t kFlopPerTileCycle = 128;

}  // namespace tessera::compiler::plan
