#include "tests/sim/rows.hpp"

#include <algorithm>
#include <stdexcept>

#include "target/host_exchange.hpp"

namespace tessera::sim::testing {

namespace isa = target::isa;
using Kind = RowAction::Kind;

std::vector<RowAction> receive_actions(const target::Word32Timing& timing, std::uint32_t source,
                                       std::uint32_t pointer) {
  return {{Kind::kSelectSource, timing.source_select, source},
          {Kind::kSetPointer, timing.pointer, pointer},
          {Kind::kSelectSource, timing.teardown, target::kNeutralMux}};
}

std::vector<isa::Instruction> build_row(std::vector<RowAction> actions, target::Event horizon,
                                        std::uint32_t row_address) {
  std::stable_sort(actions.begin(), actions.end(),
                   [](const auto& a, const auto& b) { return a.event < b.event; });
  std::vector<isa::Instruction> row;
  std::uint32_t address = row_address;
  target::Event now = 0;
  const auto emit = [&](isa::Instruction instruction) {
    address += 4 * static_cast<std::uint32_t>(isa::word_count(instruction));
    row.push_back(instruction);
  };
  const auto delay_to = [&](target::Event until) {
    while (until > now) {
      const auto step = static_cast<std::uint32_t>(std::min<target::Event>(until - now, 0x80000));
      emit(isa::Delay{step});
      now += step;
    }
  };
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const RowAction& action = actions[i];
    if (action.kind == Kind::kSend) {
      if (action.event < now) throw std::logic_error("send overlaps the previous action");
      delay_to(action.event);
      std::uint32_t left = action.words;
      std::uint32_t item = action.value;
      const std::uint32_t first = std::min(left, 64u);
      emit(isa::Send{first, item, action.sctl});
      left -= first;
      while (left > 0) {
        const std::uint32_t more = std::min(left, 4096u);
        emit(isa::SendOff{more, 0, action.sctl});
        left -= more;
      }
      now += action.words;
      continue;
    }
    const bool paired_with_next = i + 1 < actions.size() && actions[i + 1].event == action.event;
    if (paired_with_next) {
      // One XPIC and one PIC at the same event: a non-sending sendpicp whose
      // controls act at its first event.
      const RowAction& other = actions[++i];
      const RowAction& select = action.kind == Kind::kSelectSource ? action : other;
      const RowAction& pointer = action.kind == Kind::kSetPointer ? action : other;
      if (select.kind != Kind::kSelectSource || pointer.kind != Kind::kSetPointer) {
        throw std::logic_error("two controls of one kind at one event");
      }
      delay_to(action.event - 1);
      if (address % 8 != 0) emit(isa::Nop{});
      emit(isa::SendPicP{1, 0, 0, 0, 0, select.value, pointer.value});
      now = action.event;
      continue;
    }
    target::Event gap = action.event - now;
    if (gap < 1) throw std::logic_error("a control needs at least one event after the last action");
    const target::Event limit = action.kind == Kind::kSetPointer ? 128 : 4096;
    if (gap > limit) {
      delay_to(action.event - limit);
      gap = limit;
    }
    if (action.kind == Kind::kSetPointer) {
      emit(isa::DelayPic{static_cast<std::uint32_t>(gap), 0, action.value});
    } else {
      emit(isa::DelayXpic{static_cast<std::uint32_t>(gap), 0, action.value});
    }
    now = action.event;
  }
  delay_to(horizon);
  emit(isa::Br{isa::Reg::m10});
  return row;
}

}  // namespace tessera::sim::testing
