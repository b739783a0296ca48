#pragma once
// The exchange scheduler (issue 8, part 5): one phase's logical transfers →
// timed exchange rows, one per participating tile, legal by the rules of
// reference §5.5 and §2.2, deterministic (the same input gives the same rows),
// with all timing from target/'s functions — the same ones the simulator
// replays. See compiler/README.md.
//
//   prepare_phase   check, cut into ≤ 4148-word messages, find orders (relays)
//   schedule_pieces list scheduling: a send start per message
//   tile_actions    per tile: sends and receive controls at events
//   emit_row        per tile: instructions ending br $m10
//   validate        replay every row and re-check every rule

#include "compiler/exchange/schedule.hpp"
#include "compiler/exchange/transfers.hpp"

namespace tessera::compiler::exchange {
class PhaseMemo;
}

namespace tessera::compiler::exchange {

// UsageError for a row address that is not 8-aligned or not executable;
// ExchangeScheduleError naming the transfer for input that breaks a rule
// (see prepare_phase; a row sharing a memory element with data of its tile).
// With `memo`, a phase of the shape of one it scheduled before takes that
// phase's send starts (phase_memo.hpp): the same schedule, found once.
PhaseSchedule schedule_phase(const PhaseTransfers& phase, const ScheduleOptions& options,
                             PhaseMemo* memo = nullptr);

// The same schedule with its rows emitted again at `options`' row addresses
// (and validated when asked): a message's times do not depend on where the
// rows lie, only the emitter's sendpicp padding does. The linker schedules
// each phase once at a probe address to size the rows, then places them —
// scheduling a large phase twice would double its compile time.
PhaseSchedule place_rows(PhaseSchedule schedule, const ScheduleOptions& options);

}  // namespace tessera::compiler::exchange
