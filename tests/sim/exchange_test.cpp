// The exchange fabric on hand-built rows: point-to-point at the hardware-
// verified sizes, routes in both directions, disjoint pairs, multicasts, a
// relay, element conflicts and planned-transfer checks. Every destination is
// surrounded by guard words that must survive.
#include <gtest/gtest.h>

#include "schema/model.hpp"
#include "sim/chip.hpp"
#include "target/host_exchange.hpp"
#include "tests/sim/program.hpp"
#include "tests/sim/phase.hpp"
#include "tests/sim/rows.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::Event;
using target::PhysicalTile;
using Kind = RowAction::Kind;

PhysicalTile p(std::uint16_t id) { return PhysicalTile(id); }

std::vector<isa::Instruction> sender_row(PhysicalTile sender, std::vector<PhysicalTile> receivers,
                                         Event start, std::uint32_t words) {
  return build_row({{Kind::kSend, start, kSource / 4, words, target::word32_sctl(sender, receivers)}},
                   start + words, kRow);
}

// s → d, n words, at the earliest start.
void point_to_point(PhysicalTile s, PhysicalTile d, std::uint32_t n) {
  Phase phase({s, d});
  const Event start = target::earliest_send_start(s, d);
  const auto timing = target::word32_transfer(s, d, start, n);
  phase.row(s, sender_row(s, {d}, start, n));
  phase.row(d, build_row(receive_actions(timing, s.value, kDestination / 4), timing.horizon, kRow));
  phase.source(s, n);
  phase.guarded_destination(d, kDestination, n);
  const RunResult result = phase.run();
  ASSERT_EQ(result.reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  phase.expect_received(d, kDestination, s, n);
  EXPECT_EQ(phase.chip().exchange_stats().words_delivered, n);
}

TEST(Exchange, PointToPointAtTheHardwareVerifiedSizes) {
  for (const std::uint32_t n : {1u, 52u, 64u, 65u, 512u, 1024u, 4148u}) {
    SCOPED_TRACE(n);
    point_to_point(p(0), p(53), n);
  }
}

TEST(Exchange, RoutesInBothDirectionsAcrossRowsAndColumns) {
  const std::vector<std::pair<std::uint16_t, std::uint16_t>> routes = {
      {0, 1471}, {1471, 0}, {32, 260}, {260, 32}, {53, 63}, {63, 53}, {1024, 0}, {5, 1400}};
  for (const auto& [s, d] : routes) {
    SCOPED_TRACE(fmt::format("{} -> {}", s, d));
    point_to_point(p(s), p(d), 64);
  }
}

TEST(Exchange, FourDisjointPairsInOneLaunch) {
  const std::vector<std::pair<PhysicalTile, PhysicalTile>> pairs = {
      {p(0), p(53)}, {p(64), p(700)}, {p(1471), p(2)}, {p(300), p(301)}};
  std::vector<PhysicalTile> tiles;
  for (const auto& [s, d] : pairs) {
    tiles.push_back(s);
    tiles.push_back(d);
  }
  Phase phase(tiles);
  for (const auto& [s, d] : pairs) {
    const Event start = target::earliest_send_start(s, d);
    const auto timing = target::word32_transfer(s, d, start, 100);
    phase.row(s, sender_row(s, {d}, start, 100));
    phase.row(d, build_row(receive_actions(timing, s.value, kDestination / 4), timing.horizon, kRow));
    phase.source(s, 100);
    phase.guarded_destination(d, kDestination, 100);
  }
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted);
  for (const auto& [s, d] : pairs) phase.expect_received(d, kDestination, s, 100);
}

void multicast(PhysicalTile sender, std::vector<PhysicalTile> receivers, std::uint32_t n) {
  std::vector<PhysicalTile> tiles = receivers;
  tiles.insert(tiles.begin(), sender);
  Phase phase(tiles);
  const auto timing = target::multicast_transfer(sender, receivers, n);
  phase.row(sender, sender_row(sender, receivers, timing.send_start, n));
  phase.source(sender, n);
  for (std::size_t i = 0; i < receivers.size(); ++i) {
    const auto& t = timing.receivers[i];
    phase.row(receivers[i],
              build_row(receive_actions(t, sender.value, kDestination / 4), t.horizon, kRow));
    phase.guarded_destination(receivers[i], kDestination, n);
  }
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  for (const auto receiver : receivers) phase.expect_received(receiver, kDestination, sender, n);
  EXPECT_EQ(phase.chip().exchange_stats().words_delivered, n * receivers.size());
}

TEST(Exchange, MulticastToTwoTiles) { multicast(p(0), {p(32), p(53)}, 64); }

TEST(Exchange, MulticastToAllOtherTiles) {
  std::vector<PhysicalTile> everyone;
  for (std::uint16_t t = 1; t < target::kTileCount; ++t) everyone.push_back(p(t));
  multicast(p(0), everyone, 16);
}

TEST(Exchange, MulticastPlusADependentRelayInOneLaunch) {
  // 0 → {32, 53}; then 53 sends what it received on to 1400, later in the
  // same phase (rule 8: the relay is ordered after the transfer filling it).
  const PhysicalTile s = p(0), a = p(32), relay = p(53), end = p(1400);
  const std::uint32_t n = 40;
  Phase phase({s, a, relay, end});
  const auto first = target::multicast_transfer(s, std::vector{a, relay}, n);
  phase.row(s, sender_row(s, {a, relay}, first.send_start, n));
  phase.source(s, n);
  phase.row(a, build_row(receive_actions(first.receivers[0], s.value, kDestination / 4),
                         first.receivers[0].horizon, kRow));
  phase.guarded_destination(a, kDestination, n);
  // The relay receives into kSource's place on its own tile, then sends it.
  const auto& in = first.receivers[1];
  const Event relay_start = std::max(in.horizon, target::earliest_send_start(relay, end)) + 10;
  const auto out = target::word32_transfer(relay, end, relay_start, n);
  auto relay_actions = receive_actions(in, s.value, kSource / 4);
  const std::vector<PhysicalTile> end_only{end};
  relay_actions.push_back(
      RowAction{Kind::kSend, relay_start, kSource / 4, n, target::word32_sctl(relay, end_only)});
  phase.row(relay, build_row(relay_actions, relay_start + n, kRow));
  phase.row(end, build_row(receive_actions(out, relay.value, kDestination / 4), out.horizon, kRow));
  phase.guarded_destination(end, kDestination, n);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  phase.expect_received(a, kDestination, s, n);
  phase.expect_received(end, kDestination, s, n);  // the original sender's words, relayed
}

// Tiles in a ring each send to the next and receive from the previous in one
// row, all starting at once: the receive controls act during the tile's own
// send, so build_row lets them ride on it (sendpic/sendpicp) and the send
// stays one contiguous stream.
void ring(std::vector<PhysicalTile> tiles, std::uint32_t n) {
  const std::size_t count = tiles.size();
  Event start = 0;
  for (std::size_t i = 0; i < count; ++i) {
    start = std::max(start, target::earliest_send_start(tiles[i], tiles[(i + 1) % count]));
  }
  Phase phase(tiles);
  for (std::size_t i = 0; i < count; ++i) {
    const PhysicalTile from = tiles[(i + count - 1) % count];
    const PhysicalTile to = tiles[(i + 1) % count];
    const auto in = target::word32_transfer(from, tiles[i], start, n);
    ASSERT_LT(in.source_select, start + static_cast<Event>(n))
        << "the controls must ride on the send";
    auto actions = receive_actions(in, from.value, kDestination / 4);
    const std::vector<PhysicalTile> to_only{to};
    actions.push_back(
        RowAction{Kind::kSend, start, kSource / 4, n, target::word32_sctl(tiles[i], to_only)});
    const auto row = build_row(actions, std::max(in.horizon, start + static_cast<Event>(n)), kRow);
    // The row sends items [kSource/4, kSource/4 + n) at events [start, start + n)
    // without a gap, and applies exactly the receive controls.
    const auto timeline = target::row_timeline(row);
    Event at = start;
    std::uint32_t item = kSource / 4;
    for (const auto& send : timeline.sends) {
      EXPECT_EQ(send.start, at);
      EXPECT_EQ(send.first_item, item);
      at = send.end();
      item += send.items;
    }
    EXPECT_EQ(at, start + static_cast<Event>(n));
    ASSERT_EQ(timeline.controls.size(), 3u);
    EXPECT_EQ(timeline.controls[0],
              (target::ReceiveControl{in.source_select, target::ReceiveControl::Register::kXpic, 0,
                                      from.value}));
    EXPECT_EQ(timeline.controls[1],
              (target::ReceiveControl{in.pointer, target::ReceiveControl::Register::kPic, 0,
                                      kDestination / 4}));
    EXPECT_EQ(timeline.controls[2],
              (target::ReceiveControl{in.teardown, target::ReceiveControl::Register::kXpic, 0,
                                      target::kNeutralMux}));
    phase.row(tiles[i], row);
    phase.source(tiles[i], n);
    phase.guarded_destination(tiles[i], kDestination, n);
  }
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  for (std::size_t i = 0; i < count; ++i) {
    phase.expect_received(tiles[i], kDestination, tiles[(i + count - 1) % count], n);
  }
  EXPECT_EQ(phase.chip().exchange_stats().words_delivered, n * count);
}

TEST(Exchange, TwoTilesSwapInOneRow) { ring({p(0), p(53)}, 256); }

TEST(Exchange, ThreeTilesRotateInOneRow) { ring({p(0), p(53), p(1400)}, 1024); }

TEST(Exchange, OneReceiverTakesTwoSendersBackToBack) {
  // 32 selects p0 for 30 words, then p53 for 20: one pointer run, two senders.
  const PhysicalTile first = p(0), second = p(53), receiver = p(32);
  const std::uint32_t n1 = 30, n2 = 20;
  Phase phase({first, second, receiver});
  const Event start1 = target::earliest_send_start(first, receiver);
  const auto in1 = target::word32_transfer(first, receiver, start1, n1);
  const Event start2 = in1.teardown - target::ttm(second, receiver) - 1;
  const auto in2 = target::word32_transfer(second, receiver, start2, n2);
  ASSERT_EQ(in2.source_select, in1.teardown);
  phase.row(first, sender_row(first, {receiver}, start1, n1));
  phase.row(second, sender_row(second, {receiver}, start2, n2));
  phase.row(receiver, build_row({{Kind::kSelectSource, in1.source_select, first.value},
                                 {Kind::kSetPointer, in1.pointer, kDestination / 4},
                                 {Kind::kSelectSource, in2.source_select, second.value},
                                 {Kind::kSelectSource, in2.teardown, target::kNeutralMux}},
                                in2.horizon, kRow));
  phase.source(first, n1);
  phase.source(second, n2);
  phase.guarded_destination(receiver, kDestination, n1 + n2);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  for (std::uint32_t i = 0; i < n1 + n2; ++i) {
    EXPECT_EQ(phase.word(receiver, kDestination + 4 * i),
              i < n1 ? source_word(first, i) : source_word(second, i - n1))
        << "word " << i;
  }
  EXPECT_EQ(phase.word(receiver, kDestination + 4 * (n1 + n2)), kGuard);
}

// p0 sends 100 words to p53, whose row sets its pointer to kDestination and
// then, 40 words in, to `second`.
void send_and_repoint(Phase& phase, std::uint32_t second) {
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 100);
  auto actions = receive_actions(timing, 0, kDestination / 4);
  actions.push_back(RowAction{Kind::kSetPointer, timing.pointer + 40, second / 4});
  phase.row(p(0), sender_row(p(0), {p(53)}, start, 100));
  phase.row(p(53), build_row(actions, timing.horizon, kRow));
  phase.source(p(0), 100);
}

TEST(Exchange, APointerSetMidTransferSplitsTheWords) {
  Phase phase({p(0), p(53)});
  const std::uint32_t second = kDestination + 0x1000;
  send_and_repoint(phase, second);
  phase.guarded_destination(p(53), kDestination, 40);
  phase.guarded_destination(p(53), second, 60);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  for (std::uint32_t i = 0; i < 40; ++i) {
    EXPECT_EQ(phase.word(p(53), kDestination + 4 * i), source_word(p(0), i)) << "word " << i;
  }
  EXPECT_EQ(phase.word(p(53), kDestination + 4 * 40), kGuard);
  for (std::uint32_t i = 0; i < 60; ++i) {
    EXPECT_EQ(phase.word(p(53), second + 4 * i), source_word(p(0), 40 + i)) << "word " << 40 + i;
  }
  EXPECT_EQ(phase.word(p(53), second + 4 * 60), kGuard);
}

TEST(Exchange, APointerThatGoesBackLeavesTheLaterWords) {
  // Words 40..99 land from kDestination again, over words 0..39.
  Phase phase({p(0), p(53)});
  send_and_repoint(phase, kDestination);
  phase.guarded_destination(p(53), kDestination, 60);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  for (std::uint32_t i = 0; i < 60; ++i) {
    EXPECT_EQ(phase.word(p(53), kDestination + 4 * i), source_word(p(0), 40 + i)) << "word " << i;
  }
  EXPECT_EQ(phase.word(p(53), kDestination + 4 * 60), kGuard);
  EXPECT_EQ(phase.chip().exchange_stats().words_delivered, 100u);
}

TEST(Exchange, WrongDirectionDeliversNothing) {
  // direction(0 → 53) is 1; sending with only direction 2 set reaches nobody.
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 8);
  phase.row(p(0), build_row({{Kind::kSend, start, kSource / 4, 8, 2}}, start + 8, kRow));
  phase.row(p(53), build_row(receive_actions(timing, 0, kDestination / 4), timing.horizon, kRow));
  phase.source(p(0), 8);
  phase.guarded_destination(p(53), kDestination, 8);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted);
  EXPECT_EQ(phase.chip().exchange_stats().words_delivered, 0u);
  EXPECT_EQ(phase.word(p(53), kDestination), kGuard);
}

TEST(Exchange, SendingFromTheRowsOwnElementIsAConflict) {
  // Reference §2.2 [HW]: code and send data in one element raised
  // TEXCPT_CONFLICT at the sender's send.
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 4);
  const std::uint32_t in_row_element = kRow + 0x400;
  phase.row(p(0), build_row({{Kind::kSend, start, in_row_element / 4, 4, 1}}, start + 4, kRow));
  phase.row(p(53), build_row(receive_actions(timing, 0, kDestination / 4), timing.horizon, kRow));
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeConflict);
  EXPECT_EQ(fault.tile, p(0));
  EXPECT_NE(fault.message.find("p0 sends from 0x4d400"), std::string::npos) << fault.message;
}

TEST(Exchange, ReceivingIntoCodeIsAnAddressFault) {
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 4);
  phase.row(p(0), sender_row(p(0), {p(53)}, start, 4));
  phase.source(p(0), 4);
  phase.row(p(53), build_row(receive_actions(timing, 0, target::kLoadBase / 4), timing.horizon, kRow));
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  EXPECT_EQ(phase.chip().faults().all().at(0).kind, FaultKind::kExchangeAddress);
  EXPECT_NE(phase.chip().faults().all().at(0).message.find("inside its code"), std::string::npos);
}

TEST(Exchange, AMisalignedIncomingBaseIsAnAddressFault) {
  // A4 = 0x70002: the words would land between words (and, at a page's end,
  // past it). The fabric refuses them instead of writing.
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 4);
  phase.row(p(0), sender_row(p(0), {p(53)}, start, 4));
  phase.source(p(0), 4);
  auto row = std::vector<isa::Instruction>{isa::Setzi{Reg::m8, kDestination + 2},
                                           isa::Put{isa::Csr::kIncomingBase, Reg::m8}};
  const auto rest = build_row(receive_actions(timing, 0, 0), timing.horizon, kRow + 8);
  row.insert(row.end(), rest.begin(), rest.end());
  phase.row(p(53), row);
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeAddress);
  EXPECT_NE(fault.message.find("0x70002"), std::string::npos) << fault.message;
  EXPECT_NE(fault.message.find("not word-aligned"), std::string::npos) << fault.message;
}

schema::ExchangePhase plan(PhysicalTile s, PhysicalTile d, std::uint32_t words) {
  // The first device-wide sync opens round 0.
  return schema::ExchangePhase{
      0, {schema::PlannedTransfer{s, kSource, words, {schema::TransferDestination{d, kDestination}},
                                  schema::kNoProvenance}}};
}

TEST(Exchange, PlannedTransfersThatArriveAsPlannedPass) {
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 16);
  phase.row(p(0), sender_row(p(0), {p(53)}, start, 16));
  phase.row(p(53), build_row(receive_actions(timing, 0, kDestination / 4), timing.horizon, kRow));
  phase.source(p(0), 16);
  phase.guarded_destination(p(53), kDestination, 16);
  phase.plan(plan(p(0), p(53), 16));
  EXPECT_EQ(phase.run().reason, StopReason::kAllHalted);
}

TEST(Exchange, ARowOneEventOffIsCaughtByThePlan) {
  // The receiver selects the source one event late: the first word goes by,
  // the rest land one word early. The plan check names the first wrong word.
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  auto timing = target::word32_transfer(p(0), p(53), start, 16);
  auto actions = receive_actions(timing, 0, kDestination / 4);
  actions[0].event += 1;
  phase.row(p(0), sender_row(p(0), {p(53)}, start, 16));
  phase.row(p(53), build_row(actions, timing.horizon, kRow));
  phase.source(p(0), 16);
  phase.guarded_destination(p(53), kDestination, 16);
  phase.plan(plan(p(0), p(53), 16));
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeMismatch);
  EXPECT_EQ(fault.tile, p(53));
  EXPECT_NE(fault.message.find("p53 0x70000 should receive p0 0x60000's word but received p0 "
                               "0x60004's"),
            std::string::npos)
      << fault.message;
}

TEST(Exchange, PairedModeIsRefusedAsNotModelled) {
  Phase phase({p(0), p(64), p(66)});
  phase.row(p(0), build_row({{Kind::kSend, 31, kSource / 8, 64, 5}}, 95, kRow));
  phase.source(p(0), 128);
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  EXPECT_EQ(phase.chip().faults().all().at(0).kind, FaultKind::kNotModelled);
}

TEST(Exchange, TilesWithoutRowsWaitForNothing) {
  // A phase where nobody exchanges completes like two plain syncs.
  Phase phase({p(0), p(1), p(2)});
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted);
  EXPECT_EQ(phase.chip().exchange_stats().words_sent, 0u);
}

// A receiver that selects p0 at X and tears down n events later, with p0
// sending n words in one stream (send, then sendoffs), by hand: n may exceed
// what word32_transfer accepts.
target::Word32Timing unchecked_timing(PhysicalTile s, PhysicalTile d, Event start,
                                      std::uint32_t n) {
  target::Word32Timing t;
  t.send_start = start;
  t.words = n;
  t.source_select = start + target::ttm(s, d) + 1;
  t.pointer = t.source_select + target::kPointerLag + target::kPointerLagPerRow * target::row(d);
  t.teardown = t.source_select + n;
  t.horizon = std::max(t.teardown, t.write_end()) + target::kReceiveGuard;
  return t;
}

TEST(Exchange, MoreThanTheMessageLimitUnderOneSourceSelectIsAFault) {
  // 4148 words is the longest message verified on hardware (§5.2).
  const std::uint32_t n = 5000;
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = unchecked_timing(p(0), p(53), start, n);
  phase.row(p(0), sender_row(p(0), {p(53)}, start, n));
  phase.row(p(53), build_row(receive_actions(timing, 0, kDestination / 4), timing.horizon, kRow));
  phase.source(p(0), n);
  phase.guarded_destination(p(53), kDestination, n);
  ASSERT_EQ(phase.run().reason, StopReason::kFault);
  const Fault& fault = phase.chip().faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kExchangeTiming);
  EXPECT_EQ(fault.tile, p(53));
  EXPECT_NE(fault.message.find("5000 words"), std::string::npos) << fault.message;
  EXPECT_NE(fault.message.find("4148"), std::string::npos) << fault.message;
}

TEST(Exchange, ALongStreamTakenAsTwoMessagesPasses) {
  // The compiler cuts 5000 words into two messages of 2500; back to back,
  // the receiver re-selects the same source where the first one ends.
  const std::uint32_t n = 5000, half = 2500;
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto first = target::word32_transfer(p(0), p(53), start, half);
  const auto second = target::word32_transfer(p(0), p(53), start + half, half);
  ASSERT_EQ(second.source_select, first.teardown);
  phase.row(p(0), sender_row(p(0), {p(53)}, start, n));
  phase.row(p(53), build_row({{Kind::kSelectSource, first.source_select, 0},
                              {Kind::kSetPointer, first.pointer, kDestination / 4},
                              {Kind::kSelectSource, second.source_select, 0},
                              {Kind::kSelectSource, second.teardown, target::kNeutralMux}},
                             second.horizon, kRow));
  phase.source(p(0), n);
  phase.guarded_destination(p(53), kDestination, n);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  phase.expect_received(p(53), kDestination, p(0), n);
}

TEST(Exchange, APointerSetAfterTheLastWordIsKeptForTheNextPhase) {
  // The receive pointer persists between phases: it is what the last PIC
  // control set, even when that control comes after the last word.
  Phase phase({p(0), p(53)});
  const Event start = target::earliest_send_start(p(0), p(53));
  const auto timing = target::word32_transfer(p(0), p(53), start, 16);
  const std::uint32_t next = (kDestination + 0x1000) / 4;
  auto actions = receive_actions(timing, 0, kDestination / 4);
  actions.push_back(RowAction{Kind::kSetPointer, timing.write_end() + 2, next});
  ASSERT_LT(timing.write_end() + 2, timing.horizon);
  phase.row(p(0), sender_row(p(0), {p(53)}, start, 16));
  phase.row(p(53), build_row(actions, timing.horizon, kRow));
  phase.source(p(0), 16);
  phase.guarded_destination(p(53), kDestination, 16);
  ASSERT_EQ(phase.run().reason, StopReason::kAllHalted)
      << describe(phase.chip().faults().all().at(0));
  phase.expect_received(p(53), kDestination, p(0), 16);
  EXPECT_EQ(phase.chip().tile(p(53)).incoming_pointer(), next);
}

}  // namespace
}  // namespace tessera::sim
