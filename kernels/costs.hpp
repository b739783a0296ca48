#pragma once
// Cycle-cost constants and functions for kernel models. Figures come from
// ../shared/reference/kernels-siglip-f143.md §5 and ipu21-target.md §2.1 and
// are tagged: [HW] measured on a C600 by the prior art, [SDK] Poplar's Target
// values, [INF] our estimate until a measurement replaces it.

#include <cstdint>

namespace tessera::kernels {

inline constexpr std::uint64_t kKernelLaunchCycles = 11;        // [SDK]
inline constexpr std::uint64_t kLocalCopyCallCycles = 288;      // six-worker copy incl. rendezvous [HW]
inline constexpr std::uint64_t kStandardLoadBytesPerCycle = 8;  // [SDK]
inline constexpr std::uint64_t kInterleavedLoadBytesPerCycle = 16;  // [SDK]
// runall of six workers that exit at once, then `sync 1` [INF].
inline constexpr std::uint64_t kWorkerBarrierCycles = 36;

// Balanced contiguous partition over six workers (kernels §0): worker w gets
// q + (w < r) items, q = n / 6, r = n % 6. Returns worker w's share.
constexpr std::uint64_t worker_share(std::uint64_t items, unsigned worker) noexcept {
  return items / 6 + (worker < items % 6 ? 1 : 0);
}

// A local copy or fill of `bytes`: the measured call overhead plus the bytes
// at the standard-memory load rate.
constexpr std::uint64_t local_copy_cycles(std::uint64_t bytes) noexcept {
  return kLocalCopyCallCycles + (bytes + kStandardLoadBytesPerCycle - 1) / kStandardLoadBytesPerCycle;
}

}  // namespace tessera::kernels
