#include "sim/exchange_fabric.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "support/thread_pool.hpp"
#include "target/exchange_timing.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"

namespace tessera::sim {
namespace {

using target::Event;
using target::PhysicalTile;
using target::ReceiveControl;

// A step function over events: the value of the last change at or before an
// event, or the initial value.
class Timeline {
 public:
  explicit Timeline(std::uint32_t initial) : initial_(initial) {}
  void set(Event event, std::uint32_t value) { changes_.emplace_back(event, value); }
  void seal() { std::stable_sort(changes_.begin(), changes_.end(), by_event); }
  std::uint32_t at(Event event) const {
    const auto it = std::upper_bound(changes_.begin(), changes_.end(),
                                     std::pair<Event, std::uint32_t>{event, 0u}, by_event);
    return it == changes_.begin() ? initial_ : std::prev(it)->second;
  }
  // Calls f(from, to) for the parts [from, to) of [begin, end) on which the
  // value is `value`.
  template <class F>
  void for_each_interval_of(std::uint32_t value, Event begin, Event end, F&& f) const {
    auto next = std::upper_bound(changes_.begin(), changes_.end(),
                                 std::pair<Event, std::uint32_t>{begin, 0u}, by_event);
    std::uint32_t current = next == changes_.begin() ? initial_ : std::prev(next)->second;
    for (Event at = begin; at < end;) {
      const Event until = next == changes_.end() ? end : std::min(end, next->first);
      if (current == value) f(at, until);
      if (next == changes_.end()) break;
      at = next->first;
      while (next != changes_.end() && next->first == at) current = (next++)->second;
    }
  }
  std::uint32_t final_value() const { return changes_.empty() ? initial_ : changes_.back().second; }
  // The event of the last change at or before `event` (the lowest event when
  // the value there is the initial one).
  Event changed_at(Event event) const {
    const auto it = std::upper_bound(changes_.begin(), changes_.end(),
                                     std::pair<Event, std::uint32_t>{event, 0u}, by_event);
    return it == changes_.begin() ? std::numeric_limits<Event>::min() : std::prev(it)->first;
  }
  const std::vector<std::pair<Event, std::uint32_t>>& changes() const { return changes_; }

 private:
  static bool by_event(const std::pair<Event, std::uint32_t>& a,
                       const std::pair<Event, std::uint32_t>& b) {
    return a.first < b.first;
  }
  std::uint32_t initial_;
  std::vector<std::pair<Event, std::uint32_t>> changes_;
};

// The words one send window reads: `words` consecutive items read at
// consecutive events from `start` (a window stops at its first unreadable word).
struct Sent {
  std::size_t sender;  // tile index
  Event start;         // the first word's send event
  std::uint32_t words;
  std::uint32_t source_address;  // the first word's byte address in the sender's SRAM
  std::uint32_t sctl;
  std::size_t slot;  // the first word's value slot (the timeline replay)
};

// Words a receiver takes from one sender at consecutive events: their send,
// mux and memory events and source addresses all advance one per word.
struct Arrival {
  Event memory_event;  // the first word's
  Event send_event;    // the first word's
  std::size_t sender;  // tile index
  std::uint32_t source_address;
  std::size_t slot;
  std::uint32_t words;
};

// Arrived words written to consecutive addresses (the pointer does not change
// under them).
struct Write {
  std::size_t destination;  // tile index
  std::uint32_t address;    // the first word's byte address
  Arrival arrival;          // the words, from their first
};

struct Op {
  Event time;
  std::uint8_t kind;  // 0 = read (a send), 1 = write (a receive)
  std::size_t tile;
  std::uint32_t address;
  std::size_t slot;
};

struct Delivered {
  PhysicalTile destination;
  std::uint32_t address;
  PhysicalTile source;
  std::uint32_t source_address;
  auto key() const {
    return std::tuple(destination.value, address, source.value, source_address);
  }
};

// A run of words from consecutive source addresses to consecutive
// destination addresses.
struct DeliveredRun {
  PhysicalTile destination;
  std::uint32_t address;
  PhysicalTile source;
  std::uint32_t source_address;
  std::uint32_t words;
  auto key() const {
    return std::tuple(destination.value, address, source.value, source_address, words);
  }
};

// Sorts `items` by `less`, whose first key is bucket(item) < buckets: a
// counting pass into the buckets, then each bucket sorted on its own. A
// phase's runs spread over hundreds of tiles, so the buckets are small and
// this costs a fraction of one sort of the whole; the order is the same
// (items `less` cannot tell apart are equal in every field compared).
template <class T, class Bucket, class Less>
void sort_bucketed(std::vector<T>& items, std::size_t buckets, Bucket bucket, Less less) {
  std::vector<std::size_t> starts(buckets + 1, 0);
  for (const T& item : items) ++starts[bucket(item) + 1];
  for (std::size_t b = 0; b < buckets; ++b) starts[b + 1] += starts[b];
  std::vector<T> sorted(items.size());
  std::vector<std::size_t> next(starts.begin(), starts.end() - 1);
  for (const T& item : items) sorted[next[bucket(item)]++] = item;
  for (std::size_t b = 0; b < buckets; ++b) {
    if (starts[b + 1] - starts[b] > 1) {
      std::sort(sorted.begin() + static_cast<std::ptrdiff_t>(starts[b]),
                sorted.begin() + static_cast<std::ptrdiff_t>(starts[b + 1]), less);
    }
  }
  items = std::move(sorted);
}

// Calls f(i) for every i < n, on the pool when there is one with more than
// one thread, in chunks of `chunk` consecutive indices (one pool item each:
// the pool's cost per item stays small beside the work of a chunk). The
// calls must be independent of one another.
template <class F>
void for_each_index(ThreadPool* pool, std::size_t n, std::size_t chunk, const F& f) {
  if (pool == nullptr || pool->threads() == 1 || n <= chunk) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  pool->for_each((n + chunk - 1) / chunk, [&](std::size_t c) {
    const std::size_t end = std::min(n, (c + 1) * chunk);
    for (std::size_t i = c * chunk; i < end; ++i) f(i);
  });
}

bool run_key_less(const DeliveredRun& a, const DeliveredRun& b) { return a.key() < b.key(); }

// Runs sorted by key, merged in place where one continues the last on both
// sides (runs of no words dropped).
void merge_runs(std::vector<DeliveredRun>& runs) {
  std::size_t kept = 0;
  for (const DeliveredRun& run : runs) {
    if (run.words == 0) continue;
    if (kept != 0) {
      DeliveredRun& last = runs[kept - 1];
      if (last.destination == run.destination && last.source == run.source &&
          std::uint64_t{last.address} + 4 * std::uint64_t{last.words} == run.address &&
          std::uint64_t{last.source_address} + 4 * std::uint64_t{last.words} == run.source_address) {
        last.words += run.words;
        continue;
      }
    }
    runs[kept++] = run;
  }
  runs.resize(kept);
}

// `runs` sorted and merged where one continues the last on both sides: two
// run lists whose canonical forms are equal deliver the same words (the
// converse fails only for overlapping runs, which the word-by-word check
// below then decides). The canonical form restricted to one destination is
// that destination's runs' own canonical form (the key's first field is the
// destination, and runs merge only within one).
std::vector<DeliveredRun> canonical(std::vector<DeliveredRun> runs) {
  // Destinations are physical tile ids (on the chip: a plan names no other).
  const auto on_chip = [](const DeliveredRun& run) { return target::on_chip(run.destination); };
  if (std::all_of(runs.begin(), runs.end(), on_chip)) {
    sort_bucketed(runs, target::kTileCount,
                  [](const DeliveredRun& run) { return std::size_t{run.destination.value}; },
                  run_key_less);
  } else {
    std::sort(runs.begin(), runs.end(), run_key_less);
  }
  merge_runs(runs);
  return runs;
}

}  // namespace

// A planned phase's transfers in canonical form, with where each on-chip
// destination's runs begin in it.
struct PlannedRunsCache::Entry {
  std::vector<DeliveredRun> runs;
  bool on_chip = true;
  std::vector<std::uint32_t> starts;  // by physical id, kTileCount + 1 (on_chip only)
};

PlannedRunsCache::PlannedRunsCache() = default;
PlannedRunsCache::~PlannedRunsCache() = default;
void PlannedRunsCache::clear() noexcept { entries_.clear(); }

const PlannedRunsCache::Entry& PlannedRunsCache::entry(const schema::ExchangePhase& planned) {
  auto& slot = entries_[&planned];
  if (slot) return *slot;
  auto entry = std::make_unique<PlannedRunsCache::Entry>();
  std::vector<DeliveredRun> expected;
  for (const auto& transfer : planned.transfers) {
    for (const auto& destination : transfer.destinations) {
      expected.push_back(DeliveredRun{destination.tile, destination.address, transfer.source_tile,
                                      transfer.source_address, transfer.words});
    }
  }
  entry->runs = canonical(std::move(expected));
  entry->on_chip = std::all_of(entry->runs.begin(), entry->runs.end(),
                               [](const DeliveredRun& run) { return target::on_chip(run.destination); });
  if (entry->on_chip) {
    entry->starts.assign(target::kTileCount + 1, 0);
    for (const DeliveredRun& run : entry->runs) ++entry->starts[run.destination.value + 1];
    for (std::size_t t = 0; t < target::kTileCount; ++t) entry->starts[t + 1] += entry->starts[t];
  }
  slot = std::move(entry);
  return *slot;
}

namespace {

// Whether the order in which the phase's words move can change what memory
// ends up holding: a tile reads an address the phase also writes on it (a
// relay), or the phase writes one address twice (a pointer that goes back).
// Otherwise every read sees the memory as the phase found it and every write
// lands where nothing else in the phase looks.
bool order_matters(const std::vector<Sent>& sent, const std::vector<Write>& writes,
                   std::size_t tiles, ThreadPool* pool) {
  struct Span {
    std::uint32_t begin, end;
    bool write;
  };
  // Each tile's reads and writes: `sent` is grouped by sender and `writes`
  // by receiver (both built tile by tile), so a tile's are two slices.
  struct Slices {
    std::size_t sent_begin = 0, sent_end = 0, writes_begin = 0, writes_end = 0;
  };
  std::vector<Slices> of(tiles);
  std::vector<std::size_t> touched;  // tiles with a span, ascending
  for (std::size_t i = 0; i < sent.size(); ++i) {
    Slices& slices = of[sent[i].sender];
    if (slices.sent_begin == slices.sent_end) slices.sent_begin = i;
    slices.sent_end = i + 1;
  }
  for (std::size_t i = 0; i < writes.size(); ++i) {
    Slices& slices = of[writes[i].destination];
    if (slices.writes_begin == slices.writes_end) slices.writes_begin = i;
    slices.writes_end = i + 1;
  }
  for (std::size_t t = 0; t < tiles; ++t) {
    if (of[t].sent_end != of[t].sent_begin || of[t].writes_end != of[t].writes_begin) {
      touched.push_back(t);
    }
  }
  // Tiles share no memory, so each tile is decided on its own (on the pool).
  std::vector<char> matters(touched.size(), 0);
  for_each_index(pool, touched.size(), 16, [&](std::size_t k) {
    const Slices& slices = of[touched[k]];
    // One buffer per host thread, reused from tile to tile and phase to
    // phase (allocating one per tile cost more than the check).
    thread_local std::vector<Span> spans;
    spans.clear();
    spans.reserve(slices.sent_end - slices.sent_begin + slices.writes_end - slices.writes_begin);
    for (std::size_t i = slices.sent_begin; i < slices.sent_end; ++i) {
      const Sent& run = sent[i];
      spans.push_back({run.source_address, run.source_address + 4 * run.words, false});
    }
    for (std::size_t i = slices.writes_begin; i < slices.writes_end; ++i) {
      const Write& write = writes[i];
      spans.push_back({write.address, write.address + 4 * write.arrival.words, true});
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return std::tie(a.begin, a.end, a.write) < std::tie(b.begin, b.end, b.write);
    });
    // Sorted by start, a span overlaps an earlier one exactly when it starts
    // before the furthest end seen so far.
    std::uint32_t reads_end = 0, writes_end = 0;
    for (const Span& span : spans) {
      if (span.begin < writes_end || (span.write && span.begin < reads_end)) {
        matters[k] = 1;
        return;
      }
      (span.write ? writes_end : reads_end) =
          std::max(span.write ? writes_end : reads_end, span.end);
    }
  });
  return std::any_of(matters.begin(), matters.end(), [](char m) { return m != 0; });
}

// The memory elements a row's code occupies, with the supervisor's 64-byte
// fetch lookahead (reference §2.2).
target::ElementSet row_elements(const ExchangeRecord& record) {
  if (!record.row_code) return {};
  const std::uint32_t end = std::min(record.row_code->end + target::kFetchLookahead,
                                     target::kSramEnd);
  return target::elements_of({record.row_code->begin, end});
}

}  // namespace

std::vector<Fault> solve_exchange_phase(std::span<Tile* const> tiles,
                                        std::span<const std::size_t> participants,
                                        std::uint64_t phase, const schema::ExchangePhase* planned,
                                        ExchangeStats& stats, ThreadPool* pool,
                                        PlannedRunsCache* cache) {
  std::vector<Fault> faults;
  // A fault raised on its tile and kept in `sink` (work split by receiver
  // keeps its own, appended in receiver order).
  const auto fault_into = [&](std::vector<Fault>& sink, std::size_t index, FaultKind kind,
                              std::string message) {
    Tile& tile = *tiles[index];
    if (tile.status() == TileStatus::kFaulted) return;
    tile.raise(kind, fmt::format("exchange phase {}: {}", phase, message));
    sink.push_back(*tile.fault());
  };
  const auto fault_on = [&](std::size_t index, FaultKind kind, std::string message) {
    fault_into(faults, index, kind, std::move(message));
  };

  // The 64-bit paired mode is decoded but not modelled: refuse it.
  for (const std::size_t p : participants) {
    const ExchangeRecord& record = *tiles[p]->exchange();
    for (const auto& send : record.sends) {
      if ((send.sctl & target::kSctl64BitItems) != 0) {
        fault_on(p, FaultKind::kNotModelled,
                 fmt::format("a 64-bit paired send (sctl {}) at event {}: the paired mode is not "
                             "modelled",
                             send.sctl, send.start));
      }
    }
    for (const auto& control : record.controls) {
      if (control.selector != 0) {
        fault_on(p, FaultKind::kNotModelled,
                 fmt::format("a paired receive control ({}) : the paired mode is not modelled",
                             fmt::streamed(control)));
      }
    }
  }
  if (!faults.empty()) return faults;

  // Receive state: every tile's source select and pointer over the phase.
  std::vector<Timeline> xpic;
  std::vector<Timeline> pic;
  std::vector<std::uint32_t> incoming_base(tiles.size());
  xpic.reserve(tiles.size());
  pic.reserve(tiles.size());
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    xpic.emplace_back(tiles[i]->incoming_mux());
    pic.emplace_back(tiles[i]->incoming_pointer());
    incoming_base[i] = tiles[i]->csr(static_cast<std::uint8_t>(target::isa::Csr::kIncomingBase));
  }
  std::vector<target::ElementSet> row_element_sets(tiles.size());
  std::vector<const ExchangeRecord*> records(tiles.size(), nullptr);
  for (const std::size_t p : participants) {
    const ExchangeRecord& record = *tiles[p]->exchange();
    records[p] = &record;
    if (record.started) incoming_base[p] = record.incoming_base;
    row_element_sets[p] = row_elements(record);
    for (const auto& control : record.controls) {
      (control.target == ReceiveControl::Register::kXpic ? xpic[p] : pic[p])
          .set(control.event, control.value);
    }
  }
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    xpic[i].seal();
    pic[i].seal();
  }

  // Sends: a window reads its words at consecutive send events through A7,
  // up to its first word outside SRAM or in the row's own element.
  const auto readable_words = [&](std::size_t s, const target::SendWindow& send) {
    const ExchangeRecord& record = *records[s];
    const std::uint64_t first =
        std::uint64_t{record.outgoing_base} + 4 * std::uint64_t{send.first_item};
    const std::uint64_t end = first + 4 * std::uint64_t{send.items};
    if (first % 4 == 0 && first >= target::kSramBase && end <= target::kSramEnd &&
        !target::elements_of({static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(end)})
             .intersects(row_element_sets[s])) {
      return send.items;  // every word is readable
    }
    const PhysicalTile sender = tiles[s]->id();
    for (std::uint32_t i = 0; i < send.items; ++i) {
      const Event t = send.start + i;
      const std::uint64_t address = first + 4 * std::uint64_t{i};
      if (address % 4 != 0 || address < target::kSramBase || address + 4 > target::kSramEnd) {
        fault_on(s, FaultKind::kExchangeAddress,
                 fmt::format("{} sends from {:#x} at event {}, outside SRAM", sender, address, t));
        return i;
      }
      if (row_element_sets[s].contains(target::element_of(static_cast<std::uint32_t>(address)))) {
        fault_on(s, FaultKind::kExchangeConflict,
                 fmt::format("{} sends from {:#x} at event {}, in the memory element of the row "
                             "it is executing ({} plus the {}-byte fetch lookahead)",
                             sender, address, t, *record.row_code, target::kFetchLookahead));
        return i;
      }
    }
    return send.items;
  };
  std::vector<Sent> sent;
  std::size_t slots = 0;
  for (const std::size_t s : participants) {
    const ExchangeRecord& record = *records[s];
    for (const auto& send : record.sends) {
      const std::uint32_t words = readable_words(s, send);
      if (words == 0) continue;
      const auto source_address =
          static_cast<std::uint32_t>(record.outgoing_base + 4 * std::uint64_t{send.first_item});
      sent.push_back(Sent{s, send.start, words, source_address, send.sctl, slots});
      slots += words;
      stats.words_sent += words;
    }
  }

  // Arrivals: a word sent at event t reaches d's mux at t + ttm(s, d) + 1 if
  // the sctl names the direction to d, and d takes it if its source select
  // names s then; it reaches memory 52 + 2·row(d) events later.
  std::vector<std::vector<Arrival>> arrivals(tiles.size());
  // Words each receiver takes under one source select: one message, by
  // receiver and the event its select changed (in that order: receivers
  // ascending, each one's stretches in event order).
  struct Message {
    Event selected_at;
    std::uint64_t words;
  };
  std::vector<std::vector<Message>> messages_of(tiles.size());
  // From the receivers' side: each stretch of a receiver's source select
  // between two of its changes, and the runs its sender sends in the events
  // that reach the mux then (a sender sends one word per event, so its runs
  // are disjoint and sorted by start and by end alike). Scanning every run
  // against every tile that ever selects its sender cost runs × receivers.
  constexpr std::size_t kNoTile = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> index_of_tile(target::kTileCount, kNoTile);  // by physical id
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    if (target::on_chip(tiles[i]->id()) && index_of_tile[tiles[i]->id().value] == kNoTile) {
      index_of_tile[tiles[i]->id().value] = i;
    }
  }
  std::vector<std::vector<const Sent*>> runs_of(tiles.size());
  for (const Sent& run : sent) runs_of[run.sender].push_back(&run);
  for (auto& runs : runs_of) {
    std::sort(runs.begin(), runs.end(), [](const Sent* a, const Sent* b) { return a->start < b->start; });
  }
  constexpr Event kBefore = std::numeric_limits<Event>::min();
  constexpr Event kAfter = std::numeric_limits<Event>::max();
  // Each receiver's arrivals depend on the phase's sends and its own select
  // alone, so the receivers are found on the host pool (each writes only
  // its own lists).
  const auto arrive = [&](std::size_t d) {
    const PhysicalTile destination = tiles[d]->id();
    const auto& changes = xpic[d].changes();
    const auto take = [&](std::uint32_t value, Event from, Event until) {
      if (value >= target::kTileCount) return;
      const std::size_t s = index_of_tile[value];
      if (s == kNoTile || s == d) return;
      const PhysicalTile sender = tiles[s]->id();
      const auto direction = static_cast<std::uint32_t>(target::direction(sender, destination));
      const Event to_mux = target::ttm(sender, destination) + 1;
      const Event to_memory = target::kPointerLag + target::kPointerLagPerRow * target::row(destination);
      // Sends whose words reach the mux in [from, until).
      const Event send_from = from == kBefore ? kBefore : from - to_mux;
      const Event send_until = until == kAfter ? kAfter : until - to_mux;
      const auto& runs = runs_of[s];
      auto it = std::partition_point(runs.begin(), runs.end(), [&](const Sent* run) {
        return run->start + static_cast<Event>(run->words) <= send_from;
      });
      std::uint64_t taken = 0;
      for (; it != runs.end() && (*it)->start < send_until; ++it) {
        const Sent& run = **it;
        if ((run.sctl & direction) == 0) continue;
        const Event first_mux = run.start + to_mux;
        const Event lo = std::max(from, first_mux);
        const Event hi = std::min(until, first_mux + static_cast<Event>(run.words));
        if (lo >= hi) continue;
        const auto skipped = static_cast<std::uint32_t>(lo - first_mux);
        arrivals[d].push_back(Arrival{lo + to_memory, lo - to_mux, run.sender,
                                      run.source_address + 4 * skipped, run.slot + skipped,
                                      static_cast<std::uint32_t>(hi - lo)});
        taken += static_cast<std::uint64_t>(hi - lo);
      }
      if (taken > 0) messages_of[d].push_back(Message{from, taken});
    };
    // The stretches: before the first change (the phase's initial select),
    // then from each distinct change event (its last change wins) to the next.
    std::uint32_t current = xpic[d].at(kBefore);
    Event at = kBefore;
    for (std::size_t c = 0; c < changes.size();) {
      const Event next = changes[c].first;
      take(current, at, next);
      while (c < changes.size() && changes[c].first == next) current = changes[c++].second;
      at = next;
    }
    take(current, at, kAfter);
    // In memory-event order, for the receives below.
    std::sort(arrivals[d].begin(), arrivals[d].end(), [](const Arrival& a, const Arrival& b) {
      return std::tie(a.memory_event, a.sender, a.send_event) <
             std::tie(b.memory_event, b.sender, b.send_event);
    });
  };
  for_each_index(pool, tiles.size(), 32, arrive);  // most tiles take nothing: 32 a chunk

  // No message longer than the hardware carries (target::check_message_words).
  for (std::size_t d = 0; d < tiles.size(); ++d) {
    for (const auto& [selected_at, words] : messages_of[d]) {
      const PhysicalTile source(static_cast<std::uint16_t>(xpic[d].at(selected_at)));
      try {
        target::check_message_words(source, tiles[d]->id(), words);
      } catch (const target::ExchangeTimingError& error) {
        const std::string since = selected_at == std::numeric_limits<Event>::min()
                                      ? std::string("since an earlier phase")
                                      : fmt::format("from event {}", selected_at);
        fault_on(d, FaultKind::kExchangeTiming,
                 fmt::format("{} takes more words under one source select ({}) than one "
                             "message carries: {}",
                             tiles[d]->id(), since, error.message()));
      }
    }
  }

  // Receives: each receiver's words in memory-event order (its source select
  // names one sender per event, which sends one word per event, so no two
  // words reach its memory at one event), written through its pointer: the
  // base A4 plus 4·PIC, and PIC advances one per word. A receiver stops at
  // its first word outside SRAM, in its code or in its row's element.
  const auto writable_words = [&](std::size_t d, std::uint64_t first, std::uint32_t words,
                                  Event event, std::size_t sender, std::vector<Fault>& sink) {
    const std::uint64_t end = first + 4 * std::uint64_t{words};
    if (first % 4 == 0 && first >= target::kSramBase && end <= target::kSramEnd &&
        !tiles[d]->in_code(static_cast<std::uint32_t>(first), 4 * words) &&
        !target::elements_of({static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(end)})
             .intersects(row_element_sets[d])) {
      return words;  // every word is writable
    }
    const PhysicalTile destination = tiles[d]->id();
    for (std::uint32_t i = 0; i < words; ++i) {
      const std::uint64_t address = first + 4 * std::uint64_t{i};
      if (address < target::kSramBase || address + 4 > target::kSramEnd) {
        fault_into(sink, d, FaultKind::kExchangeAddress,
                 fmt::format("{} receives a word from {} into {:#x} at event {}, outside SRAM",
                             destination, tiles[sender]->id(), address, event + i));
        return i;
      }
      if (address % 4 != 0) {
        // Only a misaligned base (A4) can do this: PIC counts words.
        fault_into(sink, d, FaultKind::kExchangeAddress,
                 fmt::format("{} receives a word from {} into {:#x} at event {}, which is not "
                             "word-aligned (INCOMING_BASE is {:#x})",
                             destination, tiles[sender]->id(), address, event + i,
                             records[d] != nullptr ? records[d]->incoming_base : 0u));
        return i;
      }
      const auto byte_address = static_cast<std::uint32_t>(address);
      if (tiles[d]->in_code(byte_address, 4)) {
        fault_into(sink, d, FaultKind::kExchangeAddress,
                 fmt::format("{} receives a word from {} into {:#x}, inside its code", destination,
                             tiles[sender]->id(), byte_address));
        return i;
      }
      if (row_element_sets[d].contains(target::element_of(byte_address))) {
        fault_into(sink, d, FaultKind::kExchangeConflict,
                 fmt::format("{} receives into {:#x} at event {}, in the memory element of the row "
                             "it is executing ({} plus the {}-byte fetch lookahead)",
                             destination, byte_address, event + i, *records[d]->row_code,
                             target::kFetchLookahead));
        return i;
      }
    }
    return words;
  };
  // Each receiver's writes depend on its own arrivals and pointer alone: on
  // the host pool, each receiver with its own lists, joined in receiver order.
  std::vector<std::vector<Write>> writes_of(tiles.size());
  std::vector<std::vector<Fault>> faults_of(tiles.size());
  for_each_index(pool, tiles.size(), 32, [&](std::size_t d) {
    const auto& runs = arrivals[d];  // sorted by memory event
    if (runs.empty()) return;
    writes_of[d].reserve(runs.size());  // one write per arrival unless the pointer moves under it
    const auto& pointer_changes = pic[d].changes();
    std::size_t next_change = 0;
    std::uint64_t pointer = pic[d].at(std::numeric_limits<Event>::min());
    bool stopped = false;
    for (const Arrival& run : runs) {
      for (std::uint32_t done = 0; done < run.words && !stopped;) {
        const Event at = run.memory_event + done;
        while (next_change < pointer_changes.size() && pointer_changes[next_change].first <= at) {
          pointer = pointer_changes[next_change++].second;
        }
        // The words before the next pointer change go to consecutive addresses.
        std::uint32_t words = run.words - done;
        if (next_change < pointer_changes.size()) {
          words = static_cast<std::uint32_t>(
              std::min<Event>(words, pointer_changes[next_change].first - at));
        }
        const std::uint64_t address = std::uint64_t{incoming_base[d]} + 4 * pointer;
        const std::uint32_t written = writable_words(d, address, words, at, run.sender, faults_of[d]);
        if (written > 0) {
          writes_of[d].push_back(Write{d, static_cast<std::uint32_t>(address),
                                 Arrival{at, run.send_event + done, run.sender,
                                         run.source_address + 4 * done, run.slot + done, written}});
        }
        if (written < words) {
          pointer += written + 1;  // the refused word moved the pointer too
          stopped = true;
        } else {
          pointer += words;
          done += words;
        }
      }
      if (stopped) break;
    }
    // A PIC control after the last word still sets the pointer the next
    // phase starts from.
    while (next_change < pointer_changes.size()) pointer = pointer_changes[next_change++].second;
    pic[d].set(std::numeric_limits<Event>::max(), static_cast<std::uint32_t>(pointer));
  });
  std::vector<Write> writes;
  std::size_t write_count = 0;
  for (const auto& of : writes_of) write_count += of.size();
  writes.reserve(write_count);
  for (std::size_t d = 0; d < tiles.size(); ++d) {
    writes.insert(writes.end(), writes_of[d].begin(), writes_of[d].end());
    faults.insert(faults.end(), faults_of[d].begin(), faults_of[d].end());
  }

  // A tile may not observe a word before its write event. A row that
  // returns before the words it receives have landed lets the code after it
  // read stale memory while the late words land under its feet.
  struct LateWords {
    std::uint64_t count = 0;
    const Write* last = nullptr;  // the run holding the last late word
    Event last_event = 0;
  };
  std::unordered_map<std::size_t, LateWords> late;
  for (const Write& write : writes) {
    const ExchangeRecord* record = records[write.destination];
    if (record == nullptr || !record->end) continue;
    const Arrival& taken = write.arrival;
    const Event first = std::max(taken.memory_event, taken.send_event);
    const Event final_event = first + taken.words - 1;
    if (final_event < *record->end) continue;
    LateWords& words = late[write.destination];
    words.count += static_cast<std::uint64_t>(final_event - std::max(first, *record->end) + 1);
    if (words.last == nullptr || final_event > words.last_event) {
      words.last = &write;
      words.last_event = final_event;
    }
  }
  for (const auto& [d, words] : late) {
    const Write& last = *words.last;
    fault_on(d, FaultKind::kExchangeTiming,
             fmt::format("{}'s row {} returns at event {}, before {} of the words it receives "
                         "have landed: the last, from {}, lands at {:#x} at event {}",
                         tiles[d]->id(), *records[d]->row_code, *records[d]->end, words.count,
                         tiles[last.arrival.sender]->id(),
                         last.address + 4 * (last.arrival.words - 1), words.last_event));
  }

  // Persist the receive state a phase leaves behind (a missing teardown
  // keeps a tile listening, as on the hardware).
  for (const std::size_t p : participants) {
    tiles[p]->set_incoming_mux(xpic[p].final_value());
  }
  for (std::size_t d = 0; d < tiles.size(); ++d) {
    if (!pic[d].changes().empty()) tiles[d]->set_incoming_pointer(pic[d].final_value());
  }
  if (!faults.empty()) return faults;

  // Where each receiver's writes begin (writes are by receiver), and their end.
  std::vector<std::size_t> receivers;
  for (std::size_t w = 0; w < writes.size(); ++w) {
    if (w == 0 || writes[w - 1].destination != writes[w].destination) receivers.push_back(w);
  }
  receivers.push_back(writes.size());

  // Move the words. Reads happen at send events and writes when words reach
  // memory (or at the send, if that is later), on one timeline, so a relay
  // sends what it received earlier in the phase.
  if (order_matters(sent, writes, tiles.size(), pool)) {
    std::vector<Op> ops;
    for (const Sent& run : sent) {
      for (std::uint32_t i = 0; i < run.words; ++i) {
        ops.push_back(Op{run.start + i, 0, run.sender, run.source_address + 4 * i, run.slot + i});
      }
    }
    for (const Write& write : writes) {
      const Arrival& taken = write.arrival;
      for (std::uint32_t i = 0; i < taken.words; ++i) {
        ops.push_back(Op{std::max(taken.memory_event, taken.send_event) + i, 1, write.destination,
                         write.address + 4 * i, taken.slot + i});
      }
    }
    std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
      return std::tie(a.time, a.kind, a.tile, a.address) <
             std::tie(b.time, b.kind, b.tile, b.address);
    });
    std::vector<std::uint32_t> values(slots);
    for (const Op& op : ops) {
      if (op.kind == 0) {
        values[op.slot] = tiles[op.tile]->sram().read_u32(op.address);
      } else {
        tiles[op.tile]->sram().write_u32(op.address, values[op.slot]);
        ++stats.words_delivered;
      }
    }
  } else {
    // Nothing in the phase reads what it writes, nor writes an address
    // twice: every order of the moves gives the timeline's result, so each
    // run of words is copied at once, and the receivers on the host pool.
    // A receiver's pages are materialised first, here: then the copies
    // change only the bytes and written bits of their own receiver, never
    // what a read looks at (a read's bytes are no write's, and which pages
    // are present stays put).
    for (const Write& write : writes) {
      (void)tiles[write.destination]->sram().bytes(write.address, 4 * write.arrival.words);
      stats.words_delivered += write.arrival.words;
    }
    for_each_index(pool, receivers.size() - 1, 4, [&](std::size_t r) {
      std::vector<std::uint8_t> buffer;
      for (std::size_t w = receivers[r]; w < receivers[r + 1]; ++w) {
        const Write& write = writes[w];
        buffer.resize(4 * std::size_t{write.arrival.words});
        tiles[write.arrival.sender]->sram().read(write.arrival.source_address, buffer);
        tiles[write.destination]->sram().write(write.address, buffer);
      }
    });
  }

  // Compare with the package's plan: every planned word arrives exactly once
  // where planned, and nothing else is written.
  if (planned != nullptr) {
    // Run by run first (a phase moves millions of words, its runs are
    // thousands); word by word only when the runs differ, to name the word.
    // Each receiver's runs against the plan's for its tile, on the pool: the
    // canonical forms are equal exactly when every receiver's are and the
    // plan has runs for no other tile.
    PlannedRunsCache local;
    const PlannedRunsCache::Entry& expected = (cache != nullptr ? *cache : local).entry(*planned);
    bool same = false;
    // Receivers on the chip with distinct physical ids (a chip's always
    // are) each compare with their own part of the plan.
    std::vector<bool> seen(target::kTileCount, false);
    if (expected.on_chip &&
        std::all_of(receivers.begin(), receivers.end() - 1, [&](std::size_t w) {
          const PhysicalTile id = tiles[writes[w].destination]->id();
          if (!target::on_chip(id) || seen[id.value]) return false;
          seen[id.value] = true;
          return true;
        })) {
      std::size_t planned_tiles = 0;
      for (std::size_t t = 0; t < target::kTileCount; ++t) {
        planned_tiles += expected.starts[t + 1] != expected.starts[t] ? 1U : 0U;
      }
      std::vector<char> agrees(receivers.size() - 1, 0);
      for_each_index(pool, receivers.size() - 1, 8, [&](std::size_t r) {
        thread_local std::vector<DeliveredRun> runs;  // reused, as order_matters' spans
        runs.clear();
        for (std::size_t w = receivers[r]; w < receivers[r + 1]; ++w) {
          const Write& write = writes[w];
          runs.push_back(DeliveredRun{tiles[write.destination]->id(), write.address,
                                      tiles[write.arrival.sender]->id(),
                                      write.arrival.source_address, write.arrival.words});
        }
        std::sort(runs.begin(), runs.end(), run_key_less);
        merge_runs(runs);
        const std::vector<DeliveredRun>& mine = runs;
        const std::uint16_t id = tiles[writes[receivers[r]].destination]->id().value;
        const auto first = expected.runs.begin() + expected.starts[id];
        const auto last = expected.runs.begin() + expected.starts[id + 1];
        agrees[r] = std::equal(mine.begin(), mine.end(), first, last,
                               [](const DeliveredRun& x, const DeliveredRun& y) {
                                 return x.key() == y.key();
                               })
                        ? 1
                        : 0;
      });
      same = planned_tiles == agrees.size() &&
             std::all_of(agrees.begin(), agrees.end(), [](char a) { return a != 0; });
    } else {
      std::vector<DeliveredRun> delivered_runs;
      for (const Write& write : writes) {
        delivered_runs.push_back(DeliveredRun{tiles[write.destination]->id(), write.address,
                                              tiles[write.arrival.sender]->id(),
                                              write.arrival.source_address, write.arrival.words});
      }
      const std::vector<DeliveredRun> delivered = canonical(std::move(delivered_runs));
      same = std::equal(delivered.begin(), delivered.end(), expected.runs.begin(),
                        expected.runs.end(), [](const DeliveredRun& x, const DeliveredRun& y) {
                          return x.key() == y.key();
                        });
    }
    if (same) return faults;
  }
  if (planned != nullptr) {
    std::vector<Delivered> delivered;
    for (const Write& write : writes) {
      const PhysicalTile destination = tiles[write.destination]->id();
      const PhysicalTile source = tiles[write.arrival.sender]->id();
      for (std::uint32_t i = 0; i < write.arrival.words; ++i) {
        delivered.push_back(Delivered{destination, write.address + 4 * i, source,
                                      write.arrival.source_address + 4 * i});
      }
    }
    std::unordered_map<std::uint16_t, std::size_t> index_of;
    for (std::size_t i = 0; i < tiles.size(); ++i) index_of.emplace(tiles[i]->id().value, i);
    std::vector<Delivered> expected;
    for (const auto& transfer : planned->transfers) {
      for (const auto& destination : transfer.destinations) {
        for (std::uint32_t i = 0; i < transfer.words; ++i) {
          expected.push_back(Delivered{destination.tile, destination.address + 4 * i,
                                       transfer.source_tile, transfer.source_address + 4 * i});
        }
      }
    }
    const auto by_key = [](const Delivered& a, const Delivered& b) { return a.key() < b.key(); };
    std::sort(expected.begin(), expected.end(), by_key);
    std::sort(delivered.begin(), delivered.end(), by_key);
    std::size_t e = 0, a = 0;
    while (e < expected.size() || a < delivered.size()) {
      if (e < expected.size() && a < delivered.size() && expected[e].key() == delivered[a].key()) {
        ++e;
        ++a;
        continue;
      }
      const bool missing = a == delivered.size() ||
                           (e < expected.size() && by_key(expected[e], delivered[a]));
      const Delivered& word = missing ? expected[e] : delivered[a];
      const auto index = index_of.find(word.destination.value);
      std::string message;
      if (missing && a < delivered.size() && delivered[a].destination == word.destination &&
          delivered[a].address == word.address) {
        message = fmt::format("{} {:#x} should receive {} {:#x}'s word but received {} {:#x}'s",
                              word.destination, word.address, word.source, word.source_address,
                              delivered[a].source, delivered[a].source_address);
      } else if (missing) {
        message = fmt::format("{} {:#x} should receive {} {:#x}'s word, which did not arrive",
                              word.destination, word.address, word.source, word.source_address);
      } else {
        message = fmt::format("{} {:#x} received {} {:#x}'s word, which no planned transfer puts "
                              "there",
                              word.destination, word.address, word.source, word.source_address);
      }
      if (index != index_of.end()) {
        fault_on(index->second, FaultKind::kExchangeMismatch,
                 "the words delivered differ from the plan: " + message);
      }
      break;
    }
  }
  return faults;
}

}  // namespace tessera::sim
