#pragma once
// The JSON forms of the query results: what `tessera profile --json` prints
// and what the HTML report embeds. Field names are camelCase like the
// package's (`tessera inspect --json`).

#include <nlohmann/json.hpp>

#include "runtime/profile/exchange_phases.hpp"
#include "runtime/profile/memory.hpp"
#include "runtime/profile/query.hpp"

namespace tessera::profile {

nlohmann::json summary_json(const Timeline& timeline, const Summary& summary);
nlohmann::json groups_json(GroupBy by, const std::vector<Group>& groups);
nlohmann::json tile_memory_json(const TileMemory& memory);
// One tile's allocations, by address, with their provenance.
nlohmann::json allocation_map_json(const schema::TileDebug& tile,
                                   const std::vector<std::string>& provenance);

nlohmann::json exchange_phases_json(const std::vector<ExchangePhaseRun>& phases);

}  // namespace tessera::profile
