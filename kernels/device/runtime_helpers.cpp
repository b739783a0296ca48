// Device sources of the runtime helpers (kernels/runtime_helpers.cpp holds
// their ABI and host models):
//   tessera_worker_barrier  — no operands: every worker exits, the entry's
//                             sync is the barrier.
//   tessera_sample_cycles   — $m2 sample (one word): worker 0 stores the
//                             tile's cycle counter, low 32 bits.
//   tessera_profile_sample  — $m2 sample buffer, $m3 site, $m4 capacity
//                             (records), $m5 0: the counter, 1: $m6, $m6
//                             value: worker 0 reads the counter, then
//                             appends (site, value) at the buffer's count,
//                             or counts a dropped record when it is full.
//   tessera_copy_words      — $m2 destination, $m3 source, $m4 words; the
//                             two are the same words or disjoint.
//   tessera_fill_words      — $m2 destination, $m3 value, $m4 words.
// Zero words touch nothing: a worker whose share is empty never asks for
// memory (the prior art's do-while copies ran ~2^32 times on zero, H1).
// Fast paths (ipu_fast_paths.hpp): 64-bit loads and stores (uint2 through
// ipu::load_postinc / store_postinc) for the copy and the fill.
#include "kernels/device/device_abi.hpp"
#include "kernels/device/ipu_fast_paths.hpp"

namespace tessera::device {
namespace {

void worker_barrier(const Registers&, TileMemory&, unsigned) {}

void sample_cycles(const Registers& r, TileMemory& memory, unsigned worker) {
  if (worker != 0) return;
  memory.array<std::uint32_t>(r[2], 1)[0] = memory.cycle_counter();
}

// The buffer: records written, records dropped, then (site, value) pairs
// (kernels/registry.hpp, schema/profile_samples.hpp). The counter is read
// first, at worker 0's first issue after the runall, where the cost model
// puts the sample (kernels/costs.hpp).
void profile_sample(const Registers& r, TileMemory& memory, unsigned worker) {
  if (worker != 0) return;
  const std::uint32_t counter = memory.cycle_counter();
  const std::uint32_t value = r[5] == 1 ? r[6] : counter;
  const auto header = memory.array<std::uint32_t>(r[2], 2);
  const std::uint32_t count = header[0];
  if (count < r[4]) {
    const auto record = memory.array<std::uint32_t>(r[2] + 8 + 8 * count, 2);
    record[0] = r[3];
    record[1] = value;
    header[0] = count + 1;
  } else if (header[1] != 0xFFFFFFFFu) {  // saturates: a dropped count never wraps
    header[1] = header[1] + 1;
  }
}

// Each worker copies its balanced share of the words. An exact alias copies
// each word onto itself, so the shares need no order between them.
void copy_words(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share share = balanced_share(r[4], worker);
  if (share.count == 0) return;
  const auto source = memory.array<const std::uint32_t>(r[3] + 4 * share.first, share.count);
  const auto destination = memory.array<std::uint32_t>(r[2] + 4 * share.first, share.count);
  std::uint32_t i = 0;
#if TESSERA_DEVICE_FAST_PATHS
  // 64-bit loads and stores once both pointers are 8-aligned (one ld64/st64
  // per pair of words; the buffers are word-aligned only by the ABI). An
  // exact alias reads each pair before writing it back.
  if (((r[2] + 4 * share.first) & 7) == 0 && ((r[3] + 4 * share.first) & 7) == 0) {
    const auto* from = reinterpret_cast<const uint2*>(source.data());
    auto* to = reinterpret_cast<uint2*>(destination.data());
    for (; i + 2 <= share.count; i += 2) ipu::store_postinc(&to, ipu::load_postinc(&from, 1), 1);
  }
#endif
  for (; i < share.count; ++i) destination[i] = source[i];
}

void fill_words(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share share = balanced_share(r[4], worker);
  if (share.count == 0) return;
  const auto destination = memory.array<std::uint32_t>(r[2] + 4 * share.first, share.count);
  std::uint32_t i = 0;
#if TESSERA_DEVICE_FAST_PATHS
  if (((r[2] + 4 * share.first) & 7) == 0) {
    uint2 pair;
    const std::uint32_t words[2] = {r[3], r[3]};
    __builtin_memcpy(&pair, words, sizeof pair);
    auto* to = reinterpret_cast<uint2*>(destination.data());
    for (; i + 2 <= share.count; i += 2) ipu::store_postinc(&to, pair, 1);
  }
#endif
  for (; i < share.count; ++i) destination[i] = r[3];
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_worker_barrier, ::tessera::device::worker_barrier)
TESSERA_DEVICE_KERNEL(tessera_sample_cycles, ::tessera::device::sample_cycles)
TESSERA_DEVICE_KERNEL(tessera_profile_sample, ::tessera::device::profile_sample)
TESSERA_DEVICE_KERNEL(tessera_copy_words, ::tessera::device::copy_words)
TESSERA_DEVICE_KERNEL(tessera_fill_words, ::tessera::device::fill_words)
