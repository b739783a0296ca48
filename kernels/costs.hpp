#pragma once
// Cycle-cost constants and functions for kernel models. Figures come from
// ../shared/reference/kernels-siglip-f143.md §5 and ipu21-target.md §2.1 and
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

}  // namespace tessera::kernels
