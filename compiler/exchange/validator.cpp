#include "compiler/exchange/validator.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "compiler/exchange/error.hpp"
#include "target/host_exchange.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::exchange {
namespace {

namespace isa = target::isa;
using target::ReceiveControl;

[[noreturn]] void fail(PhysicalTile tile, const std::string& rule, const std::string& what) {
  throw ExchangeScheduleError(
      fmt::format("invalid exchange schedule on {}: {} ({})", tile, what, rule));
}

std::string name(const Message& message) {
  return fmt::format("transfer {} words [{}, {}) from {} {:#x}", message.transfer,
                     message.first_word, message.first_word + message.words, message.source,
                     message.source_address);
}

bool same_timing(const target::Word32Timing& a, const target::Word32Timing& b) {
  return std::tie(a.send_start, a.source_select, a.pointer, a.teardown, a.horizon, a.words) ==
         std::tie(b.send_start, b.source_select, b.pointer, b.teardown, b.horizon, b.words);
}

// Every receive timing is the timing model's, and the sctl reaches every receiver.
void check_messages(const PhaseSchedule& schedule) {
  for (const Message& message : schedule.messages) {
    std::vector<PhysicalTile> receivers;
    for (const ScheduledReceive& receive : message.receives) {
      const auto model = target::word32_transfer(message.source, receive.tile,
                                                 message.send_start, message.words);
      if (!same_timing(model, receive.timing)) {
        fail(receive.tile, "the timing model, target::word32_transfer",
             fmt::format("{}: the declared receive timing differs from the model's", name(message)));
      }
      if (!receivers.empty() && !(receivers.back() < receive.tile)) {
        fail(receive.tile, "one receive per tile per message",
             fmt::format("{}: receivers are not distinct and in tile order", name(message)));
      }
      receivers.push_back(receive.tile);
    }
    if (receivers.empty()) fail(message.source, "a message has receivers", name(message));
    if (message.sctl != target::word32_sctl(message.source, receivers)) {
      fail(message.source, "target::word32_sctl",
           fmt::format("{}: sctl {} does not reach its receivers", name(message), message.sctl));
    }
  }
}

struct TileView {
  std::vector<const Message*> sends;
  std::vector<std::pair<const Message*, const ScheduledReceive*>> receives;
};

// Rules 1–4 and the declared actions against the messages.
void check_actions(const TileActions& actions, const TileView& view) {
  const PhysicalTile tile = actions.tile;
  // The sends are the tile's messages, one stream each (rule 1: no overlap).
  std::vector<SendAction> expected;
  Event horizon = 0;
  for (const Message* m : view.sends) {
    expected.push_back({m->send_start, m->source_address / 4, m->words, m->sctl});
    horizon = std::max(horizon, expected.back().end());
  }
  std::sort(expected.begin(), expected.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  if (expected != actions.sends) fail(tile, "rule 6", "the row's sends are not its messages'");
  for (std::size_t i = 1; i < expected.size(); ++i) {
    if (expected[i].start < expected[i - 1].end()) {
      fail(tile, "rule 1", fmt::format("sends at events {} and {} overlap",
                                       expected[i - 1].start, expected[i].start));
    }
  }
  // The controls by (event, register), stably (a row's are already in that
  // order): a search finds the first control of a register at an event.
  std::vector<const ReceiveControl*> by_event;
  by_event.reserve(actions.controls.size());
  for (const ReceiveControl& control : actions.controls) by_event.push_back(&control);
  const auto key = [](const ReceiveControl* c) { return std::tuple(c->event, c->target); };
  const auto earlier = [&](const ReceiveControl* a, const ReceiveControl* b) {
    return key(a) < key(b);
  };
  if (!std::is_sorted(by_event.begin(), by_event.end(), earlier)) {
    std::stable_sort(by_event.begin(), by_event.end(), earlier);
  }
  const auto find = [&](Event event, ReceiveControl::Register reg) -> const ReceiveControl* {
    const auto it = std::lower_bound(
        by_event.begin(), by_event.end(), std::tuple(event, reg),
        [&](const ReceiveControl* c, const auto& wanted) { return key(c) < wanted; });
    return it != by_event.end() && key(*it) == std::tuple(event, reg) ? *it : nullptr;
  };
  // Rule 4: one XPIC and one PIC per event at most — every control is the
  // first of its register at its event.
  for (const ReceiveControl& control : actions.controls) {
    if (find(control.event, control.target) != &control) {
      fail(tile, "rule 4", fmt::format("two {} controls at event {}",
                                       control.target == ReceiveControl::Register::kXpic ? "XPIC"
                                                                                         : "PIC",
                                       control.event));
    }
    // Rule 2: no receive control at a send's first event or the next. The
    // sends are sorted and disjoint, so only the last one starting at or
    // before the control can start there or one event before.
    const auto after = std::upper_bound(
        actions.sends.begin(), actions.sends.end(), control.event,
        [](Event event, const SendAction& send) { return event < send.start; });
    if (after != actions.sends.begin()) {
      const SendAction& send = *std::prev(after);
      if (control.event == send.start || control.event == send.start + 1) {
        fail(tile, "rule 2", fmt::format("receive control {} at the send starting at event {}",
                                         fmt::streamed(control), send.start));
      }
    }
  }
  // Each receive: its source held over [X, X + n), its pointer set at P and
  // left alone while its words land, a teardown (or cut-over) at X + n.
  auto receives = view.receives;
  std::sort(receives.begin(), receives.end(), [](const auto& a, const auto& b) {
    return a.second->timing.source_select < b.second->timing.source_select;
  });
  std::size_t explained = 0;
  for (std::size_t i = 0; i < receives.size(); ++i) {
    const auto& [message, receive] = receives[i];
    const target::Word32Timing& t = receive->timing;
    horizon = std::max(horizon, t.horizon);
    if (i > 0) {
      const target::Word32Timing& previous = receives[i - 1].second->timing;
      if (t.source_select < previous.teardown || t.pointer < previous.write_end()) {
        fail(tile, "rule 3", fmt::format("{} is received while the previous receive runs",
                                         name(*message)));
      }
    }
    const auto* select = find(t.source_select, ReceiveControl::Register::kXpic);
    const auto* pointer = find(t.pointer, ReceiveControl::Register::kPic);
    if (select == nullptr || select->value != message->source.value || pointer == nullptr ||
        pointer->value != receive->address / 4) {
      fail(tile, "rule 6", fmt::format("{}: no source select at {} or pointer at {}",
                                       name(*message), t.source_select, t.pointer));
    }
    const auto* teardown = find(t.teardown, ReceiveControl::Register::kXpic);
    const bool cut_over = i + 1 < receives.size() &&
                          receives[i + 1].second->timing.source_select == t.teardown;
    if (teardown == nullptr || (!cut_over && teardown->value != target::kNeutralMux)) {
      fail(tile, "rule 3", fmt::format("{}: no teardown at {}", name(*message), t.teardown));
    }
    explained += cut_over ? 2 : 3;
    // Only the controls strictly inside the receive's windows can move its
    // source or pointer: a binary search to the first one after the earlier
    // window start, not a scan of the tile's every control per receive
    // (which made a tile receiving thousands of messages quadratic).
    const Event first = std::min(t.source_select, t.pointer);
    const Event last = std::max(t.teardown, t.write_end());
    for (auto it = std::upper_bound(by_event.begin(), by_event.end(), first,
                                    [](Event event, const ReceiveControl* c) { return event < c->event; });
         it != by_event.end() && (*it)->event < last; ++it) {
      const ReceiveControl& control = **it;
      const bool moves_source = control.target == ReceiveControl::Register::kXpic &&
                                control.event > t.source_select && control.event < t.teardown;
      const bool moves_pointer = control.target == ReceiveControl::Register::kPic &&
                                 control.event > t.pointer && control.event < t.write_end();
      if (moves_source || moves_pointer) {
        fail(tile, "rule 3", fmt::format("{} during {}", fmt::streamed(control), name(*message)));
      }
    }
  }
  if (explained != actions.controls.size()) {
    fail(tile, "rule 6", "the row has receive controls that no message explains");
  }
  if (horizon != actions.horizon) {
    fail(tile, "rule 6", fmt::format("horizon {} is not the messages' {}", actions.horizon, horizon));
  }
}

// Rule 6: the row, encoded and replayed, does exactly the declared actions.
void check_row(const TileActions& actions, const ExchangeRow& row) {
  const PhysicalTile tile = actions.tile;
  if (row.tile != tile || row.horizon != actions.horizon) {
    fail(tile, "rule 6", "the row is not the tile's");
  }
  if (row.instructions.empty() || row.instructions.back() != isa::Instruction{isa::Br{isa::Reg::m10}}) {
    fail(tile, "rule 6", "the row does not end with br $m10");
  }
  std::vector<std::uint32_t> words;
  std::uint32_t address = row.address;
  for (std::size_t i = 0; i < row.instructions.size(); ++i) {
    const isa::Instruction& instruction = row.instructions[i];
    if (const auto why = isa::misplacement(instruction, address)) {
      fail(tile, "rule 5", fmt::format("instruction {}: {}", i, *why));
    }
    if (std::holds_alternative<isa::Sync>(instruction) ||
        (std::holds_alternative<isa::Br>(instruction) && i + 1 != row.instructions.size())) {
      fail(tile, "rule 6", fmt::format("instruction {} has no place inside a row", i));
    }
    // The encoder checks every field's range (rule 5).
    with_context([&] { return fmt::format("exchange row of {}, instruction {}", tile, i); },
                 [&] { isa::encode_into(instruction, words); });
    address += 4 * static_cast<std::uint32_t>(isa::word_count(instruction));
  }
  const target::RowTimeline timeline =
      with_context([&] { return fmt::format("replaying the exchange row of {}", tile); },
                   [&] { return target::row_timeline(words); });
  if (timeline.horizon != actions.horizon) {
    fail(tile, "rule 6", fmt::format("the row ends at event {}, the schedule at {}",
                                     timeline.horizon, actions.horizon));
  }
  auto controls = timeline.controls;
  const auto earlier = [](const auto& a, const auto& b) {
    return std::tuple(a.event, a.target) < std::tuple(b.event, b.target);
  };
  if (!std::is_sorted(controls.begin(), controls.end(), earlier)) {
    std::stable_sort(controls.begin(), controls.end(), earlier);
  }
  if (controls != actions.controls) {
    std::size_t i = 0;
    while (i < controls.size() && i < actions.controls.size() && controls[i] == actions.controls[i]) ++i;
    fail(tile, "rule 6",
         fmt::format("the row's receive control {} is {}, the schedule's is {}", i,
                     i < controls.size() ? fmt::format("{}", fmt::streamed(controls[i])) : "missing",
                     i < actions.controls.size()
                         ? fmt::format("{}", fmt::streamed(actions.controls[i]))
                         : "missing"));
  }
  // Send windows, joined where the stream runs on without a gap (on both
  // sides: two messages can follow each other in one stream).
  const auto joined = [](const auto& windows) {
    std::vector<SendAction> sends;
    for (const auto& window : windows) {
      const SendAction send{window.start, window.first_item,
                            static_cast<std::uint32_t>(window.end() - window.start), window.sctl};
      if (!sends.empty() && sends.back().end() == send.start &&
          sends.back().first_item + sends.back().words == send.first_item &&
          sends.back().sctl == send.sctl) {
        sends.back().words += send.words;
      } else {
        sends.push_back(send);
      }
    }
    return sends;
  };
  if (joined(timeline.sends) != joined(actions.sends)) {
    fail(tile, "rule 6", "the row's send windows differ from its sends");
  }
}

// Rule 7 (§2.2 rule 3): a send and a receive on one tile that overlap in time
// touch no common element.
void check_concurrent_elements(PhysicalTile tile, const TileView& view) {
  // Write windows [P, horizon) by P, with the latest horizon up to each, so a
  // send's window [S, S + n) meets exactly the receives found walking back
  // from the last P < S + n while that latest horizon is past S: a sweep,
  // not every send against every receive.
  struct Write {
    Event begin = 0;
    Event end = 0;
    const Message* message = nullptr;
    target::ElementSet elements;
  };
  std::vector<Write> writes;
  writes.reserve(view.receives.size());
  for (const auto& [message, receive] : view.receives) {
    writes.push_back({receive->timing.pointer, receive->timing.horizon, message,
                      target::elements_of({receive->address, receive->address + 4 * message->words})});
  }
  std::sort(writes.begin(), writes.end(),
            [](const Write& a, const Write& b) { return a.begin < b.begin; });
  std::vector<Event> latest_end(writes.size());
  for (std::size_t i = 0; i < writes.size(); ++i) {
    latest_end[i] = std::max(writes[i].end, i > 0 ? latest_end[i - 1] : writes[i].end);
  }
  for (const Message* send : view.sends) {
    const auto read = target::elements_of(
        {send->source_address, send->source_address + 4 * send->words});
    const Event end = send->send_start + send->words;
    auto i = static_cast<std::size_t>(
        std::partition_point(writes.begin(), writes.end(),
                             [&](const Write& w) { return w.begin < end; }) -
        writes.begin());
    while (i-- > 0 && latest_end[i] > send->send_start) {
      const Write& write = writes[i];
      if (write.end > send->send_start && read.intersects(write.elements)) {
        fail(tile, "rule 7, reference §2.2 rule 3",
             fmt::format("{} reads a memory element that {} writes at the same time",
                         name(*send), name(*write.message)));
      }
    }
  }
}

// Where a message's activity on a tile starts and ends: its reads as the
// sender, its writes as a receiver.
std::pair<Event, Event> activity(const Message& message, std::optional<PhysicalTile> tile) {
  const Event n = message.words;
  Event begin = message.send_start, end = message.send_start + n;
  for (const ScheduledReceive& receive : message.receives) {
    if (!tile || receive.tile == *tile) {
      if (tile) begin = receive.timing.pointer;
      end = tile ? receive.timing.write_end() : std::max(end, receive.timing.write_end());
    }
  }
  return {begin, end};
}

}  // namespace

void check_row_elements(const PhaseSchedule& schedule) {
  // Each row's end once: summing a row per message it moves would be
  // quadratic in a tile's messages (a thousand one-word messages per tile).
  // By tile number: a phase's messages look their tiles up millions of times.
  struct RowExtent {
    const ExchangeRow* row = nullptr;
    std::uint64_t end = 0;
  };
  std::vector<RowExtent> rows(target::kTileCount);
  for (const ExchangeRow& row : schedule.rows) {
    std::uint64_t bytes = 0;
    for (const auto& instruction : row.instructions) bytes += 4 * isa::word_count(instruction);
    rows.at(row.tile.value) = RowExtent{&row, std::uint64_t{row.address} + bytes};
  }
  const auto check = [&](const Message& message, PhysicalTile tile, std::uint32_t address) {
    const RowExtent& extent = rows.at(tile.value);
    if (extent.row == nullptr) return;
    const ExchangeRow& row = *extent.row;
    const std::uint64_t end = extent.end;
    if (end > target::kExecutableRange.end || row.address < target::kExecutableRange.begin) {
      throw ExchangeScheduleError(fmt::format(
          "the exchange row of {} at [{:#x}, {:#x}) is not in executable memory {}", tile,
          row.address, end, target::kExecutableRange));
    }
    const auto code_end =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(end + target::kFetchLookahead, target::kSramEnd));
    const auto code = target::elements_of({row.address, code_end});
    const auto data = target::elements_of({address, address + 4 * message.words});
    if (code.intersects(data)) {
      throw ExchangeScheduleError(fmt::format(
          "transfer {}: {} moves words at [{:#x}, {:#x}), in a memory element of its exchange "
          "row [{:#x}, {:#x}) plus the {}-byte fetch lookahead (reference §2.2 rule 1: "
          "TEXCPT_CONFLICT); place the row or the data in another element",
          message.transfer, tile, address, address + 4 * message.words, row.address, end,
          target::kFetchLookahead));
    }
  };
  for (const Message& message : schedule.messages) {
    check(message, message.source, message.source_address);
    for (const ScheduledReceive& receive : message.receives) {
      check(message, receive.tile, receive.address);
    }
  }
}

void validate_schedule(const PhaseSchedule& schedule) {
  check_messages(schedule);
  // By tile number, then the tiles that take part in tile order.
  std::vector<TileView> views(target::kTileCount);
  std::vector<std::uint16_t> tiles;
  const auto view_of = [&](PhysicalTile tile) -> TileView& {
    TileView& view = views.at(tile.value);
    if (view.sends.empty() && view.receives.empty()) tiles.push_back(tile.value);
    return view;
  };
  for (const Message& message : schedule.messages) {
    view_of(message.source).sends.push_back(&message);
    for (const ScheduledReceive& receive : message.receives) {
      view_of(receive.tile).receives.emplace_back(&message, &receive);
    }
  }
  std::sort(tiles.begin(), tiles.end());
  if (schedule.tiles.size() != tiles.size() || schedule.rows.size() != tiles.size()) {
    throw ExchangeScheduleError("invalid exchange schedule: its rows are not its tiles'");
  }
  Event horizon = 0;
  std::size_t i = 0;
  for (const std::uint16_t number : tiles) {
    const PhysicalTile tile(number);
    const TileView& view = views[number];
    const TileActions& actions = schedule.tiles[i];
    if (actions.tile != tile) fail(tile, "rule 6", "the tile has no row");
    check_actions(actions, view);
    check_row(actions, schedule.rows[i]);
    check_concurrent_elements(tile, view);
    horizon = std::max(horizon, actions.horizon);
    ++i;
  }
  if (horizon != schedule.horizon) {
    throw ExchangeScheduleError(fmt::format(
        "invalid exchange schedule: horizon {} is not its rows' {}", schedule.horizon, horizon));
  }
  check_row_elements(schedule);
  // Rule 8: what an order puts second starts on the tile after the first ends there.
  for (const MessageOrder& order : schedule.orders) {
    const Message& before = schedule.messages.at(order.before);
    const Message& after = schedule.messages.at(order.after);
    const Event end = activity(before, order.tile).second;
    const Event begin = order.tile ? activity(after, order.tile).first : after.send_start;
    if (begin < end) {
      fail(order.tile.value_or(after.source), "rule 8",
           fmt::format("{} starts at event {}, before {} ends at {}", name(after), begin,
                       name(before), end));
    }
  }
}

}  // namespace tessera::compiler::exchange
