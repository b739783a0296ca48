#include "compiler/emit/phase_rounds.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace tessera::compiler::emit {
namespace {

constexpr std::uint64_t kRoundsPerPhase = 2;  // the opening and the closing `sync 3`
constexpr std::uint64_t kLastPhaseId = std::numeric_limits<std::uint32_t>::max();

}  // namespace

PhaseRounds phase_rounds(std::span<const lower::Step> steps) {
  PhaseRounds result;
  std::uint64_t round = 0;
  bool counting = true;              // false once a loop's rounds overflow 64 bits
  std::optional<std::uint64_t> cap;  // where the description stops
  struct Open {
    std::size_t begin;
    std::uint64_t first_round;
  };
  std::vector<Open> open;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const lower::Step& step = steps[i];
    switch (step.kind) {
      case lower::StepKind::kExchange:
        if (!counting) break;
        result.first_round[i] = round;
        if (!cap && round > kLastPhaseId) cap = round;
        if (!cap) result.planned_steps.push_back(i);
        // (Past 2^32 rounds the cap is set already.)
        if (__builtin_add_overflow(round, kRoundsPerPhase, &round)) counting = false;
        break;
      case lower::StepKind::kLoopBegin:
        open.push_back(Open{i, round});
        break;
      case lower::StepKind::kLoopEnd: {
        const Open loop = open.back();
        open.pop_back();
        if (!counting) break;
        const std::uint64_t per_iteration = round - loop.first_round;
        const std::uint32_t count = steps[loop.begin].count;
        if (per_iteration == 0 || count < 2) break;
        std::uint64_t span = 0, end = 0;
        if (__builtin_mul_overflow(per_iteration, std::uint64_t{count}, &span) ||
            __builtin_add_overflow(loop.first_round, span, &end)) {
          // Later iterations have no round that fits: describe the first.
          counting = false;
          if (!cap) cap = round;
          break;
        }
        if (!cap) result.loops.push_back(schema::PhaseLoop{loop.first_round, per_iteration, count});
        round = end;
        break;
      }
      case lower::StepKind::kHostInputs:
      case lower::StepKind::kHostOutputs:
      case lower::StepKind::kCompute:
        break;
    }
  }
  result.planned_rounds = cap.value_or(round);
  // An outer loop before the loops it holds: by first round, the longer first.
  std::sort(result.loops.begin(), result.loops.end(), [](const auto& a, const auto& b) {
    if (a.first_round != b.first_round) return a.first_round < b.first_round;
    return a.rounds_per_iteration * a.count > b.rounds_per_iteration * b.count;
  });
  return result;
}

}  // namespace tessera::compiler::emit
