#pragma once
// The exchange scheduler's output for one phase: when every message is sent
// and received (the declared schedule), what each tile's exchange row does
// (its actions), the rows themselves, the planned transfers for the debug
// section and a cost summary.

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "schema/model.hpp"
#include "target/exchange_timing.hpp"
#include "target/isa.hpp"
#include "target/topology.hpp"

namespace tessera::compiler::exchange {

using target::Event;
using target::PhysicalTile;

struct ScheduleOptions {
  // Where each participating tile's row will be placed: 8-aligned (sendpicp
  // must sit on an 8-byte boundary, so the emitter pads relative to this
  // address) and executable. `row_addresses` overrides it per tile. The row
  // code plus the 64-byte fetch lookahead must not share a memory element with
  // any data the tile sends or receives in the phase (reference §2.2).
  std::uint32_t row_address = 0;
  std::map<PhysicalTile, std::uint32_t> row_addresses;
  // Replay every emitted row and check it against the declared schedule and
  // the rules of reference §5.5 (cheap; on by default).
  bool validate = true;

  std::uint32_t row_address_of(PhysicalTile tile) const {
    const auto it = row_addresses.find(tile);
    return it == row_addresses.end() ? row_address : it->second;
  }
};

// One receiver of a message, with its timing from target::word32_transfer.
struct ScheduledReceive {
  PhysicalTile tile;
  std::uint32_t address = 0;  // byte address of the first word
  target::Word32Timing timing;
};

// One send of at most 4148 words to one or more receivers.
struct Message {
  std::size_t transfer = 0;      // the logical transfer it carries part of
  std::uint32_t first_word = 0;  // where in that transfer it starts
  PhysicalTile source;
  std::uint32_t source_address = 0;
  std::uint32_t words = 0;
  std::uint32_t sctl = 0;
  Event send_start = 0;
  std::vector<ScheduledReceive> receives;  // in tile order
};

// `after` reads or writes bytes on `tile` that `before` wrote or read (or the
// caller ordered them: then `tile` is empty and `after` starts sending only
// once `before` has written everything). Rule 8 of reference §5.5.
struct MessageOrder {
  std::size_t before = 0;
  std::size_t after = 0;
  std::optional<PhysicalTile> tile;
};

// A send in a row: `words` items from item `first_item` (word address) at
// events [start, start + words).
struct SendAction {
  Event start = 0;
  std::uint32_t first_item = 0;
  std::uint32_t words = 0;
  std::uint32_t sctl = 0;
  Event end() const noexcept { return start + words; }
  friend bool operator==(const SendAction&, const SendAction&) = default;
};

// What one tile's row must do: its sends and its receive controls (source
// selects, pointers, teardowns; a teardown that meets the next source select
// is left out — the select cuts over), and the event it ends at.
struct TileActions {
  PhysicalTile tile;
  std::vector<SendAction> sends;                  // by start
  std::vector<target::ReceiveControl> controls;  // by event, XPIC before PIC
  Event horizon = 0;
};

// A tile's exchange row: instructions ending with `br $m10`, to be placed at
// `address`; called after the phase-entry `sync 3`.
struct ExchangeRow {
  PhysicalTile tile;
  std::uint32_t address = 0;
  std::vector<target::isa::Instruction> instructions;
  Event horizon = 0;
};

struct ExchangeCost {
  Event horizon = 0;               // the phase's: the latest tile horizon
  std::uint64_t words_sent = 0;    // words leaving tiles (a multicast counts once)
  std::uint64_t words_received = 0;
  // The bandwidth bound: a tile sends and receives one word per event, so no
  // schedule is shorter than the busiest tile's send or receive words.
  std::uint64_t lower_bound = 0;
};

// What scheduling the phase cost, for tests and benchmarks that check the
// scheduler's growth without timing it: counts over every list schedule
// tried (list_scheduler.hpp).
struct SchedulingWork {
  std::uint64_t pieces = 0;          // messages, per list schedule
  std::uint64_t list_schedules = 0;  // schedules tried (the shortest is kept)
  std::uint64_t start_searches = 0;  // earliest-start computations
  std::uint64_t search_rounds = 0;   // laps over a message's tiles within them
  std::uint64_t stale_bounds = 0;    // messages that came up with a bound below their start
  std::uint64_t frontier_moves = 0;  // senders that came up unable to send at their bound
  SchedulingWork& operator+=(const SchedulingWork& other) {
    pieces = std::max(pieces, other.pieces);
    list_schedules += other.list_schedules;
    start_searches += other.start_searches;
    search_rounds += other.search_rounds;
    stale_bounds += other.stale_bounds;
    frontier_moves += other.frontier_moves;
    return *this;
  }
};

struct PhaseSchedule {
  std::vector<Message> messages;
  std::vector<MessageOrder> orders;
  std::vector<TileActions> tiles;  // participating tiles, by tile
  std::vector<ExchangeRow> rows;   // the same tiles, in the same order
  Event horizon = 0;
  std::vector<schema::PlannedTransfer> planned;  // one per logical transfer
  ExchangeCost cost;
  SchedulingWork work;
};

}  // namespace tessera::compiler::exchange
