#pragma once
// The exchange schedule's validator (rule 6 of reference §5.5): every emitted
// row is encoded, decoded and replayed with target::row_timeline, and what it
// does is compared with the declared schedule; the declared schedule itself
// is re-derived from target's timing functions and checked against rules 1–8
// (§5.5) and the memory-element rules (§2.2). A failure is an
// ExchangeScheduleError naming the tile, event, message and rule.

#include "compiler/exchange/schedule.hpp"

namespace tessera::compiler::exchange {

void validate_schedule(const PhaseSchedule& schedule);

// §2.2 rule 1: a row being executed (its code plus the 64-byte fetch
// lookahead) shares no memory element with any data its tile sends or
// receives in the phase, and lies in executable memory. This depends on where
// the caller places rows, so schedule_phase reports it as an input error
// naming the transfer.
void check_row_elements(const PhaseSchedule& schedule);

}  // namespace tessera::compiler::exchange
