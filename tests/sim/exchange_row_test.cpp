// Exchange rows as a tile executes them: what may stand inside a row, where
// its instructions must sit, which memory its code (closing `br` included)
// occupies, and that a row may not return before the words it receives have
// landed.
#include <gtest/gtest.h>

#include "sim/chip.hpp"
#include "target/host_exchange.hpp"
#include "tests/sim/phase.hpp"
#include "tests/sim/program.hpp"
#include "tests/sim/rows.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::Event;
using target::PhysicalTile;
using Kind = RowAction::Kind;

PhysicalTile p(std::uint16_t id) { return PhysicalTile(id); }

std::vector<isa::Instruction> sender_row(PhysicalTile sender, PhysicalTile receiver, Event start,
                                         std::uint32_t words) {
  const std::vector<PhysicalTile> receivers{receiver};
  return build_row(
      {{Kind::kSend, start, kSource / 4, words, target::word32_sctl(sender, receivers)}},
      start + words, kRow);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ExchangeRow, ARowThatReturnsBeforeItsWordsLandIsAFault) {
  // The receiver's row returns at its teardown, X + n, while its words land
  // over [P, P + n): the code after the row would read stale memory and the
  // late words would land under its feet.
  Phase phase({p(0), p(53)});
  const std::uint32_t n = 200;
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, n);
  ASSERT_LT(timing.teardown, timing.write_end());
  phase.row(p(0), sender_row(p(0), p(53), start, n));
  phase.row(p(53), build_row(receive_actions(timing, 0, kDestination / 4), timing.teardown, kRow));
  phase.source(p(0), n);
  phase.guarded_destination(p(53), kDestination, n);
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeTiming);
  EXPECT_EQ(fault.tile, p(53));
  EXPECT_TRUE(contains(fault.message, fmt::format("returns at event {}", timing.teardown)))
      << fault.message;
  EXPECT_TRUE(contains(fault.message, fmt::format("event {}", timing.write_end() - 1)))
      << fault.message;
  EXPECT_TRUE(contains(fault.message, "0x4d000")) << fault.message;
}

TEST(ExchangeRow, ARowThatWaitsForItsWordsPasses) {
  Phase phase({p(0), p(53)});
  const std::uint32_t n = 200;
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, n);
  phase.row(p(0), sender_row(p(0), p(53), start, n));
  // The last word lands at write_end − 1: a row ending at write_end is in time.
  phase.row(p(53),
            build_row(receive_actions(timing, 0, kDestination / 4), timing.write_end(), kRow));
  phase.source(p(0), n);
  phase.guarded_destination(p(53), kDestination, n);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  phase.expect_received(p(53), kDestination, p(0), n);
}

TEST(ExchangeRow, AStoreInsideARowIsRefused) {
  // The row sends four words, then stores over the first of them before it
  // returns. Sends read their words at their send events, so the store must
  // not change what arrives; the simulator does not replay non-exchange
  // instructions on the event clock and refuses them inside a row, as
  // target::row_timeline does for the compiler.
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 4);
  const std::vector<isa::Instruction> row{
      isa::Setzi{Reg::m1, kSource},  // before the row begins: allowed
      isa::Setzi{Reg::m2, 0xBAD},
      isa::Delay{static_cast<std::uint32_t>(start)},
      isa::Send{4, kSource / 4, static_cast<std::uint32_t>(target::direction(p(0), p(53)))},
      isa::St32{Reg::m2, Reg::m1, Reg::m15, 0},
      isa::Br{Reg::m10}};
  phase.row(p(0), row);
  phase.row(p(53), build_row(receive_actions(timing, 0, kDestination / 4), timing.horizon, kRow));
  phase.source(p(0), 4);
  phase.guarded_destination(p(53), kDestination, 4);
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeTiming);
  EXPECT_EQ(fault.tile, p(0));
  EXPECT_EQ(fault.pc, kRow + 16) << "the st32";
  EXPECT_TRUE(
      contains(fault.message, "'st32 $m2, $m1, $m15, 0' is not an exchange-row instruction"))
      << fault.message;
}

TEST(ExchangeRow, TheClosingBrsFetchLookaheadCountsForConflicts) {
  // The row's br sits 64 bytes below an element boundary, so its fetch
  // lookahead reaches the next element; receiving there is TEXCPT_CONFLICT,
  // as the compiler's validator counts it.
  const std::uint32_t boundary = 0x54000;
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 4);
  auto receiver = build_row(receive_actions(timing, 0, boundary / 4), timing.horizon, kRow);
  ASSERT_EQ(receiver.back(), (isa::Instruction{isa::Br{Reg::m10}}));
  std::uint32_t before_br = 0;
  for (std::size_t i = 0; i + 1 < receiver.size(); ++i) {
    before_br += 4 * static_cast<std::uint32_t>(isa::word_count(receiver[i]));
  }
  const std::uint32_t row_address = boundary - target::kFetchLookahead - before_br;
  ASSERT_EQ(row_address % 8, 0u);
  receiver = build_row(receive_actions(timing, 0, boundary / 4), timing.horizon, row_address);
  phase.row(p(0), sender_row(p(0), p(53), start, 4));
  phase.row(p(53), receiver, row_address);
  phase.source(p(0), 4);
  phase.guarded_destination(p(53), boundary, 4);
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeConflict);
  EXPECT_EQ(fault.tile, p(53));
  EXPECT_TRUE(contains(fault.message, "receives into 0x54000")) << fault.message;
}

TEST(ExchangeRow, AMisalignedSendpicpIsAnAddressFault) {
  // The instruction table places sendpicp on an 8-byte boundary; one at an
  // address ≡ 4 (mod 8) does not execute.
  Phase phase({p(0)});
  phase.row(p(0),
            {isa::Delay{3}, isa::SendPicP{1, 0, 0, 0, 0, target::kNeutralMux, kDestination / 4},
             isa::Br{Reg::m10}});
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kInvalidAddress);
  EXPECT_EQ(fault.pc, kRow + 4);
  EXPECT_TRUE(contains(fault.message, "sendpicp at 0x4d004")) << fault.message;
  EXPECT_TRUE(contains(fault.message, "8-byte")) << fault.message;
}

TEST(ExchangeRow, AnAlignedSendpicpExecutes) {
  Phase phase({p(0)});
  phase.row(p(0), {isa::Delay{2}, isa::Delay{1},
                   isa::SendPicP{1, 0, 0, 0, 0, target::kNeutralMux, kDestination / 4},
                   isa::Br{Reg::m10}});
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  EXPECT_EQ(phase.chip().tile(p(0)).incoming_pointer(), kDestination / 4);
}

// A row that ran once is replayed from its record while its code is the same
// (sim/tile.hpp, RecordedRow): rows repeat in every iteration of a model's
// loops. Here both tiles run their rows in two phases; between them the
// sender rewrites its row's send to start `shift` words further on. The
// second phase must deliver the new words (a replay that did not look at the
// code would send the old ones again), and the receiver's unchanged row,
// replayed, must take them where the first phase put its words.
TEST(ExchangeRow, ARowRunAgainSendsWhatItsCodeSaysNow) {
  const PhysicalTile sender = p(0), receiver = p(53);
  const std::uint32_t n = 16, shift = 8;
  const Event start = target::earliest_send_start(sender, receiver);
  const auto timing = target::word32_transfer(sender, receiver, start, n);
  const std::vector<PhysicalTile> receivers{receiver};
  const auto send_row = [&](std::uint32_t first_item) {
    return assemble(build_row(
        {{Kind::kSend, start, first_item, n, target::word32_sctl(sender, receivers)}},
        start + n, kRow));
  };
  const auto before = send_row(kSource / 4), after = send_row(kSource / 4 + shift);
  ASSERT_EQ(before.size(), after.size());
  ASSERT_NE(before, after);
  // The sender's patch: a st32 of every word of the row that changes.
  std::vector<isa::Instruction> patch;
  for (std::size_t at = 0; at < before.size(); at += 4) {
    if (std::equal(before.begin() + static_cast<std::ptrdiff_t>(at),
                   before.begin() + static_cast<std::ptrdiff_t>(at + 4),
                   after.begin() + static_cast<std::ptrdiff_t>(at))) {
      continue;
    }
    std::uint32_t word = 0;
    for (int b = 3; b >= 0; --b) word = (word << 8) | after[at + static_cast<std::size_t>(b)];
    patch = patch + load_constant(Reg::m1, kRow + static_cast<std::uint32_t>(at)) +
            load_constant(Reg::m2, word) +
            std::vector<isa::Instruction>{isa::St32{Reg::m2, Reg::m1, Reg::m15, 0}};
  }
  const auto program = [&](const std::vector<isa::Instruction>& between) {
    const std::vector<isa::Instruction> phase{isa::Sync{3}, isa::Call{Reg::m10, kRow},
                                              isa::Sync{3}};
    return phase + between + phase + halt();
  };
  schema::Application app;
  app.compiler_version = "exchange test";
  for (const PhysicalTile tile : {sender, receiver}) {
    schema::TileImage image{tile, target::kEntryPoint, {}};
    const bool sends = tile == sender;
    add_segment(app, image, target::kLoadBase, assemble(program(sends ? patch : std::vector<isa::Instruction>{})),
                true);
    add_segment(app, image, kRow,
                sends ? before
                      : assemble(build_row(receive_actions(timing, 0, kDestination / 4),
                                           timing.write_end(), kRow)),
                true);
    std::vector<std::uint8_t> data;
    if (sends) {
      for (std::uint32_t i = 0; i < n + shift; ++i) append_u32_le(data, source_word(sender, i));
      add_segment(app, image, kSource, data, false);
    }
    std::sort(image.segments.begin(), image.segments.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    app.tiles.push_back(image);
  }
  Chip chip(target::Topology::from_physical({sender, receiver}));
  chip.load(app);
  chip.start();
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted) << describe(chip.faults().all().at(0));
  for (std::uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(chip.tile(receiver).sram().read_u32(kDestination + 4 * i),
              source_word(sender, i + shift))
        << "word " << i;
  }
}

}  // namespace
}  // namespace tessera::sim
