#include "runtime/profile/exchange_phases.hpp"

#include <algorithm>
#include <map>
#include <regex>

#include "schema/phase_plan.hpp"
#include "support/little_endian.hpp"
#include "target/exchange_timing.hpp"

namespace tessera::profile {
namespace {

std::optional<std::uint64_t> round_of(const schema::Profile& profile,
                                      const schema::StepLabel& label) {
  for (std::size_t m = 0; m + 1 < label.metadata.size(); m += 2) {
    if (profile.name(label.metadata[m]) != "phase") continue;
    const std::string& value = profile.name(label.metadata[m + 1]);
    if (value.empty() || value.size() > 19 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;  // a hardware profile may name phases its own way
    }
    return std::stoull(value);
  }
  return std::nullopt;
}

// The bytes [address, address + size) of a tile's loaded image, if one
// segment holds them all.
std::optional<std::vector<std::uint8_t>> image_bytes(const schema::Application& app,
                                                     target::PhysicalTile tile,
                                                     std::uint32_t address, std::uint32_t size) {
  for (const auto& image : app.tiles) {
    if (image.tile != tile) continue;
    for (const auto& segment : image.segments) {
      const std::uint64_t end = std::uint64_t{address} + size;
      if (address < segment.address || end > std::uint64_t{segment.address} + segment.file_size) {
        continue;
      }
      const auto bytes = schema::segment_bytes(app, segment);
      const auto from = bytes.begin() + (address - segment.address);
      return std::vector<std::uint8_t>(from, from + size);
    }
  }
  return std::nullopt;
}

// Per phase id, the longest horizon of its rows. Rows are the debug section's
// exchange-row allocations, which the compiler names "exchange row (phase N)".
std::map<std::uint64_t, std::uint64_t> planned_horizons(const schema::Application& app) {
  static const std::regex kRowName(R"(phase (\d{1,18})\))");
  std::map<std::uint64_t, std::uint64_t> horizons;
  for (const auto& tile : app.debug.tiles) {
    for (const auto& allocation : tile.allocations) {
      std::smatch match;
      if (allocation.kind != schema::AllocationKind::kExchangeRow || allocation.size % 4 != 0 ||
          !std::regex_search(allocation.name, match, kRowName)) {
        continue;
      }
      const auto bytes = image_bytes(app, tile.tile, allocation.address, allocation.size);
      if (!bytes) continue;
      std::vector<std::uint32_t> words(bytes->size() / 4);
      for (std::size_t i = 0; i < words.size(); ++i) words[i] = load_u32_le(bytes->data() + 4 * i);
      try {
        const auto timeline = target::row_timeline(words);
        auto& horizon = horizons[std::stoull(match[1].str())];
        if (timeline.horizon > 0) {
          horizon = std::max(horizon, static_cast<std::uint64_t>(timeline.horizon));
        }
      } catch (const Error&) {
        // Not a row the timing model replays: no planned horizon for it.
      }
    }
  }
  return horizons;
}

}  // namespace

std::vector<ExchangePhaseRun> exchange_phases(const Timeline& timeline,
                                              const schema::Application* package) {
  const auto& profile = timeline.profile();
  std::vector<std::optional<std::uint64_t>> rounds;  // by label: exchange steps' rounds
  for (const auto& label : profile.labels) {
    rounds.push_back(label.kind == schema::StepKind::kExchange ? round_of(profile, label)
                                                               : std::nullopt);
  }
  std::map<std::uint64_t, ExchangePhaseRun> phases;
  for (const Sample& sample : timeline.samples()) {
    const auto& step = timeline.step(sample);
    const auto round = rounds[step.label];
    if (!round) continue;
    auto [it, added] = phases.try_emplace(*round);
    ExchangePhaseRun& phase = it->second;
    if (added) {
      phase.round = *round;
      phase.start = sample.offset;
      phase.operation = profile.operation(step);
    }
    ++phase.tiles;
    phase.start = std::min(phase.start, sample.offset);
    phase.measured = std::max(phase.measured, sample.cycles);
  }
  std::vector<ExchangePhaseRun> rows;
  std::map<std::uint64_t, std::uint64_t> planned;
  std::optional<schema::PhasePlan> plan;
  if (package != nullptr) {
    planned = planned_horizons(*package);
    plan.emplace(package->debug);
  }
  for (auto& [round, phase] : phases) {
    if (plan) {
      // A loop's later iterations run the rows of its first.
      const auto it = planned.find(plan->first_occurrence(round));
      if (it != planned.end()) phase.planned = it->second;
    }
    rows.push_back(std::move(phase));
  }
  return rows;
}

}  // namespace tessera::profile
