#pragma once
// Cycle-cost constants and functions for kernel models. Figures come from
// docs/reference/kernels-siglip-f143.md §5 and ipu21-target.md §2.1 and
// are tagged: [HW] measured on a C600 by the prior art, [SDK] Poplar's Target
// values, [INF] our estimate until a measurement replaces it.

#include <algorithm>
#include <cstdint>

#include "kernels/kernel_abi.hpp"

namespace tessera::kernels {

inline constexpr std::uint64_t kKernelLaunchCycles = 11;        // [SDK]
inline constexpr std::uint64_t kLocalCopyCallCycles = 288;      // six-worker copy incl. rendezvous [HW]
inline constexpr std::uint64_t kStandardLoadBytesPerCycle = 8;  // [SDK]
inline constexpr std::uint64_t kInterleavedLoadBytesPerCycle = 16;  // [SDK]
// runall of six workers that exit at once, then `sync 1` [INF].
inline constexpr std::uint64_t kWorkerBarrierCycles = 36;
// The cycle sample is taken inside such a handoff (reference §3 [HW]): the
// supervisor's runall issues, and worker 0's first issue — one barrel slot
// of six cycles later — reads $COUNT_L; its store and exit, then the
// supervisor's `sync 1` and return, take the rest of the handoff [INF]. An
// interval between two samples holds exactly one whole handoff wherever in
// it the sample lands (sim/README.md, calibration).
inline constexpr std::uint64_t kCycleSampleReadCycles = 6;
static_assert(kCycleSampleReadCycles < kWorkerBarrierCycles);
// tessera_profile_sample: the same handoff, in which worker 0, after its read
// of $COUNT_L, appends the record — load the count, compare it with the
// capacity and branch, form the record's address (shift, add), store site
// and value as one 64-bit pair, add one to the count and store it (or load,
// add to and store the dropped count): 8 more issues of six cycles [INF].
inline constexpr std::uint64_t kProfileSampleAppendIssues = 8;
inline constexpr std::uint64_t kProfileSampleCycles =
    kWorkerBarrierCycles + kWorkerCount * kProfileSampleAppendIssues;
// The prior art's f16 reduction add wrote about one output byte per tile
// cycle [HW] (§5; the number of partials is not recorded).
inline constexpr std::uint64_t kReductionOutputBytesPerCycle = 1;

// Balanced contiguous partition over six workers (kernels §0): worker w gets
// q + (w < r) items, q = n / 6, r = n % 6. Returns worker w's share.
constexpr std::uint64_t worker_share(std::uint64_t items, unsigned worker) noexcept {
  return items / kWorkerCount + (worker < items % kWorkerCount ? 1 : 0);
}

// A local copy or fill of `bytes`: the measured call overhead plus the bytes
// at the standard-memory load rate.
constexpr std::uint64_t local_copy_cycles(std::uint64_t bytes) noexcept {
  return kLocalCopyCallCycles + (bytes + kStandardLoadBytesPerCycle - 1) / kStandardLoadBytesPerCycle;
}

// One worker moving `bytes` (loads plus stores): a worker issues once every
// six tile cycles and moves at most one 64-bit word per issue, so six busy
// workers together run at the standard load rate [INF].
constexpr std::uint64_t worker_move_cycles(std::uint64_t bytes) noexcept {
  return kWorkerCount * ((bytes + kStandardLoadBytesPerCycle - 1) / kStandardLoadBytesPerCycle);
}

// A six-worker kernel over `items` items of `bytes_per_item` moved bytes: the
// call, the runall/sync handoff, and the slowest worker — worker 0, which
// holds the largest balanced share [INF]. Zero items still pay the launch.
constexpr std::uint64_t six_worker_kernel_cycles(std::uint64_t items,
                                                 std::uint64_t bytes_per_item) noexcept {
  return kKernelLaunchCycles + kWorkerBarrierCycles +
         worker_move_cycles(worker_share(items, 0) * bytes_per_item);
}

// tessera_add_{f32,f16}: two loads and one store per element [INF].
constexpr std::uint64_t add_cycles(std::uint64_t count, unsigned element_bytes) noexcept {
  return six_worker_kernel_cycles(count, 3 * std::uint64_t{element_bytes});
}

// tessera_add_row_broadcast_{f32,f16}: the rows·cols elements partitioned as
// one flat range, each with the same three accesses (the broadcast row is
// counted as re-read; a device kernel may keep short rows in registers) [INF].
constexpr std::uint64_t row_broadcast_add_cycles(std::uint64_t rows, std::uint64_t cols,
                                                 unsigned element_bytes) noexcept {
  return six_worker_kernel_cycles(rows * cols, 3 * std::uint64_t{element_bytes});
}

// tessera_sum_{f32,f16}: K loads and one store per output element at the load
// rate [INF], but never faster than the measured reduction rate of one output
// byte per tile cycle, i.e. one per six cycles per worker [HW].
constexpr std::uint64_t sum_cycles(std::uint64_t count, std::uint64_t partials,
                                   unsigned element_bytes) noexcept {
  const std::uint64_t moved = six_worker_kernel_cycles(count, (partials + 1) * element_bytes);
  const std::uint64_t measured = kKernelLaunchCycles + kWorkerBarrierCycles +
                                 kWorkerCount * worker_share(count, 0) * element_bytes /
                                     kReductionOutputBytesPerCycle;
  return std::max(moved, measured);
}

// tessera_move_elements_{b32,b16,b8}: per pair, one 8-byte table load, one
// element load and one element store [INF]. Pairs are split over the workers
// like elements (table order within a worker's share).
constexpr std::uint64_t move_elements_cycles(std::uint64_t pairs, unsigned element_bytes) noexcept {
  return six_worker_kernel_cycles(pairs, 8 + 2 * std::uint64_t{element_bytes});
}

// ---- AMP GEMM calls (kernels/gemm.hpp). The prior art fitted one call of its
// f16 AMP GEMM kernel to measured C600 profiles (§5, HEAD cost.rs) [HW]:
//   294 + (K/16)·(⌈N·rows/4⌉ + ⌈(N/16)·G/4⌉) tile cycles,
// 4 cycles per row per 16 × 16 panel pair (128 FLOP/cycle) plus G/4 cycles of
// weight delivery per 16-column group and pass, G = 1063 for weights in
// standard memory (ld64putcs) and 940 in interleaved memory (ld128putcs).
inline constexpr std::uint64_t kAmpCallCycles = 294;                  // [HW]
inline constexpr std::uint64_t kAmpRowPanelCycles = 4;                // per row per panel pair [HW]
inline constexpr std::uint64_t kAmpStandardWeightGroupCycles = 1063;  // G, ld64putcs [HW]
inline constexpr std::uint64_t kAmpInterleavedWeightGroupCycles = 940;  // G, ld128putcs [HW]

// One call of `passes` AMP passes over N = `columns` and `rows` rows, each
// pass costing the measured f16 pass: the row term at `row_cycles` per row
// per panel pair and the weight term at `group_cycles` per 16-column group.
// Zero rows return before the first pass: the launch only [INF].
constexpr std::uint64_t amp_gemm_cycles(std::uint64_t rows, std::uint64_t passes,
                                        std::uint64_t columns, std::uint64_t row_cycles,
                                        std::uint64_t group_cycles) noexcept {
  if (rows == 0) return kKernelLaunchCycles;
  const std::uint64_t row_term = (columns * rows * row_cycles + 15) / 16;
  const std::uint64_t weight_term = ((columns / 16) * group_cycles + 3) / 4;
  return kAmpCallCycles + passes * (row_term + weight_term);
}

// tessera_gemm_f16_*: the measured formula itself [HW], K/16 passes.
constexpr std::uint64_t gemm_f16_cycles(std::uint64_t rows, std::uint64_t inner,
                                        std::uint64_t columns) noexcept {
  return amp_gemm_cycles(rows, inner / 16, columns, kAmpRowPanelCycles,
                         kAmpStandardWeightGroupCycles);
}

// tessera_gemm_f16_expanded_f143_*: the f16 kernel with interleaved weights [HW]
// (the expand calls that fill them are costed by their own kernel).
constexpr std::uint64_t gemm_f16_expanded_f143_cycles(std::uint64_t rows, std::uint64_t inner,
                                                      std::uint64_t columns) noexcept {
  return amp_gemm_cycles(rows, inner / 16, columns, kAmpRowPanelCycles,
                         kAmpInterleavedWeightGroupCycles);
}

// tessera_gemm_f143_*: f8v8hihov4amp consumes 32 K per pass in the time the
// f16 AMP takes for 16 (twice the rate, §1.1), and a B32×16 panel is 512 bytes
// like a B16×16 one, so one pass costs one f16 pass: K/32 passes [INF].
constexpr std::uint64_t gemm_f143_cycles(std::uint64_t rows, std::uint64_t inner,
                                         std::uint64_t columns) noexcept {
  return amp_gemm_cycles(rows, inner / 32, columns, kAmpRowPanelCycles,
                         kAmpStandardWeightGroupCycles);
}

// tessera_gemm_f32_*: the prior art's f32 model — a quarter of the f16 rate
// (rows·4 per panel pair) and twice the weight bytes (2·G) per 16 K [INF: no
// f32 timing was published]. K is a multiple of 8 here, so it is counted in
// 8-deep passes at half that cost each.
constexpr std::uint64_t gemm_f32_cycles(std::uint64_t rows, std::uint64_t inner,
                                        std::uint64_t columns) noexcept {
  if (rows == 0) return kKernelLaunchCycles;
  const std::uint64_t per_16_deep = (columns * rows * 4 * kAmpRowPanelCycles + 15) / 16 +
                                    ((columns / 16) * 2 * kAmpStandardWeightGroupCycles + 3) / 4;
  return kAmpCallCycles + ((inner / 8) * per_16_deep + 1) / 2;
}

}  // namespace tessera::kernels
