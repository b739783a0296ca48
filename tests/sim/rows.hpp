#pragma once
// Exchange rows for simulator tests, built from target/'s timing functions
// the way the compiler's emitter will: actions at events become delays,
// delay-type controls and sends. Test scaffolding, not the emitter.

#include <cstdint>
#include <vector>

#include "target/exchange_timing.hpp"
#include "target/isa.hpp"

namespace tessera::sim::testing {

struct RowAction {
  enum class Kind { kSelectSource, kSetPointer, kSend } kind;
  target::Event event = 0;   // when a control acts, or when the first word leaves
  std::uint32_t value = 0;   // source tile / pointer word address / first source item
  std::uint32_t words = 0;   // for sends
  std::uint32_t sctl = 0;    // for sends
};

// The row's instructions (ending with `br $m10`) that perform the actions
// and then wait until `horizon`. Two controls at one event become one
// sendpicp (8-aligned from `row_address` on: an earlier instruction is split
// in two when needed, which moves no event).
// Controls acting inside a send's window (after its first event, up to its
// end) ride on the send as sendpic/sendpicp, which keep the stream contiguous;
// a lone control one event after the send starts cannot (std::logic_error).
std::vector<target::isa::Instruction> build_row(std::vector<RowAction> actions,
                                                target::Event horizon, std::uint32_t row_address);

// Receiver actions for a word32 transfer with this timing into `pointer`.
std::vector<RowAction> receive_actions(const target::Word32Timing& timing, std::uint32_t source,
                                       std::uint32_t pointer);

}  // namespace tessera::sim::testing
