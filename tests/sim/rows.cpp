#include "tests/sim/rows.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>

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
  // By event; at one event, controls before a send (a control acting at a
  // send's first event is a delay-type control ending where the send starts).
  std::stable_sort(actions.begin(), actions.end(), [](const auto& a, const auto& b) {
    if (a.event != b.event) return a.event < b.event;
    return a.kind != Kind::kSend && b.kind == Kind::kSend;
  });
  std::vector<isa::Instruction> row;
  std::uint32_t address = row_address;
  target::Event now = 0;
  std::size_t after_last_pair = 0;  // the first instruction after the last sendpicp
  const auto emit = [&](isa::Instruction instruction) {
    address += 4 * static_cast<std::uint32_t>(isa::word_count(instruction));
    row.push_back(instruction);
  };
  // A sendpicp sits on an 8-byte boundary: split an instruction since the
  // previous sendpicp (or that one) in two, which moves no event. A nop
  // would do it too, but has no place inside a row.
  const auto split =
      [&](const isa::Instruction& instruction,
          std::uint32_t sctl) -> std::optional<std::pair<isa::Instruction, isa::Instruction>> {
    const auto rest = [&](std::uint32_t words) { return isa::SendOff{words - 1, 0, sctl}; };
    if (const auto* i = std::get_if<isa::Delay>(&instruction); i && i->events > 1) {
      return std::pair{isa::Instruction{isa::Delay{1}},
                       isa::Instruction{isa::Delay{i->events - 1}}};
    }
    if (const auto* i = std::get_if<isa::DelayPic>(&instruction); i && i->events > 1) {
      return std::pair{isa::Instruction{isa::Delay{1}},
                       isa::Instruction{isa::DelayPic{i->events - 1, i->selector, i->value}}};
    }
    if (const auto* i = std::get_if<isa::DelayXpic>(&instruction); i && i->events > 1) {
      return std::pair{isa::Instruction{isa::Delay{1}},
                       isa::Instruction{isa::DelayXpic{i->events - 1, i->paired, i->source}}};
    }
    if (const auto* i = std::get_if<isa::Send>(&instruction); i && i->words > 1) {
      return std::pair{isa::Instruction{isa::Send{1, i->source, i->sctl}},
                       isa::Instruction{rest(i->words)}};
    }
    if (const auto* i = std::get_if<isa::SendOff>(&instruction); i && i->words > 1) {
      return std::pair{isa::Instruction{isa::SendOff{1, i->delta, i->sctl}},
                       isa::Instruction{rest(i->words)}};
    }
    if (const auto* i = std::get_if<isa::SendPic>(&instruction); i && i->words > 1) {
      return std::pair{isa::Instruction{isa::SendPic{1, i->control, i->value}},
                       isa::Instruction{rest(i->words)}};
    }
    if (const auto* i = std::get_if<isa::SendPicP>(&instruction); i && i->words > 1) {
      isa::SendPicP first = *i;
      first.words = 1;
      return std::pair{isa::Instruction{first}, isa::Instruction{rest(i->words)}};
    }
    return std::nullopt;
  };
  const auto align_for_pair = [&] {
    if (address % 8 == 0) return;
    // The sctl in force at each instruction, to continue a split send with it.
    std::vector<std::uint32_t> sctls;
    std::uint32_t sctl = 0;
    for (const auto& instruction : row) {
      if (const auto* i = std::get_if<isa::Send>(&instruction)) sctl = i->sctl;
      if (const auto* i = std::get_if<isa::SendOff>(&instruction)) sctl = i->sctl;
      if (const auto* i = std::get_if<isa::SendPicP>(&instruction)) sctl = i->sctl;
      sctls.push_back(sctl);
    }
    const std::size_t from = after_last_pair > 0 ? after_last_pair - 1 : 0;
    for (std::size_t i = row.size(); i-- > from;) {
      if (auto parts = split(row[i], sctls[i])) {
        row[i] = parts->second;
        row.insert(row.begin() + static_cast<std::ptrdiff_t>(i), parts->first);
        address += 4;
        return;
      }
    }
    throw std::logic_error("no instruction since the previous sendpicp can be split to align it");
  };
  const auto emit_pair = [&](const isa::SendPicP& pair) {
    align_for_pair();
    emit(pair);
    after_last_pair = row.size();
  };
  const auto delay_to = [&](target::Event until) {
    while (until > now) {
      const auto step = static_cast<std::uint32_t>(std::min<target::Event>(until - now, 0x80000));
      emit(isa::Delay{step});
      now += step;
    }
  };
  // One XPIC and one PIC control acting at the same event, or one control.
  struct ControlGroup {
    const RowAction* select = nullptr;
    const RowAction* pointer = nullptr;
    target::Event event() const { return (select != nullptr ? select : pointer)->event; }
  };
  const auto group_at = [&](std::size_t& i) {
    ControlGroup group;
    const RowAction& action = actions[i];
    (action.kind == Kind::kSelectSource ? group.select : group.pointer) = &action;
    if (i + 1 < actions.size() && actions[i + 1].event == action.event &&
        actions[i + 1].kind != Kind::kSend) {
      const RowAction& other = actions[++i];
      if (other.kind == action.kind) {
        throw std::logic_error("two controls of one kind at one event");
      }
      (other.kind == Kind::kSelectSource ? group.select : group.pointer) = &other;
    }
    return group;
  };
  // Continues the outgoing stream for `words` more words (sendoff ≤ 4096 each).
  const auto continue_stream = [&](std::uint32_t words, std::uint32_t sctl) {
    while (words > 0) {
      const std::uint32_t more = std::min(words, 4096u);
      emit(isa::SendOff{more, 0, sctl});
      words -= more;
    }
  };
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const RowAction& action = actions[i];
    if (action.kind == Kind::kSend) {
      if (action.event < now) throw std::logic_error("send overlaps the previous action");
      delay_to(action.event);
      // Controls acting at events (start, end] ride on the send: the words
      // from event e − 1 go out with a sendpic (one control) or a sendpicp
      // (one of each, restarting the stream at the item it has reached),
      // whose controls act at e (§5.1). The send stays one contiguous stream.
      const target::Event start = action.event;
      const target::Event end = start + action.words;
      std::vector<ControlGroup> merged;
      while (i + 1 < actions.size() && actions[i + 1].kind != Kind::kSend &&
             actions[i + 1].event <= end) {
        merged.push_back(group_at(++i));
      }
      const auto item_at = [&](target::Event event) {
        return action.value + static_cast<std::uint32_t>(event - start);
      };
      // The words before the first merged control go out with send/sendoff.
      target::Event at = start;  // the event of the next word to send
      const target::Event first_cut = merged.empty() ? end : merged.front().event() - 1;
      if (first_cut > at) {
        const auto words = static_cast<std::uint32_t>(first_cut - at);
        const std::uint32_t first = std::min(words, 64u);
        emit(isa::Send{first, item_at(at), action.sctl});
        continue_stream(words - first, action.sctl);
        at = first_cut;
      }
      // Each merged control group starts the piece up to the next one.
      for (std::size_t g = 0; g < merged.size(); ++g) {
        const ControlGroup& group = merged[g];
        const target::Event until = g + 1 < merged.size() ? merged[g + 1].event() - 1 : end;
        const auto words = static_cast<std::uint32_t>(until - at);
        const std::uint32_t first = std::min(words, 64u);
        if (group.select != nullptr && group.pointer != nullptr) {
          emit_pair(isa::SendPicP{first, item_at(at), action.sctl, 0, 0, group.select->value,
                                  group.pointer->value});
        } else if (at == start) {
          throw std::logic_error(
              "a lone control one event after a send starts cannot ride on the send");
        } else if (group.select != nullptr) {
          emit(isa::SendPic{first, 0, group.select->value});
        } else {
          emit(isa::SendPic{first, 2, group.pointer->value});
        }
        continue_stream(words - first, action.sctl);
        at = until;
      }
      now = end;
      continue;
    }
    const ControlGroup group = group_at(i);
    if (group.select != nullptr && group.pointer != nullptr) {
      // One XPIC and one PIC at the same event: a non-sending sendpicp whose
      // controls act at its first event.
      delay_to(group.event() - 1);
      emit_pair(isa::SendPicP{1, 0, 0, 0, 0, group.select->value, group.pointer->value});
      now = group.event();
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
