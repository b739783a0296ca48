#include "compiler/exchange/row_emitter.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "compiler/exchange/error.hpp"

namespace tessera::compiler::exchange {
namespace {

namespace isa = target::isa;
using target::ReceiveControl;

inline constexpr Event kMaxDelay = 0x80000;
inline constexpr Event kMaxDelayPic = 128;
inline constexpr Event kMaxDelayXpic = 4096;
inline constexpr std::uint32_t kMaxSendWords = 64;
inline constexpr std::uint32_t kMaxSendOffWords = 4096;

// The controls acting at one event: at most one XPIC and one PIC.
struct ControlGroup {
  Event event = 0;
  std::optional<std::uint32_t> xpic;
  std::optional<std::uint32_t> pic;
  bool pair() const { return xpic && pic; }
};

// The same events in two instructions: the first one word, one event long.
std::optional<std::pair<isa::Instruction, isa::Instruction>> split(const isa::Instruction& i,
                                                                   std::uint32_t sctl) {
  using Pair = std::pair<isa::Instruction, isa::Instruction>;
  if (const auto* d = std::get_if<isa::Delay>(&i); d && d->events >= 2) {
    return Pair{isa::Delay{1}, isa::Delay{d->events - 1}};
  }
  if (const auto* d = std::get_if<isa::DelayXpic>(&i); d && d->events >= 2) {
    return Pair{isa::Delay{1}, isa::DelayXpic{d->events - 1, d->paired, d->source}};
  }
  if (const auto* d = std::get_if<isa::DelayPic>(&i); d && d->events >= 2) {
    return Pair{isa::Delay{1}, isa::DelayPic{d->events - 1, d->selector, d->value}};
  }
  if (const auto* s = std::get_if<isa::Send>(&i); s && s->words >= 2 && s->sctl == sctl) {
    return Pair{isa::Send{1, s->source, s->sctl}, isa::SendOff{s->words - 1, 0, s->sctl}};
  }
  if (const auto* s = std::get_if<isa::SendOff>(&i); s && s->words >= 2 && s->delta == 0) {
    return Pair{isa::SendOff{1, 0, s->sctl}, isa::SendOff{s->words - 1, 0, s->sctl}};
  }
  // Sends that apply controls keep them on their first word.
  if (const auto* s = std::get_if<isa::SendPic>(&i); s && s->words >= 2 && sctl != 0) {
    return Pair{isa::SendPic{1, s->control, s->value}, isa::SendOff{s->words - 1, 0, sctl}};
  }
  if (const auto* s = std::get_if<isa::SendPicP>(&i); s && s->words >= 2 && s->sctl != 0) {
    isa::SendPicP first = *s;
    first.words = 1;
    return Pair{first, isa::SendOff{s->words - 1, 0, s->sctl}};
  }
  return std::nullopt;
}

class RowBuilder {
 public:
  RowBuilder(PhysicalTile tile, std::uint32_t row_address) : tile_(tile), address_(row_address) {}

  Event now() const { return now_; }

  void delay_to(Event until) {
    while (until > now_) {
      const Event step = std::min(until - now_, kMaxDelay);
      emit(isa::Delay{static_cast<std::uint32_t>(step)});
      now_ += step;
    }
  }

  // A group acting at its event, outside any send.
  void control(const ControlGroup& group) {
    if (group.event <= now_) {
      fail(group.event, fmt::format("a control is not after the previous action (event {})", now_));
    }
    if (group.pair()) {
      delay_to(group.event - 1);
      emit_pair(isa::SendPicP{1, 0, 0, 0, 0, *group.xpic, *group.pic});
      now_ = group.event;
      return;
    }
    Event gap = group.event - now_;
    const Event limit = group.pic ? kMaxDelayPic : kMaxDelayXpic;
    if (gap > limit) {
      delay_to(group.event - limit);
      gap = limit;
    }
    if (group.pic) {
      emit(isa::DelayPic{static_cast<std::uint32_t>(gap), 0, *group.pic});
    } else {
      emit(isa::DelayXpic{static_cast<std::uint32_t>(gap), 0, *group.xpic});
    }
    now_ = group.event;
  }

  // A send at its start with the control groups acting in (start, end].
  void send(const SendAction& send, const std::vector<ControlGroup>& riding) {
    if (send.start < now_) {
      fail(send.start, fmt::format("a send overlaps the previous action (event {})", now_));
    }
    delay_to(send.start);
    sctl_ = send.sctl;
    const auto item_at = [&](Event event) {
      return send.first_item + static_cast<std::uint32_t>(event - send.start);
    };
    Event at = send.start;
    const Event first_cut = riding.empty() ? send.end() : riding.front().event - 1;
    if (first_cut > at) {
      const auto words = static_cast<std::uint32_t>(first_cut - at);
      const std::uint32_t first = std::min(words, kMaxSendWords);
      emit(isa::Send{first, item_at(at), send.sctl});
      continue_stream(words - first);
      at = first_cut;
    }
    for (std::size_t g = 0; g < riding.size(); ++g) {
      const ControlGroup& group = riding[g];
      const Event until = g + 1 < riding.size() ? riding[g + 1].event - 1 : send.end();
      const auto words = static_cast<std::uint32_t>(until - at);
      const std::uint32_t first = std::min(words, kMaxSendWords);
      if (group.pair()) {
        emit_pair(isa::SendPicP{first, item_at(at), send.sctl, 0, 0, *group.xpic, *group.pic});
      } else if (at == send.start) {
        fail(group.event, "a lone control one event after a send starts cannot ride on the send "
                          "(rule 2 of reference §5.5)");
      } else if (group.xpic) {
        emit(isa::SendPic{first, 0, *group.xpic});
      } else {
        emit(isa::SendPic{first, 2, *group.pic});
      }
      continue_stream(words - first);
      at = until;
    }
    now_ = send.end();
  }

  std::vector<isa::Instruction> finish(Event horizon) {
    if (horizon < now_) fail(horizon, fmt::format("the horizon is before event {}", now_));
    delay_to(horizon);
    emit(isa::Br{isa::Reg::m10});
    return std::move(row_);
  }

  [[noreturn]] void fail(Event event, const std::string& what) const {
    throw ExchangeScheduleError(fmt::format(
        "internal error emitting the exchange row of {} at event {}: {}", tile_, event, what));
  }

 private:
  void emit(const isa::Instruction& instruction) {
    row_.push_back(instruction);
    sctls_.push_back(sctl_);
    words_ += static_cast<std::uint32_t>(isa::word_count(instruction));
  }

  void continue_stream(std::uint32_t words) {
    while (words > 0) {
      const std::uint32_t more = std::min(words, kMaxSendOffWords);
      emit(isa::SendOff{more, 0, sctl_});
      words -= more;
    }
  }

  // sendpicp sits on an 8-byte boundary: split an instruction since the
  // previous one to move it there without moving any event.
  void emit_pair(const isa::SendPicP& instruction) {
    if ((address_ + 4 * words_) % 8 != 0) {
      // The previous sendpicp itself may be split too: its second part comes after it.
      bool done = false;
      const std::size_t from = aligned_from_ > 0 ? aligned_from_ - 1 : 0;
      for (std::size_t i = row_.size(); i-- > from && !done;) {
        if (auto parts = split(row_[i], sctls_[i])) {
          row_[i] = parts->second;
          row_.insert(row_.begin() + static_cast<std::ptrdiff_t>(i), parts->first);
          const std::uint32_t sctl = sctls_[i];
          sctls_.insert(sctls_.begin() + static_cast<std::ptrdiff_t>(i), sctl);
          ++words_;
          done = true;
        }
      }
      if (!done) fail(now_, "no instruction since the previous sendpicp can be split to align it");
    }
    emit(instruction);
    aligned_from_ = row_.size();
  }

  PhysicalTile tile_;
  std::uint32_t address_;
  std::vector<isa::Instruction> row_;
  std::vector<std::uint32_t> sctls_;  // the outgoing stream's sctl at each instruction
  std::uint32_t words_ = 0;
  std::size_t aligned_from_ = 0;  // the first instruction after the last sendpicp
  std::uint32_t sctl_ = 0;
  Event now_ = 0;
};

std::vector<ControlGroup> groups_of(const TileActions& actions, const RowBuilder& builder) {
  std::vector<ControlGroup> groups;
  for (const ReceiveControl& control : actions.controls) {
    if (control.selector != 0) builder.fail(control.event, "a paired control");
    if (groups.empty() || groups.back().event != control.event) {
      groups.push_back(ControlGroup{control.event, std::nullopt, std::nullopt});
    }
    auto& slot = control.target == ReceiveControl::Register::kXpic ? groups.back().xpic
                                                                   : groups.back().pic;
    if (slot) builder.fail(control.event, "two controls of one register at one event (rule 4)");
    slot = control.value;
  }
  return groups;
}

}  // namespace

std::vector<isa::Instruction> emit_row(const TileActions& actions, std::uint32_t row_address) {
  RowBuilder builder(actions.tile, row_address);
  const std::vector<ControlGroup> groups = groups_of(actions, builder);
  std::size_t next = 0;
  for (const SendAction& send : actions.sends) {
    while (next < groups.size() && groups[next].event <= send.start) builder.control(groups[next++]);
    std::vector<ControlGroup> riding;
    while (next < groups.size() && groups[next].event <= send.end()) riding.push_back(groups[next++]);
    builder.send(send, riding);
  }
  while (next < groups.size()) builder.control(groups[next++]);
  return builder.finish(actions.horizon);
}

}  // namespace tessera::compiler::exchange
