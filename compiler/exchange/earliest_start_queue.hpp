#pragma once
// The ready messages of the earliest-start list schedule, grouped by sender.
//
// That schedule repeatedly places the ready message of least (earliest
// start, tie rank). A message's earliest start only grows as others are
// placed, so each is kept as a lower bound and recomputed when the message
// comes to the top: if it grew, the message goes back with the new bound.
//
// In one heap of messages this is quadratic in a tile's messages: a send
// makes every other ready message of its sender stale (none can start
// before the send ends), and each is popped, recomputed and pushed again
// before the next send — 87 % of the time of 50 k one-word messages. Here
// every sender has one entry in the heap, and its ready messages share the
// bound "not before the sender's latest send ends" (the frontier): those
// whose own bound is below it are ripe and wait in tie-rank order, the
// others in (bound, rank) order. A send moves the frontier — one entry
// refreshed, whatever the sender's queue — and only the message that comes
// to the top is recomputed. The order of placements is the same as with one
// heap: the top of the heap is the least (bound, rank) of all.
//
// The heap of senders is indexed (each sender's place in it is known), so a
// sender whose first message changes is moved in place: no stale entries
// pile up behind the millions of stale-bound retries of a large phase.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "target/exchange_timing.hpp"

namespace tessera::compiler::exchange {

class EarliestStartQueue {
 public:
  struct Candidate {
    target::Event bound = 0;  // a lower bound on its earliest start
    std::size_t piece = 0;
  };

  // `sender[i]` is piece i's source tile (< tiles), `rank[i]` its place in
  // the tie-break order (distinct).
  EarliestStartQueue(std::size_t tiles, std::vector<std::uint16_t> sender,
                     std::vector<std::uint32_t> rank);

  // A piece that became ready, with a lower bound on its earliest start.
  void add(std::size_t piece, target::Event bound);
  // The ready piece of least (bound, rank), or nothing when none is ready.
  std::optional<Candidate> top();
  // The top piece's bound was stale: it can start no earlier than `bound`.
  void raise(std::size_t piece, target::Event bound);
  // The top piece was placed; no other ready piece of its sender can start
  // before `frontier` (0: no news).
  void remove(std::size_t piece, target::Event frontier);
  // No ready piece of `tile` can start before `frontier` (when it is later
  // than the one known).
  void raise_frontier(std::uint16_t tile, target::Event frontier);
  // No ready piece of `tile` starts before this.
  target::Event frontier(std::uint16_t tile) const { return senders_[tile].frontier; }

 private:
  static constexpr std::uint32_t kAbsent = ~std::uint32_t{0};
  struct Ranked {  // a ripe piece
    std::uint32_t rank;
    std::uint32_t piece;
    bool operator<(const Ranked& other) const { return rank < other.rank; }
  };
  struct Bounded {  // a waiting piece
    target::Event bound;
    std::uint32_t rank;
    std::uint32_t piece;
    bool operator<(const Bounded& other) const {
      return bound != other.bound ? bound < other.bound : rank < other.rank;
    }
  };
  // A binary min-heap whose top can be replaced in one sift (a stale bound
  // raised in place): std::priority_queue would pop and push.
  template <class T>
  class Heap {
   public:
    bool empty() const noexcept { return items_.empty(); }
    const T& top() const noexcept { return items_.front(); }
    void push(const T& item);
    void pop();
    void replace_top(const T& item);

   private:
    void sift_down(std::size_t position, const T& item);
    std::vector<T> items_;
  };

  struct Sender {
    target::Event frontier = 0;
    Heap<Ranked> ripe;      // bound ≤ frontier
    Heap<Bounded> waiting;  // bound > frontier
  };
  // A sender with a ready message in the heap of senders, keyed by its first
  // message's (bound, rank) — kept here, so comparing two senders reads no
  // Sender.
  struct Key {
    target::Event bound = 0;
    std::uint32_t rank = 0;
    std::uint16_t tile = 0;
    bool operator<(const Key& other) const {
      return bound != other.bound ? bound < other.bound : rank < other.rank;  // ranks are distinct
    }
  };

  // Checks that `piece` is its sender's first; whether it is a ripe one.
  bool check_top(const Sender& sender, std::size_t piece) const;
  // The sender's key from its first message; moved, added or removed in heap_.
  void publish(std::uint16_t tile);
  void place(std::uint32_t position, const Key& key) {
    heap_[position] = key;
    position_[key.tile] = position;
  }
  void sift_up(std::uint32_t position, Key key);
  void sift_down(std::uint32_t position, Key key);

  std::vector<std::uint16_t> sender_;
  std::vector<std::uint32_t> rank_;
  std::vector<Sender> senders_;
  std::vector<Key> heap_;                // senders with a ready message, a binary min-heap
  std::vector<std::uint32_t> position_;  // each sender's place in heap_, kAbsent when none
};

}  // namespace tessera::compiler::exchange
