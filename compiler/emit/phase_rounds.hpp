#pragma once
// The internal-sync rounds of a lowered program's exchange phases, and how the
// debug section describes them (schema/phase_plan.hpp, docs/FORMAT.md
// "Planned exchange phases").
//
// Every exchange phase takes two rounds (`sync 3` opens it, the next
// `sync 3` closes it) and every tile runs the same syncs, so the rounds follow
// from the steps: a loop's first iteration starts where the steps before it
// end, and its iterations take the same number of rounds each. One pass over
// the steps finds them, whatever the loop counts: a loop is described once,
// as a PhaseLoop, and its phases once, at the rounds of their first
// occurrence.
//
// The description stops (plannedRounds) at the first phase whose first round
// does not fit a 32-bit phase id, or at the end of the first iteration of a
// loop whose rounds do not fit 64 bits; the simulator does not check the
// rounds from there on.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "compiler/lower/program.hpp"
#include "schema/model.hpp"

namespace tessera::compiler::emit {

struct PhaseRounds {
  // Per exchange step, the round that first opens it; absent for the steps
  // after a loop whose rounds do not fit 64 bits.
  std::map<std::size_t, std::uint64_t> first_round;
  // The exchange steps the debug section plans, in step order (their first
  // rounds fit a phase id and lie below planned_rounds).
  std::vector<std::size_t> planned_steps;
  // The debug section's phaseLoops (sorted as schema/phase_plan.hpp wants)
  // and plannedRounds.
  std::vector<schema::PhaseLoop> loops;
  std::uint64_t planned_rounds = 0;
};

PhaseRounds phase_rounds(std::span<const lower::Step> steps);

}  // namespace tessera::compiler::emit
