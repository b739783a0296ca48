#pragma once
// What one tile did during one exchange phase: the row's sends and receive
// controls on the phase's event clock (which starts when the tile leaves the
// phase-entry `sync 3`), the bases its addresses are relative to, and the
// code it executed (for the element-conflict rule). The fabric
// (sim/exchange_fabric.hpp) moves the words once every tile's record is done.

#include <cstdint>
#include <optional>
#include <vector>

#include "target/exchange_timing.hpp"
#include "target/memory_map.hpp"

namespace tessera::sim {

struct ExchangeRecord {
  std::uint64_t phase = 0;  // the internal-sync round that opened the phase
  target::OutgoingStream stream;
  std::vector<target::SendWindow> sends;
  std::vector<target::ReceiveControl> controls;
  std::uint32_t incoming_base = 0;  // A4 when the row started
  std::uint32_t outgoing_base = 0;  // A7 when the row started
  // Addresses of the exchange instructions executed: the row's code.
  std::optional<target::AddressRange> row_code;
  bool started = false;  // executed at least one exchange instruction
  bool done = false;     // the row returned, or the tile left the phase
  // The event the row ended at (its br, or where the tile left the phase):
  // from then on the tile runs other code, which may read what it received.
  std::optional<target::Event> end;

  void finish() {
    done = true;
    if (started && !end) end = stream.now();
  }
  void note_instruction(std::uint32_t pc, std::uint32_t bytes) {
    const target::AddressRange range{pc, pc + bytes};
    row_code = row_code ? target::AddressRange{std::min(row_code->begin, range.begin),
                                              std::max(row_code->end, range.end)}
                        : range;
  }
};

}  // namespace tessera::sim
