#pragma once
// Cycle costs of the attention kernels (kernels/attention.hpp), built on
// costs.hpp's constants and tagged as there: [HW] measured on a C600 by the
// prior art (kernels-siglip-f143.md §5), [INF] our estimate until a
// measurement replaces it. The QK and PV products are f16 GEMM calls and cost
// gemm_f16_cycles. tests/kernels/attention_cost_test.cpp reproduces the
// published figure these functions can be held to.
//
// What §5 publishes for attention is whole-graph time (seq 64/128/256 and
// 1024 at batch 1–8, 16 heads): packing, exchange of every K/V block to every
// query tile, syncs, both GEMMs, softmax, merge and unpack together, with the
// query and key block sizes, exchange batching and phase structure not
// recorded. Those figures cannot be decomposed honestly into a softmax cost
// and a merge cost, so both are [INF] instruction counts below; the cost
// test checks only that a task's modelled kernel time under the prior art's
// derived blocking stays below the measured whole-graph time it is part of.
// The one per-kernel attention measurement is the pack's: the HEAD cost
// model's AMP-left rate, "about 4 cycles per element (640-element attention
// shard ≈ 2,364 cycles)".
//
// Work partition [INF, after the prior art's kernels, §1.4]: softmax, merge,
// pack and unpack stride rows over the six workers (worker w: rows w, w + 6,
// …), f32_to_f16 strides pairs of elements; the slowest worker (worker 0,
// worker_share(n, 0) items) sets the time. A worker issues once per six tile
// cycles and bundles its loads and stores with its arithmetic. Zero work
// returns before the workers start: the launch only [INF], as for the GEMM.

#include <cstdint>

#include "kernels/costs.hpp"

namespace tessera::kernels {

// [HW] §5 (HEAD cost.rs): the 640-element attention shard pack, 2,364 cycles.
inline constexpr std::uint64_t kAttentionShardPackElements = 640;
inline constexpr std::uint64_t kAttentionShardPackCycles = 2364;

// The call and the runall/sync handoff of a six-worker kernel [SDK + INF].
inline constexpr std::uint64_t kAttentionCallCycles = kKernelLaunchCycles + kWorkerBarrierCycles;

// tessera_attention_pack_{query,key,value}_f16: the launch plus the measured
// rate per destination element the call writes — its copied rows at the
// padded head width, and the zero padding rows it rewrites [HW for the
// query pack, the measured kernel; INF that the key and value packs, which
// move the same half4 groups into B16×16 panels, run at the same rate].
constexpr std::uint64_t attention_pack_cycles(std::uint64_t written_elements) noexcept {
  if (written_elements == 0) return kKernelLaunchCycles;
  return kKernelLaunchCycles +
         (written_elements * kAttentionShardPackCycles + kAttentionShardPackElements - 1) /
             kAttentionShardPackElements;
}

// tessera_attention_unpack_head_f16: the inverse move (row-major f16 → A16
// half4 groups), at the pack's rate per element copied [INF].
constexpr std::uint64_t attention_unpack_cycles(std::uint64_t copied_elements) noexcept {
  return attention_pack_cycles(copied_elements);
}

// tessera_attention_softmax_f16 [INF]: per row, per pair of the C key
// columns, about eight worker instructions — the running max (f16v4max, half
// an instruction), widen to f32, subtract the max, multiply by the scale,
// round to f16, f16v2exp, widen P and add it to the f32 sum, store P (half
// an instruction) — and twenty per row for the lane reductions, the state
// stores and the loop.
inline constexpr std::uint64_t kSoftmaxInstructionsPerPair = 8;
inline constexpr std::uint64_t kSoftmaxInstructionsPerRow = 20;

constexpr std::uint64_t attention_softmax_cycles(std::uint64_t rows,
                                                 std::uint64_t key_columns) noexcept {
  if (rows == 0) return kKernelLaunchCycles;
  const std::uint64_t per_row =
      kSoftmaxInstructionsPerPair * (key_columns / 2) + kSoftmaxInstructionsPerRow;
  return kAttentionCallCycles + kWorkerCount * worker_share(rows, 0) * per_row;
}

// tessera_attention_merge_*_f16 [INF]: per row, per pair of head columns,
// the worker instructions of its update, plus a per-row part (the f32 exps
// of α and β, about twelve instructions each; the max and the sum update;
// the reciprocal of the sum for the final stages):
//   initial  O = V_b                  widen, store                2 + 8
//   middle   O = O·α + V_b·β          widen, 2 mul, add, store    4 + 32
//   final    middle, then O·(1/l)     one more mul                5 + 44
//   single   O = V_b·(1/l_b)          widen, mul, store           3 + 20
struct MergeInstructions {
  std::uint64_t per_pair;
  std::uint64_t per_row;
};
inline constexpr MergeInstructions kMergeInitialInstructions{2, 8};
inline constexpr MergeInstructions kMergeMiddleInstructions{4, 32};
inline constexpr MergeInstructions kMergeFinalInstructions{5, 44};
inline constexpr MergeInstructions kMergeSingleInstructions{3, 20};

constexpr std::uint64_t attention_merge_cycles(std::uint64_t rows, std::uint64_t head_dim,
                                               MergeInstructions stage) noexcept {
  if (rows == 0) return kKernelLaunchCycles;
  const std::uint64_t per_row = stage.per_pair * ((head_dim + 1) / 2) + stage.per_row;
  return kAttentionCallCycles + kWorkerCount * worker_share(rows, 0) * per_row;
}

// tessera_attention_f32_to_f16 [INF]: pairs strided over the workers, each
// pair 8 bytes read and 4 written at one 64-bit access per worker cycle.
constexpr std::uint64_t attention_f32_to_f16_cycles(std::uint64_t count) noexcept {
  if (count == 0) return kKernelLaunchCycles;
  const std::uint64_t pairs = (count + 1) / 2;
  return kAttentionCallCycles + worker_move_cycles(worker_share(pairs, 0) * 12);
}

}  // namespace tessera::kernels
