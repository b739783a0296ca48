#pragma once
// The exchange fabric: moves the words of one exchange phase once every
// participating tile has recorded its row (decision 4 of ARCHITECTURE.md).
//
// Words carry no destination. A word that tile s sends at event t reaches
// tile d's incoming mux at event t + ttm(s, d) + 1 — if the send's sctl names
// the direction from s to d — and d takes it only when its source select
// (XPIC) names s at that event. A taken word reaches memory 52 + 2·row(d)
// events later and is written through d's incoming pointer (PIC), which
// advances one word per word written. The timing functions are target/'s,
// the same ones the compiler schedules with (one owner); this solver only
// replays them on one event timeline per phase, in plain C++. It works in
// runs of consecutive words, and orders the reads and writes by event only
// when the order can matter (a relay, or an address written twice).
//
// Checks, each a fault naming phase, tiles and addresses: a send that reads,
// or a receive that writes, the memory element of the executing row
// (TEXCPT_CONFLICT, including the 64-byte fetch lookahead); a receive outside
// SRAM or into code (ERERR ADDR); more words under one source select than
// one message carries (target::check_message_words); a row that returns
// before the words it receives have landed (the code after it would read
// them early); and, when the package plans the phase, any difference between
// the words delivered and the planned transfers.
// The 64-bit paired mode is refused as not modelled.

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "schema/model.hpp"
#include "sim/fault.hpp"
#include "sim/tile.hpp"

namespace tessera {
class ThreadPool;
}

namespace tessera::sim {

struct ExchangeStats {
  std::uint64_t words_sent = 0;
  std::uint64_t words_delivered = 0;
  // Internal phases compared with the package's plan, and those the package
  // leaves unchecked (no plan, or past its plannedRounds).
  std::uint64_t checked_phases = 0;
  std::uint64_t unchecked_phases = 0;
};

// The planned phases' transfers in the form the solver compares the words
// delivered with, worked out once per planned phase (a model's loops repeat
// each phase many times). Keyed by the plan's address: clear it whenever the
// plans it was given may be gone.
class PlannedRunsCache {
 public:
  struct Entry;
  PlannedRunsCache();
  ~PlannedRunsCache();
  PlannedRunsCache(const PlannedRunsCache&) = delete;
  PlannedRunsCache& operator=(const PlannedRunsCache&) = delete;
  void clear() noexcept;
  const Entry& entry(const schema::ExchangePhase& planned);

 private:
  std::unordered_map<const schema::ExchangePhase*, std::unique_ptr<Entry>> entries_;
};

// Solves one phase. `tiles` are all of the chip's tiles (a tile whose source
// select still names a sender from an earlier phase receives too);
// `participants` index the tiles whose records belong to this phase.
// `planned` is the package's plan for this phase, or null. Faults are
// returned (and also raised on the tile they concern). With a `pool`, the
// work that splits by receiver (its arrivals, its copies) runs on it; the
// result is the same with or without one. A `cache` keeps the plans' form
// between calls (the result is the same without one).
std::vector<Fault> solve_exchange_phase(std::span<Tile* const> tiles,
                                        std::span<const std::size_t> participants,
                                        std::uint64_t phase, const schema::ExchangePhase* planned,
                                        ExchangeStats& stats, ThreadPool* pool = nullptr,
                                        PlannedRunsCache* cache = nullptr);

}  // namespace tessera::sim
