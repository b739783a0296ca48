#include "runtime/profile/exchange_phases.hpp"

#include <algorithm>
#include <map>
#include <regex>

#include "schema/phase_plan.hpp"
#include "support/little_endian.hpp"
#include "target/exchange_timing.hpp"

namespace tessera::profile {
namespace {

std::optional<std::uint64_t> round_of(const schema::ProfileStep& step) {
  for (const auto& [key, value] : step.metadata) {
    if (key != "phase") continue;
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
  std::map<std::uint64_t, ExchangePhaseRun> phases;
  for (const Sample& sample : timeline.samples()) {
    const auto& step = timeline.step(sample);
    if (step.kind != schema::StepKind::kExchange) continue;
    const auto round = round_of(step);
    if (!round) continue;
    auto [it, added] = phases.try_emplace(*round);
    ExchangePhaseRun& phase = it->second;
    if (added) {
      phase.round = *round;
      phase.start = sample.offset;
      phase.operation = step.operation;
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
