#include "compiler/exchange/list_scheduler.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <span>
#include <tuple>

#include <fmt/format.h>

#include "compiler/exchange/earliest_start_queue.hpp"
#include "compiler/exchange/error.hpp"
#include "compiler/exchange/matching_waves.hpp"
#include "compiler/exchange/tile_timeline.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::exchange {
namespace {
using target::ElementSet;
using target::Event;

// A tile's answer to a search: a start it allows, and its version when it
// said so (list_scheduler.hpp: kept while the tile does not change).
struct Allowed {
  Event start = 0;
  std::uint64_t version = ~std::uint64_t{0};  // no tile's: not asked yet
};

// A receiver of a piece with its events relative to the send start. The
// timing model is the same at every S (word32_transfer adds S to fixed
// offsets), so the offsets are taken once, at the earliest start; the
// validator recomputes every receive with word32_transfer at its real S.
// With its last answer, in one cache line: a large phase's schedule retries
// millions of searches, and each is mostly the memory it touches.
struct alignas(64) Receiver {
  ReceiveShape shape;
  Allowed allowed;
  std::uint16_t tile = 0;
};

// What a search and a placement need of a piece, in one cache line.
struct alignas(64) PieceHead {
  Event earliest = 0;  // the least start every receiver's timing allows
  Event lower = 0;     // what its orders (rule 8) allow
  Allowed sender;      // its sender's last answer
  ElementSet read;     // the elements it reads
  std::uint32_t words = 0;
  std::uint32_t first = 0;  // its receivers: receivers_[first, first + count)
  std::uint16_t count = 0;
  std::uint16_t source = 0;
  std::uint8_t stale = 0;  // bounds found stale (earliest start only)
};

// How often a message may come to the top with a bound below its earliest
// start before it is placed at that start. Many messages waiting for one busy
// receiver all compute its next free event, and each placement there makes
// the others stale again: without a cap the re-evaluations grow with the
// contention (K one-word messages into one tile: K²/2). With 32 the
// earliest-start schedule does at most 34 searches per message. On the
// compiled transposes of f32[192, 192] and f32[512, 512] the horizon is 776
// and 2142 events against 776 and 2132 uncapped; a cap of 8 cost 11 %.
constexpr std::uint8_t kMaxStaleBounds = 32;

// Which ready message goes next.
enum class Policy : std::uint8_t {
  kEarliestStart,  // the one that can start first (then the busiest endpoint, …)
  kRanked,         // the one of lowest rank (input order, matching waves)
};

struct Timed {
  std::vector<Event> starts;
  Event horizon = 0;
  SchedulingWork work;
};

// Each piece's place in the earliest-start schedule's tie-break order:
// busiest endpoint (the most words any of its tiles sends or receives in the
// phase) first, then more receivers, more words, lower source tile, lower
// index.
std::vector<std::uint32_t> tie_ranks(const PreparedPhase& phase) {
  std::vector<std::uint64_t> send_words(target::kTileCount), receive_words(target::kTileCount);
  for (const Piece& piece : phase.pieces) {
    send_words[piece.source.value] += piece.words;
    for (const auto& d : piece.destinations) receive_words[d.tile.value] += piece.words;
  }
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::uint16_t, std::size_t, std::size_t>;
  std::vector<Key> keys;
  keys.reserve(phase.pieces.size());
  for (std::size_t i = 0; i < phase.pieces.size(); ++i) {
    const Piece& piece = phase.pieces[i];
    std::uint64_t pressure = send_words[piece.source.value];
    for (const auto& d : piece.destinations) {
      pressure = std::max(pressure, receive_words[d.tile.value]);
    }
    keys.emplace_back(-static_cast<std::int64_t>(pressure),
                      -static_cast<std::int64_t>(piece.destinations.size()),
                      -static_cast<std::int64_t>(piece.words), piece.source.value, 0u, i);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<std::uint32_t> rank(phase.pieces.size());
  for (std::size_t position = 0; position < keys.size(); ++position) {
    rank[std::get<5>(keys[position])] = static_cast<std::uint32_t>(position);
  }
  return rank;
}

class ListScheduler {
 public:
  // `rank` (kRanked only): each piece's place in the order to follow.
  // `to_beat` (kRanked only): a horizon the schedule is of use only below;
  // it stops as soon as it reaches it (run() then says so).
  ListScheduler(const PreparedPhase& phase, Policy policy, std::vector<std::size_t> rank = {},
                Event to_beat = std::numeric_limits<Event>::max())
      : phase_(phase), policy_(policy), rank_(std::move(rank)), to_beat_(to_beat),
        tiles_(target::kTileCount),
        start_(phase.pieces.size(), -1), waiting_(phase.pieces.size(), 0),
        successors_(phase.pieces.size()) {
    heads_.reserve(phase.pieces.size());
    for (const Piece& piece : phase.pieces) {
      PieceHead head;
      head.read = target::elements_of({piece.source_address, piece.source_address + 4 * piece.words});
      head.words = piece.words;
      head.first = static_cast<std::uint32_t>(receivers_.size());
      head.count = static_cast<std::uint16_t>(piece.destinations.size());
      head.source = piece.source.value;
      for (const auto& destination : piece.destinations) {
        head.earliest =
            std::max(head.earliest, target::earliest_send_start(piece.source, destination.tile));
      }
      for (const auto& destination : piece.destinations) {
        const auto timing =
            target::word32_transfer(piece.source, destination.tile, head.earliest, piece.words);
        Receiver receiver;
        receiver.shape = ReceiveShape{
            timing.source_select - head.earliest, timing.pointer - head.earliest,
            timing.teardown - head.earliest, timing.horizon - head.earliest,
            target::elements_of({destination.address, destination.address + 4 * piece.words})};
        receiver.tile = destination.tile.value;
        reach_back_ = std::max(reach_back_, -receiver.shape.select);
        receivers_.push_back(receiver);
      }
      heads_.push_back(head);
    }
    for (std::size_t k = 0; k < phase.orders.size(); ++k) {
      ++waiting_[phase.orders[k].after];
      successors_[phase.orders[k].before].push_back(k);
    }
  }

  // The schedule, or nothing when a ranked one reached its horizon to beat.
  std::optional<Timed> run() {
    work_.pieces = phase_.pieces.size();
    work_.list_schedules = 1;  // tried, whether it finishes or not
    if (policy_ == Policy::kEarliestStart) {
      run_earliest_start();
    } else if (!run_ranked()) {
      return std::nullopt;
    }
    for (std::size_t i = 0; i < phase_.pieces.size(); ++i) {
      if (start_[i] < 0) {
        throw ExchangeScheduleError(fmt::format(
            "transfer {} cannot be scheduled: the orders between transfers form a cycle "
            "through it (rule 8 of reference §5.5 needs an order)",
            phase_.pieces[i].transfer));
      }
    }
    return Timed{start_, horizon_, work_};
  }

  const SchedulingWork& work() const noexcept { return work_; }

 private:
  // Pieces become ready when what they depend on is placed; the one placed
  // next is the ready one of least (earliest start, tie rank), found with
  // bounds refreshed lazily (earliest_start_queue.hpp). A tile's sends are
  // placed in time order here: this schedule sweeps forward in time, so a
  // send before its sender's latest would only ever fill a gap the sweep has
  // passed.
  void run_earliest_start() {
    std::vector<std::uint16_t> sender(phase_.pieces.size());
    for (std::size_t i = 0; i < phase_.pieces.size(); ++i) sender[i] = heads_[i].source;
    EarliestStartQueue queue(target::kTileCount, std::move(sender), tie_ranks(phase_));
    const auto release = [&](std::size_t index) {
      queue.add(index, earliest_start(index, 0, queue.frontier(heads_[index].source)));
    };
    for (std::size_t i = 0; i < phase_.pieces.size(); ++i) {
      if (waiting_[i] == 0) release(i);
    }
    while (const auto candidate = queue.top()) {
      const std::size_t index = candidate->piece;
      PieceHead& head = heads_[index];
      const std::uint16_t source = head.source;
      // Every later start is at or after this one (the candidate's bound is
      // the least of all, and bounds only grow), so the tiles' past can go.
      floor_ = candidate->bound;
      if (candidate->bound == queue.frontier(source)) {
        tiles_[source].forget_before(floor_ - reach_back_);
        const Event ready = tiles_[source].first_send_start(candidate->bound, 1, {});
        if (ready > candidate->bound) {
          ++work_.frontier_moves;
          queue.raise_frontier(source, ready);
          continue;
        }
      }
      const Event start = earliest_start(index, candidate->bound, queue.frontier(source));
      if (start > candidate->bound && head.stale < kMaxStaleBounds) {
        ++work_.stale_bounds;
        ++head.stale;
        queue.raise(index, start);  // try again when its turn comes
        continue;
      }
      // Placed at its turn, or — found stale too often — at its earliest
      // start now (later than the sweep; the sender's frontier stays).
      place(index, start);
      queue.remove(index, start > candidate->bound ? 0 : start + head.words);
      finish(index, release);
    }
  }

  // In rank order, each piece at its earliest start once it is ready (gaps
  // on every tile included).
  // The horizon only grows as pieces are placed, so once it reaches the one
  // to beat the schedule cannot win: false, and the rest is not placed.
  bool run_ranked() {
    std::priority_queue<std::pair<std::size_t, std::size_t>,
                        std::vector<std::pair<std::size_t, std::size_t>>, std::greater<>>
        ready;
    const auto release = [&](std::size_t index) { ready.emplace(rank_[index], index); };
    for (std::size_t i = 0; i < phase_.pieces.size(); ++i) {
      if (waiting_[i] == 0) release(i);
    }
    while (!ready.empty()) {
      const std::size_t index = ready.top().second;
      ready.pop();
      place(index, earliest_start(index, 0));
      if (horizon_ >= to_beat_) return false;
      finish(index, release);
    }
    return true;
  }

  // After `index` is placed: the pieces that waited only for it are ready.
  template <class Release>
  void finish(std::size_t index, Release release) {
    for (const std::size_t k : successors_[index]) {
      const PieceOrder& order = phase_.orders[k];
      heads_[order.after].lower = std::max(heads_[order.after].lower, dependency_bound(order));
      if (--waiting_[order.after] == 0) release(order.after);
    }
  }

  // The earliest send start ≥ `bound` (a lower bound on the answer) and
  // every other lower bound that no rule forbids on any tile the piece
  // touches: each tile moves a refused start to the first one it allows,
  // until all of them allow the same start. Each tile's answer is the least
  // start ≥ the one asked that it allows, and grows with it, so the answer
  // is the least start all allow whatever the order the tiles are asked in:
  // they are asked in turn, round and round, until every one of them in a
  // row has allowed the same start — after a tile moves the start only the
  // others are asked again, not a whole round (a multicast to 60 tiles that
  // one tile refuses would otherwise ask all 61 again). A tile's answer is a
  // start it allows; it is kept with the tile's version, and while neither
  // changes the tile is not asked again — within this search or a later one
  // for the same piece (a stale bound's retry mostly finds its tiles as they
  // were).
  Event earliest_start(std::size_t index, Event bound, Event frontier = 0) {
    PieceHead& head = heads_[index];
    Receiver* const receivers = receivers_.data() + head.first;
    const Event n = head.words;
    TileTimeline& sender = tiles_[head.source];
    Event start = std::max({head.earliest, head.lower, bound, frontier, floor_});
    ++work_.start_searches;
    if (floor_ > 0) {
      sender.forget_before(floor_ - reach_back_);
      for (std::size_t k = 0; k < head.count; ++k) {
        tiles_[receivers[k].tile].forget_before(floor_ - reach_back_);
      }
    }
    const std::size_t tiles = 1 + std::size_t{head.count};  // the sender, then the receivers
    std::size_t agreed = 0;  // tiles asked in a row that allowed `start`
    for (std::size_t i = 0;; i = i + 1 == tiles ? 0 : i + 1) {
      if (i == 0) ++work_.search_rounds;
      const TileTimeline& tile = i == 0 ? sender : tiles_[receivers[i - 1].tile];
      Allowed& allowed = i == 0 ? head.sender : receivers[i - 1].allowed;
      Event next = start;
      if (allowed.start != start || allowed.version != tile.version()) {
        next = i == 0 ? tile.first_send_start(start, n, head.read)
                      : tile.first_receive_start(start, receivers[i - 1].shape);
        allowed = Allowed{next, tile.version()};
      }
      if (next == start) {
        if (++agreed == tiles) return start;
      } else {
        start = next;
        agreed = 1;
      }
    }
  }

  void place(std::size_t index, Event start) {
    const PieceHead& head = heads_[index];
    start_[index] = start;
    tiles_[head.source].add_send(start, head.words, head.read);
    horizon_ = std::max(horizon_, start + Event{head.words});
    for (const Receiver& r : receivers_of(head)) {
      tiles_[r.tile].add_receive(start, r.shape);
      horizon_ = std::max(horizon_, start + r.shape.horizon);
    }
  }

  std::span<const Receiver> receivers_of(const PieceHead& head) const {
    return {receivers_.data() + head.first, head.count};
  }

  // The first send start `order.after` may have.
  Event dependency_bound(const PieceOrder& order) const {
    const PieceHead& before = heads_[order.before];
    const Event s = start_[order.before];
    const Event n = before.words;
    if (!order.tile) {
      Event end = s + n;
      for (const Receiver& r : receivers_of(before)) end = std::max(end, s + r.shape.pointer + n);
      return end;
    }
    const std::uint16_t tile = order.tile->value;
    Event end = s + n;  // `before` reads its source there
    for (const Receiver& r : receivers_of(before)) {
      if (r.tile == tile) end = s + r.shape.pointer + n;  // or writes there
    }
    const PieceHead& after = heads_[order.after];
    if (after.source == tile) return end;
    for (const Receiver& r : receivers_of(after)) {
      if (r.tile == tile) return end - r.shape.pointer;
    }
    return end;
  }

  const PreparedPhase& phase_;
  Policy policy_;
  std::vector<std::size_t> rank_;
  Event to_beat_;
  Event horizon_ = 0;
  // No start before this is asked for again (earliest start only: 0 in the
  // ranked schedules, which fill gaps anywhere).
  Event floor_ = 0;
  // How far before its send start a message's events on a tile can lie: a
  // receiver close to the sender selects it before the send (ttm < 0).
  Event reach_back_ = 0;
  SchedulingWork work_;
  std::vector<PieceHead> heads_;     // per piece
  std::vector<Receiver> receivers_;  // every piece's receivers, piece after piece
  std::vector<TileTimeline> tiles_;
  std::vector<Event> start_;
  std::vector<std::size_t> waiting_;
  std::vector<std::vector<std::size_t>> successors_;
};

// The two ranked schedules fill gaps anywhere, so they cannot forget a
// tile's past: a search walks the holes its tiles have left, about as many
// as the busiest tile has messages, and the matching waves match over every
// ready message once per wave, with at least as many waves. Both cost about
// messages × busiest; past this they are not tried, and the earliest-start
// schedule, which wins on many short messages anyway (f32[512, 512] spread a
// row per tile: 2117 events against 2317 in input order), is the schedule.
// The ten-permutation benchmark (147 k) and every test phase are under it.
constexpr std::uint64_t kMaxRankedWork = std::uint64_t{1} << 24;

std::uint64_t busiest_tile_messages(const PreparedPhase& phase) {
  std::vector<std::uint64_t> sends(target::kTileCount), receives(target::kTileCount);
  std::uint64_t busiest = 0;
  for (const Piece& piece : phase.pieces) {
    busiest = std::max(busiest, ++sends[piece.source.value]);
    for (const auto& d : piece.destinations) busiest = std::max(busiest, ++receives[d.tile.value]);
  }
  return busiest;
}

}  // namespace

PieceTimes schedule_pieces(const PreparedPhase& phase) {
  // Up to three list schedules; the shortest wins (the earlier one on a tie).
  Timed best = *ListScheduler(phase, Policy::kEarliestStart).run();
  SchedulingWork work = best.work;
  if (phase.pieces.size() * busiest_tile_messages(phase) > kMaxRankedWork) {
    return {std::move(best.starts), work};
  }
  // Each is stopped as soon as its horizon reaches the best one's: a tie
  // keeps the earlier schedule, so it could not win.
  const auto keep_shorter = [&](std::vector<std::size_t> rank) {
    ListScheduler scheduler(phase, Policy::kRanked, std::move(rank), best.horizon);
    std::optional<Timed> other = scheduler.run();
    work += scheduler.work();
    if (other && other->horizon < best.horizon) best = std::move(*other);
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
  return {std::move(best.starts), work};
}

}  // namespace tessera::compiler::exchange
