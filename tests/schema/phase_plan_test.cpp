// Planned exchange phases by round (schema/phase_plan.hpp): how a round folds
// through the loops to its planned phase, what plannedRounds promises, the
// validation rules of phaseLoops and plannedRounds, and that both round-trip
// and enter the digest.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schema/digest.hpp"
#include "schema/package_error.hpp"
#include "schema/phase_plan.hpp"
#include "schema/reader.hpp"
#include "schema/validate.hpp"
#include "schema/writer.hpp"
#include "tests/testing/sample_package.hpp"

namespace tessera::schema {
namespace {

ExchangePhase phase(std::uint32_t id) { return ExchangePhase{id, {}}; }

// A program of 32 rounds: phase 0, then an inner loop of one phase three
// times (rounds 2..7), then phase 8 — all of it three times (rounds 0..29) —
// and phase 30 after it.
Debug nested_loops() {
  Debug debug;
  debug.exchange_phases = {phase(0), phase(2), phase(8), phase(30)};
  debug.phase_loops = {PhaseLoop{0, 10, 3}, PhaseLoop{2, 2, 3}};
  debug.planned_rounds = 32;
  return debug;
}

TEST(PhasePlan, ARoundFoldsThroughOuterThenInnerLoops) {
  const Debug debug = nested_loops();
  validate_phase_plan(debug);
  const PhasePlan plan(debug);
  // round → the phase it runs (−1: planned to move nothing).
  // clang-format off
  const std::vector<std::pair<std::uint64_t, int>> table = {
      {0, 0}, {10, 0}, {20, 0},                   // the outer loop's first phase, every iteration
      {2, 2}, {4, 2}, {6, 2}, {16, 2}, {26, 2},   // the inner loop in every outer iteration
      {8, 8}, {18, 8}, {28, 8}, {30, 30},         // after the inner loop; after the outer loop
      {1, -1}, {9, -1}, {29, -1}, {31, -1},       // closing rounds: planned, nothing moves
  };
  // clang-format on
  for (const auto& [round, expected] : table) {
    const ExchangePhase* found = plan.plan(round);
    ASSERT_NE(found, nullptr) << "round " << round;
    if (expected < 0) {
      EXPECT_TRUE(found->transfers.empty()) << "round " << round;
      EXPECT_EQ(plan.first_occurrence(round) % 2, 1u) << "round " << round;
    } else {
      EXPECT_EQ(found->id, static_cast<std::uint32_t>(expected)) << "round " << round;
    }
  }
  EXPECT_EQ(plan.first_occurrence(27), 3u);  // outer iteration 2 → 7 → inner iteration 3 → 3
}

// docs/FORMAT.md's example: repeat 3 { P }, repeat 2 { Q; repeat 2 { R } }, S.
TEST(PhasePlan, TheFormatDocumentsExample) {
  Debug debug;
  debug.exchange_phases = {phase(0), phase(6), phase(8), phase(18)};
  debug.phase_loops = {PhaseLoop{0, 2, 3}, PhaseLoop{6, 6, 2}, PhaseLoop{8, 2, 2}};
  debug.planned_rounds = 20;
  validate_phase_plan(debug);
  const PhasePlan plan(debug);
  EXPECT_EQ(plan.first_occurrence(4), 0u);
  EXPECT_EQ(plan.first_occurrence(12), 6u);
  EXPECT_EQ(plan.first_occurrence(16), 8u);
  EXPECT_EQ(plan.first_occurrence(13), 7u);
  EXPECT_TRUE(plan.plan(13)->transfers.empty());
  EXPECT_EQ(plan.plan(18)->id, 18u);
}

TEST(PhasePlan, RoundsFromPlannedRoundsOnAreNotChecked) {
  const PhasePlan plan(nested_loops());
  EXPECT_EQ(plan.plan(32), nullptr);
  EXPECT_EQ(plan.plan(std::uint64_t{1} << 40), nullptr);
}

TEST(PhasePlan, WithoutPlannedRoundsOnlyRoundsWithAPhaseAreChecked) {
  Debug debug = nested_loops();
  debug.planned_rounds = 0;
  const PhasePlan plan(debug);
  EXPECT_EQ(plan.plan(1), nullptr);
  EXPECT_EQ(plan.plan(100), nullptr);
  ASSERT_NE(plan.plan(26), nullptr);
  EXPECT_EQ(plan.plan(26)->id, 2u);
}

TEST(PhasePlan, ARoundPast32BitsFoldsToItsFirstOccurrence) {
  Debug debug;
  debug.exchange_phases = {phase(0)};
  debug.phase_loops = {PhaseLoop{0, 2, 0xFFFFFFFF}};
  debug.planned_rounds = 2 * std::uint64_t{0xFFFFFFFF};
  validate_phase_plan(debug);
  const PhasePlan plan(debug);
  const std::uint64_t late = (std::uint64_t{1} << 33) - 4;  // iteration 2^32 − 2
  ASSERT_NE(plan.plan(late), nullptr);
  EXPECT_EQ(plan.plan(late)->id, 0u);
  // Without the loop, round 2^32 is not phase 0 (no 32-bit wrap).
  debug.phase_loops.clear();
  EXPECT_TRUE(PhasePlan(debug).plan(std::uint64_t{1} << 32)->transfers.empty());
}

struct Rule {
  std::string name;
  std::function<void(Debug&)> break_it;
  std::string expected;
};

// clang-format off
const std::vector<Rule> kRules = {
  {"loop has rounds", [](auto& d) { d.phase_loops[1].rounds_per_iteration = 0; }, "debug.phaseLoops[1].roundsPerIteration: a loop has at least one round"},
  {"loop repeats", [](auto& d) { d.phase_loops[1].count = 1; }, "debug.phaseLoops[1].count: 1 iterations; a loop listed here has at least 2"},
  {"loop rounds fit 64 bits", [](auto& d) { d.phase_loops[1].rounds_per_iteration = std::uint64_t{1} << 62; d.phase_loops[1].count = 4; }, "debug.phaseLoops[1].count: loop rounds: 0x4000000000000000 * 0x4 overflows"},
  {"loop end fits 64 bits", [](auto& d) { d.phase_loops.push_back({~std::uint64_t{0} - 3, 2, 2}); }, "debug.phaseLoops[2].count: loop end"},
  {"loops sorted", [](auto& d) { std::swap(d.phase_loops[0], d.phase_loops[1]); }, "debug.phaseLoops[1].firstRound: 0 comes before phaseLoops[0]'s 2"},
  {"loops nest in a first iteration", [](auto& d) { d.phase_loops[1].count = 5; }, "debug.phaseLoops[1]: rounds [2, 12) reach past the first iteration of phaseLoops[0], which ends at 10"},
  {"phases in first iterations", [](auto& d) { d.exchange_phases.push_back(phase(14)); }, "debug.exchangePhases[4].id: round 14 lies in a later iteration of a loop (its first occurrence is round 2)"},
  {"phases below planned rounds", [](auto& d) { d.planned_rounds = 30; }, "debug.exchangePhases[3].id: round 30 is not below plannedRounds 30"},
};
// clang-format on

class PhasePlanRule : public ::testing::TestWithParam<Rule> {};

TEST_P(PhasePlanRule, BrokenAloneGivesItsError) {
  const Rule& rule = GetParam();
  Application app = testing::sample_application();
  const auto sample_phase = app.debug.exchange_phases.at(0);
  app.debug = [&] {
    Debug debug = nested_loops();
    debug.tiles = app.debug.tiles;
    debug.provenance = app.debug.provenance;
    // The sample's planned transfer, at round 0.
    debug.exchange_phases[0].transfers = sample_phase.transfers;
    return debug;
  }();
  EXPECT_NO_THROW(validate(app));
  rule.break_it(app.debug);
  try {
    (void)read_package(serialize_unchecked_for_testing(app));
    FAIL() << "the reader accepted a package breaking '" << rule.name << "'";
  } catch (const PackageError& error) {
    EXPECT_NE(std::string(error.what()).find(rule.expected), std::string::npos)
        << "got: " << error.what();
  }
  EXPECT_THROW(serialize_package(app), PackageError);
}

INSTANTIATE_TEST_SUITE_P(Rules, PhasePlanRule, ::testing::ValuesIn(kRules), [](const auto& test) {
  std::string name = test.param.name;
  for (auto& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
});

TEST(PhasePlan, LoopsAndPlannedRoundsRoundTripAndEnterTheDigest) {
  Application app = testing::sample_application();
  const Sha256 without = build_digest(canonical(app));
  app.debug.phase_loops = {PhaseLoop{0, 4, 3}};
  app.debug.planned_rounds = 12;
  app.debug.exchange_phases[0].id = 2;
  const Application read = read_package(serialize_package(app));
  EXPECT_EQ(read, canonical(app));
  EXPECT_EQ(read.debug.phase_loops, app.debug.phase_loops);
  EXPECT_EQ(read.debug.planned_rounds, 12u);
  const Sha256 with = build_digest(read);
  EXPECT_NE(with, without);
  Application other = app;
  other.debug.planned_rounds = 13;
  EXPECT_NE(build_digest(canonical(other)), with);
  other = app;
  other.debug.phase_loops[0].count = 2;
  other.debug.planned_rounds = 8;
  EXPECT_NE(build_digest(canonical(other)), with);
}

}  // namespace
}  // namespace tessera::schema
