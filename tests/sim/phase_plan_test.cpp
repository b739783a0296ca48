// What the simulator checks a phase against (schema/phase_plan.hpp): the
// package's planned phase for the round; with plannedRounds, an empty plan
// for a round without one; nothing past plannedRounds or without it.
#include <gtest/gtest.h>

#include "schema/model.hpp"
#include "sim/chip.hpp"
#include "tests/sim/phase.hpp"
#include "tests/sim/rows.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::Event;
using target::PhysicalTile;
using Kind = RowAction::Kind;

PhysicalTile p(std::uint16_t id) { return PhysicalTile(id); }

// p0 sends 16 words to p53 in the package's only phase (round 0).
void point_to_point(Phase& phase) {
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 16);
  const std::vector<PhysicalTile> receivers{p(53)};
  phase.row(p(0),
            build_row({{Kind::kSend, start, kSource / 4, 16, target::word32_sctl(p(0), receivers)}},
                      start + 16, kRow));
  phase.row(p(53), build_row(receive_actions(timing, 0, kDestination / 4), timing.horizon, kRow));
  phase.source(p(0), 16);
  phase.guarded_destination(p(53), kDestination, 16);
}

schema::ExchangePhase planned_point_to_point() {
  return schema::ExchangePhase{
      0,
      {schema::PlannedTransfer{p(0),
                               kSource,
                               16,
                               {schema::TransferDestination{p(53), kDestination}},
                               schema::kNoProvenance}}};
}

TEST(PhasePlanCheck, APlannedPhaseIsCheckedAndTheClosingRoundToo) {
  Phase phase({p(0), p(53)});
  point_to_point(phase);
  phase.plan(planned_point_to_point());
  phase.plan_rounds(2);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted);
  EXPECT_EQ(phase.chip().exchange_stats().checked_phases, 2u);
  EXPECT_EQ(phase.chip().exchange_stats().unchecked_phases, 0u);
}

TEST(PhasePlanCheck, WordsInARoundPlannedToMoveNothingAreAMismatch) {
  Phase phase({p(0), p(53)});
  point_to_point(phase);
  phase.plan_rounds(2);  // every round below 2 planned; round 0 has no phase: it moves nothing
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeMismatch);
  EXPECT_NE(fault.message.find(
                "p53 0x70000 received p0 0x60000's word, which no planned transfer puts there"),
            std::string::npos)
      << fault.message;
}

TEST(PhasePlanCheck, WithoutPlannedRoundsARoundWithoutAPhaseIsNotChecked) {
  Phase phase({p(0), p(53)});
  point_to_point(phase);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted);
  EXPECT_EQ(phase.chip().exchange_stats().checked_phases, 0u);
  EXPECT_EQ(phase.chip().exchange_stats().unchecked_phases, 2u);
  phase.expect_received(p(53), kDestination, p(0), 16);
}

}  // namespace
}  // namespace tessera::sim
