#include "runtime/transport.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tessera::runtime {

std::string_view hsp_mark_name(HspMark mark) noexcept {
  return mark == HspMark::kGs1 ? "GS1" : "GS2";
}

std::string_view context_state_name(ContextState state) noexcept {
  switch (state) {
    case ContextState::kInactive: return "inactive";
    case ContextState::kRunning: return "running";
    case ContextState::kDebugException: return "stopped (debug)";
    case ContextState::kException: return "excepted";
  }
  return "?";
}

bool TileState::halted() const noexcept {
  return std::all_of(contexts.begin(), contexts.end(),
                     [](ContextState state) { return state == ContextState::kInactive; });
}

std::string describe(const DeviceFault& fault) {
  std::string text = fault.kind.empty() ? std::string("fault") : fault.kind;
  if (fault.tile) {
    text += fmt::format(" on {} ({})", *fault.tile,
                        fault.context == 0 ? std::string("supervisor")
                                           : fmt::format("worker {}", fault.context));
  }
  if (fault.pc) text += fmt::format(" at pc {:#x}", *fault.pc);
  if (fault.cycle) text += fmt::format(", cycle {}", *fault.cycle);
  if (!fault.message.empty()) text += ": " + fault.message;
  if (!fault.provenance.empty()) text += fmt::format(" [graph: {}]", fault.provenance);
  return text;
}

std::string_view wait_outcome_name(WaitOutcome outcome) noexcept {
  switch (outcome) {
    case WaitOutcome::kReached: return "reached";
    case WaitOutcome::kHalted: return "the device halted";
    case WaitOutcome::kFaulted: return "a device fault";
    case WaitOutcome::kStopped: return "a breakpoint stop";
    case WaitOutcome::kStalled: return "the device stalled";
    case WaitOutcome::kTimedOut: return "timed out";
  }
  return "?";
}

}  // namespace tessera::runtime
