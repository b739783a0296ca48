#pragma once
// Everything about the simulator's timing and checking that a user may set.
// Defaults and why they are what they are are documented beside each field.

#include <cstdint>

#include "kernels/kernel_abi.hpp"
#include "target/clock.hpp"
#include "target/config_space.hpp"

namespace tessera::sim {

struct SimOptions {
  // Cycles one supervisor instruction takes. The IPU issues from six worker
  // contexts and the supervisor on one barrel-threaded pipeline: a context
  // issues at most once per six-cycle round [HW: reference §3], so a
  // supervisor instruction costs six tile cycles.
  std::uint32_t supervisor_instruction_cycles = 6;
  // Cycles from the last arrival at a device-wide sync (`sync 3`) to the
  // release: the SDK's global-sync figure the prior art used [SDK].
  std::uint64_t device_sync_cycles = 600;
  // Cycles for a local `sync 1`: the supervisor waits for its workers, which
  // the kernel models have already finished, so only the handoff remains [INF].
  std::uint64_t local_sync_cycles = 6;
  // Cycles from the host's release of a host sync (zones 7, 15) to the tiles
  // running again [INF].
  std::uint64_t host_sync_cycles = 600;
  // The HSP mark whose credits host syncs consume: the host session writes
  // GS2 before every call phase and waits for it to read 0
  // (driver-host-protocol.md §4, §8.6); which zone takes which mark is not
  // documented [INF].
  std::uint32_t host_sync_mark = target::kHspGs2Control;
  // How far (in cycles) a tile may run ahead of the global clock before it
  // yields to the SystemC kernel (temporal decoupling, TLM-2.0 LT quantum).
  std::uint64_t quantum_cycles = 100'000;
  // What reads of never-written SRAM return: all ones is a NaN as f32 and as
  // both f16 halves, so padding that was never written poisons arithmetic
  // instead of passing as zero (kernels-siglip-f143.md H8).
  std::uint32_t poison = 0xFFFFFFFF;
  // How rounding kernels round (kernels/kernel_abi.hpp): to nearest even, or
  // stochastically from a deterministic per-(tile, worker) generator, which
  // is not the IPU's PRNG and so not bit-identical to silicon.
  kernels::Rounding rounding = kernels::Rounding::kNearestEven;
  // Report kernel reads of never-written bytes as faults.
  bool check_uninitialized = false;
  // Host threads that run tiles between interactions (ARCHITECTURE.md
  // decision 11); 0 means the machine's cores. Results, cycles, faults,
  // traces and profiles are the same for every value.
  unsigned threads = 0;
  // Record faults and keep the other tiles running, instead of stopping at
  // the first fault.
  bool keep_going = false;
  // Record per-tile spans (compute, sync wait) for a Chrome/Perfetto trace
  // and the cycle profile.
  bool trace = false;
  // The clock that turns cycles into time in traces and profiles, and host
  // delays into cycles: the C600 profile default of the prior art's CLI
  // (ipu21-target.md §5.6, "not verified") [INF].
  std::uint64_t clock_hz = target::kC600ClockHz;
};

}  // namespace tessera::sim
