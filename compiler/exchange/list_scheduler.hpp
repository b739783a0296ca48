#pragma once
// Times for a prepared phase: list scheduling of messages (multicast
// hyperedges) over full-duplex tiles, each placed at the earliest event that
// keeps every rule of reference §5.5 and §2.2.
//
// A message from s at send start S occupies s's outgoing stream for
// [S, S + n); each receiver d selects s over [X, X + n) and writes [P, P + n)
// (target::word32_transfer). A candidate S is refused when, on any tile it
// touches:
//   - two sends overlap (rule 1);
//   - a receive control falls on a send's first event or the one after (rule 2);
//   - two receives' source windows overlap (rule 3; their payload windows
//     then overlap too, since P − X depends only on the receiver);
//   - two receive controls fall on one event, except a teardown meeting the
//     next source select, which becomes a cut-over (rule 4; allowing only a
//     message's own pointer and teardown to meet keeps every sendpicp far
//     enough from the previous one that the emitter can always align it);
//   - a send's read window [S, S + n) and a receive's write window [P, horizon)
//     overlap in time and touch a common memory element (§2.2 rule 3);
//   - it starts before what it depends on has finished on that tile (rule 8).
// The search for a start is a sequence of questions to each tile's
// forbidden events (tile_timeline.hpp: a bitmap per rule), each moving a
// refused start to the first one that clears its conflict, so a congested
// tile (a 1471 → 1 gather) costs a few steps, not a scan.
//
// The main schedule places the ready message of least (earliest start,
// busiest endpoint, fan-out, words, source tile, index), with bounds
// refreshed lazily and grouped by sender (earliest_start_queue.hpp). It
// sweeps forward in time: no start is placed before the last one placed (a
// message released by an order is placed no earlier either), so what every
// tile did before the sweep is dropped and a search sees only the few runs
// near it, not the phase's past. A message found stale 32 times is placed at
// its earliest start then, so the schedule does at most 34 searches per
// message whatever the contention. Two more schedules take
// them in input order (waves, when the caller lists transfers wave by wave)
// and, for balanced point-to-point phases, in matching waves
// (matching_waves.hpp) — both only when messages × the busiest tile's
// messages is at most 2^24: they cannot forget the past, so their cost grows
// with that product. The shortest horizon is kept, the first on a tie.
// Deterministic.

#include <cstdint>
#include <vector>

#include "compiler/exchange/prepare.hpp"
#include "compiler/exchange/schedule.hpp"
#include "target/exchange_timing.hpp"

namespace tessera::compiler::exchange {

struct PieceTimes {
  std::vector<target::Event> starts;  // per piece
  SchedulingWork work;                // of all the list schedules tried
};

// The send start of every piece. ExchangeScheduleError when the orders form
// a cycle (only possible with orders the caller gave).
PieceTimes schedule_pieces(const PreparedPhase& phase);

}  // namespace tessera::compiler::exchange
