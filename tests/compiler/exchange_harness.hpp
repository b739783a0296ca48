#pragma once
// Runs a scheduled exchange phase on the simulator, the way tests/sim/phase.hpp
// runs hand-built rows: every tile `sync 3`, `call`s its row (if it has one),
// `sync 3`, halts; the schedule's planned transfers go into the package's
// debug section, so the simulator checks every delivered word against them.
// Test code only: the compiler library never depends on the simulator.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/exchange/schedule.hpp"
#include "compiler/exchange/transfers.hpp"
#include "sim/chip.hpp"

namespace tessera::compiler::exchange::testing {

// Words placed in a tile's memory before the phase (data, guards, filler).
struct Buffer {
  PhysicalTile tile;
  std::uint32_t address = 0;
  std::vector<std::uint32_t> words;
};

// What the buffers must hold after the phase: every transfer applied in
// order (orders between transfers that share bytes are exactly the
// scheduler's, so any legal schedule gives this). Every transfer's source and
// destination ranges must lie inside one buffer each (std::out_of_range).
std::vector<Buffer> expected_memory(std::vector<Buffer> buffers,
                                    const std::vector<LogicalTransfer>& transfers);

// The first word where `actual` differs from `expected` (same buffers), or "".
std::string first_difference(const std::vector<Buffer>& expected,
                             const std::vector<Buffer>& actual);

struct SimulatedPhase {
  sim::RunResult result;
  std::string fault;  // empty when every tile halted
  std::vector<Buffer> after;  // every buffer's words after the phase
  std::uint64_t words_delivered = 0;
};

// Builds the package (one tile image per tile in `tiles`) and runs it.
SimulatedPhase simulate(const std::vector<PhysicalTile>& tiles, const PhaseSchedule& schedule,
                        const std::vector<Buffer>& buffers);

// A word that names where it was put: different for every tile and address.
std::uint32_t pattern(PhysicalTile tile, std::uint32_t address, std::uint32_t salt);

}  // namespace tessera::compiler::exchange::testing
