#include "runtime/profile/json.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tessera::profile {

nlohmann::json summary_json(const Timeline& timeline, const Summary& summary) {
  const auto& profile = timeline.profile();
  nlohmann::json kinds = nlohmann::json::object();
  for (std::size_t i = 0; i < kSummaryKinds.size(); ++i) {
    const double share = summary.tile_cycles == 0 ? 0.0
                                                  : static_cast<double>(summary.kind_cycles[i]) /
                                                        static_cast<double>(summary.tile_cycles);
    kinds[std::string(schema::step_kind_name(kSummaryKinds[i]))] = {
        {"tileCycles", summary.kind_cycles[i]}, {"share", share}};
  }
  std::string digest;
  for (const auto byte : profile.build_digest) digest += fmt::format("{:02x}", byte);
  nlohmann::json doc = {
      {"clockHz", profile.clock_hz},
      {"origin", profile.origin == schema::ClockOrigin::kShared ? "shared" : "perTile"},
      {"buildDigest", digest},
      {"tiles", summary.tiles},
      {"samples", summary.samples},
      {"totalCycles", summary.total_cycles},
      {"milliseconds", summary.milliseconds},
      {"kinds", kinds},
      {"tileCycles", summary.tile_cycles},  // what every share divides
      {"namedOperationCycles", summary.named_cycles},
      {"stepCycles", summary.step_cycles},
      {"droppedSamples", profile.dropped_samples},
      {"criticalTile", nullptr}};
  if (summary.critical_tile) {
    doc["criticalTile"] = {{"tile", summary.critical_tile->value},
                           {"workCycles", summary.critical_work_cycles}};
  }
  return doc;
}

nlohmann::json groups_json(GroupBy by, const std::vector<Group>& groups) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Group& g : groups) {
    rows.push_back({{"name", g.name},
                    {"samples", g.samples},
                    {"tiles", g.tiles},
                    {"cycles", g.cycles},
                    {"p50", g.p50},
                    {"p95", g.p95},
                    {"max", g.max},
                    {"spanCycles", g.span_cycles},
                    {"averageActiveTiles", g.average_active_tiles}});
  }
  return {{"by", group_by_name(by)}, {"groups", rows}};
}

nlohmann::json tile_memory_json(const TileMemory& memory) {
  nlohmann::json doc = {{"tile", memory.tile.value},
                        {"usedBytes", memory.used_bytes},
                        {"freeBytes", memory.free_bytes}};
  for (std::size_t c = 0; c < kMemoryCategories; ++c) {
    doc[std::string(memory_category_name(static_cast<MemoryCategory>(c)))] =
        memory.category_bytes[c];
  }
  return doc;
}

nlohmann::json allocation_map_json(const schema::TileDebug& tile,
                                   const std::vector<std::string>& provenance) {
  std::vector<const schema::Allocation*> by_address;
  for (const auto& allocation : tile.allocations) by_address.push_back(&allocation);
  std::stable_sort(by_address.begin(), by_address.end(),
                   [](const auto* a, const auto* b) { return a->address < b->address; });
  nlohmann::json rows = nlohmann::json::array();
  for (const auto* a : by_address) {
    rows.push_back(
        {{"id", a->id},
         {"address", a->address},
         {"size", a->size},
         {"kind", schema::allocation_kind_name(a->kind)},
         {"category", memory_category_name(memory_category(a->kind))},
         {"name", a->name},
         {"tensor", a->tensor},
         {"liveFrom", a->live_from},
         {"liveUntil", a->live_until == schema::kLiveToEnd ? nlohmann::json(nullptr)
                                                           : nlohmann::json(a->live_until)},
         {"operation", a->provenance < provenance.size() ? provenance[a->provenance] : ""}});
  }
  return {{"tile", tile.tile.value}, {"allocations", rows}};
}

nlohmann::json exchange_phases_json(const std::vector<ExchangePhaseRun>& phases) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& phase : phases) {
    rows.push_back({{"round", phase.round},
                    {"tiles", phase.tiles},
                    {"start", phase.start},
                    {"measured", phase.measured},
                    {"planned", phase.planned ? nlohmann::json(*phase.planned) : nlohmann::json()},
                    {"operation", phase.operation}});
  }
  return rows;
}

}  // namespace tessera::profile
