#include "schema/phase_plan.hpp"

#include <fmt/format.h>

#include "schema/package_error.hpp"
#include "support/checked.hpp"

namespace tessera::schema {
namespace {

[[noreturn]] void fail(const std::string& path, std::string message) {
  throw PackageError(path, std::move(message));
}

// The round after a loop's last: first + rounds per iteration × count, or
// ArithmeticError when that does not fit 64 bits.
std::uint64_t end_round(const PhaseLoop& loop) {
  return checked_add(
      loop.first_round,
      checked_mul(loop.rounds_per_iteration, std::uint64_t{loop.count}, "loop rounds"), "loop end");
}

// Per loop the index of the first loop that starts at or after its end: the
// loops in between are the ones it holds (they lie in its first iteration).
std::vector<std::size_t> skips(const std::vector<PhaseLoop>& loops) {
  std::vector<std::size_t> skip(loops.size(), loops.size());
  std::vector<std::size_t> open;
  for (std::size_t j = 0; j < loops.size(); ++j) {
    while (!open.empty() && loops[j].first_round >= end_round(loops[open.back()])) {
      skip[open.back()] = j;
      open.pop_back();
    }
    open.push_back(j);
  }
  return skip;
}

// `round` folded into the first iteration of every loop that holds it,
// outermost first. A loop's inner loops follow it directly, so after folding
// into a loop the scan goes on with them; a loop that does not hold the
// round is skipped with everything inside it.
std::uint64_t fold(const std::vector<PhaseLoop>& loops, const std::vector<std::size_t>& skip,
                   std::uint64_t round) {
  std::size_t i = 0;
  while (i < loops.size() && loops[i].first_round <= round) {
    const PhaseLoop& loop = loops[i];
    if (round < end_round(loop)) {
      round = loop.first_round + (round - loop.first_round) % loop.rounds_per_iteration;
      ++i;
    } else {
      i = skip[i];
    }
  }
  return round;
}

}  // namespace

PhasePlan::PhasePlan(const Debug& debug)
    : loops_(debug.phase_loops),
      skip_(skips(debug.phase_loops)),
      planned_rounds_(debug.planned_rounds) {
  for (const ExchangePhase& phase : debug.exchange_phases) phases_.emplace(phase.id, phase);
}

std::uint64_t PhasePlan::first_occurrence(std::uint64_t round) const {
  return fold(loops_, skip_, round);
}

const ExchangePhase* PhasePlan::plan(std::uint64_t round) const {
  if (planned_rounds_ != 0 && round >= planned_rounds_) return nullptr;
  const std::uint64_t first = first_occurrence(round);
  if (first <= 0xFFFFFFFFu) {
    const auto found = phases_.find(static_cast<std::uint32_t>(first));
    if (found != phases_.end()) return &found->second;
  }
  return planned_rounds_ != 0 ? &nothing_ : nullptr;
}

void validate_phase_plan(const Debug& debug) {
  const auto& loops = debug.phase_loops;
  struct Open {
    std::size_t index;
    std::uint64_t first_iteration_end;
    std::uint64_t end;
  };
  std::vector<Open> open;  // the loops holding the current one, innermost last
  for (std::size_t i = 0; i < loops.size(); ++i) {
    const PhaseLoop& loop = loops[i];
    const std::string path = fmt::format("debug.phaseLoops[{}]", i);
    if (loop.rounds_per_iteration == 0) {
      fail(path + ".roundsPerIteration", "a loop has at least one round");
    }
    if (loop.count < 2) {
      fail(path + ".count",
           fmt::format("{} iterations; a loop listed here has at least 2", loop.count));
    }
    std::uint64_t end = 0;
    try {
      end = end_round(loop);
    } catch (const ArithmeticError& error) {
      fail(path + ".count", error.message());
    }
    if (i > 0 && loop.first_round < loops[i - 1].first_round) {
      fail(path + ".firstRound",
           fmt::format("{} comes before phaseLoops[{}]'s {}: loops are sorted by first round",
                       loop.first_round, i - 1, loops[i - 1].first_round));
    }
    while (!open.empty() && loop.first_round >= open.back().end) open.pop_back();
    if (!open.empty() && end > open.back().first_iteration_end) {
      fail(path,
           fmt::format(
               "rounds [{}, {}) reach past the first iteration of phaseLoops[{}], which ends at "
               "{}: a loop lies inside the first iteration of the loop that holds it",
               loop.first_round, end, open.back().index, open.back().first_iteration_end));
    }
    open.push_back(Open{i, loop.first_round + loop.rounds_per_iteration, end});
  }
  const std::vector<std::size_t> skip = skips(loops);
  for (std::size_t p = 0; p < debug.exchange_phases.size(); ++p) {
    const std::uint32_t id = debug.exchange_phases[p].id;
    const std::string path = fmt::format("debug.exchangePhases[{}].id", p);
    if (const std::uint64_t first = fold(loops, skip, id); first != id) {
      fail(path,
           fmt::format(
               "round {} lies in a later iteration of a loop (its first occurrence is round {}): "
               "a loop's phases are described for its first iteration",
               id, first));
    }
    if (debug.planned_rounds != 0 && id >= debug.planned_rounds) {
      fail(path, fmt::format("round {} is not below plannedRounds {}, so it would never be checked",
                             id, debug.planned_rounds));
    }
  }
}

}  // namespace tessera::schema
