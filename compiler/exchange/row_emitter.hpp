#pragma once
// Exchange-row emission: a tile's actions (sends and receive controls at
// events) become the delays, delay-type controls and sends that perform them
// at exactly those events, ending with `br $m10` once the tile's horizon is
// reached (reference §5.1, §4.2):
//   - a lone control after the previous action: delaypic (≤ 128 events) or
//     delayxpic (≤ 4096), preceded by delays for longer gaps;
//   - an XPIC and a PIC at one event: a non-sending sendpicp one event before;
//   - controls acting inside a send's window (S + 1, S + n] ride on the send
//     as sendpic (one control) or sendpicp (both, restarting the stream at the
//     item it has reached), so the send stays one contiguous stream; a lone
//     control at S + 1 cannot (rule 2 of §5.5 keeps the scheduler from
//     asking);
//   - sends of more than 64 words continue with sendoff (≤ 4096 each).
// sendpicp must be 8-aligned: the emitter knows the row's address and, when
// one would land on an odd word, splits an earlier instruction since the
// previous sendpicp, or that sendpicp itself (delay n → delay 1 + delay
// n − 1, send n → send 1 + sendoff n − 1, sendpic n → sendpic 1 + sendoff
// n − 1, …), which moves no event. Two sendpicps are ≥ 52 events apart (the
// scheduler lets only a message's own pointer and teardown meet), so there is
// always an instruction longer than one event to split. It never uses nop:
// a nop is not an exchange-row instruction to target::row_timeline.

#include <cstdint>
#include <vector>

#include "compiler/exchange/schedule.hpp"
#include "target/isa.hpp"

namespace tessera::compiler::exchange {

// ExchangeScheduleError (an internal error: the scheduler broke a rule) when
// the actions cannot be emitted: overlapping sends, two controls of one kind
// at one event, a control not after the previous action, a lone control one
// event after a send starts, no instruction to split for alignment.
std::vector<target::isa::Instruction> emit_row(const TileActions& actions,
                                               std::uint32_t row_address);

}  // namespace tessera::compiler::exchange
