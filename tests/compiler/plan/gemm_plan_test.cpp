// The GEMM planner (compiler/plan/gemm_plan.hpp) alone: every plan keeps the
// kernels' limits, fills the tiles when there is work for them, is the
// cheapest of every valid blocking (checked by brute force on small
// problems), and the prior art's blocking is what §2 says it was.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compiler/plan/gemm_plan.hpp"
#include "kernels/amp_layout.hpp"
#include "support/error.hpp"

namespace tessera::compiler::plan {
namespace {

using kernels::GemmFamily;

void expect_within_limits(const GemmPlan& plan) {
  const GemmProblem& p = plan.problem;
  const kernels::GemmFormat f = kernels::gemm_format(p.family);
  const GemmChoice& c = plan.choice;
  SCOPED_TRACE(format_gemm_plan(plan));
  EXPECT_TRUE(kernels::gemm_columns_supported(p.family, c.block_columns));
  EXPECT_TRUE(c.block_columns == 32 || c.block_columns == 64 || c.block_columns == 128);
  EXPECT_GE(plan.call_rows, kernels::kGemmMinimumRows);
  EXPECT_EQ(plan.call_rows, std::max(c.block_rows, kernels::kGemmMinimumRows));
  EXPECT_LE(plan.call_rows, kernels::gemm_maximum_rows(p.family, c.block_inner, c.block_columns));
  // The A block arrives in one transfer.
  EXPECT_LE(kernels::gemm_left_bytes(p.family, plan.call_rows, c.block_inner) - f.left_tail_bytes,
            std::uint64_t{4148} * 4);
  EXPECT_EQ(c.block_inner % f.pass, 0u);
  EXPECT_EQ(plan.part_inner % f.pass, 0u);
  EXPECT_GE(std::uint64_t{plan.part_inner} * c.k_split, kernels::amp::padded_inner(p.inner, f.pass));
  EXPECT_GE(std::uint64_t{plan.inner_blocks} * c.block_inner, plan.part_inner);
  EXPECT_GE(std::uint64_t{plan.row_blocks} * c.block_rows, p.rows);
  EXPECT_GE(std::uint64_t{plan.column_blocks} * c.block_columns, p.columns);
  EXPECT_EQ(plan.tasks, p.batch * plan.row_blocks * plan.column_blocks * c.k_split);
  // A wave holds whole groups of parts: the tiles used are a multiple of them.
  EXPECT_EQ(plan.tiles_used, std::min<std::uint64_t>(p.tiles, plan.tasks) / c.k_split * c.k_split);
  EXPECT_EQ(plan.waves, (plan.tasks + plan.tiles_used - 1) / plan.tiles_used);
  EXPECT_LE(plan.scratch_bytes, kGemmScratchBytes);
  EXPECT_EQ(plan.cycles, plan.packing_cycles + plan.compute_cycles + plan.exchange_cycles +
                             plan.reduction_cycles + plan.output_cycles);
  EXPECT_GE(plan.cycles, plan.flop_bound_cycles);
  if (!p.allow_k_split) {
    EXPECT_EQ(c.k_split, 1u);
  }
}

TEST(GemmPlan, EveryPlanKeepsTheKernelLimits) {
  for (const GemmFamily family : {GemmFamily::kF16, GemmFamily::kF32}) {
    for (const std::uint32_t m : {1u, 12u, 13u, 71u, 729u, 4096u}) {
      for (const std::uint32_t k : {1u, 13u, 80u, 1152u, 4096u}) {
        for (const std::uint32_t n : {1u, 72u, 129u, 4304u}) {
          for (const std::uint32_t tiles : {1u, 16u, 1472u}) {
            const GemmProblem problem{family, 1, m, k, n, tiles};
            // Packed weights (and their f16 staging) larger than half the
            // tiles' scratch budgets may not be plannable: they stay on
            // their homes through the waves.
            const std::uint64_t weights = kernels::amp::padded_inner(k, 16) * kernels::amp::padded_columns(n) *
                                          kernels::gemm_format(family).weight_bytes * 2;
            if (weights > std::uint64_t{tiles} * kGemmScratchBytes / 2) {
              try {
                expect_within_limits(plan_gemm(problem));
              } catch (const UsageError&) {
              }
              continue;
            }
            expect_within_limits(plan_gemm(problem));
          }
        }
      }
    }
  }
  expect_within_limits(plan_gemm({GemmFamily::kF16, 27, 13, 72, 80, 1472, false}));
}

TEST(GemmPlan, LargeProblemsFillTheChip) {
  for (const auto& [m, k, n] : std::vector<std::array<std::uint32_t, 3>>{
           {4096, 4096, 4096}, {729, 1152, 4304}, {729, 4304, 1152}}) {
    const GemmPlan plan = plan_gemm({GemmFamily::kF16, 1, m, k, n, 1472});
    SCOPED_TRACE(format_gemm_plan(plan));
    // At least 90 % of the tiles busy in the first wave, and a last wave
    // at least half full.
    EXPECT_GE(plan.tiles_used, 1472u * 9 / 10);
    EXPECT_TRUE(plan.waves == 1 || plan.tasks - std::uint64_t{plan.waves - 1} * 1472 >= 736);
  }
}

TEST(GemmPlan, IsTheCheapestValidBlocking) {
  for (const auto& [m, k, n, tiles] : std::vector<std::array<std::uint32_t, 4>>{
           {13, 200, 40, 8}, {71, 129, 80, 16}, {12, 1040, 40, 64}, {100, 60, 200, 3}}) {
    const GemmProblem problem{GemmFamily::kF16, 1, m, k, n, tiles};
    const GemmPlan chosen = plan_gemm(problem);
    for (std::uint32_t rows = 1; rows <= m; ++rows) {
      for (const std::uint32_t columns : {32u, 64u, 128u}) {
        for (std::uint32_t inner = 16; inner <= 1056; inner += 16) {
          for (std::uint32_t split = 1; split <= 8; ++split) {
            const auto other = evaluate_gemm(problem, {rows, columns, inner, split});
            if (other) {
              EXPECT_LE(chosen.cycles, other->cycles) << format_gemm_plan(chosen) << "\nvs\n"
                                                      << format_gemm_plan(*other);
            }
          }
        }
      }
    }
  }
}

TEST(GemmPlan, SplitsKWhenOutputBlocksAreTooFewForTheTiles) {
  const GemmPlan plan = plan_gemm({GemmFamily::kF16, 1, 12, 4096, 32, 1472});
  EXPECT_GT(plan.choice.k_split, 1u) << format_gemm_plan(plan);
  const GemmPlan no_split = plan_gemm({GemmFamily::kF16, 1, 12, 4096, 32, 1472, false});
  EXPECT_EQ(no_split.choice.k_split, 1u);
  EXPECT_LT(plan.cycles, no_split.cycles);
}

TEST(GemmPlan, F32UsesSixtyFourColumns) {
  const GemmPlan plan = plan_gemm({GemmFamily::kF32, 1, 300, 300, 300, 64});
  EXPECT_EQ(plan.choice.block_columns, 64u);
  EXPECT_EQ(plan.choice.block_inner % 8, 0u);
}

TEST(GemmPlan, InvalidChoicesAreRefused) {
  const GemmProblem problem{GemmFamily::kF16, 1, 100, 4096, 128, 16};
  EXPECT_FALSE(evaluate_gemm(problem, {100, 128, 4096, 1}));  // A block beyond one transfer
  EXPECT_FALSE(evaluate_gemm(problem, {12, 48, 64, 1}));      // 48 columns: not a plan's block
  EXPECT_FALSE(evaluate_gemm(problem, {12, 64, 24, 1}));      // K block not a multiple of 16
  EXPECT_FALSE(evaluate_gemm(problem, {101, 64, 64, 1}));     // more rows than M
  EXPECT_FALSE(evaluate_gemm({GemmFamily::kF16, 1, 12, 16, 32, 4}, {12, 32, 16, 2}));  // an empty part
  EXPECT_FALSE(evaluate_gemm({GemmFamily::kF32, 1, 12, 16, 32, 4}, {12, 32, 16, 1}));  // f32: 64 only
  EXPECT_THROW((void)plan_gemm({GemmFamily::kF16, 1, 0, 16, 32, 4}), UsageError);
}

TEST(GemmPlan, ThePriorArtsBlockingIsSixtyFourByTwelveOrMoreRows) {
  const GemmPlan plan = plan_gemm_prior_art({GemmFamily::kF16, 1, 4096, 4096, 4096, 1472});
  SCOPED_TRACE(format_gemm_plan(plan));
  EXPECT_EQ(plan.choice.block_columns, 64u);
  EXPECT_EQ(plan.choice.block_inner, 64u);
  EXPECT_EQ(plan.choice.k_split, 1u);
  EXPECT_GE(plan.choice.block_rows, 12u);
  EXPECT_EQ(plan.inner_blocks, 64u);
  expect_within_limits(plan);
}

// The K-split reduction's row ranges (reduction_rows), against a count by
// hand: in part order they tile [0, rows) exactly, each starts on an even
// row and holds at most ⌈rows / parts⌉ rounded up to even rows.
TEST(GemmPlan, ReductionRowsTileTheBlockInEvenRanges) {
  for (std::uint32_t rows = 1; rows <= 140; ++rows) {
    for (std::uint32_t parts = 1; parts <= 16; ++parts) {
      const std::uint32_t most = ((rows + parts - 1) / parts + 1) / 2 * 2;
      std::uint32_t next = 0;
      for (std::uint32_t part = 0; part < parts; ++part) {
        const RowRange range = reduction_rows(rows, parts, part);
        SCOPED_TRACE(fmt::format("rows {}, parts {}, part {}", rows, parts, part));
        EXPECT_EQ(range.begin, next);
        EXPECT_LE(range.size(), most);
        EXPECT_EQ(range.begin % 2 == 0 || range.size() == 0, true);
        next = range.end;
      }
      EXPECT_EQ(next, rows) << rows << " rows, " << parts << " parts";
    }
  }
  EXPECT_THROW(reduction_rows(12, 0, 0), UsageError);
}

TEST(GemmPlan, FlopBound) {
  EXPECT_EQ(gemm_flop_bound_cycles({GemmFamily::kF16, 1, 4096, 4096, 4096, 1472}),
            (2ull * 4096 * 4096 * 4096 + 128 * 1472 - 1) / (128 * 1472));
  EXPECT_EQ(gemm_flop_bound_cycles({GemmFamily::kF16, 2, 1, 1, 1, 1}), 1u);
}

}  // namespace
}  // namespace tessera::compiler::plan
