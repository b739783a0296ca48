// How a run's records become its cycle profile (schema/profile.hpp): the
// chip's spans (the code a tile ran between two syncs, and each sync wait)
// split by what the tile recorded inside them (kernel calls and exchange
// rows), each step named by the graph operation the package's debug section
// gives it.
#include <map>

#include <fmt/format.h>

#include "sim/chip.hpp"
#include "sim/sync_zones.hpp"

namespace tessera::sim {
namespace {

using schema::ProfileStep;
using schema::StepKind;

ProfileStep make_step(StepKind kind, std::uint64_t start, std::uint64_t end) {
  ProfileStep step;
  step.kind = kind;
  // Raw 32-bit counters, as the hardware's wrap (profile.capnp).
  step.start_cycle = static_cast<std::uint32_t>(start);
  step.end_cycle = static_cast<std::uint32_t>(end);
  return step;
}

StepKind wait_kind(std::uint32_t zone) {
  if (is_host_zone(zone) || zone == kHostReceiveZone) return StepKind::kHost;
  if (zone == kExchangeWait) return StepKind::kExchange;  // the phase's words still moving
  return StepKind::kSynchronization;
}

// The operation an exchange row serves: the provenance of a planned transfer
// this tile sends or receives in the row's phase ("" when the round is not
// planned, or plans nothing for this tile).
std::string exchange_operation(const schema::ExchangePhase* planned, target::PhysicalTile tile,
                               const TileDebugIndex& debug) {
  if (planned == nullptr) return {};
  for (const auto& transfer : planned->transfers) {
    if (transfer.provenance == schema::kNoProvenance) continue;
    bool ours = transfer.source_tile == tile;
    for (const auto& destination : transfer.destinations) ours = ours || destination.tile == tile;
    if (ours) return debug.provenance(transfer.provenance);
  }
  return {};
}

// Steps the package names no operation for take a neighbour's: the code
// between kernel calls and an unplanned row prepare the next operation, so
// they take the next named one; a wait finishes the work before it, so it
// takes the previous one. Either falls back to the other side.
void fill_operations(std::vector<ProfileStep>& steps) {
  const auto named = [&](std::size_t i) { return !steps[i].operation.empty(); };
  std::vector<std::string> previous(steps.size()), next(steps.size());
  std::string last;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    previous[i] = last;
    if (named(i)) last = steps[i].operation;
  }
  last.clear();
  for (std::size_t i = steps.size(); i-- > 0;) {
    next[i] = last;
    if (named(i)) last = steps[i].operation;
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (named(i)) continue;
    const bool waits = steps[i].kind == StepKind::kSynchronization ||
                       steps[i].kind == StepKind::kHost ||
                       (steps[i].kind == StepKind::kExchange && !steps[i].metadata.empty() &&
                        steps[i].metadata.front().first == "zone");
    steps[i].operation = waits ? (previous[i].empty() ? next[i] : previous[i])
                               : (next[i].empty() ? previous[i] : next[i]);
  }
}

// Which iteration of which loops a tile runs, replayed from its stores to the
// loops' counter words (a loop's word holds count − i in iteration i).
class LoopIterations {
 public:
  explicit LoopIterations(const Tile& tile)
      : tile_(tile), writes_(tile.loop_counter_writes()), values_(tile.debug().loops().size(), 0) {}

  // The label of the iterations the tile runs at `cycle` ("" outside every
  // loop); cycles are asked in increasing order.
  const std::string& at(std::uint64_t cycle) {
    bool changed = false;
    for (; next_ < writes_.size() && writes_[next_].cycle <= cycle; ++next_) {
      values_[writes_[next_].loop] = writes_[next_].value;
      changed = true;
    }
    if (changed) relabel();
    return label_;
  }

 private:
  void relabel() {
    label_.clear();
    const auto& loops = tile_.debug().loops();
    for (std::size_t l = 0; l < loops.size(); ++l) {
      const std::uint32_t value = values_[l];
      if (value == 0 || value > loops[l].count) continue;  // not inside this loop
      const std::string& name = tile_.debug().provenance(loops[l].provenance);
      if (!label_.empty()) label_ += " / ";
      label_ += fmt::format("{} iteration {}", name.empty() ? fmt::format("loop {}", l) : name,
                            loops[l].count - value);
    }
  }

  const Tile& tile_;
  const std::vector<LoopCounterWrite>& writes_;
  std::vector<std::uint32_t> values_;
  std::size_t next_ = 0;
  std::string label_;
};

}  // namespace

schema::Profile Chip::profile() const {
  schema::Profile profile;
  profile.clock_hz = options_.clock_hz;
  profile.origin = schema::ClockOrigin::kShared;
  std::map<std::uint16_t, std::vector<const Span*>> spans_by_tile;
  for (const std::size_t index : started_) spans_by_tile[tiles_[index]->id().value];
  for (const auto& span : spans_) {
    if (span.end < span.start) continue;
    spans_by_tile[tiles_[span.tile]->id().value].push_back(&span);
  }
  for (auto& [id, spans] : spans_by_tile) {
    const Tile& tile = *tiles_[index_of(target::PhysicalTile(id))];
    const auto& activities = tile.activities();
    std::size_t next_activity = 0;
    std::vector<ProfileStep> steps;
    LoopIterations iterations(tile);
    // Steps come in time order; each is in the iterations running at its start.
    const auto add = [&](ProfileStep step, std::uint64_t start) {
      if (step.start_cycle == step.end_cycle) return;
      step.layer = iterations.at(start);
      steps.push_back(std::move(step));
    };
    for (const Span* span : spans) {
      if (std::string_view(span->name) != "compute") {
        ProfileStep wait = make_step(wait_kind(span->zone), span->start, span->end);
        wait.metadata.emplace_back("zone", fmt::format("{:#x}", span->zone));
        add(std::move(wait), span->start);
        continue;
      }
      std::uint64_t at = span->start;
      for (; next_activity < activities.size() && activities[next_activity].end <= span->end;
           ++next_activity) {
        const TileActivity& activity = activities[next_activity];
        if (activity.start < at) continue;  // not inside this span (cannot happen; be safe)
        add(make_step(StepKind::kCompute, at, activity.start), at);
        if (activity.kind == TileActivity::Kind::kKernel) {
          ProfileStep step = make_step(StepKind::kCompute, activity.start, activity.end);
          step.kernel = *activity.kernel;
          step.operation = tile.debug().provenance(activity.provenance);
          add(std::move(step), activity.start);
        } else {
          ProfileStep step = make_step(StepKind::kExchange, activity.start, activity.end);
          step.operation =
              exchange_operation(planned_phases_.plan(activity.phase), tile.id(), tile.debug());
          step.metadata.emplace_back("phase", std::to_string(activity.phase));
          add(std::move(step), activity.start);
        }
        at = activity.end;
      }
      add(make_step(StepKind::kCompute, at, span->end), at);
    }
    fill_operations(steps);
    profile.tiles.push_back(schema::TileProfile{tile.id(), std::move(steps)});
  }
  return profile;
}

}  // namespace tessera::sim
