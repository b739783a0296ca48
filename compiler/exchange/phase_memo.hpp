#pragma once
// Phases of one shape are timed once (compiler/README.md, "Compile time").
//
// A layer's q, k and v projections, or a GEMM's K-block phases in a model's
// attention head, are exchange phases with the same messages between the
// same tiles, only at other addresses. The list schedules (list_scheduler.hpp)
// see a phase's addresses in two ways only: the orders prepare_phase finds
// from shared bytes, and the memory elements each message reads on its sender
// and writes on each receiver — and a tile's timeline only asks whether a
// read and a write there share an element (tile_timeline.hpp: a window on an
// element blocks what touches that element). So two prepared phases whose
// pieces have the same sender, words, receivers, transfer and first word,
// whose orders are the same, and whose elements read and written on each tile
// are the same up to renaming that tile's elements get the same send starts,
// and the second one's are the first one's. The shape is that data, with each
// tile's elements that it both reads and writes in the phase named in order of
// first use (the others meet nothing: left out). A shape matches only when
// every word is equal (the hash only picks the bucket), so no phase takes
// another's times unless it would have computed them itself; its rows are
// emitted, and validated, at its own addresses as ever.
//
// SigLIP at f143 (so400m or one layer): 21 to 23 of its 180 phases, 177 k of
// the one-layer model's 1.52 M messages, take an earlier phase's times; the
// package is byte for byte the same.
//
// The linker schedules phases on several threads (LinkOptions::threads), so
// one memo serves them all: a phase whose shape another thread is timing
// waits for those times rather than finding them again. Which phase of a
// shape is timed first does not matter: each would compute the same times.

#include <cstddef>
#include <cstdint>
#include <future>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "compiler/exchange/list_scheduler.hpp"
#include "compiler/exchange/prepare.hpp"

namespace tessera::compiler::exchange {

class PhaseMemo {
 public:
  // schedule_pieces(phase), or the times of an earlier phase of its shape
  // (waiting for them while another thread finds them). Safe to call from
  // several threads at once; a shape whose scheduling threw throws again.
  PieceTimes schedule(const PreparedPhase& phase);

  // Phases looked up, and how many of them took an earlier phase's times
  // (whatever the threads' interleaving: every shape is timed once).
  std::size_t lookups() const;
  std::size_t hits() const;

 private:
  struct Entry {
    std::vector<std::uint32_t> shape;
    std::shared_future<PieceTimes> times;  // ready once the first phase of the shape is timed
  };

  mutable std::mutex mutex_;  // guards everything below
  std::unordered_map<std::uint64_t, std::vector<Entry>> entries_;  // by the shape's hash
  std::size_t lookups_ = 0;
  std::size_t hits_ = 0;
};

}  // namespace tessera::compiler::exchange
