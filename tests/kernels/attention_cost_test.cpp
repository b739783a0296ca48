// The attention kernels' cost functions (kernels/attention_costs.hpp)
// against what the prior art published (kernels-siglip-f143.md §5).
//
// Decomposable: the HEAD cost model's packing figure, "AMP-left: about 4
// cycles per element (640-element attention shard ≈ 2,364 cycles)" — one
// kernel, one call, reproduced below within ±10 %.
//
// Not decomposable: every attention timing in §5 (seq 64/128/256 at batch 1,
// early; seq 1024 at hidden 768/1024/1152 and batch 1–8, before and after the
// 64f9626 tuning) is a whole-graph time — packing on the K/V owner tiles,
// the exchange of every K/V block to every query tile with its syncs, both
// GEMMs, softmax, merge, conversion and unpack — and the reference records
// neither the query/key block sizes nor the exchange batching nor how the
// phases overlap. No per-kernel softmax or merge cost can be isolated from
// them, so those costs are [INF] instruction counts. What can be checked is
// consistency: under the blocking the prior art's planner rules imply for
// seq 1024, hidden 1152 (16 heads × 72), batch 1, the modelled per-task
// kernel time plus the K/V exchange at the published exchange rate must not
// exceed the measured 524,616 cycles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/costs.hpp"
#include "kernels/gemm.hpp"

namespace tessera::kernels {
namespace {

double relative(std::uint64_t model, std::uint64_t measured) {
  return (static_cast<double>(model) - static_cast<double>(measured)) /
         static_cast<double>(measured);
}

// §5 (HEAD cost.rs): the 640-element attention shard pack took 2,364 cycles.
TEST(AttentionCost, ThePublishedShardPackWithinTenPercent) {
  const std::uint64_t model = attention_pack_cycles(640);
  EXPECT_LE(std::abs(relative(model, 2364)), 0.10) << model;
  // "about 4 cycles per element": the rate, without the launch.
  EXPECT_NEAR(static_cast<double>(attention_pack_cycles(64000) - kKernelLaunchCycles) / 64000, 4.0,
              0.4);
  // A SigLIP query pack (9 rows padded to 12, head 80 padded): 960 elements.
  EXPECT_EQ(attention_pack_cycles(12 * 80), 11u + (960u * 2364 + 639) / 640);
}

// The cost functions' shape: zero work is the launch, every row and column
// costs something, the slowest worker sets the time.
TEST(AttentionCost, ZeroWorkAndMonotoneShapes) {
  EXPECT_EQ(attention_pack_cycles(0), kKernelLaunchCycles);
  EXPECT_EQ(attention_unpack_cycles(0), kKernelLaunchCycles);
  EXPECT_EQ(attention_softmax_cycles(0, 96), kKernelLaunchCycles);
  EXPECT_EQ(attention_merge_cycles(0, 72, kMergeMiddleInstructions), kKernelLaunchCycles);
  EXPECT_EQ(attention_f32_to_f16_cycles(0), kKernelLaunchCycles);
  // Rows strided over six workers: 7..12 rows cost what 12 do.
  EXPECT_EQ(attention_softmax_cycles(7, 96), attention_softmax_cycles(12, 96));
  EXPECT_LT(attention_softmax_cycles(12, 96), attention_softmax_cycles(13, 96));
  EXPECT_LT(attention_softmax_cycles(12, 64), attention_softmax_cycles(12, 96));
  EXPECT_LT(attention_merge_cycles(12, 72, kMergeInitialInstructions),
            attention_merge_cycles(12, 72, kMergeMiddleInstructions));
  EXPECT_LT(attention_merge_cycles(12, 72, kMergeMiddleInstructions),
            attention_merge_cycles(12, 72, kMergeFinalInstructions));
}

// seq 1024, hidden 1152 = 16 heads × 72, batch 1: 524,616 cycles measured
// at 64f9626/1edacbc (§5). The blocking the prior art's rules imply
// [derived]: 1472 tiles / 16 heads = 92 query tiles per head, so query blocks
// of ⌈1024/92⌉ = 12 rows (86 blocks, 1376 tasks, one per tile); key blocks as
// large as lets one K/V pair fit the 32 KiB exchange window (2 · 80 · C · 2 ≤
// 32768 → C ≤ 102 → 96 columns), i.e. 11 blocks of 93/94 keys. Per task: the
// query pack, per block {QK, softmax, PV, merge}, f32 → f16, unpack; per task
// also the 11 K/V pairs received at 4 B/cycle per tile plus 600 cycles per
// exchange phase (§5's exchange constants), which on the BSP machine do not
// overlap compute.
TEST(AttentionCost, ModelledTaskTimeStaysBelowTheMeasuredWholeGraph) {
  constexpr std::uint64_t kMeasured = 524616;
  const std::uint32_t query_rows = 12, head_dim = 72, blocks = 11, key_rows = 94;
  const std::uint32_t rows = attention_query_rows(query_rows);
  const std::uint32_t padded = attention_padded_head_dim(head_dim);
  const std::uint32_t columns = attention_key_columns(key_rows);
  ASSERT_EQ(columns, 96u);
  std::uint64_t kernels = attention_pack_cycles(std::uint64_t{rows} * padded);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const MergeInstructions stage = b == 0            ? kMergeInitialInstructions
                                    : b + 1 == blocks ? kMergeFinalInstructions
                                                      : kMergeMiddleInstructions;
    kernels += gemm_f16_cycles(rows, padded, columns) + attention_softmax_cycles(rows, columns) +
               gemm_f16_cycles(rows, columns, padded) +
               attention_merge_cycles(rows, head_dim, stage);
  }
  kernels += attention_f32_to_f16_cycles(std::uint64_t{rows} * head_dim) +
             attention_unpack_cycles(std::uint64_t{query_rows} * head_dim);
  const std::uint64_t exchange = blocks * (2ull * columns * padded * 2 / 4 + 600);
  std::printf(
      "seq 1024 h1152 b1: modelled kernels %llu + K/V exchange %llu = %llu cycles, %.0f %% of the "
      "measured %llu (the rest: syncs, owner-tile packing, scheduling the reference does not "
      "record)\n",
      static_cast<unsigned long long>(kernels), static_cast<unsigned long long>(exchange),
      static_cast<unsigned long long>(kernels + exchange),
      100.0 * static_cast<double>(kernels + exchange) / kMeasured,
      static_cast<unsigned long long>(kMeasured));
  EXPECT_LT(kernels + exchange, kMeasured);
  // The GEMMs, which are calibrated [HW], are most of the modelled kernel
  // time; softmax and merge [INF] are the rest.
  const std::uint64_t gemms =
      blocks * (gemm_f16_cycles(rows, padded, columns) + gemm_f16_cycles(rows, columns, padded));
  EXPECT_GT(gemms * 10, kernels * 7);
}

}  // namespace
}  // namespace tessera::kernels
