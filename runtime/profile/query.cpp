#include "runtime/profile/query.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "support/checked.hpp"
#include "support/error.hpp"
#include "target/topology.hpp"

namespace tessera::profile {
namespace {

using schema::StepKind;

std::optional<StepKind> parse_kind(std::string_view text) {
  for (const auto kind : kSummaryKinds) {
    if (text == schema::step_kind_name(kind)) return kind;
  }
  if (text == "sync") return StepKind::kSynchronization;
  return std::nullopt;
}

std::uint16_t parse_physical_tile(std::string_view text) {
  try {
    const auto tile = target::parse_tile(text, target::Topology::c600());
    return tile.value;
  } catch (const target::TopologyError& error) {
    throw UsageError(fmt::format("--filter: {}", error.what()));
  }
}

// Each sample's group, found through its label (or its tile) so that a name
// is built once per label, not once per step.
class GroupKeys {
 public:
  GroupKeys(const Timeline& timeline, GroupBy by) : by_(by) {
    const auto& profile = timeline.profile();
    const auto key_of = [&](const std::string& name) {
      const auto [it, added] = index_.try_emplace(name, names_.size());
      if (added) names_.push_back(name);
      return it->second;
    };
    if (by == GroupBy::kTile) {
      for (const auto& tile : profile.tiles) keys_.push_back(key_of(fmt::format("{}", tile.tile)));
      return;
    }
    for (const auto& label : profile.labels) {
      const std::string& kernel = profile.name(label.kernel);
      const std::string& operation = profile.name(label.operation);
      switch (by) {
        case GroupBy::kKernel:
          keys_.push_back(key_of(kernel.empty() ? "(no kernel)" : kernel));
          break;
        case GroupBy::kOperation:
          keys_.push_back(key_of(operation.empty() ? "(no operation)" : operation));
          break;
        case GroupBy::kLayer:
          keys_.push_back(key_of(layer_of(profile.name(label.layer), operation)));
          break;
        case GroupBy::kKind:
          keys_.push_back(key_of(std::string(schema::step_kind_name(label.kind))));
          break;
        case GroupBy::kTile:
          break;
      }
    }
  }
  std::size_t of(const Timeline& timeline, const Sample& sample) const {
    return keys_[by_ == GroupBy::kTile ? sample.tile_index : timeline.step(sample).label];
  }
  const std::vector<std::string>& names() const noexcept { return names_; }

 private:
  GroupBy by_;
  std::map<std::string, std::size_t> index_;
  std::vector<std::string> names_;
  std::vector<std::size_t> keys_;  // by label, or by tile
};

// The length of the union of [offset, end) intervals.
std::uint64_t union_length(std::vector<std::pair<std::uint64_t, std::uint64_t>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::uint64_t length = 0, covered_to = 0;
  for (const auto& [begin, end] : intervals) {
    const std::uint64_t from = std::max(begin, covered_to);
    if (end > from) {
      length += end - from;
      covered_to = end;
    }
  }
  return length;
}

}  // namespace

std::optional<GroupBy> parse_group_by(std::string_view text) {
  for (const auto by :
       {GroupBy::kKernel, GroupBy::kOperation, GroupBy::kLayer, GroupBy::kKind, GroupBy::kTile}) {
    if (text == group_by_name(by)) return by;
  }
  return std::nullopt;
}

std::string_view group_by_name(GroupBy by) noexcept {
  switch (by) {
    case GroupBy::kKernel:
      return "kernel";
    case GroupBy::kOperation:
      return "operation";
    case GroupBy::kLayer:
      return "layer";
    case GroupBy::kKind:
      return "kind";
    case GroupBy::kTile:
      return "tile";
  }
  return "?";
}

bool Filter::keeps(const schema::Profile& profile, const schema::StepLabel& label) const {
  if (kind && label.kind != *kind) return false;
  if (kernel && profile.name(label.kernel) != *kernel) return false;
  if (operation && profile.name(label.operation).find(*operation) == std::string::npos) {
    return false;
  }
  return true;
}

bool Filter::keeps(const schema::TileProfile& tile) const {
  if (first_tile && tile.tile.value < *first_tile) return false;
  if (last_tile && tile.tile.value > *last_tile) return false;
  return true;
}

void add_filter_term(Filter& filter, std::string_view term) {
  const auto equals = term.find('=');
  if (equals == std::string_view::npos) {
    throw UsageError(
        fmt::format("--filter '{}': expected NAME=VALUE (kind, kernel, operation, "
                    "tile or tiles)",
                    term));
  }
  const std::string_view name = term.substr(0, equals);
  const std::string_view value = term.substr(equals + 1);
  if (name == "kind") {
    filter.kind = parse_kind(value);
    if (!filter.kind) {
      throw UsageError(
          fmt::format("--filter kind={}: not a step kind (exchange, compute, "
                      "synchronization, host, idle)",
                      value));
    }
  } else if (name == "kernel") {
    filter.kernel = std::string(value);
  } else if (name == "operation") {
    filter.operation = std::string(value);
  } else if (name == "tile") {
    filter.first_tile = filter.last_tile = parse_physical_tile(value);
  } else if (name == "tiles") {
    const auto dash = value.find('-');
    if (dash == std::string_view::npos) {
      throw UsageError(fmt::format("--filter tiles={}: expected FIRST-LAST", value));
    }
    filter.first_tile = parse_physical_tile(value.substr(0, dash));
    filter.last_tile = parse_physical_tile(value.substr(dash + 1));
    if (*filter.first_tile > *filter.last_tile) {
      throw UsageError(fmt::format("--filter tiles={}: the first tile is after the last", value));
    }
  } else {
    throw UsageError(
        fmt::format("--filter {}: unknown; filter by kind, kernel, operation, tile "
                    "or tiles",
                    name));
  }
}

std::string layer_of(const std::string& layer, std::string_view operation) {
  return layer.empty() ? layer_of(operation) : layer;
}

std::string layer_of(std::string_view operation) {
  static const std::regex kLayer(R"(layers?[._ \[](\d+))");
  std::match_results<std::string_view::const_iterator> match;
  if (std::regex_search(operation.begin(), operation.end(), match, kLayer)) {
    return fmt::format("layer {}", match[1].str());
  }
  return "(no layer)";
}

std::vector<Group> group_samples(const Timeline& timeline, GroupBy by, const Filter& filter) {
  struct Collected {
    std::vector<std::uint32_t> durations;
    std::uint64_t tiles = 0;  // samples come by tile: a new tile is a change of it
    std::uint32_t last_tile = ~std::uint32_t{0};
    std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals;
    std::uint64_t cycles = 0;
  };
  const auto& profile = timeline.profile();
  const GroupKeys keys(timeline, by);
  std::vector<char> label_kept(profile.labels.size()), tile_kept(profile.tiles.size());
  for (std::size_t l = 0; l < label_kept.size(); ++l) {
    label_kept[l] = filter.keeps(profile, profile.labels[l]);
  }
  for (std::size_t t = 0; t < tile_kept.size(); ++t) tile_kept[t] = filter.keeps(profile.tiles[t]);
  std::vector<Collected> collected_by_key(keys.names().size());
  for (const Sample& sample : timeline.samples()) {
    if (!tile_kept[sample.tile_index] || !label_kept[timeline.step(sample).label]) continue;
    Collected& group = collected_by_key[keys.of(timeline, sample)];
    group.durations.push_back(sample.cycles);
    if (group.last_tile != sample.tile_index) {
      ++group.tiles;
      group.last_tile = sample.tile_index;
    }
    group.intervals.emplace_back(sample.offset, sample.end());
    group.cycles += sample.cycles;
  }
  std::map<std::string, Collected*> groups;  // by name: the order ties keep
  for (std::size_t k = 0; k < collected_by_key.size(); ++k) {
    if (!collected_by_key[k].durations.empty()) groups[keys.names()[k]] = &collected_by_key[k];
  }
  std::vector<Group> rows;
  for (auto& [name, group] : groups) {
    Collected& collected = *group;
    auto& d = collected.durations;
    std::sort(d.begin(), d.end());
    const auto at = [&](std::size_t percent) { return d[(d.size() - 1) * percent / 100]; };
    Group row;
    row.name = name;
    row.samples = d.size();
    row.tiles = collected.tiles;
    row.cycles = collected.cycles;
    row.p50 = at(50);
    row.p95 = at(95);
    row.max = d.back();
    row.span_cycles = union_length(collected.intervals);
    row.average_active_tiles = row.span_cycles == 0 ? 0.0
                                                    : static_cast<double>(row.cycles) /
                                                          static_cast<double>(row.span_cycles);
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Group& a, const Group& b) { return a.cycles > b.cycles; });
  return rows;
}

std::size_t summary_kind_index(schema::StepKind kind) noexcept {
  for (std::size_t i = 0; i < kSummaryKinds.size(); ++i) {
    if (kSummaryKinds[i] == kind) return i;
  }
  return kSummaryKinds.size() - 1;
}

Summary summarize(const Timeline& timeline) {
  Summary summary;
  const auto& profile = timeline.profile();
  summary.total_cycles = timeline.total_cycles();
  summary.milliseconds = timeline.milliseconds(summary.total_cycles);
  summary.tiles = profile.tiles.size();
  summary.samples = timeline.samples().size();
  summary.tile_cycles = checked_mul(summary.total_cycles, summary.tiles, "the run's tile-cycles");
  std::vector<std::uint64_t> work(profile.tiles.size(), 0);
  std::vector<char> named(profile.labels.size());
  for (std::size_t l = 0; l < named.size(); ++l) {
    named[l] = !profile.name(profile.labels[l].operation).empty();
  }
  for (const Sample& sample : timeline.samples()) {
    const auto& step = timeline.step(sample);
    const StepKind kind = profile.kind(step);
    summary.kind_cycles[summary_kind_index(kind)] += sample.cycles;
    summary.step_cycles += sample.cycles;
    if (named[step.label]) summary.named_cycles += sample.cycles;
    if (kind == StepKind::kCompute || kind == StepKind::kExchange) {
      work[sample.tile_index] += sample.cycles;
    }
  }
  // A tile's time outside its steps is idle; steps that overlap (a malformed
  // or hardware profile may have them) can cover more than the run, so clamp.
  for (const TileSpan& span : timeline.tiles()) {
    if (summary.total_cycles > span.stepped) {
      summary.kind_cycles[summary_kind_index(StepKind::kIdle)] +=
          summary.total_cycles - span.stepped;
    }
  }
  for (std::size_t t = 0; t < work.size(); ++t) {
    if (!summary.critical_tile || work[t] > summary.critical_work_cycles) {
      summary.critical_tile = profile.tiles[t].tile;
      summary.critical_work_cycles = work[t];
    }
  }
  return summary;
}

StepsAt steps_at(const Timeline& timeline, std::uint64_t cycle) {
  StepsAt at;
  at.cycle = cycle;
  const auto& samples = timeline.samples();
  const auto& profile = timeline.profile();
  at.tiles.assign(profile.tiles.size(), nullptr);
  // Samples are by tile, then in time: each tile's run is found by its index.
  std::size_t begin = 0;
  for (std::uint32_t t = 0; t < profile.tiles.size(); ++t) {
    std::size_t end = begin;
    while (end < samples.size() && samples[end].tile_index == t) ++end;
    for (std::size_t i = begin; i < end; ++i) {
      if (samples[i].offset <= cycle && cycle < samples[i].end()) {
        at.tiles[t] = &samples[i];
        break;
      }
    }
    const StepKind kind =
        at.tiles[t] == nullptr ? StepKind::kIdle : profile.kind(timeline.step(*at.tiles[t]));
    ++at.kind_tiles[summary_kind_index(kind)];
    begin = end;
  }
  return at;
}

}  // namespace tessera::profile
