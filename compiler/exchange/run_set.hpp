#pragma once
// A set of events kept as disjoint runs [begin, end), joined whenever two
// touch or overlap: the list scheduler's view of what one tile already does
// (its sends, its receive windows, the events where a new control may not
// fall). Because runs are joined, a search steps over a busy stretch in one
// binary search, however many messages made it.
//
// A schedule that sweeps forward in time (the earliest-start one) never asks
// about events before the start it last placed: `forget_before` drops the
// runs that end by then, so its searches and inserts see only the few runs
// near the sweep, not a tile's whole past.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "target/exchange_timing.hpp"

namespace tessera::compiler::exchange {

using target::Event;

class RunSet {
 public:
  // Adds [begin, end) (nothing when empty).
  void add(Event begin, Event end) {
    if (begin >= end) return;
    // The first run that ends at or after `begin` is the first one it can join.
    auto it = std::partition_point(live(), runs_.end(),
                                   [&](const Run& run) { return run.end < begin; });
    if (it == runs_.end() || it->begin > end) {
      runs_.insert(it, Run{begin, end});  // touches nothing
      return;
    }
    it->begin = std::min(it->begin, begin);
    it->end = std::max(it->end, end);
    auto last = std::next(it);
    while (last != runs_.end() && last->begin <= it->end) {
      it->end = std::max(it->end, last->end);
      ++last;
    }
    runs_.erase(std::next(it), last);
  }

  // The first event ≥ `event` in no run. `event` ≥ the last `forget_before`.
  Event first_outside(Event event) const {
    const auto it = std::partition_point(live(), runs_.end(),
                                         [&](const Run& run) { return run.end <= event; });
    return it != runs_.end() && it->begin <= event ? it->end : event;
  }

  // The first b ≥ `begin` such that [b, b + length) meets no run: a search
  // over the gaps from `begin` on (each too short one costs a step).
  // `begin` ≥ the last `forget_before`.
  Event first_gap(Event begin, Event length) const {
    auto it = std::partition_point(live(), runs_.end(),
                                   [&](const Run& run) { return run.end <= begin; });
    while (it != runs_.end() && it->begin < begin + length) {
      begin = it->end;
      ++it;
    }
    return begin;
  }

  // No question will be asked about events before `floor` again: the runs
  // that end by then no longer matter. Amortised O(1): the dead prefix is
  // skipped, and erased once it is the larger part.
  void forget_before(Event floor) {
    while (head_ < runs_.size() && runs_[head_].end <= floor) ++head_;
    if (head_ >= 32 && 2 * head_ >= runs_.size()) {
      runs_.erase(runs_.begin(), live());
      head_ = 0;
    }
  }

 private:
  struct Run {
    Event begin = 0;
    Event end = 0;
  };
  using Iterator = std::vector<Run>::const_iterator;
  Iterator live() const { return runs_.begin() + static_cast<std::ptrdiff_t>(head_); }
  std::vector<Run>::iterator live() { return runs_.begin() + static_cast<std::ptrdiff_t>(head_); }

  std::vector<Run> runs_;  // by begin; disjoint and never touching
  std::size_t head_ = 0;   // runs_[0, head_) end before every question still to come
};

}  // namespace tessera::compiler::exchange
