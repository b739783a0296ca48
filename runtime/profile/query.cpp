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

std::string group_name(const Timeline& timeline, const Sample& sample, GroupBy by) {
  const auto& step = timeline.step(sample);
  switch (by) {
    case GroupBy::kKernel:
      return step.kernel.empty() ? "(no kernel)" : step.kernel;
    case GroupBy::kOperation:
      return step.operation.empty() ? "(no operation)" : step.operation;
    case GroupBy::kLayer:
      return layer_of(step);
    case GroupBy::kKind:
      return std::string(schema::step_kind_name(step.kind));
    case GroupBy::kTile:
      return fmt::format("{}", timeline.tile(sample).tile);
  }
  return "?";
}

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

bool Filter::keeps(const schema::TileProfile& tile, const schema::ProfileStep& step) const {
  if (kind && step.kind != *kind) return false;
  if (kernel && step.kernel != *kernel) return false;
  if (operation && step.operation.find(*operation) == std::string::npos) return false;
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

std::string layer_of(const schema::ProfileStep& step) {
  return step.layer.empty() ? layer_of(step.operation) : step.layer;
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
    std::set<std::uint32_t> tiles;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals;
    std::uint64_t cycles = 0;
  };
  std::map<std::string, Collected> groups;
  for (const Sample& sample : timeline.samples()) {
    if (!filter.keeps(timeline.tile(sample), timeline.step(sample))) continue;
    Collected& group = groups[group_name(timeline, sample, by)];
    group.durations.push_back(sample.cycles);
    group.tiles.insert(sample.tile_index);
    group.intervals.emplace_back(sample.offset, sample.end());
    group.cycles += sample.cycles;
  }
  std::vector<Group> rows;
  for (auto& [name, collected] : groups) {
    auto& d = collected.durations;
    std::sort(d.begin(), d.end());
    const auto at = [&](std::size_t percent) { return d[(d.size() - 1) * percent / 100]; };
    Group row;
    row.name = name;
    row.samples = d.size();
    row.tiles = collected.tiles.size();
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
  for (const Sample& sample : timeline.samples()) {
    const auto& step = timeline.step(sample);
    summary.kind_cycles[summary_kind_index(step.kind)] += sample.cycles;
    summary.step_cycles += sample.cycles;
    if (!step.operation.empty()) summary.named_cycles += sample.cycles;
    if (step.kind == StepKind::kCompute || step.kind == StepKind::kExchange) {
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

}  // namespace tessera::profile
