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
// What each message a tile receives adds to a phase beyond its words: the
// receiver's source select and pointer controls and the guard after its
// last write (target/exchange_timing.hpp). Measured, not derived: the f16
// GEMM [729,1152]·[1152,1152] simulated 126,805 cycles gathering every A
// block straight from a's rows (171 messages of 8 words per task and K
// block) and 121,189 through homes (3 per task and K block, plus one gather
// phase), which the model below reproduces at ≈ 6.5 cycles per message.
inline constexpr std::uint64_t kReceiveMessageCycles = 6;
// The FLOP bound's rate: one f16 AMP at 128 FLOP per tile cycle.
inline constexpr std::uint64_t kFlopPerTileCycle = 128;

}  // namespace tessera::compiler::plan
