// Property tests of the exchange scheduler against the simulator (issue 8,
// part 10's exchange half): random transfer sets on small topologies —
// sizes around the 52/64-word and 4148-word boundaries, fan-out 1–4,
// relays, reused buffers, duplicate destination tiles, data sharing memory
// elements — are scheduled, validated, scheduled again (identical rows) and
// run on sim::Chip, which must deliver exactly the planned words with every
// guard intact. A failure shrinks to a small phase and prints the
// RC_PARAMS="reproduce=…" that replays it (compiler/README.md).
//
// The case count is RapidCheck's max_success (ctest passes TESSERA_RC_PARAMS)
// times TESSERA_PROPERTY_SCALE (default 1) for long campaigns.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/detail/TestListenerAdapter.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "compiler/exchange/phase_memo.hpp"
#include "compiler/exchange/scheduler.hpp"
#include "tests/compiler/exchange_harness.hpp"
#include "tests/compiler/property_check.hpp"

namespace tessera::compiler::exchange {
namespace {

using namespace testing;
using compiler::testing::check_scaled;

constexpr std::uint32_t kRow = 0x4D000;  // element 0; data from element 2 on
constexpr std::uint32_t kDataBase = 0x54000;
constexpr std::uint32_t kDataLimit = 0xE7000;
constexpr std::uint32_t kGuardWords = 4;
const std::vector<std::uint32_t> kSizes{1, 2, 15, 16, 17, 52, 63, 64, 65, 127, 256, 4148, 5000};

// Per tile, buffers bumped upwards with guard words around each.
class Layout {
 public:
  struct Placed {
    PhysicalTile tile;
    std::uint32_t address;  // the first data word
    std::uint32_t words;
    bool received;  // a destination (so a later transfer can relay it)
  };

  // nullopt when the tile is full.
  std::optional<std::uint32_t> place(PhysicalTile tile, std::uint32_t words, std::uint32_t gap,
                                     bool received) {
    std::uint32_t& cursor = cursors_.try_emplace(tile.value, kDataBase).first->second;
    const std::uint64_t begin = cursor + 4ull * gap;
    const std::uint64_t end = begin + 4ull * (words + 2 * kGuardWords);
    if (end > kDataLimit) return std::nullopt;
    const auto address = static_cast<std::uint32_t>(begin) + 4 * kGuardWords;
    Buffer buffer{tile, static_cast<std::uint32_t>(begin), {}};
    for (std::uint32_t i = 0; i < words + 2 * kGuardWords; ++i) {
      const std::uint32_t at = buffer.address + 4 * i;
      const bool guard = i < kGuardWords || i >= words + kGuardWords;
      buffer.words.push_back(pattern(tile, at, guard ? 3 : (received ? 2 : 1)));
    }
    buffers_.push_back(std::move(buffer));
    placed_.push_back({tile, address, words, received});
    cursor = static_cast<std::uint32_t>(end);
    return address;
  }

  std::vector<Placed> on(PhysicalTile tile, bool received_only) const {
    std::vector<Placed> found;
    for (const Placed& p : placed_) {
      if (p.tile == tile && (p.received || !received_only)) found.push_back(p);
    }
    return found;
  }

  const std::vector<Buffer>& buffers() const { return buffers_; }

 private:
  std::map<std::uint16_t, std::uint32_t> cursors_;
  std::vector<Buffer> buffers_;
  std::vector<Placed> placed_;
};

struct RandomPhase {
  std::vector<PhysicalTile> tiles;
  std::vector<LogicalTransfer> transfers;
  std::vector<Buffer> buffers;
};

RandomPhase random_phase(std::size_t max_tiles, int max_transfers) {
  RandomPhase phase;
  // The tiles: the first `count` of a shuffle of the chip's, so a failure
  // shrinks to few tiles of one (seed 0) order with two values.
  const auto count = *rc::gen::inRange<std::size_t>(2, max_tiles + 1);
  const auto seed = *rc::gen::inRange<std::uint32_t>(0, 1u << 30);
  std::vector<std::uint16_t> chip(target::kTileCount);
  std::iota(chip.begin(), chip.end(), std::uint16_t{0});
  std::mt19937 shuffle(seed);
  for (std::size_t i = chip.size() - 1; i > 0; --i) {
    std::swap(chip[i], chip[shuffle() % (i + 1)]);
  }
  for (std::size_t i = 0; i < count; ++i) phase.tiles.push_back(PhysicalTile(chip[i]));
  RC_PRE(phase.tiles.size() >= 2);
  Layout layout;
  const auto gap = [] { return *rc::gen::elementOf(std::vector<std::uint32_t>{0, 0, 0, 1, 13, 4096}); };
  const int transfers = *rc::gen::inRange(1, max_transfers + 1);
  for (int t = 0; t < transfers; ++t) {
    const auto from = *rc::gen::inRange<std::size_t>(0, phase.tiles.size());
    const PhysicalTile source = phase.tiles[from];
    std::uint32_t words = *rc::gen::elementOf(kSizes);
    const auto fan_out = *rc::gen::inRange<std::size_t>(1, 5);
    std::vector<PhysicalTile> destinations;
    for (std::size_t k = 0; k < fan_out; ++k) {
      const auto index = *rc::gen::inRange<std::size_t>(0, phase.tiles.size() - 1);
      destinations.push_back(phase.tiles[index >= from ? index + 1 : index]);
    }
    // A relay sends (part of) what an earlier transfer delivered to its tile.
    LogicalTransfer transfer{source, 0, words, {}, static_cast<std::uint32_t>(t)};
    const auto received = layout.on(source, true);
    if (*rc::gen::inRange(0, 10) < 3 && !received.empty()) {
      const auto& relayed = received[*rc::gen::inRange<std::size_t>(0, received.size())];
      transfer.source_address = relayed.address;
      transfer.words = std::min(words, relayed.words);
    } else {
      const auto address = layout.place(source, words, gap(), false);
      if (!address) continue;
      transfer.source_address = *address;
    }
    // A destination reuses an earlier buffer (WAR, WAW) or gets its own.
    for (const PhysicalTile destination : destinations) {
      const auto earlier = layout.on(destination, false);
      std::optional<std::uint32_t> address;
      if (*rc::gen::inRange(0, 10) < 2 && !earlier.empty()) {
        const auto& reused = earlier[*rc::gen::inRange<std::size_t>(0, earlier.size())];
        if (reused.words >= transfer.words) address = reused.address;
      }
      if (!address) address = layout.place(destination, transfer.words, gap(), true);
      if (address) transfer.destinations.push_back({destination, *address});
    }
    if (!transfer.destinations.empty()) phase.transfers.push_back(std::move(transfer));
  }
  RC_PRE(!phase.transfers.empty());
  phase.buffers = layout.buffers();
  return phase;
}

std::string describe(const RandomPhase& phase) {
  std::string text = fmt::format("{} tiles:", phase.tiles.size());
  for (const PhysicalTile tile : phase.tiles) text += fmt::format(" {}", tile);
  for (std::size_t t = 0; t < phase.transfers.size(); ++t) {
    const LogicalTransfer& transfer = phase.transfers[t];
    text += fmt::format("\n  transfer {}: {} {:#x}, {} words →", t, transfer.source,
                        transfer.source_address, transfer.words);
    for (const auto& d : transfer.destinations) text += fmt::format(" {} {:#x}", d.tile, d.address);
  }
  return text + "\n";
}

ScheduleOptions options() {
  ScheduleOptions o;
  o.row_address = kRow;
  return o;
}

void expect_identical(const PhaseSchedule& a, const PhaseSchedule& b) {
  RC_ASSERT(a.rows.size() == b.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    RC_ASSERT(a.rows[i].tile == b.rows[i].tile);
    RC_ASSERT(a.rows[i].instructions == b.rows[i].instructions);
  }
  RC_ASSERT(a.horizon == b.horizon);
  RC_ASSERT(a.planned == b.planned);
}

TEST(ExchangeSchedulerProperty, RandomPhasesDeliverExactlyOnTheSimulator) {
  check_scaled(10, [] {
    const RandomPhase phase = random_phase(64, 12);
    RC_LOG() << describe(phase);
    const PhaseSchedule schedule = schedule_phase({phase.transfers, {}}, options());
    expect_identical(schedule, schedule_phase({phase.transfers, {}}, options()));
    RC_ASSERT(schedule.cost.horizon >= static_cast<target::Event>(schedule.cost.lower_bound));
    RC_TAG(schedule.orders.empty() ? "independent" : "ordered", phase.tiles.size() > 16 ? "> 16 tiles" : "<= 16 tiles",
           schedule.messages.size() > 8 ? "> 8 messages" : "<= 8 messages");

    const SimulatedPhase run = simulate(phase.tiles, schedule, phase.buffers);
    if (!run.fault.empty() || run.result.reason != sim::StopReason::kAllHalted) {
      RC_FAIL("the simulator stopped: " + run.fault);
    }
    const std::string difference =
        first_difference(expected_memory(phase.buffers, phase.transfers), run.after);
    if (!difference.empty()) RC_FAIL(difference);
  });
}

TEST(ExchangeSchedulerProperty, LargeRandomPhasesValidate) {
  // Without the simulator: more tiles and transfers per phase, every row replayed.
  check_scaled(5, [] {
    const RandomPhase phase = random_phase(1472, 60);
    RC_LOG() << describe(phase);
    const PhaseSchedule schedule = schedule_phase({phase.transfers, {}}, options());
    expect_identical(schedule, schedule_phase({phase.transfers, {}}, options()));
  });
}

// The phase moved on each tile by its own offset (0, a word, half or one or
// two standard elements, where the tile's data still fits): the same messages
// at other addresses, whose memory elements sometimes keep their sharing and
// sometimes do not.
std::vector<LogicalTransfer> moved(const RandomPhase& phase) {
  std::map<std::uint16_t, std::uint32_t> end;  // the tile's highest data byte
  for (const LogicalTransfer& t : phase.transfers) {
    end[t.source.value] = std::max(end[t.source.value], t.source_address + 4 * t.words);
    for (const auto& d : t.destinations) {
      end[d.tile.value] = std::max(end[d.tile.value], d.address + 4 * t.words);
    }
  }
  std::map<std::uint16_t, std::uint32_t> offset;
  for (const auto& [tile, last] : end) {
    const auto chosen =
        *rc::gen::elementOf(std::vector<std::uint32_t>{0, 0, 4, 0x2000, 0x4000, 0x8000});
    offset[tile] = last + chosen <= target::kSramEnd ? chosen : 0;
  }
  std::vector<LogicalTransfer> transfers = phase.transfers;
  for (LogicalTransfer& t : transfers) {
    t.source_address += offset[t.source.value];
    for (auto& d : t.destinations) d.address += offset[d.tile.value];
  }
  return transfers;
}

TEST(ExchangeSchedulerProperty, APhaseTimedFromTheMemoIsTheOneSchedulingGives) {
  // The oracle is scheduling the moved phase afresh: whether the memo takes
  // the first phase's times (the same shape) or schedules it, the rows must
  // be those.
  check_scaled(5, [] {
    const RandomPhase phase = random_phase(64, 24);
    const std::vector<LogicalTransfer> other = moved(phase);
    RC_LOG() << describe(phase) << describe({phase.tiles, other, {}});
    PhaseMemo memo;
    schedule_phase({phase.transfers, {}}, options(), &memo);
    const PhaseSchedule remembered = schedule_phase({other, {}}, options(), &memo);
    RC_TAG(memo.hits() == 1 ? "taken from the memo" : "scheduled");
    expect_identical(remembered, schedule_phase({other, {}}, options()));
  });
}

}  // namespace
}  // namespace tessera::compiler::exchange
