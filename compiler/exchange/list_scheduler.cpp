#include "compiler/exchange/list_scheduler.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "compiler/exchange/error.hpp"
#include "compiler/exchange/matching_waves.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::exchange {
namespace {

using target::ElementSet;
using target::Event;

// A receiver's events relative to the message's send start S. The timing
// model is the same at every S (word32_transfer adds S to fixed offsets), so
// the offsets are taken once, at the earliest start; the validator recomputes
// every receive with word32_transfer at its real S.
struct ReceiveShape {
  PhysicalTile tile;
  Event select = 0;    // X − S
  Event pointer = 0;   // P − S
  Event teardown = 0;  // X + n − S
  Event horizon = 0;   // receiver horizon − S
  ElementSet elements;
};

struct PieceShape {
  Event earliest = 0;
  ElementSet read_elements;
  std::vector<ReceiveShape> receives;
};

PieceShape shape_of(const Piece& piece) {
  PieceShape shape;
  for (const auto& destination : piece.destinations) {
    shape.earliest =
        std::max(shape.earliest, target::earliest_send_start(piece.source, destination.tile));
  }
  shape.read_elements = target::elements_of(
      {piece.source_address, piece.source_address + 4 * piece.words});
  for (const auto& destination : piece.destinations) {
    const auto timing =
        target::word32_transfer(piece.source, destination.tile, shape.earliest, piece.words);
    shape.receives.push_back(ReceiveShape{
        destination.tile, timing.source_select - shape.earliest, timing.pointer - shape.earliest,
        timing.teardown - shape.earliest, timing.horizon - shape.earliest,
        target::elements_of({destination.address, destination.address + 4 * piece.words})});
  }
  return shape;
}

enum class Role : std::uint8_t { kSelect, kPointer, kTeardown };

struct Window {
  Event begin = 0;
  Event end = 0;
};

struct Hazard {
  Event begin = 0;
  Event end = 0;
  ElementSet elements;
};

// What is already scheduled on one tile, each list sorted by event. Sends
// are disjoint, and so are receive source windows and payload windows (their
// write windows [P, P + n + guard) then end in order too), so every search
// is a binary search. The unions join back-to-back windows, so a search
// steps over a busy stretch in one move.
struct TileState {
  std::vector<Window> sends;
  std::vector<Window> send_union;
  std::vector<Window> source_union;  // receive source windows [X, X + n)
  std::vector<std::pair<Event, Role>> controls;
  std::vector<Hazard> reads;   // sends: [S, S + n)
  std::vector<Hazard> writes;  // receives: [P, receiver horizon)
  std::uint64_t send_words = 0;
  std::uint64_t receive_words = 0;
};

template <class T, class Less>
void insert_sorted(std::vector<T>& list, T value, Less less) {
  list.insert(std::upper_bound(list.begin(), list.end(), value, less), std::move(value));
}

void insert_window(std::vector<Window>& list, Window window) {
  insert_sorted(list, window, [](const Window& a, const Window& b) { return a.begin < b.begin; });
}

// Adds a window to a union of disjoint windows, joining the ones it touches.
void insert_union(std::vector<Window>& list, Window window) {
  auto it = std::upper_bound(list.begin(), list.end(), window,
                             [](const Window& a, const Window& b) { return a.begin < b.begin; });
  if (it != list.begin() && std::prev(it)->end >= window.begin) {
    --it;
    it->end = std::max(it->end, window.end);
  } else {
    it = list.insert(it, window);
  }
  while (std::next(it) != list.end() && std::next(it)->begin <= it->end) {
    it->end = std::max(it->end, std::next(it)->end);
    list.erase(std::next(it));
  }
}

// The first start ≥ `start` at which [start + offset, start + offset + length)
// overlaps no window of `list` that the window at `start` overlaps — `start`
// itself when it overlaps none.
Event clear_of(const std::vector<Window>& list, Event start, Event offset, Event length) {
  const auto it = std::partition_point(list.begin(), list.end(),
                                       [&](const Window& w) { return w.end <= start + offset; });
  if (it != list.end() && it->begin < start + offset + length) return it->end - offset;
  return start;
}

// The same for hazard windows, which matter only when they share an element.
Event clear_of(const std::vector<Hazard>& list, Event start, Event offset, Event length,
               ElementSet elements) {
  auto it = std::partition_point(list.begin(), list.end(),
                                 [&](const Hazard& h) { return h.end <= start + offset; });
  for (; it != list.end() && it->begin < start + offset + length; ++it) {
    if (it->elements.intersects(elements)) return it->end - offset;
  }
  return start;
}

// Which ready message goes next.
enum class Policy : std::uint8_t {
  kEarliestStart,  // the one that can start first (then the busiest endpoint, …)
  kRanked,         // the one of lowest rank (input order, matching waves)
};

struct Timed {
  std::vector<Event> starts;
  Event horizon = 0;
};

class ListScheduler {
 public:
  // `rank` (kRanked only): each piece's place in the order to follow.
  ListScheduler(const PreparedPhase& phase, Policy policy, std::vector<std::size_t> rank = {})
      : phase_(phase), policy_(policy), rank_(std::move(rank)), tiles_(target::kTileCount), start_(phase.pieces.size(), -1),
        lower_(phase.pieces.size(), 0), waiting_(phase.pieces.size(), 0),
        successors_(phase.pieces.size()) {
    shapes_.reserve(phase.pieces.size());
    for (const Piece& piece : phase.pieces) {
      shapes_.push_back(shape_of(piece));
      tiles_[piece.source.value].send_words += piece.words;
      for (const auto& d : piece.destinations) tiles_[d.tile.value].receive_words += piece.words;
    }
    for (std::size_t k = 0; k < phase.orders.size(); ++k) {
      ++waiting_[phase.orders[k].after];
      successors_[phase.orders[k].before].push_back(k);
    }
  }

  Timed run() {
    for (std::size_t i = 0; i < phase_.pieces.size(); ++i) {
      if (waiting_[i] == 0) push(i);
    }
    std::size_t placed = 0;
    while (!ready_.empty()) {
      const Key key = ready_.top();
      ready_.pop();
      const auto index = std::get<5>(key);
      const Event start = earliest_start(index);
      if (policy_ == Policy::kEarliestStart && start > std::get<0>(key)) {
        ready_.push(key_of(index, start));  // the key was stale: try again later
        continue;
      }
      place(index, start);
      horizon_ = std::max(horizon_, start + phase_.pieces[index].words);
      for (const ReceiveShape& r : shapes_[index].receives) {
        horizon_ = std::max(horizon_, start + r.horizon);
      }
      ++placed;
      for (const std::size_t k : successors_[index]) {
        const PieceOrder& order = phase_.orders[k];
        lower_[order.after] = std::max(lower_[order.after], dependency_bound(order));
        if (--waiting_[order.after] == 0) push(order.after);
      }
    }
    if (placed != phase_.pieces.size()) {
      for (std::size_t i = 0; i < phase_.pieces.size(); ++i) {
        if (start_[i] < 0) {
          throw ExchangeScheduleError(fmt::format(
              "transfer {} cannot be scheduled: the orders between transfers form a cycle "
              "through it (rule 8 of reference §5.5 needs an order)",
              phase_.pieces[i].transfer));
        }
      }
    }
    return {start_, horizon_};
  }

 private:
  // (earliest start, −endpoint pressure, −fan-out, −words, source tile, index)
  using Key = std::tuple<Event, std::int64_t, std::int64_t, std::int64_t, std::uint16_t,
                         std::size_t>;

  Key key_of(std::size_t index, Event start) const {
    const Piece& piece = phase_.pieces[index];
    std::uint64_t pressure = tiles_[piece.source.value].send_words;
    for (const auto& d : piece.destinations) {
      pressure = std::max(pressure, tiles_[d.tile.value].receive_words);
    }
    return {start, -static_cast<std::int64_t>(pressure),
            -static_cast<std::int64_t>(piece.destinations.size()),
            -static_cast<std::int64_t>(piece.words), piece.source.value, index};
  }

  void push(std::size_t index) {
    if (policy_ == Policy::kRanked) {
      // Never stale: placed wherever it fits when its turn comes.
      ready_.push({0, static_cast<std::int64_t>(rank_[index]), 0, 0, 0, index});
    } else {
      ready_.push(key_of(index, earliest_start(index)));
    }
  }

  // The earliest send start ≥ every lower bound that no rule forbids: each
  // check moves a refused start to the first one that clears its conflict
  // (skipping only starts that conflict too), until every check passes.
  Event earliest_start(std::size_t index) const {
    const Piece& piece = phase_.pieces[index];
    const PieceShape& shape = shapes_[index];
    const Event n = piece.words;
    const TileState& sender = tiles_[piece.source.value];
    const auto control_at = [](const TileState& tile, Event event) {
      return std::lower_bound(tile.controls.begin(), tile.controls.end(), event,
                              [](const auto& c, Event e) { return c.first < e; });
    };
    Event start = std::max(shape.earliest, lower_[index]);
    for (;;) {
      const Event before = start;
      // Rule 1: one outgoing message at a time.
      start = clear_of(sender.send_union, start, 0, n);
      // Rule 2: no receive control at the send's first event or the next.
      for (auto it = control_at(sender, start); it != sender.controls.end() && it->first <= start + 1;
           ++it) {
        start = std::max(start, it->first + 1);
      }
      // §2.2 rule 3: not reading an element while a receive writes it.
      start = clear_of(sender.writes, start, 0, n, shape.read_elements);
      for (const ReceiveShape& r : shape.receives) {
        const TileState& receiver = tiles_[r.tile.value];
        // Rule 3: one receive at a time.
        start = clear_of(receiver.source_union, start, r.select, r.teardown - r.select);
        // Rule 4: no two controls at one event, but a teardown may meet a select.
        for (auto it = control_at(receiver, start + r.select);
             it != receiver.controls.end() && it->first == start + r.select; ++it) {
          if (it->second != Role::kTeardown) start = std::max(start, it->first - r.select + 1);
        }
        for (auto it = control_at(receiver, start + r.pointer);
             it != receiver.controls.end() && it->first == start + r.pointer; ++it) {
          start = std::max(start, it->first - r.pointer + 1);
        }
        for (auto it = control_at(receiver, start + r.teardown);
             it != receiver.controls.end() && it->first == start + r.teardown; ++it) {
          if (it->second != Role::kSelect) start = std::max(start, it->first - r.teardown + 1);
        }
        // Rule 2 on the receiver: no control at its sends' first events or the next.
        for (const Event offset : {r.select, r.pointer, r.teardown}) {
          const auto it = std::partition_point(
              receiver.sends.begin(), receiver.sends.end(),
              [&](const Window& w) { return w.begin < start + offset - 1; });
          if (it != receiver.sends.end() && it->begin <= start + offset) {
            start = std::max(start, it->begin - offset + 2);
          }
        }
        // §2.2 rule 3: not writing an element while a send reads it.
        start = clear_of(receiver.reads, start, r.pointer, r.horizon - r.pointer, r.elements);
      }
      if (start == before) return start;
    }
  }

  void place(std::size_t index, Event start) {
    const Piece& piece = phase_.pieces[index];
    const PieceShape& shape = shapes_[index];
    const Event n = piece.words;
    const auto by_begin = [](const Hazard& a, const Hazard& b) { return a.begin < b.begin; };
    const auto by_event = [](const auto& a, const auto& b) { return a.first < b.first; };
    start_[index] = start;
    TileState& sender = tiles_[piece.source.value];
    insert_window(sender.sends, {start, start + n});
    insert_union(sender.send_union, {start, start + n});
    insert_sorted(sender.reads, Hazard{start, start + n, shape.read_elements}, by_begin);
    for (const ReceiveShape& r : shape.receives) {
      TileState& receiver = tiles_[r.tile.value];
      insert_union(receiver.source_union, {start + r.select, start + r.teardown});
      insert_sorted(receiver.controls, std::pair(start + r.select, Role::kSelect), by_event);
      insert_sorted(receiver.controls, std::pair(start + r.pointer, Role::kPointer), by_event);
      insert_sorted(receiver.controls, std::pair(start + r.teardown, Role::kTeardown), by_event);
      insert_sorted(receiver.writes, Hazard{start + r.pointer, start + r.horizon, r.elements},
                    by_begin);
    }
  }

  // The first send start `order.after` may have.
  Event dependency_bound(const PieceOrder& order) const {
    const Piece& before = phase_.pieces[order.before];
    const PieceShape& shape = shapes_[order.before];
    const Event s = start_[order.before];
    const Event n = before.words;
    if (!order.tile) {
      Event end = s + n;
      for (const ReceiveShape& r : shape.receives) end = std::max(end, s + r.pointer + n);
      return end;
    }
    const PhysicalTile tile = *order.tile;
    Event end = s + n;  // `before` reads its source there
    for (const ReceiveShape& r : shape.receives) {
      if (r.tile == tile) end = s + r.pointer + n;  // or writes there
    }
    const Piece& after = phase_.pieces[order.after];
    if (after.source == tile) return end;
    for (const ReceiveShape& r : shapes_[order.after].receives) {
      if (r.tile == tile) return end - r.pointer;
    }
    return end;
  }

  const PreparedPhase& phase_;
  Policy policy_;
  std::vector<std::size_t> rank_;
  Event horizon_ = 0;
  std::vector<PieceShape> shapes_;
  std::vector<TileState> tiles_;
  std::vector<Event> start_;
  std::vector<Event> lower_;
  std::vector<std::size_t> waiting_;
  std::vector<std::vector<std::size_t>> successors_;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready_;
};

}  // namespace

std::vector<Event> schedule_pieces(const PreparedPhase& phase) {
  // Up to three list schedules; the shortest wins (the earlier one on a tie).
  Timed best = ListScheduler(phase, Policy::kEarliestStart).run();
  const auto keep_shorter = [&](std::vector<std::size_t> rank) {
    Timed other = ListScheduler(phase, Policy::kRanked, std::move(rank)).run();
    if (other.horizon < best.horizon) best = std::move(other);
  };
  std::vector<std::size_t> input(phase.pieces.size());
  std::iota(input.begin(), input.end(), std::size_t{0});
  keep_shorter(input);
  if (const auto waves = matching_wave_order(phase)) {
    std::vector<std::size_t> rank(phase.pieces.size());
    for (std::size_t position = 0; position < waves->size(); ++position) {
      rank[(*waves)[position]] = position;
    }
    keep_shorter(std::move(rank));
  }
  return best.starts;
}

}  // namespace tessera::compiler::exchange
