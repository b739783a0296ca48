#include "sim/exchange_fabric.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ostream.h>

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
  std::uint32_t final_value() const { return changes_.empty() ? initial_ : changes_.back().second; }
  const std::vector<std::pair<Event, std::uint32_t>>& changes() const { return changes_; }

 private:
  static bool by_event(const std::pair<Event, std::uint32_t>& a,
                       const std::pair<Event, std::uint32_t>& b) {
    return a.first < b.first;
  }
  std::uint32_t initial_;
  std::vector<std::pair<Event, std::uint32_t>> changes_;
};

// A word taken by a receiver, before its address is known.
struct Arrival {
  Event memory_event;
  Event send_event;
  std::size_t sender;           // tile index
  std::uint32_t source_address; // byte address in the sender's SRAM
  std::size_t slot;             // the value read at the send
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
                                        ExchangeStats& stats) {
  std::vector<Fault> faults;
  const auto fault_on = [&](std::size_t index, FaultKind kind, std::string message) {
    Tile& tile = *tiles[index];
    if (tile.status() == TileStatus::kFaulted) return;
    tile.raise(kind, fmt::format("exchange phase {}: {}", phase, message));
    faults.push_back(*tile.fault());
  };

  std::unordered_map<std::uint16_t, std::size_t> index_of;
  for (std::size_t i = 0; i < tiles.size(); ++i) index_of.emplace(tiles[i]->id().value, i);

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
  // Who may take a sender's words: tiles whose source select names it at
  // some point in the phase.
  std::unordered_map<std::uint16_t, std::vector<std::size_t>> receivers_of;
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    xpic[i].seal();
    pic[i].seal();
    std::vector<std::uint32_t> sources{xpic[i].at(std::numeric_limits<Event>::min())};
    for (const auto& [event, value] : xpic[i].changes()) sources.push_back(value);
    std::sort(sources.begin(), sources.end());
    sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
    for (const auto source : sources) {
      if (source < target::kTileCount) receivers_of[static_cast<std::uint16_t>(source)].push_back(i);
    }
  }

  // Sends: one read per word at its send event, and the arrivals it makes.
  std::vector<Op> ops;
  std::vector<std::vector<Arrival>> arrivals(tiles.size());
  std::size_t slots = 0;
  for (const std::size_t s : participants) {
    const ExchangeRecord& record = *records[s];
    const PhysicalTile sender = tiles[s]->id();
    const auto receivers = receivers_of.find(sender.value);
    for (const auto& send : record.sends) {
      for (std::uint32_t i = 0; i < send.items; ++i) {
        const Event t = send.start + i;
        const std::uint64_t address =
            std::uint64_t{record.outgoing_base} + 4 * (std::uint64_t{send.first_item} + i);
        if (address % 4 != 0 || address < target::kSramBase || address + 4 > target::kSramEnd) {
          fault_on(s, FaultKind::kExchangeAddress,
                   fmt::format("{} sends from {:#x} at event {}, outside SRAM", sender, address, t));
          break;
        }
        const auto source_address = static_cast<std::uint32_t>(address);
        if (row_element_sets[s].contains(target::element_of(source_address))) {
          fault_on(s, FaultKind::kExchangeConflict,
                   fmt::format("{} sends from {:#x} at event {}, in the memory element of the row "
                               "it is executing ({} plus the {}-byte fetch lookahead)",
                               sender, source_address, t, *record.row_code,
                               target::kFetchLookahead));
          break;
        }
        const std::size_t slot = slots++;
        ops.push_back(Op{t, 0, s, source_address, slot});
        ++stats.words_sent;
        if (receivers == receivers_of.end()) continue;
        for (const std::size_t d : receivers->second) {
          if (d == s) continue;
          const PhysicalTile destination = tiles[d]->id();
          const auto direction = static_cast<std::uint32_t>(target::direction(sender, destination));
          if ((send.sctl & direction) == 0) continue;
          const Event at_mux = t + target::ttm(sender, destination) + 1;
          if (xpic[d].at(at_mux) != sender.value) continue;
          const Event in_memory =
              at_mux + target::kPointerLag + target::kPointerLagPerRow * target::row(destination);
          arrivals[d].push_back(Arrival{in_memory, t, s, source_address, slot});
        }
      }
    }
  }

  // Receives: each receiver's words in arrival order, through its pointer.
  std::vector<Delivered> delivered;
  for (std::size_t d = 0; d < tiles.size(); ++d) {
    auto& words = arrivals[d];
    if (words.empty()) continue;
    std::sort(words.begin(), words.end(), [](const Arrival& a, const Arrival& b) {
      return std::tie(a.memory_event, a.sender, a.send_event) <
             std::tie(b.memory_event, b.sender, b.send_event);
    });
    const auto& pointer_changes = pic[d].changes();
    std::size_t next_change = 0;
    std::uint64_t pointer = pic[d].at(std::numeric_limits<Event>::min());
    for (const Arrival& word : words) {
      while (next_change < pointer_changes.size() &&
             pointer_changes[next_change].first <= word.memory_event) {
        pointer = pointer_changes[next_change++].second;
      }
      const std::uint64_t address = std::uint64_t{incoming_base[d]} + 4 * pointer++;
      const PhysicalTile destination = tiles[d]->id();
      if (address < target::kSramBase || address + 4 > target::kSramEnd) {
        fault_on(d, FaultKind::kExchangeAddress,
                 fmt::format("{} receives a word from {} into {:#x} at event {}, outside SRAM",
                             destination, tiles[word.sender]->id(), address, word.memory_event));
        break;
      }
      const auto byte_address = static_cast<std::uint32_t>(address);
      if (tiles[d]->in_code(byte_address, 4)) {
        fault_on(d, FaultKind::kExchangeAddress,
                 fmt::format("{} receives a word from {} into {:#x}, inside its code", destination,
                             tiles[word.sender]->id(), byte_address));
        break;
      }
      if (row_element_sets[d].contains(target::element_of(byte_address))) {
        fault_on(d, FaultKind::kExchangeConflict,
                 fmt::format("{} receives into {:#x} at event {}, in the memory element of the row "
                             "it is executing ({} plus the {}-byte fetch lookahead)",
                             destination, byte_address, word.memory_event,
                             *records[d]->row_code, target::kFetchLookahead));
        break;
      }
      ops.push_back(Op{std::max(word.memory_event, word.send_event), 1, d, byte_address, word.slot});
      delivered.push_back(Delivered{destination, byte_address, tiles[word.sender]->id(),
                                    word.source_address});
    }
    pic[d].set(std::numeric_limits<Event>::max(), static_cast<std::uint32_t>(pointer));
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

  // Move the words on one timeline: reads at their send events, writes when
  // they reach memory, so a relay sends what it received earlier.
  std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
    return std::tie(a.time, a.kind, a.tile, a.address) < std::tie(b.time, b.kind, b.tile, b.address);
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

  // Compare with the package's plan: every planned word arrives exactly once
  // where planned, and nothing else is written.
  if (planned != nullptr) {
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
