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

// What is already scheduled on one tile.
struct TileState {
  std::vector<Window> sends;
  std::vector<Window> sources;  // receive source windows [X, X + n)
  std::vector<std::pair<Event, Role>> controls;
  std::vector<Hazard> reads;   // sends: [S, S + n)
  std::vector<Hazard> writes;  // receives: [P, receiver horizon)
  std::uint64_t send_words = 0;
  std::uint64_t receive_words = 0;
};

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

  // The earliest send start ≥ every lower bound that no rule forbids.
  Event earliest_start(std::size_t index) {
    const Piece& piece = phase_.pieces[index];
    const PieceShape& shape = shapes_[index];
    const Event n = piece.words;
    forbidden_.clear();
    const auto forbid = [&](Event from, Event to) {
      if (from < to) forbidden_.emplace_back(from, to);
    };
    const TileState& sender = tiles_[piece.source.value];
    for (const Window& w : sender.sends) forbid(w.begin - n + 1, w.end);
    for (const auto& [event, role] : sender.controls) forbid(event - 1, event + 1);
    for (const Hazard& h : sender.writes) {
      if (h.elements.intersects(shape.read_elements)) forbid(h.begin - n + 1, h.end);
    }
    for (const ReceiveShape& r : shape.receives) {
      const TileState& receiver = tiles_[r.tile.value];
      for (const Window& w : receiver.sources) forbid(w.begin - r.teardown + 1, w.end - r.select);
      for (const auto& [event, role] : receiver.controls) {
        if (role != Role::kTeardown) forbid(event - r.select, event - r.select + 1);
        forbid(event - r.pointer, event - r.pointer + 1);
        if (role != Role::kSelect) forbid(event - r.teardown, event - r.teardown + 1);
      }
      for (const Window& w : receiver.sends) {
        for (const Event offset : {r.select, r.pointer, r.teardown}) {
          forbid(w.begin - offset, w.begin - offset + 2);
        }
      }
      for (const Hazard& h : receiver.reads) {
        if (h.elements.intersects(r.elements)) forbid(h.begin - r.horizon + 1, h.end - r.pointer);
      }
    }
    std::sort(forbidden_.begin(), forbidden_.end());
    Event start = std::max(shape.earliest, lower_[index]);
    for (const auto& [from, to] : forbidden_) {
      if (from > start) break;
      start = std::max(start, to);
    }
    return start;
  }

  void place(std::size_t index, Event start) {
    const Piece& piece = phase_.pieces[index];
    const PieceShape& shape = shapes_[index];
    const Event n = piece.words;
    start_[index] = start;
    TileState& sender = tiles_[piece.source.value];
    sender.sends.push_back({start, start + n});
    sender.reads.push_back({start, start + n, shape.read_elements});
    for (const ReceiveShape& r : shape.receives) {
      TileState& receiver = tiles_[r.tile.value];
      receiver.sources.push_back({start + r.select, start + r.teardown});
      receiver.controls.emplace_back(start + r.select, Role::kSelect);
      receiver.controls.emplace_back(start + r.pointer, Role::kPointer);
      receiver.controls.emplace_back(start + r.teardown, Role::kTeardown);
      receiver.writes.push_back({start + r.pointer, start + r.horizon, r.elements});
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
  std::vector<std::pair<Event, Event>> forbidden_;
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
