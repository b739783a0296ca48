#pragma once
// Questions a person asks of a profile: where the cycles go (the summary),
// and the steps grouped by kernel, operation, layer, kind or tile, each group
// with its samples, tiles, cycles (sum, p50, p95, max) and average active
// tiles, over the steps a filter keeps.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/profile/timeline.hpp"

namespace tessera::profile {

enum class GroupBy : std::uint8_t { kKernel, kOperation, kLayer, kKind, kTile };
// "kernel", "operation", "layer", "kind", "tile"; nullopt for anything else.
std::optional<GroupBy> parse_group_by(std::string_view text);
std::string_view group_by_name(GroupBy by) noexcept;

// Every condition that is set must hold (AND).
struct Filter {
  std::optional<schema::StepKind> kind;
  std::optional<std::string> kernel;                   // exact
  std::optional<std::string> operation;                // substring, case-sensitive
  std::optional<std::uint16_t> first_tile, last_tile;  // physical ids, inclusive
  // A step is kept when its label and its tile are.
  bool keeps(const schema::Profile& profile, const schema::StepLabel& label) const;
  bool keeps(const schema::TileProfile& tile) const;
  bool empty() const noexcept {
    return !kind && !kernel && !operation && !first_tile && !last_tile;
  }
};

// One `--filter` term: kind=K, kernel=NAME, operation=TEXT, tiles=A-B or
// tile=T (A, B, T physical: `p12` or `12`). Throws UsageError otherwise.
void add_filter_term(Filter& filter, std::string_view term);

// The layer a graph operation belongs to: the `layers.N` (or `layer N`,
// `layers[N]`) part of its provenance, "(no layer)" when it names none.
std::string layer_of(std::string_view operation);
// A step's layer: the loop iterations it ran in (its label's layer, "op 3
// (repeat …) iteration 5"), else the layer its operation names.
std::string layer_of(const std::string& layer, std::string_view operation);

struct Group {
  std::string name;
  std::uint64_t samples = 0;
  std::uint64_t tiles = 0;                  // distinct tiles with a sample in the group
  std::uint64_t cycles = 0;                 // sum of durations
  std::uint32_t p50 = 0, p95 = 0, max = 0;  // of durations: sorted[(n − 1)·p / 100]
  // How long some tile was in the group: the union of its samples' intervals.
  std::uint64_t span_cycles = 0;
  // cycles / span_cycles: how many tiles were in the group at once, on average.
  double average_active_tiles = 0;
};

// Sorted by cycles, most first; ties by name.
std::vector<Group> group_samples(const Timeline& timeline, GroupBy by, const Filter& filter = {});

// The kinds a summary splits the chip's time into, in this order.
inline constexpr std::array<schema::StepKind, 5> kSummaryKinds = {
    schema::StepKind::kExchange, schema::StepKind::kCompute, schema::StepKind::kSynchronization,
    schema::StepKind::kHost, schema::StepKind::kIdle};

struct Summary {
  std::uint64_t total_cycles = 0;
  double milliseconds = 0;
  std::uint64_t tiles = 0;
  std::uint64_t samples = 0;
  // Tile-cycles per kind (kSummaryKinds order). Idle also holds the time a
  // tile has no step: before its first and after its last, up to the run's end.
  std::array<std::uint64_t, 5> kind_cycles{};
  std::uint64_t tile_cycles = 0;  // total_cycles × tiles: what the shares divide
  // The tile that worked longest (compute + exchange; the others wait for it
  // at the syncs), lowest id on a tie; none when the profile has no tiles.
  std::optional<target::PhysicalTile> critical_tile;
  std::uint64_t critical_work_cycles = 0;
  // Step cycles whose step names a graph operation, and all step cycles.
  std::uint64_t named_cycles = 0;
  std::uint64_t step_cycles = 0;
};

Summary summarize(const Timeline& timeline);

// What every tile does at one cycle (what the report's cursor says): per
// tile, the sample covering [offset, offset + cycles) ∋ cycle, or none (idle).
struct StepsAt {
  std::uint64_t cycle = 0;
  std::vector<const Sample*> tiles;        // by Profile::tiles; nullptr: no step there
  std::array<std::uint64_t, 5> kind_tiles{};  // tiles per kind (kSummaryKinds order; idle has the none)
};
StepsAt steps_at(const Timeline& timeline, std::uint64_t cycle);
std::size_t summary_kind_index(schema::StepKind kind) noexcept;

}  // namespace tessera::profile
