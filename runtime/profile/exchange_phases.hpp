#pragma once
// Exchange phases of a run, planned against measured. Measured: the longest
// exchange row of the phase in the profile (its steps carry the round). Planned:
// the horizon of the phase's rows in the package, replayed from their code
// (target::row_timeline), the longest over the tiles; one event is one cycle.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/profile/timeline.hpp"
#include "schema/model.hpp"

namespace tessera::profile {

struct ExchangePhaseRun {
  std::uint64_t round = 0;
  std::uint64_t tiles = 0;               // tiles that ran a row in it
  std::uint64_t start = 0;               // the first row's offset
  std::uint32_t measured = 0;            // the longest row, in cycles
  std::optional<std::uint64_t> planned;  // events; none without a package or its rows
  std::string operation;
};

// `package` may be null (no planned horizons).
std::vector<ExchangePhaseRun> exchange_phases(const Timeline& timeline,
                                              const schema::Application* package);

}  // namespace tessera::profile
