// The attention planner (compiler/plan/attention_plan.hpp): blockings within
// the kernels' limits, buffer sizes from the kernels' footprint functions,
// tasks on tiles in waves, the prior art's forced blocking, refusals.
#include <gtest/gtest.h>

#include <set>

#include "compiler/plan/attention_plan.hpp"
#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"

namespace tessera::compiler::plan {
namespace {

using kernels::GemmFamily;

void expect_covers(const std::vector<RowBlock>& blocks, std::uint32_t n) {
  std::uint32_t next = 0;
  for (const RowBlock& block : blocks) {
    EXPECT_EQ(block.start, next);
    EXPECT_GE(block.rows, 1u);
    EXPECT_LE(block.rows, blocks.front().rows);  // the largest first
    next += block.rows;
  }
  EXPECT_EQ(next, n);
}

// Every (wave, tile) runs one task; a group is one head's tasks in one wave,
// in query-block order; every key block's packer is in the group.
void expect_waves_and_groups(const AttentionPlan& plan) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> used;
  std::uint32_t waves = 0;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const AttentionTask& task = plan.tasks[i];
    EXPECT_LT(task.tile, plan.tiles);
    EXPECT_TRUE(used.insert({task.wave, task.tile}).second) << "two tasks on one tile in one wave";
    EXPECT_EQ(plan.task_index(task.batch, task.head, task.query_block, task.part), i);
    EXPECT_LT(task.part, plan.key_parts());
    EXPECT_EQ(plan.groups.at(task.group).at(task.rank), i);
    waves = std::max(waves, task.wave + 1);
  }
  EXPECT_EQ(plan.waves, waves);
  std::size_t grouped = 0;
  for (std::uint32_t g = 0; g < plan.groups.size(); ++g) {
    const auto& group = plan.groups[g];
    grouped += group.size();
    for (const std::size_t t : group) {
      EXPECT_EQ(plan.tasks[t].wave, plan.tasks[group[0]].wave);
      EXPECT_EQ(plan.tasks[t].head, plan.tasks[group[0]].head);
      EXPECT_EQ(plan.tasks[t].batch, plan.tasks[group[0]].batch);
    }
    for (std::uint32_t j = 0; j < plan.key_blocks.size() && !plan.streamed; ++j) {
      EXPECT_EQ(plan.tasks[plan.packer(g, j)].group, g);
      EXPECT_EQ(plan.tasks[plan.packer(g, j)].part, plan.part_of(j));  // it walks the block too
      EXPECT_LT(plan.pack_entry(g, j), plan.packs_per_task);
    }
  }
  EXPECT_EQ(grouped, plan.tasks.size());
}

// The key parts cut the key blocks into contiguous runs, the first the
// longest (part 0 sets the steps), every part at least one block; a split
// head's tasks share one wave.
void expect_parts(const AttentionPlan& plan) {
  std::uint32_t next = 0;
  for (const RowBlock& part : plan.parts) {
    EXPECT_EQ(part.start, next);
    EXPECT_GE(part.rows, 1u);
    EXPECT_LE(part.rows, plan.steps());
    next += part.rows;
  }
  EXPECT_EQ(next, plan.key_blocks.size());
  for (std::uint32_t j = 0; j < plan.key_blocks.size(); ++j) {
    const RowBlock& part = plan.parts.at(plan.part_of(j));
    EXPECT_TRUE(j >= part.start && j < part.start + part.rows);
  }
  if (plan.key_parts() > 1) {
    for (const AttentionTask& task : plan.tasks) {
      const AttentionTask& first = plan.tasks[plan.task_index(task.batch, task.head, task.query_block, 0)];
      EXPECT_EQ(task.wave, first.wave);
    }
  }
}

TEST(AttentionPlan, BlockingsStayInsideTheKernelsLimits) {
  for (const std::uint32_t d : {64u, 72u, 128u}) {
    for (const std::uint32_t s : {1u, 12u, 13u, 71u, 92u, 129u, 200u, 1024u}) {
      for (const std::uint32_t t : {1u, 12u, 13u, 71u, 92u, 129u, 200u, 1024u}) {
        for (const std::uint32_t tiles : {1u, 7u, 1472u}) {
          const AttentionShape shape{2, 3, s, t, d};
          const AttentionPlan plan = plan_attention(shape, tiles);
          SCOPED_TRACE(describe(plan));
          expect_covers(plan.query_blocks, s);
          expect_covers(plan.key_blocks, t);
          EXPECT_EQ(plan.padded_head, kernels::attention_padded_head_dim(d));
          EXPECT_EQ(plan.rows, kernels::attention_query_rows(plan.query_blocks.front().rows));
          EXPECT_EQ(plan.key_columns, kernels::attention_key_columns(plan.key_blocks.front().rows));
          EXPECT_LE(plan.key_columns, kernels::kAttentionMaxColumns);
          // Both GEMMs of every task accept R rows.
          EXPECT_LE(plan.rows, kernels::gemm_maximum_rows(GemmFamily::kF16, plan.padded_head, plan.key_columns));
          EXPECT_LE(plan.rows, kernels::gemm_maximum_rows(GemmFamily::kF16, plan.key_columns, plan.padded_head));
          EXPECT_LE(plan.buffers.per_tile, kWorkingMemoryBudget);
          expect_waves_and_groups(plan);
          expect_parts(plan);
          EXPECT_EQ(plan.tasks.size(), 6 * plan.query_blocks.size() * plan.key_parts());
        }
      }
    }
  }
}

TEST(AttentionPlan, BufferSizesAreTheKernelsFootprints) {
  const AttentionPlan plan = plan_attention({1, 2, 71, 13, 72}, 4);
  const std::uint32_t q = plan.query_blocks.front().rows, k = plan.key_blocks.front().rows;
  EXPECT_EQ(plan.buffers.scores, kernels::attention_scores_bytes(q, k, 72));
  EXPECT_EQ(plan.buffers.query_block, kernels::attention_query_block_bytes(q, 72));
  EXPECT_EQ(plan.buffers.weights, kernels::attention_weights_buffer_bytes(q, k));
  EXPECT_EQ(plan.buffers.accumulator, kernels::attention_accumulator_bytes(plan.rows, 72));
  EXPECT_EQ(plan.buffers.packed_block,
            kernels::gemm_weight_bytes(GemmFamily::kF16, plan.rows, plan.padded_head, plan.key_columns));
  // 13 keys → C = 16 < D = 80: the PV output is the larger, and the prior
  // art's R·C·2 is five times too small.
  EXPECT_EQ(plan.key_columns, 16u);
  EXPECT_EQ(plan.buffers.scores, std::uint64_t{plan.rows} * 80 * 2);
  EXPECT_EQ(prior_art_scores_bytes(q, k), std::uint64_t{plan.rows} * 16 * 2);
}

TEST(AttentionPlan, MoreTasksThanTilesRunInWaves) {
  // Whole heads per wave: 6 heads of ≥ 2 query blocks on 5 tiles.
  const AttentionPlan plan = plan_attention({2, 3, 129, 200, 64}, 5);
  EXPECT_GT(plan.waves, 1u) << describe(plan);
  for (const auto& group : plan.groups) EXPECT_EQ(group.size(), plan.query_blocks.size());
  // A head with more query blocks than tiles is cut into waves.
  const AttentionPlan one_tile = plan_attention({1, 2, 200, 64, 64}, 1);
  EXPECT_EQ(one_tile.waves, one_tile.tasks.size()) << describe(one_tile);
  // Each task alone in its group: it packs every key block itself.
  EXPECT_TRUE(one_tile.streamed || one_tile.packs_per_task == one_tile.key_blocks.size());
  // Packed once per group, all 8 key blocks of 128 keys would stay on the one
  // tile: streamed, every block arrives raw in its own phase.
  const AttentionPlan streamed = plan_attention({1, 1, 12, 1024, 128}, 1);
  EXPECT_TRUE(streamed.streamed) << describe(streamed);
  EXPECT_LE(streamed.buffers.per_tile, kWorkingMemoryBudget);
}

TEST(AttentionPlan, SigLipAttentionFillsTheChipInOneWave) {
  // seq 1024, 16 heads × 72, batch 1 on 1472 tiles.
  const AttentionPlan plan = plan_attention({1, 16, 1024, 1024, 72}, 1472);
  EXPECT_EQ(plan.waves, 1u) << describe(plan);
  EXPECT_LE(plan.tasks.size(), 1472u);
  EXPECT_GT(plan.tasks.size(), 1472u / 2) << describe(plan);
  // And choosing is deterministic.
  const AttentionPlan again = plan_attention({1, 16, 1024, 1024, 72}, 1472);
  EXPECT_EQ(again.tasks, plan.tasks);
  EXPECT_EQ(again.cycles.total(), plan.cycles.total());
}

TEST(AttentionPlan, SigLipAttentionSplitsItsKeysToFillTheChip) {
  // so400m: 16 heads × 72, 729 tokens. Whole (head, query block) tasks of
  // the GEMMs' 12-row minimum leave the weight term dominant; key parts let
  // longer query blocks fill the tiles instead.
  const AttentionShape shape{1, 16, 729, 729, 72};
  const AttentionPlan plan = plan_attention(shape, 1472);
  SCOPED_TRACE(describe(plan));
  EXPECT_GT(plan.key_parts(), 1u);
  EXPECT_EQ(plan.waves, 1u);
  EXPECT_LE(plan.tasks.size(), 1472u);
  expect_waves_and_groups(plan);
  expect_parts(plan);
  const AttentionPlan whole = plan_attention(shape, 1472, {.query_blocks = {}, .key_blocks = {}, .streamed = {}, .ignore_memory_budget = false, .key_parts = 1, .working_memory = {}});
  EXPECT_EQ(whole.key_parts(), 1u);
  EXPECT_LT(plan.cycles.total(), whole.cycles.total()) << describe(whole);
  // The combine is scattered: every tile holds a slot per part of the rows
  // its part combines, each smaller than a whole accumulator.
  EXPECT_EQ(plan.buffers.parts,
            plan.key_parts() * combine_slot_bytes(plan.query_blocks.front().rows, plan.key_parts(), 72));
  EXPECT_LT(combine_slot_bytes(plan.query_blocks.front().rows, plan.key_parts(), 72), plan.buffers.accumulator);
  EXPECT_GT(plan.cycles.combine_exchange, 0u);
  EXPECT_EQ(whole.cycles.combine_exchange + whole.cycles.combine_compute, 0u);
}

TEST(AttentionPlan, ForcedKeyPartsAreBalancedAndTheirPackersWalkTheirBlocks) {
  // 7 key blocks in 3 parts: 3, 2, 2.
  const AttentionPlan plan =
      plan_attention({2, 2, 30, 7 * 16, 64}, 64, {.query_blocks = 2, .key_blocks = 7, .streamed = {}, .ignore_memory_budget = false, .key_parts = 3, .working_memory = {}});
  SCOPED_TRACE(describe(plan));
  ASSERT_EQ(plan.key_parts(), 3u);
  EXPECT_EQ(plan.parts[0].rows, 3u);
  EXPECT_EQ(plan.parts[1].rows, 2u);
  EXPECT_EQ(plan.parts[2].rows, 2u);
  EXPECT_EQ(plan.steps(), 3u);
  EXPECT_EQ(plan.tasks.size(), 2u * 2 * 2 * 3);
  expect_waves_and_groups(plan);
  expect_parts(plan);
  // Part 1's blocks (3, 4) are walked by part 1's two tasks of the group.
  EXPECT_EQ(plan.consumers(0, 3).size(), 2u);
  for (const std::size_t t : plan.consumers(0, 4)) EXPECT_EQ(plan.tasks[t].part, 1u);
}

TEST(AttentionPlan, ThePriorArtBlockingCanBeForcedAndCostsMore) {
  const AttentionShape shape{1, 16, 1024, 1024, 72};
  const AttentionPlan prior = plan_attention(shape, 1472, {.query_blocks = 86, .key_blocks = 11, .streamed = false, .ignore_memory_budget = false, .key_parts = {}, .working_memory = {}});
  EXPECT_EQ(prior.query_blocks.front().rows, 12u);
  EXPECT_EQ(prior.key_blocks.front().rows, 94u);
  EXPECT_EQ(prior.key_blocks.back().rows, 93u);
  EXPECT_EQ(prior.key_columns, 96u);
  EXPECT_EQ(prior.tasks.size(), 16u * 86);
  const AttentionPlan chosen = plan_attention(shape, 1472);
  EXPECT_LE(chosen.cycles.total(), prior.cycles.total());
}

TEST(AttentionPlan, RefusesWhatTheKernelsCannotRun) {
  EXPECT_THROW(plan_attention({1, 1, 4, 4, 70}, 4), AttentionPlanError);   // not a multiple of 4
  EXPECT_THROW(plan_attention({1, 1, 4, 4, 132}, 4), AttentionPlanError);  // D > 128
  // 129 keys in one block: C = 144 > 128.
  EXPECT_THROW(plan_attention({1, 1, 4, 129}, 4, {.query_blocks = {}, .key_blocks = 1, .streamed = {}, .ignore_memory_budget = false, .key_parts = {}, .working_memory = {}}), AttentionPlanError);
  // 1024 keys of 128 columns on one tile, packed: every packed block in one task.
  try {
    plan_attention({1, 1, 12, 1024, 128}, 1,
                   {.query_blocks = {}, .key_blocks = {}, .streamed = false, .ignore_memory_budget = false, .key_parts = {}, .working_memory = {}});
    FAIL();
  } catch (const AttentionPlanError& error) {
    EXPECT_NE(std::string(error.what()).find("more than the 327680-byte working memory"), std::string::npos)
        << error.what();
  }
  // 200 query rows in one block: beyond both GEMMs' row limits.
  try {
    plan_attention({1, 1, 200, 64, 64}, 4, {.query_blocks = 1, .key_blocks = {}, .streamed = {}, .ignore_memory_budget = false, .key_parts = {}, .working_memory = {}});
    FAIL();
  } catch (const AttentionPlanError& error) {
    EXPECT_NE(std::string(error.what()).find("exceed the GEMMs' limit"), std::string::npos) << error.what();
  }
}

TEST(AttentionPlan, FlopBound) {
  // 4·1·16·1024·1024·72 FLOP over 1472 tiles at 128 FLOP per cycle.
  EXPECT_EQ(attention_flop_bound_cycles({1, 16, 1024, 1024, 72}, 1472), 25645u);
}

}  // namespace
}  // namespace tessera::compiler::plan
