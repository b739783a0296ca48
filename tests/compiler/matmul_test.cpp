// matmul compiled on the GEMM planner's plans (compiler/plan/gemm_plan.hpp,
// compiler/lower/matmul.cpp), run on the simulator and compared with the CPU
// reference within graph_bounds' matmul bound — over M, K, N among 1, 12,
// 13, 71, 72, 80, 129 (row blocks padded to 12 rows, K not a multiple of the
// pass, N not a multiple of 16 or of the column block), batches with and
// without broadcasting, several waves and K-split partial sums.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>
#include <random>

#include "compiler/compile.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/plan/gemm_plan.hpp"
#include "kernels/amp_layout.hpp"
#include "kernels/f143_kernels.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/weight_panels.hpp"
#include "schema/writer.hpp"
#include "target/memory_map.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/compiler/reference_check.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler {
namespace {

using tessera::testing::TensorBytes;

// Values in [−2, 2] on a grid of 1/64: exact in f16 and f32.
std::vector<std::uint8_t> random_bytes(const TensorType& type, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> grid(-128, 128);
  const std::uint64_t count = element_count(type.shape);
  std::vector<std::uint8_t> bytes;
  for (std::uint64_t i = 0; i < count; ++i) {
    const float value = static_cast<float>(grid(random)) / 64.0f;
    if (type.dtype() == DType::kF32) {
      std::uint8_t b[4];
      std::memcpy(b, &value, 4);
      bytes.insert(bytes.end(), b, b + 4);
    } else {
      const std::uint16_t h = kernels::f32_to_f16(value);
      bytes.push_back(static_cast<std::uint8_t>(h));
      bytes.push_back(static_cast<std::uint8_t>(h >> 8));
    }
  }
  return bytes;
}

struct Case {
  DType dtype;
  Shape a, b;
  std::uint32_t tiles;
};

std::string describe(const Case& c) {
  return fmt::format("{} [{}] · [{}] on {} tiles", schema::dtype_name(c.dtype), fmt::join(c.a, ", "),
                     fmt::join(c.b, ", "), c.tiles);
}

Graph matmul_graph(const Case& c) {
  Graph g;
  const ValueId a = g.host_input("a", c.dtype, c.a);
  const ValueId b = g.parameter("b", c.dtype, c.b);
  g.host_output("c", g.matmul(a, b));
  return g;
}

// Compiles, runs and compares; returns the compile result for plan checks.
// `a_homes` fixes the GEMMs' A gather (CompileOptions::gemm_a_homes).
CompileResult check(const Case& c, std::optional<bool> a_homes = std::nullopt) {
  SCOPED_TRACE(describe(c));
  const Graph g = matmul_graph(c);
  TensorBytes bindings;
  const ValueId a = g.operation(g.top_level(OpKind::kHostInput)[0]).results[0];
  const ValueId b = g.operation(g.top_level(OpKind::kParameter)[0]).results[0];
  bindings["a"] = random_bytes(g.type(a), 1);
  bindings["b"] = random_bytes(g.type(b), 2);
  const auto reference = tessera::testing::evaluate_graph_with_bounds(g, bindings);
  CompileResult compiled = compile(g, {.tiles = c.tiles, .gemm_a_homes = a_homes});
  const auto run = testing::run_on_simulator(compiled.application, bindings);
  const TensorType& type = g.type(g.operation(g.top_level(OpKind::kHostOutput)[0]).inputs[0]);
  const auto problem = tessera::testing::check_within_bounds(type, run.outputs.at("c"),
                                                             reference.outputs.at("c"),
                                                             reference.bounds.at("c"));
  EXPECT_FALSE(problem.has_value()) << *problem << "\n" << format_report(compiled);
  return compiled;
}

TEST(Matmul, F32AndF16MatchTheReferenceOnAwkwardShapes) {
  const std::vector<std::array<std::uint32_t, 3>> shapes = {
      {1, 1, 1}, {12, 13, 71}, {13, 72, 80}, {71, 129, 12}, {129, 80, 13}, {72, 12, 129}, {80, 71, 72}};
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    for (const auto& [m, k, n] : shapes) check({dtype, {m, k}, {k, n}, 16});
  }
}

TEST(Matmul, BatchesAndBroadcastLeadingAxes) {
  check({DType::kF16, {2, 3, 13, 20}, {20, 33}, 16});      // b [K, N] shared by all six
  check({DType::kF32, {3, 12, 17}, {3, 17, 12}, 8});       // batched · batched
  check({DType::kF16, {1, 13, 17}, {2, 17, 5}, 8});        // a broadcast over b's batch
  check({DType::kF32, {2, 1, 12, 9}, {1, 3, 9, 14}, 16});  // both broadcast
}

// A weight shared by every product is packed once, and the planner counts
// it once: 105 products of 1 × 2 · 2 × 2 on one tile used to find no plan
// (105 packed blocks priced against the scratch budget; the random-graph
// property's counterexample).
TEST(Matmul, ABroadcastWeightIsPackedAndPricedOnce) {
  check({DType::kF32, {105, 1, 2}, {2, 2}, 1});
  check({DType::kF16, {3, 35, 1, 2}, {2, 2}, 1});
  plan::GemmProblem shared{kernels::GemmFamily::kF32, 105, 1, 2, 2, 1};
  shared.weight_batch = 1;
  plan::GemmProblem apart = shared;
  apart.weight_batch = 105;
  EXPECT_LT(plan::plan_gemm(shared).scratch_bytes, plan::kGemmScratchBytes);
  EXPECT_THROW(plan::plan_gemm(apart), UsageError);
}

TEST(Matmul, SeveralWavesReuseTheStagingBuffers) {
  const CompileResult compiled = check({DType::kF16, {129, 71}, {71, 129}, 2});
  ASSERT_EQ(compiled.plans.size(), 1u);
  EXPECT_EQ(compiled.plans[0].find("in 1 waves"), std::string::npos) << compiled.plans[0];
}

// The K-split reduction sends each part's partials from its C16 block and
// receives the other parts' into its partials slots in one phase; in one
// element, rule 3 (reference §2.2) would serialise the sends and the
// receives on each tile. Placement keeps every tile's send sources apart from
// its receive destinations in every phase (AllocationRequest::apart_from).
TEST(Matmul, NoTileSendsFromAndReceivesIntoOneElementInAPhase) {
  for (const DType dtype : {DType::kF16, DType::kF32}) {
    const CompileResult compiled = check({dtype, {12, 600}, {600, 40}, 64});
    ASSERT_EQ(compiled.plans[0].find("split 1 "), std::string::npos) << compiled.plans[0];
    std::size_t tiles_sending_and_receiving = 0;
    for (const schema::ExchangePhase& phase : compiled.application.debug.exchange_phases) {
      std::map<std::uint16_t, std::pair<target::ElementSet, target::ElementSet>> io;  // sent, received
      for (const schema::PlannedTransfer& transfer : phase.transfers) {
        const std::uint32_t bytes = 4 * transfer.words;
        io[transfer.source_tile.value].first |=
            target::elements_of(target::AddressRange::from_size(transfer.source_address, bytes));
        for (const schema::TransferDestination& destination : transfer.destinations) {
          io[destination.tile.value].second |=
              target::elements_of(target::AddressRange::from_size(destination.address, bytes));
        }
      }
      for (const auto& [tile, elements] : io) {
        if (elements.first.empty() || elements.second.empty()) continue;
        ++tiles_sending_and_receiving;
        EXPECT_FALSE(elements.first.intersects(elements.second))
            << "phase " << phase.id << ", p" << tile << ": sends " << elements.first.mask()
            << ", receives " << elements.second.mask();
      }
    }
    EXPECT_GT(tiles_sending_and_receiving, 0u);
  }
}

TEST(Matmul, DeepKIsSplitAndEachPartReducesItsRows) {
  // 12 × 600 · 600 × 40 on 64 tiles: two output blocks at most, so the
  // planner splits K (the last part shorter); each part reduces and moves
  // out its range of rows (plan::reduction_rows: 2 rows each, so the later
  // parts own none). 13 × 600 · 600 × 13: odd rows (the last range one
  // row) and odd columns (an f16 row is not whole words).
  for (const DType dtype : {DType::kF16, DType::kF32}) {
    for (const auto& [a, b] : {std::pair<Shape, Shape>{{12, 600}, {600, 40}}, {{13, 600}, {600, 13}}}) {
      const CompileResult compiled = check({dtype, a, b, 64});
      ASSERT_EQ(compiled.plans.size(), 1u);
      EXPECT_EQ(compiled.plans[0].find("split 1 "), std::string::npos) << compiled.plans[0];
      // A part's own rows reach its slot by one reblock of C16 panel rows
      // (f16) — one call per part that owns rows, none copied into the
      // partials on the tile — or by local copies per panel (f32).
      const plan::GemmPlan plan = plan::plan_gemm(plan::GemmProblem{
          dtype == DType::kF16 ? kernels::GemmFamily::kF16 : kernels::GemmFamily::kF32, 1, a[0],
          a[1], b[1], 64});
      std::uint64_t owning_parts = 0;
      for (std::uint32_t block = 0; block < plan.row_blocks; ++block) {
        const std::uint32_t rows = std::min(plan.choice.block_rows, a[0] - block * plan.choice.block_rows);
        for (std::uint32_t part = 0; part < plan.choice.k_split; ++part) {
          if (plan::reduction_rows(rows, plan.choice.k_split, part).size() > 0) owning_parts += plan.column_blocks;
        }
      }
      const lower::Program program = lower::lower_graph(matmul_graph({dtype, a, b, 64}), {.tiles = 64});
      std::uint64_t reblocks = 0, local_into_partials = 0;
      for (const lower::Step& step : program.steps) {
        for (const auto& [tile, runs] : step.runs) {
          for (const lower::KernelRun& run : runs) {
            if (run.kernel == kernels::kReblockA16ToA16F16) ++reblocks;
            const bool local_move = run.kernel == kernels::kCopyWords || run.kernel.starts_with("tessera_move_elements");
            if (local_move && program.buffers[run.pointers[0].buffer].name.starts_with("K-split partials")) {
              ++local_into_partials;
            }
          }
        }
      }
      EXPECT_EQ(reblocks, dtype == DType::kF16 ? owning_parts : 0);
      if (dtype == DType::kF16) {
        EXPECT_EQ(local_into_partials, 0u);
      } else {
        EXPECT_GT(local_into_partials, 0u);
      }
    }
  }
}

TEST(Matmul, DeepKWithoutSplitLoopsOverKBlocks) {
  // K = 1500 runs as several K blocks per task, each A block within one
  // transfer (the last block shorter).
  const CompileResult compiled = check({DType::kF16, {48, 1500}, {1500, 24}, 4});
  ASSERT_EQ(compiled.plans.size(), 1u);
  EXPECT_EQ(compiled.plans[0].find("in 1 blocks"), std::string::npos) << compiled.plans[0];
}

// Column blocks of one row block share its A blocks: through homes, each K
// block of whole panels is gathered once per wave onto a home tile, then
// reaches the tasks as one multicast run per panel (one run where the rows
// fill the block). Gathered straight from a's row shards into every task,
// the A blocks are up to a message per source row, panel and column block
// (oracle: the plan's blocks, counted below). Both gathers are lowered for each shape
// and checked against the reference. Shapes: rows filling the call and rows
// padded to 12, several waves, a K split, both families.
TEST(Matmul, ColumnBlocksReceiveTheirABlockFromItsHomeOnce) {
  struct Shape3 {
    DType dtype;
    std::uint32_t m, k, n, tiles;
  };
  for (const auto& [dtype, m, k, n, tiles] :
       {Shape3{DType::kF16, 50, 96, 256, 64}, Shape3{DType::kF16, 5, 64, 300, 16},
        Shape3{DType::kF32, 24, 64, 200, 16}, Shape3{DType::kF16, 129, 80, 129, 2},
        Shape3{DType::kF16, 12, 640, 100, 64}}) {
    const Case c{dtype, {m, k}, {k, n}, tiles};
    SCOPED_TRACE(describe(c));
    for (const bool homes : {true, false}) {
      SCOPED_TRACE(homes ? "through homes" : "gathered directly");
      plan::GemmProblem problem{
          dtype == DType::kF16 ? kernels::GemmFamily::kF16 : kernels::GemmFamily::kF32, 1, m, k, n, tiles};
      problem.a_homes = homes;
      const plan::GemmPlan plan = plan::plan_gemm(problem);
      ASSERT_GT(plan.column_blocks, 1u);
      ASSERT_EQ(plan.choice.a_homes, homes) << plan::format_gemm_plan(plan);
      // A direct gather is a message per row, m-wide panel (A_m holds a row's
      // panels apart) and column block, however a is laid out.
      const unsigned pass = kernels::gemm_format(plan.problem.family).pass;
      const std::uint64_t direct =
          std::uint64_t{m} * kernels::amp::padded_inner(k, pass) / pass * plan.column_blocks;
      const lower::Program program = lower::lower_graph(matmul_graph(c), {.tiles = tiles, .gemm_a_homes = homes});
      std::uint64_t receives = 0;  // into A blocks: the tasks' staging and the homes
      for (const lower::Step& step : program.steps) {
        for (const lower::Transfer& transfer : step.transfers) {
          for (const lower::Location& to : transfer.destinations) {
            if (program.buffers[to.buffer].name.find(" A block") != std::string::npos) ++receives;
          }
        }
      }
      // Through homes the rows arrive once per row block, not once per column
      // block, plus at most a run per panel of each task's K block.
      const std::uint64_t per_task = std::uint64_t{plan.inner_blocks} * plan.choice.block_inner / pass;
      const std::uint64_t through_homes = direct / plan.column_blocks + plan.tasks * per_task;
      ASSERT_GT(direct, through_homes) << "the shape does not tell them apart";
      if (homes) {
        EXPECT_LE(receives, through_homes) << plan::format_gemm_plan(plan);
      } else {
        // At most a message per row, panel and column block (fewer where a
        // row already lies on its task's tile and moves locally), and more
        // than homes would take.
        EXPECT_LE(receives, direct) << plan::format_gemm_plan(plan);
        EXPECT_GT(receives, through_homes) << plan::format_gemm_plan(plan);
      }
      check(c, homes);
    }
  }
}

// The planner takes homes only where its model says they pay: a GEMM with
// few rows and one K block gathers directly (the home phase would cost more
// than the messages it saves), so400m's projections go through homes.
TEST(Matmul, ThePlannerChoosesHomesWhereTheyPay) {
  const plan::GemmPlan small = plan::plan_gemm({kernels::GemmFamily::kF16, 1, 16, 64, 128, 64});
  EXPECT_FALSE(small.choice.a_homes) << plan::format_gemm_plan(small);
  const plan::GemmPlan so400m = plan::plan_gemm({kernels::GemmFamily::kF16, 1, 729, 1152, 1152, 1472});
  EXPECT_TRUE(so400m.choice.a_homes) << plan::format_gemm_plan(so400m);
  for (const plan::GemmPlan& chosen : {small, so400m}) {
    plan::GemmProblem other = chosen.problem;
    other.a_homes = !chosen.choice.a_homes;
    EXPECT_LE(chosen.cycles, plan::plan_gemm(other).cycles) << plan::format_gemm_plan(chosen);
  }
}

TEST(Matmul, TheReportPrintsThePlan) {
  const CompileResult compiled = compile(matmul_graph({DType::kF16, {72, 80}, {80, 129}, 16}), {.tiles = 16});
  const std::string report = format_report(compiled);
  EXPECT_NE(report.find("plan: op 2 (matmul): f16 GEMM 72×80·80×129 (batch 1)"), std::string::npos) << report;
  EXPECT_NE(report.find("vs FLOP bound"), std::string::npos) << report;
}

TEST(Matmul, CompilingTwiceGivesIdenticalBytes) {
  const Graph g = matmul_graph({DType::kF16, {2, 13, 71}, {71, 72}, 8});
  const auto first = schema::serialize_package(compile(g, {.tiles = 8}).application);
  const auto second = schema::serialize_package(compile(g, {.tiles = 8}).application);
  EXPECT_EQ(first, second);
}

// F143 codes of magnitude at most 3.75 (exponent field ≤ 9, never the NaN
// code 0x80) and a different scale in [−6, 4] per 64 × 64 block, so that
// products over K ≤ 129 stay far inside f16.
struct BlockScaled {
  std::vector<std::uint8_t> codes, scales;
};

BlockScaled block_scaled_bytes(const Shape& codes_shape, const Shape& scales_shape, std::uint32_t seed,
                               int lowest_scale = -6, int highest_scale = 4) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> sign(0, 1), exponent(0, 9), mantissa(0, 7),
      scale(lowest_scale, highest_scale);
  BlockScaled bytes;
  for (std::uint64_t i = 0; i < element_count(codes_shape); ++i) {
    const int e = exponent(random), m = mantissa(random);
    const int code = (sign(random) << 7) | (e << 3) | m;
    bytes.codes.push_back(static_cast<std::uint8_t>(code == 0x80 ? 0 : code));
  }
  for (std::uint64_t i = 0; i < element_count(scales_shape); ++i) {
    const std::int32_t value = scale(random);
    std::uint8_t b[4];
    std::memcpy(b, &value, 4);
    bytes.scales.insert(bytes.scales.end(), b, b + 4);
  }
  return bytes;
}

Shape scales_shape_of(Shape codes) {
  const std::size_t rank = codes.size();
  codes[rank - 2] = (codes[rank - 2] + 63) / 64;
  codes[rank - 1] = (codes[rank - 1] + 63) / 64;
  return codes;
}

Graph block_scaled_graph(const Shape& a_shape, const Shape& codes_shape) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, a_shape);
  const ValueId codes = g.parameter("codes", DType::kU8, codes_shape);
  const ValueId scales = g.parameter("scales", DType::kI32, scales_shape_of(codes_shape));
  g.host_output("c", g.matmul(a, g.block_scale(codes, scales)));
  return g;
}

CompileResult check_block_scaled(const Shape& a_shape, const Shape& codes_shape, std::uint32_t tiles) {
  SCOPED_TRACE(fmt::format("f16 [{}] · block-scaled [{}] on {} tiles", fmt::join(a_shape, ", "),
                           fmt::join(codes_shape, ", "), tiles));
  const Graph g = block_scaled_graph(a_shape, codes_shape);
  const BlockScaled weights = block_scaled_bytes(codes_shape, scales_shape_of(codes_shape), 3);
  TensorBytes bindings;
  bindings["a"] = random_bytes(TensorType{{DType::kF16}, a_shape}, 1);
  bindings["codes"] = weights.codes;
  bindings["scales"] = weights.scales;
  return testing::check_against_reference(g, bindings, {.tiles = tiles}).compiled;
}

TEST(Matmul, F16ByBlockScaledF143WeightsMatchesTheReference) {
  // K and N of 64, 128 and partial scale blocks (72, 129); M of 1, 13, 71.
  const std::vector<std::array<std::uint32_t, 3>> shapes = {
      {1, 64, 64}, {13, 128, 128}, {71, 72, 129}, {13, 129, 72}, {1, 129, 129}, {71, 64, 128}};
  for (const auto& [m, k, n] : shapes) {
    const CompileResult compiled = check_block_scaled({m, k}, {k, n}, 16);
    ASSERT_EQ(compiled.plans.size(), 1u);
    EXPECT_NE(compiled.plans[0].find("f16 (expanded F143 weights)"), std::string::npos) << compiled.plans[0];
  }
}

// The same weights with their codes packed by the host in 16-deep weight
// panels (block_scale panels, kernels/weight_panels.hpp): gathered as runs of
// whole panels and expanded in place, no rearrange.
CompileResult check_panel_weights(const Shape& a_shape, const Shape& codes_shape, std::uint32_t tiles) {
  SCOPED_TRACE(fmt::format("f16 [{}] · block-scaled panels of [{}] on {} tiles", fmt::join(a_shape, ", "),
                           fmt::join(codes_shape, ", "), tiles));
  const std::size_t rank = codes_shape.size();
  const std::uint32_t k = codes_shape[rank - 2], n = codes_shape[rank - 1];
  Shape panels_shape(codes_shape.begin(), codes_shape.end() - 2);
  for (const std::uint32_t extent : {(n + 15) / 16, (k + 15) / 16, 16u, 16u}) panels_shape.push_back(extent);
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, a_shape);
  const ValueId codes = g.parameter("codes", DType::kU8, panels_shape);
  const ValueId scales = g.parameter("scales", DType::kI32, scales_shape_of(codes_shape));
  g.host_output("c", g.matmul(a, g.block_scale_panels(codes, scales, 16, {k, n})));
  const BlockScaled weights = block_scaled_bytes(codes_shape, scales_shape_of(codes_shape), 3);
  TensorBytes bindings;
  bindings["a"] = random_bytes(TensorType{{DType::kF16}, a_shape}, 1);
  const std::size_t matrix = std::size_t{k} * n;
  for (std::size_t at = 0; at < weights.codes.size(); at += matrix) {
    const auto packed = kernels::amp::to_weight_panels<std::uint8_t>(
        std::span<const std::uint8_t>(weights.codes).subspan(at, matrix), k, n, 16);
    bindings["codes"].insert(bindings["codes"].end(), packed.begin(), packed.end());
  }
  bindings["scales"] = weights.scales;
  const auto reference = tessera::testing::evaluate_graph_with_bounds(g, bindings);
  CompileResult compiled = compile(g, {.tiles = tiles});
  const auto run = testing::run_on_simulator(compiled.application, bindings);
  const TensorType& type = g.type(g.operation(g.top_level(OpKind::kHostOutput)[0]).inputs[0]);
  const auto problem = tessera::testing::check_within_bounds(type, run.outputs.at("c"), reference.outputs.at("c"),
                                                             reference.bounds.at("c"));
  EXPECT_FALSE(problem.has_value()) << *problem << "\n" << format_report(compiled);
  // The panels' reference is the row-major weights' (the same matrix).
  const auto row_major = tessera::testing::evaluate_graph_with_bounds(
      block_scaled_graph(a_shape, codes_shape),
      TensorBytes{{"a", bindings["a"]}, {"codes", weights.codes}, {"scales", weights.scales}});
  EXPECT_EQ(reference.outputs.at("c"), row_major.outputs.at("c"));
  return compiled;
}

TEST(Matmul, PanelPackedF143WeightsMatchTheReference) {
  const std::vector<std::array<std::uint32_t, 3>> shapes = {
      {1, 64, 64}, {13, 128, 128}, {71, 72, 129}, {13, 129, 72}, {1, 129, 129}, {71, 64, 128}, {12, 600, 40}};
  for (const auto& [m, k, n] : shapes) {
    for (const std::uint32_t tiles : {2u, 16u, 64u}) check_panel_weights({m, k}, {k, n}, tiles);
  }
  check_panel_weights({2, 13, 129}, {2, 129, 72}, 8);  // one weight per product
  check_panel_weights({1, 13, 64}, {3, 64, 72}, 8);    // a broadcast over the weights' batch
}

// Panel codes reach the expand calls as whole panels: no byte moves, no
// rearrange.
TEST(Matmul, PanelPackedWeightsAreNeverRearranged) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, {13, 129});
  const ValueId codes = g.parameter("codes", DType::kU8, {(72 + 15) / 16, (129 + 15) / 16, 16, 16});
  const ValueId scales = g.parameter("scales", DType::kI32, {3, 2});
  g.host_output("c", g.matmul(a, g.block_scale_panels(codes, scales, 16, {129, 72})));
  const lower::Program program = lower::lower_graph(g, {.tiles = 8});
  std::size_t expands = 0;
  for (const lower::Step& step : program.steps) {
    for (const auto& [tile, runs] : step.runs) {
      for (const lower::KernelRun& run : runs) {
        EXPECT_NE(run.kernel, kernels::kRearrangeBlockMajorF16);
        EXPECT_NE(run.kernel, "tessera_move_elements_b8");  // byte moves: only codes are bytes
        if (run.kernel == kernels::kExpandF143ToF16) ++expands;
      }
    }
  }
  EXPECT_GT(expands, 0u);
}

TEST(Matmul, BlockScaledWeightsBatchAndBroadcast) {
  check_block_scaled({2, 13, 72}, {72, 129}, 8);     // one weight for both products
  check_block_scaled({2, 13, 129}, {2, 129, 72}, 8);  // one weight per product
  check_block_scaled({1, 13, 64}, {3, 64, 72}, 8);    // a broadcast over the weights' batch
}

TEST(Matmul, BlockScaledWeightsOnFewTilesAndDeepK) {
  check_block_scaled({71, 129}, {129, 129}, 2);  // several waves
  check_block_scaled({12, 600}, {600, 40}, 64);  // K split
}

TEST(Matmul, BlockScaledCompilingTwiceGivesIdenticalBytes) {
  const Graph g = block_scaled_graph({13, 129}, {129, 72});
  const auto first = schema::serialize_package(compile(g, {.tiles = 8}).application);
  const auto second = schema::serialize_package(compile(g, {.tiles = 8}).application);
  EXPECT_EQ(first, second);
}

TEST(Matmul, F8ActivationsByBlockScaledWeightsAreALoweringErrorNamingTheOp) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, {12, 64});
  const ValueId codes = g.parameter("codes", DType::kU8, {64, 64});
  const ValueId scales = g.parameter("scales", DType::kI32, {1, 1});
  const ValueId a8 = g.convert(a, ElementType{DType::kF8F143, 0});
  g.host_output("c", g.matmul(a8, g.block_scale(codes, scales)));
  try {
    (void)compile(g, {.tiles = 4});
    ADD_FAILURE() << "compiled";
  } catch (const lower::LoweringError& error) {
    EXPECT_NE(std::string(error.what()).find("(matmul"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("native FP8"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

// Exact f32 data (small integers, a signed permutation as the weight), so
// chained and looped matmuls are compared bit for bit with the reference.
std::vector<std::uint8_t> small_integers(std::size_t count, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> value(-3, 3);
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(value(random));
  std::vector<std::uint8_t> bytes(count * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<std::uint8_t> signed_permutation(std::uint32_t n) {
  std::vector<float> values(std::size_t{n} * n, 0.0f);
  for (std::uint32_t i = 0; i < n; ++i) values[i * n + (i * 5 + 3) % n] = i % 2 == 0 ? 1.0f : -1.0f;
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST(Matmul, InsideARepeatAndChainedTheResultsAreExact) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {13, 72});
  const ValueId w = g.parameter("w", DType::kF32, {72, 72});
  const auto looped = g.repeat(3, {x}, {w},
                               [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> invariant) {
                                 return std::vector<ValueId>{body.matmul(carried[0], invariant[0])};
                               });
  g.host_output("looped", looped[0]);
  g.host_output("chained", g.matmul(g.matmul(x, w), w));
  const TensorBytes bindings{{"x", small_integers(13 * 72, 5)}, {"w", signed_permutation(72)}};
  const auto expected = tessera::testing::evaluate_graph(g, bindings);
  const CompileResult compiled = compile(g, {.tiles = 16});
  const auto run = testing::run_on_simulator(compiled.application, bindings);
  EXPECT_EQ(run.outputs.at("looped"), expected.at("looped"));
  EXPECT_EQ(run.outputs.at("chained"), expected.at("chained"));
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

TEST(Matmul, ABlockScaledSequenceEntryUsedOtherwiseIsALoweringErrorNamingTheOps) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {64, 64});
  const ValueId codes = g.parameter("codes", DType::kU8, {2, 64, 64});
  const ValueId scales = g.parameter("scales", DType::kI32, {2, 1, 1});
  const auto looped = g.repeat(2, {x}, {g.block_scale(codes, scales)}, {},
                               [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> sequence,
                                  std::span<const ValueId>) {
                                 return std::vector<ValueId>{body.add(carried[0], body.convert(sequence[0], DType::kF16))};
                               });
  g.host_output("y", looped[0]);
  try {
    (void)compile(g, {.tiles = 4});
    ADD_FAILURE() << "compiled";
  } catch (const lower::LoweringError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("(repeat"), std::string::npos) << what;
    EXPECT_NE(what.find("block-scaled sequence entry"), std::string::npos) << what;
    EXPECT_NE(what.find("(convert"), std::string::npos) << what;
  }
}

// SigLIP at f143 passes its layers' block-scaled weights to the layer loop as
// sequence values (models/siglip/graph.cpp): iteration i multiplies by entry
// i's codes with entry i's scales.
TEST(Matmul, BlockScaledSequenceValuesInARepeatMatchTheReference) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {13, 72});
  const ValueId codes = g.parameter("codes", DType::kU8, {3, 72, 72});
  const ValueId scales = g.parameter("scales", DType::kI32, {3, 2, 2});
  const auto looped = g.repeat(3, {x}, {g.block_scale(codes, scales)}, {},
                               [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> sequence,
                                  std::span<const ValueId>) {
                                 return std::vector<ValueId>{body.matmul(carried[0], sequence[0])};
                               });
  g.host_output("y", looped[0]);
  // Scales in [−6, −4] keep three products inside f16.
  const BlockScaled weights = block_scaled_bytes({3, 72, 72}, {3, 2, 2}, 7, -6, -4);
  TensorBytes bindings;
  bindings["x"] = random_bytes(TensorType{{DType::kF16}, {13, 72}}, 1);
  bindings["codes"] = weights.codes;
  bindings["scales"] = weights.scales;
  const auto checked = testing::check_against_reference(g, bindings, {.tiles = 8});
  // Not one iteration's result again and again: the entries differ.
  EXPECT_NE(checked.run.outputs.at("y"), bindings.at("x"));
}

}  // namespace
}  // namespace tessera::compiler
