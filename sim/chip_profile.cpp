// How a run's records become its cycle profile (schema/profile.hpp): the
// chip's spans (the code a tile ran between two syncs, and each sync wait)
// split by what the tile recorded inside them (kernel calls and exchange
// rows), each step named by the graph operation the package's debug section
// gives it.
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "schema/profile_samples.hpp"
#include "sim/chip.hpp"
#include "sim/sync_zones.hpp"

namespace tessera::sim {
namespace {

using schema::StepKind;

// A step while its tile is being read: its texts already interned, its
// operation still to be filled from its neighbours.
struct Pending {
  StepKind kind = StepKind::kCompute;
  bool waits = false;  // a wait (sync, host or exchange words): it finishes the work before it
  std::uint32_t kernel = 0, operation = 0, layer = 0;
  std::uint32_t metadata_name = 0, metadata_value = 0;  // 0, 0: none
  std::uint32_t start_cycle = 0, end_cycle = 0;
};

Pending make_step(StepKind kind, std::uint64_t start, std::uint64_t end) {
  Pending step;
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
// this tile sends or receives in the row's phase (kNoProvenance when the
// round is not planned, or plans nothing for this tile).
std::uint32_t exchange_operation(const schema::ExchangePhase* planned, target::PhysicalTile tile) {
  if (planned == nullptr) return schema::kNoProvenance;
  for (const auto& transfer : planned->transfers) {
    if (transfer.provenance == schema::kNoProvenance) continue;
    bool ours = transfer.source_tile == tile;
    for (const auto& destination : transfer.destinations) ours = ours || destination.tile == tile;
    if (ours) return transfer.provenance;
  }
  return schema::kNoProvenance;
}

// Steps the package names no operation for take a neighbour's: the code
// between kernel calls and an unplanned row prepare the next operation, so
// they take the next named one; a wait finishes the work before it, so it
// takes the previous one. Either falls back to the other side. Name 0 is "".
void fill_operations(std::vector<Pending>& steps) {
  std::vector<std::uint32_t> previous(steps.size()), next(steps.size());
  std::uint32_t last = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    previous[i] = last;
    if (steps[i].operation != 0) last = steps[i].operation;
  }
  last = 0;
  for (std::size_t i = steps.size(); i-- > 0;) {
    next[i] = last;
    if (steps[i].operation != 0) last = steps[i].operation;
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].operation != 0) continue;
    steps[i].operation = steps[i].waits ? (previous[i] == 0 ? next[i] : previous[i])
                                        : (next[i] == 0 ? previous[i] : next[i]);
  }
}

// The profile's names for what the tiles record, each text interned once and
// looked up by what it came from (a provenance index, a kernel, a number).
class Names {
 public:
  Names(schema::ProfileInterner& interner, const TileDebugIndex& debug)
      : interner_(interner), debug_(debug) {}

  std::uint32_t provenance(std::uint32_t index) {
    const auto [it, added] = provenance_.try_emplace(index, 0);
    if (added) it->second = interner_.name(debug_.provenance(index));
    return it->second;
  }
  std::uint32_t kernel(const std::string* name) {
    const auto [it, added] = kernels_.try_emplace(name, 0);
    if (added) it->second = interner_.name(name == nullptr ? std::string() : *name);
    return it->second;
  }
  std::uint32_t phase(std::uint64_t round) {
    const auto [it, added] = phases_.try_emplace(round, 0);
    if (added) it->second = interner_.name(std::to_string(round));
    return it->second;
  }
  std::uint32_t zone(std::uint32_t zone) {
    const auto [it, added] = zones_.try_emplace(zone, 0);
    if (added) it->second = interner_.name(fmt::format("{:#x}", zone));
    return it->second;
  }
  std::uint32_t text(std::string_view text) { return interner_.name(text); }

 private:
  schema::ProfileInterner& interner_;
  const TileDebugIndex& debug_;  // the provenance table is the package's, shared by the tiles
  std::unordered_map<std::uint32_t, std::uint32_t> provenance_;
  std::unordered_map<const std::string*, std::uint32_t> kernels_;
  std::unordered_map<std::uint64_t, std::uint32_t> phases_;
  std::unordered_map<std::uint32_t, std::uint32_t> zones_;
};

// Which iteration of which loops a tile runs, replayed from its stores to the
// loops' counter words (a loop's word holds count − i in iteration i).
class LoopIterations {
 public:
  LoopIterations(const Tile& tile, Names& names)
      : tile_(tile), names_(names), writes_(tile.loop_counter_writes()),
        values_(tile.debug().loops().size(), 0) {}

  // The name of the iterations the tile runs at `cycle` ("", name 0, outside
  // every loop); cycles are asked in increasing order.
  std::uint32_t at(std::uint64_t cycle) {
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
    const auto& debug = tile_.debug();
    label_ = names_.text(schema::loop_iterations_label(
        debug.loops(), values_,
        [&](std::uint32_t index) -> const std::string& { return debug.provenance(index); }));
  }

  const Tile& tile_;
  Names& names_;
  const std::vector<LoopCounterWrite>& writes_;
  std::vector<std::uint32_t> values_;
  std::size_t next_ = 0;
  std::uint32_t label_ = 0;
};

}  // namespace

schema::Profile Chip::profile() const {
  schema::Profile profile;
  profile.clock_hz = options_.clock_hz;
  profile.origin = schema::ClockOrigin::kShared;
  schema::ProfileInterner interner(profile);
  const std::uint32_t phase_name = interner.name("phase"), zone_name = interner.name("zone");
  std::map<std::uint16_t, std::vector<const Span*>> spans_by_tile;
  for (const std::size_t index : started_) spans_by_tile[tiles_[index]->id().value];
  for (const auto& span : spans_) {
    if (span.end < span.start) continue;
    spans_by_tile[tiles_[span.tile]->id().value].push_back(&span);
  }
  std::optional<Names> names;
  std::vector<Pending> steps;
  for (auto& [id, spans] : spans_by_tile) {
    const Tile& tile = *tiles_[index_of(target::PhysicalTile(id))];
    if (!names) names.emplace(interner, tile.debug());
    const auto& activities = tile.activities();
    std::size_t next_activity = 0;
    steps.clear();
    LoopIterations iterations(tile, *names);
    // Steps come in time order; each is in the iterations running at its start.
    const auto add = [&](Pending step, std::uint64_t start) {
      if (step.start_cycle == step.end_cycle) return;
      step.layer = iterations.at(start);
      steps.push_back(step);
    };
    for (const Span* span : spans) {
      if (std::string_view(span->name) != "compute") {
        Pending wait = make_step(wait_kind(span->zone), span->start, span->end);
        wait.waits = true;
        wait.metadata_name = zone_name;
        wait.metadata_value = names->zone(span->zone);
        add(wait, span->start);
        continue;
      }
      std::uint64_t at = span->start;
      for (; next_activity < activities.size() && activities[next_activity].end <= span->end;
           ++next_activity) {
        const TileActivity& activity = activities[next_activity];
        if (activity.start < at) continue;  // not inside this span (cannot happen; be safe)
        add(make_step(StepKind::kCompute, at, activity.start), at);
        if (activity.kind == TileActivity::Kind::kKernel) {
          Pending step = make_step(StepKind::kCompute, activity.start, activity.end);
          step.kernel = names->kernel(activity.kernel);
          step.operation = names->provenance(activity.provenance);
          add(step, activity.start);
        } else {
          Pending step = make_step(StepKind::kExchange, activity.start, activity.end);
          step.operation =
              names->provenance(exchange_operation(planned_phases_.plan(activity.phase), tile.id()));
          step.metadata_name = phase_name;
          step.metadata_value = names->phase(activity.phase);
          add(step, activity.start);
        }
        at = activity.end;
      }
      add(make_step(StepKind::kCompute, at, span->end), at);
    }
    fill_operations(steps);
    schema::TileProfile out{tile.id(), {}};
    out.steps.reserve(steps.size());
    for (const Pending& step : steps) {
      schema::StepLabel label{step.kind, step.kernel, step.operation, step.layer, {}};
      if (step.metadata_name != 0) label.metadata = {step.metadata_name, step.metadata_value};
      out.steps.push_back({interner.label(label), step.start_cycle, step.end_cycle});
    }
    profile.tiles.push_back(std::move(out));
  }
  return profile;
}

}  // namespace tessera::sim
