#include "target/exchange_timing.hpp"

#include <algorithm>
#include <limits>
#include <ostream>

#include <fmt/format.h>

#include "target/assembly.hpp"

namespace tessera::target {
namespace {

using isa::Instruction;

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

ReceiveControl xpic_control(Event event, std::uint32_t paired, std::uint32_t source) {
  return {event, ReceiveControl::Register::kXpic, paired, source};
}

ReceiveControl pic_control(Event event, std::uint32_t selector, std::uint32_t value) {
  return {event, ReceiveControl::Register::kPic, selector, value};
}

std::uint32_t checked_item(std::uint64_t item) {
  // The source field has 18 bits; a stream that runs past it has no address.
  if (item > std::numeric_limits<std::uint32_t>::max()) {
    throw ExchangeTimingError(fmt::format("outgoing stream item {:#x} overflows", item));
  }
  return static_cast<std::uint32_t>(item);
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const ReceiveControl& control) {
  const bool is_xpic = control.target == ReceiveControl::Register::kXpic;
  const char* name = is_xpic ? (control.selector != 0 ? "XPIC.paired" : "XPIC")
                             : (control.selector != 0 ? "PIC.format" : "PIC");
  return out << fmt::format("{}@{}={:#x}", name, control.event, control.value);
}

std::optional<Event> exchange_advance(const Instruction& instruction) noexcept {
  return std::visit(
      Overloaded{
          [](const isa::Delay& i) -> std::optional<Event> { return i.events; },
          [](const isa::DelayPic& i) -> std::optional<Event> { return i.events; },
          [](const isa::DelayXpic& i) -> std::optional<Event> { return i.events; },
          [](const isa::Send& i) -> std::optional<Event> { return i.words; },
          [](const isa::SendOff& i) -> std::optional<Event> { return i.words; },
          [](const isa::SendPic& i) -> std::optional<Event> { return i.words; },
          [](const isa::SendPicP& i) -> std::optional<Event> { return i.words; },
          [](const isa::Sync&) -> std::optional<Event> { return 0; },
          [](const isa::Br&) -> std::optional<Event> { return 0; },
          [](const auto&) -> std::optional<Event> { return std::nullopt; },
      },
      instruction);
}

RowStep OutgoingStream::step(const Instruction& instruction) {
  if (finished_) {
    throw ExchangeTimingError(
        fmt::format("'{}' follows the row's return", isa::disassemble(instruction)));
  }
  const auto advance = exchange_advance(instruction);
  if (!advance) {
    throw ExchangeTimingError(
        fmt::format("'{}' is not an exchange-row instruction", isa::disassemble(instruction)));
  }
  RowStep step;
  step.start = now_;
  step.advance = *advance;
  // A packet leaves only when the send's sctl names a direction or 64-bit mode.
  const auto send_from = [&](std::uint32_t first_item, std::uint32_t items, std::uint32_t sctl) {
    if (sctl != 0) step.send = SendWindow{now_, items, first_item, sctl};
    next_item_ = checked_item(std::uint64_t{first_item} + items);
    sctl_ = sctl;
  };
  std::visit(
      Overloaded{
          [&](const isa::DelayPic& i) {
            step.controls[0] = pic_control(now_ + i.events, i.selector, i.value);
          },
          [&](const isa::DelayXpic& i) {
            step.controls[0] = xpic_control(now_ + i.events, i.paired, i.source);
          },
          [&](const isa::Send& i) { send_from(i.source, i.words, i.sctl); },
          [&](const isa::SendOff& i) {
            send_from(checked_item(std::uint64_t{next_item_} + i.delta), i.words, i.sctl);
          },
          [&](const isa::SendPic& i) {
            // Controls merged into a send act at its first event (§5.1).
            step.controls[0] = i.control < 2 ? xpic_control(now_ + 1, i.control, i.value)
                                             : pic_control(now_ + 1, i.control - 2, i.value);
            send_from(next_item_, i.words, sctl_);
          },
          [&](const isa::SendPicP& i) {
            step.controls[0] = pic_control(now_ + 1, i.pic_selector, i.pic);
            step.controls[1] = xpic_control(now_ + 1, i.xpic_paired, i.xpic);
            send_from(i.source, i.words, i.sctl);
          },
          [&](const isa::Br&) { step.returns = true; },
          [](const auto&) {},
      },
      instruction);
  now_ += step.advance;
  finished_ = step.returns;
  return step;
}

RowTimeline row_timeline(std::span<const Instruction> row) {
  OutgoingStream stream;
  RowTimeline timeline;
  for (std::size_t index = 0; index < row.size(); ++index) {
    // The context is formatted only when a step throws: the validator
    // replays every row of a phase, millions of instructions in a model.
    const RowStep step = with_context([&] { return fmt::format("row instruction {}", index); },
                                      [&] { return stream.step(row[index]); });
    if (step.send) timeline.sends.push_back(*step.send);
    for (const auto& control : step.controls) {
      if (control) timeline.controls.push_back(*control);
    }
  }
  // Delay-type controls act at the end of their advance, so a later
  // instruction's merged control can precede an earlier one's.
  std::stable_sort(timeline.controls.begin(), timeline.controls.end(),
                   [](const auto& a, const auto& b) { return a.event < b.event; });
  timeline.horizon = stream.now();
  return timeline;
}

RowTimeline row_timeline(std::span<const std::uint32_t> words) {
  std::vector<Instruction> row;
  std::size_t i = 0;
  while (i < words.size()) {
    const isa::Decoded decoded = isa::decode(words.subspan(i));
    if (std::holds_alternative<isa::Unknown>(decoded.instruction)) {
      throw ExchangeTimingError(
          fmt::format("row word {}: {:#010x} is not an instruction", i, words[i]));
    }
    row.push_back(decoded.instruction);
    i += decoded.words;
  }
  return row_timeline(row);
}

Event earliest_send_start(PhysicalTile source, PhysicalTile destination) {
  return std::max<Event>(0, -ttm(source, destination));
}

void check_message_words(PhysicalTile source, PhysicalTile destination, std::uint64_t words) {
  if (words < 1 || words > kMaxTransferWords) {
    throw ExchangeTimingError(fmt::format("{} → {}: {} words is outside 1..{}", source,
                                          destination, words, kMaxTransferWords));
  }
}

Word32Timing word32_transfer(PhysicalTile source, PhysicalTile destination, Event send_start,
                             std::uint32_t words) {
  check_message_words(source, destination, words);
  const Event earliest = earliest_send_start(source, destination);
  if (send_start < earliest) {
    throw ExchangeTimingError(fmt::format(
        "{} → {}: send start {} is before {}, so the receiver would have to select the source "
        "before the phase began",
        source, destination, send_start, earliest));
  }
  Word32Timing timing;
  timing.words = words;
  timing.send_start = send_start;
  timing.source_select = send_start + ttm(source, destination) + 1;
  timing.pointer = timing.source_select + kPointerLag + kPointerLagPerRow * row(destination);
  timing.teardown = timing.source_select + words;
  timing.horizon = std::max(timing.teardown, timing.write_end()) + kReceiveGuard;
  return timing;
}

Event MulticastTiming::horizon() const noexcept {
  Event latest = send_start;
  for (const auto& receiver : receivers) latest = std::max(latest, receiver.horizon);
  return latest;
}

MulticastTiming multicast_transfer(PhysicalTile source, std::span<const PhysicalTile> receivers,
                                   std::uint32_t words, Event offset) {
  if (receivers.empty()) {
    throw ExchangeTimingError(fmt::format("multicast from {} has no receivers", source));
  }
  if (offset < 0) {
    throw ExchangeTimingError(fmt::format("multicast offset {} is negative", offset));
  }
  Event earliest = 0;
  for (const auto receiver : receivers) {
    earliest = std::max(earliest, earliest_send_start(source, receiver));
  }
  MulticastTiming timing;
  timing.send_start = earliest + offset;
  for (const auto receiver : receivers) {
    timing.receivers.push_back(word32_transfer(source, receiver, timing.send_start, words));
  }
  return timing;
}

std::uint32_t word32_sctl(PhysicalTile source, std::span<const PhysicalTile> receivers) {
  if (receivers.size() == 1) return static_cast<std::uint32_t>(direction(source, receivers[0]));
  return kSctlBroadcast;
}

PairedTiming paired_transfer(PhysicalTile source, std::span<const PhysicalTile> receiver_pairs,
                             std::uint32_t items) {
  if (items < kMinPairedItems || items > kMaxTransferWords) {
    throw ExchangeTimingError(fmt::format("paired transfer from {}: {} items is outside {}..{}",
                                          source, items, kMinPairedItems, kMaxTransferWords));
  }
  if (receiver_pairs.empty()) {
    throw ExchangeTimingError(fmt::format("paired transfer from {} has no receivers", source));
  }
  std::vector<PhysicalTile> primaries;
  int min_pttm = std::numeric_limits<int>::max();
  for (const auto member : receiver_pairs) {
    const PhysicalTile primary = is_pair_primary(member) ? member : pair_partner(member);
    if (std::find(primaries.begin(), primaries.end(), primary) != primaries.end()) {
      throw ExchangeTimingError(
          fmt::format("paired transfer from {}: the pair of {} is listed twice", source, member));
    }
    if (primary == source || pair_partner(primary) == source) {
      throw ExchangeTimingError(
          fmt::format("paired transfer from {}: the sender's own pair cannot receive", source));
    }
    primaries.push_back(primary);
    min_pttm = std::min(min_pttm, pttm(source, primary));
  }

  PairedTiming timing;
  timing.items = items;
  timing.send_start = std::max<Event>(1 - min_pttm, 0);
  timing.sctl = primaries.size() == 1
                    ? static_cast<std::uint32_t>(direction(source, primaries[0])) | kSctl64BitItems
                    : kSctlBroadcast | kSctl64BitItems;
  for (const auto primary : primaries) {
    const PhysicalTile partner = pair_partner(primary);
    PairedReceiverTiming pair;
    // Ties go to the primary; the reference does not say [INF].
    const bool partner_earlier = ttm(source, partner) < ttm(source, primary);
    pair.early = partner_earlier ? partner : primary;
    pair.late = partner_earlier ? primary : partner;
    pair.source_select = timing.send_start + pttm(source, primary);
    pair.teardown = pair.source_select + items;
    pair.format_start = pair.source_select + kPairedFormatLag + kPointerLagPerRow * row(primary);
    pair.pointer = pair.format_start + kPairedPointerLag;
    pair.format_end = pair.format_start + items;
    pair.horizon = std::max(pair.teardown, pair.format_end) + kPairedGuard;
    if (pair.format_start == pair.teardown) {
      throw ExchangeTimingError(fmt::format(
          "paired transfer {} → {}: the format start coincides with the source teardown at event "
          "{} (the hardware faults); use another item count",
          source, primary, pair.teardown));
    }
    timing.pairs.push_back(pair);
  }
  return timing;
}

}  // namespace tessera::target
