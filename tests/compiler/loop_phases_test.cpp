// Repeats and the debug section's planned exchange phases (issue 15, items
// 12 and 13): a loop's phases are planned once, for its first iteration, and
// the loop is described by its rounds (schema/phase_plan.hpp), so neither the
// package nor the compile work grows with a repeat's count — and the
// simulator still checks every phase of every iteration.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/compile.hpp"
#include "schema/writer.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler {
namespace {

using testing::run_on_simulator;

std::vector<std::uint8_t> f32_bytes(std::size_t count) {
  std::vector<std::uint8_t> bytes(4 * count);
  for (std::size_t i = 0; i < count; ++i) {
    const float value = 0.5f * static_cast<float>(i) - 3.0f;
    std::memcpy(bytes.data() + 4 * i, &value, 4);
  }
  return bytes;
}

// x f32[n, n]; repeat `count` { transpose }; then one more transpose.
Graph transposes_in_a_repeat(std::uint32_t count, std::uint32_t n = 4) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {n, n});
  const auto h = g.repeat(
      count, {x}, {}, [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId>) {
        return std::vector<ValueId>{body.transpose(carried[0], {1, 0})};
      });
  g.host_output("y", g.transpose(h[0], {1, 0}));
  return g;
}

// Item 12: past the old cap of 20,000 planned phases the step after the loop
// had no round ("internal error: map::at").
TEST(LoopPhases, TwentyThousandIterationsAndAPhaseAfterThemCompile) {
  const CompileResult compiled = compile(transposes_in_a_repeat(20000), {.tiles = 4});
  const schema::Debug& debug = compiled.application.debug;
  // The loop's phase and the one after it, each once.
  ASSERT_EQ(debug.exchange_phases.size(), 2u);
  EXPECT_EQ(debug.exchange_phases[0].id, 0u);
  EXPECT_EQ(debug.exchange_phases[1].id, 40000u);
  EXPECT_EQ(debug.phase_loops, (std::vector<schema::PhaseLoop>{{0, 2, 20000}}));
  EXPECT_EQ(debug.planned_rounds, 40002u);
}

// The same shape of program, short enough to simulate in a test: every round
// of every iteration is checked against the plan of the first.
TEST(LoopPhases, EveryIterationIsCheckedAgainstTheFirstOnesPlan) {
  const Graph g = transposes_in_a_repeat(301);
  const CompileResult compiled = compile(g, {.tiles = 4});
  const tessera::testing::TensorBytes inputs{{"x", f32_bytes(16)}};
  const auto run = run_on_simulator(compiled.application, inputs);
  EXPECT_EQ(run.outputs, tessera::testing::evaluate_graph(g, inputs));
  EXPECT_EQ(run.checked_phases, 2u * 302) << "every round of every iteration";
  EXPECT_EQ(run.unchecked_phases, 0u);
}

// Item 13: f32[64, 64] transposed in a repeat of 1000 was a 161 MB package.
TEST(LoopPhases, ThePackageDoesNotGrowWithTheRepeatCount) {
  const CompileResult twice = compile(transposes_in_a_repeat(2, 64), {.tiles = 64});
  const CompileResult often = compile(transposes_in_a_repeat(1000, 64), {.tiles = 64});
  const auto& phases = often.application.debug.exchange_phases;
  ASSERT_EQ(phases.size(), 2u);  // the loop's phase and the one after it
  EXPECT_EQ(phases[0], twice.application.debug.exchange_phases[0]);
  EXPECT_EQ(phases[1].transfers, twice.application.debug.exchange_phases[1].transfers);
  ASSERT_EQ(often.application.debug.phase_loops.size(), 1u);
  EXPECT_EQ(often.application.debug.phase_loops[0].count, 1000u);
  // Only numbers differ: the count's immediate, the loop record, the round
  // in the name of the phase after the loop ("exchange row (phase 2000)" on
  // each of the 64 tiles, a few bytes longer than "(phase 4)").
  const schema::WriteOptions raw{.compress = false};
  const std::size_t small = schema::serialize_package(twice.application, raw).size();
  const std::size_t large = schema::serialize_package(often.application, raw).size();
  EXPECT_LE(large, small + 2048) << small << " bytes for 2 iterations, " << large << " for 1000";
}

// Item 13: the phase walk visited every iteration even of loops without an
// exchange: 10^10 iterations (98 s), 2^32 − 1 iterations (44 s).
TEST(LoopPhases, CompileWorkDoesNotDependOnTheCounts) {
  Graph nested;
  const ValueId x = nested.host_input("x", DType::kF32, {4});
  const auto outer = nested.repeat(
      100000, {x}, {}, [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId>) {
        return body.repeat(100000, {carried[0]}, {},
                           [](Graph& inner, std::span<const ValueId> c, std::span<const ValueId>) {
                             return std::vector<ValueId>{inner.add(c[0], c[0])};
                           });
      });
  nested.host_output("y", outer[0]);
  const CompileResult compiled = compile(nested, {.tiles = 1});
  EXPECT_TRUE(compiled.application.debug.exchange_phases.empty());
  EXPECT_TRUE(compiled.application.debug.phase_loops.empty());
  EXPECT_EQ(compiled.application.debug.planned_rounds, 0u);

  const CompileResult longest = compile(transposes_in_a_repeat(0xFFFFFFFF), {.tiles = 4});
  EXPECT_EQ(longest.application.debug.phase_loops,
            (std::vector<schema::PhaseLoop>{{0, 2, 0xFFFFFFFF}}));
}

// A phase whose first round does not fit a 32-bit phase id is where the
// description stops: the package says so (plannedRounds), and everything
// before it — the loop of 2^31 iterations included — stays checked.
TEST(LoopPhases, PhasesPast32BitRoundsAreLeftUncheckedAndThePackageSaysSo) {
  const CompileResult compiled = compile(transposes_in_a_repeat(0x80000000), {.tiles = 4});
  const schema::Debug& debug = compiled.application.debug;
  ASSERT_EQ(debug.exchange_phases.size(), 1u);
  EXPECT_EQ(debug.exchange_phases[0].id, 0u);
  EXPECT_EQ(debug.phase_loops, (std::vector<schema::PhaseLoop>{{0, 2, 0x80000000}}));
  EXPECT_EQ(debug.planned_rounds, std::uint64_t{1} << 32);
  ASSERT_EQ(compiled.report.phases.size(), 2u);
  EXPECT_EQ(compiled.report.phases[1].round, std::uint64_t{1} << 32);
}

// Loops in loops, each with phases before, inside and after the inner loop:
// the rounds fold outer loop first, then inner, and the simulator checks
// every word of every iteration against the plan.
TEST(LoopPhases, NestedLoopsAreCheckedInEveryIteration) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 4});
  const ValueId w = g.host_input("w", DType::kF32, {4, 4});
  const auto outer = g.repeat(
      3, {x}, {w}, [](Graph& body, std::span<const ValueId> c, std::span<const ValueId> inv) {
        const ValueId t = body.transpose(c[0], {1, 0});
        const auto inner =
            body.repeat(2, {t}, {inv[0]},
                        [](Graph& in, std::span<const ValueId> d, std::span<const ValueId> v) {
                          return std::vector<ValueId>{in.add(in.transpose(d[0], {1, 0}), v[0])};
                        });
        return std::vector<ValueId>{body.add(body.transpose(inner[0], {1, 0}), c[0])};
      });
  g.host_output("y", outer[0]);
  const CompileResult compiled = compile(g, {.tiles = 4});
  const schema::Debug& debug = compiled.application.debug;
  EXPECT_EQ(debug.phase_loops.size(), 2u);
  EXPECT_EQ(debug.exchange_phases.size(), compiled.report.phases.size()) << "each phase once";

  const tessera::testing::TensorBytes inputs{{"x", f32_bytes(16)}, {"w", f32_bytes(16)}};
  const auto run = run_on_simulator(compiled.application, inputs);
  EXPECT_EQ(run.outputs, tessera::testing::evaluate_graph(g, inputs));
  EXPECT_EQ(run.checked_phases, debug.planned_rounds);
  EXPECT_EQ(run.unchecked_phases, 0u);
}

}  // namespace
}  // namespace tessera::compiler
