#pragma once
// The planned exchange phases of a package, by internal-sync round
// (docs/FORMAT.md, "Planned exchange phases"). The one reading of
// Debug.exchangePhases, phaseLoops and plannedRounds: the simulator asks it
// for the plan of every phase it runs, the validator checks a package's
// loops with it.
//
// A program's loops run the same exchange phases on every iteration, so the
// debug section describes each phase once, at the round of its first
// occurrence, and lists the loops: a round in a later iteration of a loop
// folds back to the same round of the first iteration (outer loops first,
// then the loops nested in the first iteration), whatever the loop counts.
// The package's size does not grow with a loop's count.

#include <cstdint>
#include <map>
#include <vector>

#include "schema/model.hpp"

namespace tessera::schema {

class PhasePlan {
 public:
  PhasePlan() = default;
  // The debug section must be valid (validate_phase_plan).
  explicit PhasePlan(const Debug& debug);

  // What the words of `round` must match: its planned phase; an empty plan
  // when the package plans every round below plannedRounds and this one has
  // no phase (it must move nothing); nullptr when the round is not checked.
  const ExchangePhase* plan(std::uint64_t round) const;

  // `round` folded through the loops into their first iterations.
  std::uint64_t first_occurrence(std::uint64_t round) const;

 private:
  std::vector<PhaseLoop> loops_;   // by first round, an outer loop before the loops it holds
  std::vector<std::size_t> skip_;  // per loop: the index of the first loop after its rounds
  std::map<std::uint32_t, ExchangePhase> phases_;
  std::uint64_t planned_rounds_ = 0;
  ExchangePhase nothing_;
};

// The rules of phaseLoops and plannedRounds (docs/FORMAT.md), each failure a
// PackageError naming the field: a loop has ≥ 1 round per iteration and a
// count ≥ 2, its rounds fit 64 bits (checked arithmetic), loops are sorted by
// first round and nest (a loop lies after another's rounds or inside its
// first iteration); no phase id lies in a later iteration of a loop; with
// plannedRounds > 0 every phase id is below it.
void validate_phase_plan(const Debug& debug);

}  // namespace tessera::schema
