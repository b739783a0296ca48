// attention compiled and run on the simulator against the CPU reference
// within tests/testing/graph_bounds.hpp's attention bound (docs/GRAPH_FORMAT.md,
// "Numerics"). The bound's model — scores by an f16 GEMM of depth D, the
// softmax with f32 subtract and scale, one f16 rounding of the shift, exp
// within 2 ulp, unnormalised f16 weights times V by f16 GEMMs whose passes
// never exceed ⌈T/16⌉ on any product's path, online-softmax state and
// accumulator in f32, one final f16 rounding — is the plan's numerics
// (kernels/README.md, "Attention numerics"; kernels' attention_task_test
// derives a tighter per-element bound for the same chain).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "compiler/compile.hpp"
#include "compiler/emit/link.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/placement.hpp"
#include "compiler/plan/attention_plan.hpp"
#include "kernels/half.hpp"
#include "schema/writer.hpp"
#include "target/exchange_timing.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler {
namespace {

using testing::run_on_simulator;
using testing::TensorBytes;

struct Case {
  std::uint32_t batch, heads, queries, keys, head_dim, tiles;
};

std::vector<std::uint8_t> random_f16(std::size_t count, std::mt19937& random, float range) {
  std::uniform_real_distribution<float> value(-range, range);
  std::vector<std::uint8_t> bytes(count * 2);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint16_t h = kernels::f32_to_f16(value(random));
    bytes[2 * i] = static_cast<std::uint8_t>(h);
    bytes[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
  }
  return bytes;
}

Graph attention_graph(const Case& c, double scale) {
  Graph g;
  const ValueId q = g.host_input("q", DType::kF16, {c.batch, c.heads, c.queries, c.head_dim});
  const ValueId k = g.host_input("k", DType::kF16, {c.batch, c.heads, c.keys, c.head_dim});
  const ValueId v = g.host_input("v", DType::kF16, {c.batch, c.heads, c.keys, c.head_dim});
  g.host_output("o", g.attention(q, k, v, scale));
  return g;
}

TensorBytes random_bindings(const Case& c, std::uint32_t seed, float range = 1.0f) {
  std::mt19937 random(seed);
  const std::size_t queries = std::size_t{c.batch} * c.heads * c.queries * c.head_dim;
  const std::size_t keys = std::size_t{c.batch} * c.heads * c.keys * c.head_dim;
  TensorBytes bindings;
  bindings["q"] = random_f16(queries, random, range);
  bindings["k"] = random_f16(keys, random, range);
  bindings["v"] = random_f16(keys, random, range);
  return bindings;
}

// Compiles (with `key_parts` forced, or as planned), runs on the simulator
// and compares with the reference.
void expect_matches_reference(const Case& c, std::uint32_t seed, float range = 1.0f,
                              const plan::AttentionPlanOptions& options = {}) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const Graph g = attention_graph(c, scale);
  const plan::AttentionPlan plan =
      plan::plan_attention({c.batch, c.heads, c.queries, c.keys, c.head_dim}, c.tiles, options);
  SCOPED_TRACE(plan::describe(plan));
  const CompileResult compiled = compile(g, {.tiles = c.tiles, .attention = options});
  const TensorBytes bindings = random_bindings(c, seed, range);
  const auto run = run_on_simulator(compiled.application, bindings);
  const auto reference = tessera::testing::evaluate_graph_with_bounds(g, bindings);
  const ValueId out = g.operation(g.top_level(OpKind::kHostOutput).at(0)).inputs.at(0);
  const auto problem = tessera::testing::check_within_bounds(
      g.type(out), run.outputs.at("o"), reference.outputs.at("o"), reference.bounds.at("o"));
  EXPECT_FALSE(problem.has_value()) << *problem;
  // A bound that is everywhere infinite could not fail.
  for (const auto& bound : reference.bounds.at("o")) {
    ASSERT_EQ(bound.kind, tessera::testing::ElementBound::Kind::kWithin);
    ASSERT_TRUE(std::isfinite(bound.max_error));
  }
}

class AttentionCompiled : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionCompiled, EqualsTheReferenceWithinItsBound) {
  expect_matches_reference(GetParam(), 18);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("b{}h{}s{}t{}d{}on{}", c.batch, c.heads, c.queries, c.keys, c.head_dim, c.tiles);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionCompiled,
                         ::testing::Values(Case{1, 1, 1, 1, 72, 4},      // one query, one key
                                           Case{1, 2, 12, 13, 64, 8},    // C = 16 < D
                                           Case{2, 2, 13, 12, 72, 16},   // batch > 1
                                           Case{1, 3, 71, 92, 72, 8},    // several heads
                                           Case{1, 1, 92, 71, 64, 4},
                                           Case{1, 2, 129, 129, 72, 6},  // two key blocks
                                           Case{2, 2, 200, 200, 64, 5},  // waves, several key blocks
                                           Case{1, 1, 13, 200, 72, 1},   // everything on one tile
                                           Case{1, 1, 12, 1024, 64, 1},  // streamed key blocks
                                           Case{2, 1, 1, 300, 72, 2},
                                           Case{1, 2, 46, 729, 72, 64}),  // key parts (SigLIP's head)

                         case_name);

TEST(AttentionCompiled, LargerInputsStayWithinTheBound) {
  expect_matches_reference({1, 2, 71, 129, 72, 8}, 7, 2.0f);
}

// The compile report (`--report`) holds the attention's plan, as it does
// each GEMM's.
TEST(AttentionCompiled, TheReportHoldsThePlan) {
  const Case c{1, 2, 71, 129, 72, 8};
  const CompileResult compiled = compile(attention_graph(c, 0.125), {.tiles = c.tiles});
  const plan::AttentionPlan plan =
      plan::plan_attention({c.batch, c.heads, c.queries, c.keys, c.head_dim}, c.tiles);
  ASSERT_EQ(compiled.plans.size(), 1u);
  EXPECT_NE(compiled.plans[0].find("(attention): " + plan::describe(plan)), std::string::npos)
      << compiled.plans[0];
}

TEST(AttentionCompiled, CompilingTwiceGivesIdenticalPackageBytes) {
  const Graph g = attention_graph({2, 2, 71, 129, 72, 0}, 0.125);
  const auto first = schema::serialize_package(compile(g, {.tiles = 7}).application);
  const auto second = schema::serialize_package(compile(g, {.tiles = 7}).application);
  EXPECT_EQ(first, second);
}

TEST(AttentionCompiled, F32AttentionIsALoweringError) {
  Graph g;
  const ValueId q = g.host_input("q", DType::kF32, {1, 1, 4, 8});
  g.host_output("o", g.attention(q, q, q, 0.5));
  try {
    compile(g, {.tiles = 2});
    FAIL() << "compiled an f32 attention";
  } catch (const lower::LoweringError& error) {
    EXPECT_EQ(std::string(error.what()), "op 1 (attention %0, %0, %0): f32 attention is not lowered yet");
  }
}

TEST(AttentionCompiled, AHeadTheKernelsCannotTakeIsALoweringErrorNamingTheOp) {
  Graph g;
  const ValueId q = g.host_input("q", DType::kF16, {1, 1, 4, 70});
  g.host_output("o", g.attention(q, q, q, 0.5));
  try {
    compile(g, {.tiles = 2});
    FAIL() << "compiled a head of 70";
  } catch (const lower::LoweringError& error) {
    EXPECT_NE(std::string(error.what()).find("op 1 (attention %0, %0, %0): head dimension 70"),
              std::string::npos)
        << error.what();
  }
}

// Review #1: a scores scratch reserved the prior art's way, R·C·2 bytes,
// holds the QK output but not the PV output when D > C; link's footprint
// assertion rejects it at compile time.
TEST(AttentionCompiled, AnUnderReservedScoresScratchIsALinkError) {
  const Case c{1, 1, 12, 13, 72, 2};  // C = 16, D = 80
  const Graph g = attention_graph(c, 0.125);
  lower::Program program = lower::lower_graph(g, {.tiles = c.tiles});
  const plan::AttentionPlan plan = plan::plan_attention({1, 1, 12, 13, 72}, c.tiles);
  const std::uint64_t prior = plan::prior_art_scores_bytes(12, 13);
  ASSERT_LT(prior, plan.buffers.scores);
  bool shrunk = false;
  for (auto& buffer : program.buffers) {
    if (buffer.name.find("attention scores") == std::string::npos) continue;
    for (auto& [tile, bytes] : buffer.bytes) bytes = static_cast<std::uint32_t>(prior);
    // Whole elements would round the allocation back up to 32 KiB.
    buffer.whole_elements = false;
    shrunk = true;
  }
  ASSERT_TRUE(shrunk);
  try {
    emit::link_program(program, {});
    FAIL() << "linked a PV GEMM whose output overruns the scores scratch";
  } catch (const emit::LinkError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("kernel tessera_gemm_f16_init on p"), std::string::npos) << message;
    EXPECT_NE(message.find("operand $m2"), std::string::npos) << message;
    EXPECT_NE(message.find(fmt::format("footprint [0x")), std::string::npos) << message;
    EXPECT_NE(message.find("is not inside its allocation 'attention scores (op 3)'"), std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

// The shapes above reach both packings and waves (attention_plan.hpp).
TEST(AttentionCompiled, TheShapesCoverBothPackingsAndWaves) {
  const auto plan_of = [](const Case& c) {
    return plan::plan_attention({c.batch, c.heads, c.queries, c.keys, c.head_dim}, c.tiles);
  };
  const plan::AttentionPlan multicast = plan_of({1, 2, 129, 129, 72, 6});
  EXPECT_FALSE(multicast.streamed) << plan::describe(multicast);
  EXPECT_GT(multicast.key_blocks.size(), 1u);
  EXPECT_GT(multicast.query_blocks.size(), 1u);
  const plan::AttentionPlan streamed = plan_of({1, 1, 12, 1024, 64, 1});
  EXPECT_TRUE(streamed.streamed) << plan::describe(streamed);
  const plan::AttentionPlan waves = plan_of({2, 2, 200, 200, 64, 5});
  EXPECT_GT(waves.waves, 1u) << plan::describe(waves);
  const plan::AttentionPlan parts = plan_of({1, 2, 46, 729, 72, 64});
  EXPECT_GT(parts.key_parts(), 1u) << plan::describe(parts);
}

// Key parts forced, each of 2 … 5 parts: with 7 key blocks forced too, of
// different lengths (the planner prefers even ones) — part 0 walks more
// blocks than the last, whose tasks idle through the last steps.
TEST(AttentionCompiled, ForcedKeyPartsEqualTheReferenceWithinItsBound) {
  const Case c{1, 2, 30, 400, 72, 16};
  for (std::uint32_t parts = 2; parts <= 5; ++parts) {
    plan::AttentionPlanOptions options;
    options.key_blocks = 7;
    options.key_parts = parts;
    const plan::AttentionPlan plan =
        plan::plan_attention({c.batch, c.heads, c.queries, c.keys, c.head_dim}, c.tiles, options);
    SCOPED_TRACE(plan::describe(plan));
    ASSERT_EQ(plan.key_parts(), parts);
    EXPECT_GT(plan.parts.front().rows, plan.parts.back().rows);
    expect_matches_reference(c, 5 + parts, 1.0f, options);
  }
}

// The combine is scattered by combine_rows: 5 query rows over 4 parts give
// the parts 2, 2, 1 and no rows — an odd share and an empty one, whose part
// still sends its accumulator's rows to the others and moves nothing out.
TEST(AttentionCompiled, EveryKeyPartCombinesItsRowsEvenWhenItOwnsNone) {
  const Case c{1, 2, 5, 400, 72, 16};
  plan::AttentionPlanOptions options;
  options.key_blocks = 7;
  options.key_parts = 4;
  const plan::AttentionPlan plan =
      plan::plan_attention({c.batch, c.heads, c.queries, c.keys, c.head_dim}, c.tiles, options);
  SCOPED_TRACE(plan::describe(plan));
  ASSERT_EQ(plan.query_blocks.size(), 1u);
  EXPECT_EQ(plan.combine_rows(0, 2).size(), 1u);
  EXPECT_EQ(plan.combine_rows(0, 3).size(), 0u);
  expect_matches_reference(c, 31, 1.0f, options);
}

// A packed key block larger than one message (128 keys × D = 80: 5,120
// words, the limit 4,148) multicast to a second task: the scheduler cuts it
// into messages and the package's planned phases record it in pieces a
// message can carry (schema's rule), which the simulator checks word by word.
// so400m at batch 2 in miniature: the planner's own budget (320 KiB) does not
// know what else a tile holds — there, 303 KB of bound weights; here, 304 KB
// of k and v on the one tile — and takes 175 KB of buffers (key blocks of
// 128) that the tile cannot place beside them. Told what is left
// (AttentionPlanOptions::working_memory, which `tessera siglip` sets from
// the model's weights), it takes 116 KB (key blocks of 48), which places and
// matches the reference.
TEST(AttentionCompiled, AWorkingMemoryBudgetLeavesRoomForWhatElseTheTileHolds) {
  const Case c{1, 1, 64, 1024, 72, 1};
  const plan::AttentionShape shape{c.batch, c.heads, c.queries, c.keys, c.head_dim};
  const Graph g = attention_graph(c, 1.0 / std::sqrt(72.0));
  EXPECT_GT(plan::plan_attention(shape, c.tiles).buffers.per_tile, 170'000u);
  EXPECT_THROW((void)compile(g, {.tiles = c.tiles}), PlacementError);
  plan::AttentionPlanOptions options;
  options.working_memory = 120'000;
  EXPECT_LE(plan::plan_attention(shape, c.tiles, options).buffers.per_tile, 120'000u);
  expect_matches_reference(c, 5, 1.0f, options);
}

TEST(AttentionCompiled, AKeyBlockLargerThanOneMessageIsCutIntoMessages) {
  const Case c{1, 1, 24, 128, 72, 2};
  plan::AttentionPlanOptions options;
  options.query_blocks = 2;
  options.key_blocks = 1;
  options.streamed = false;
  const plan::AttentionPlan plan =
      plan::plan_attention({c.batch, c.heads, c.queries, c.keys, c.head_dim}, c.tiles, options);
  SCOPED_TRACE(plan::describe(plan));
  ASSERT_EQ(plan.tasks.size(), 2u);
  ASSERT_GT(std::uint64_t{plan.key_columns} * plan.padded_head * 2 / 4, target::kMaxTransferWords);
  expect_matches_reference(c, 3, 1.0f, options);
}

}  // namespace
}  // namespace tessera::compiler
