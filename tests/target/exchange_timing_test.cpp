// The exchange timing model against the SDK rows and vectors of
// docs/reference/ipu21-target.md §4.3, §5.2 and §5.4.
#include "target/exchange_timing.hpp"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace tessera::target {
namespace {

using Register = ReceiveControl::Register;

ReceiveControl xpic(Event event, std::uint32_t value, std::uint32_t paired = 0) {
  return {event, Register::kXpic, paired, value};
}
ReceiveControl pic(Event event, std::uint32_t value, std::uint32_t selector = 0) {
  return {event, Register::kPic, selector, value};
}

constexpr PhysicalTile p(std::uint16_t id) { return PhysicalTile(id); }

TEST(ExchangeAdvance, MatchesTheReferenceTable) {
  // §4.2 "Advance": delay f+1; delaypic a+1; delayxpic a+1; sends n; sync and br 0.
  EXPECT_EQ(exchange_advance(isa::Delay{7}), 7);
  EXPECT_EQ(exchange_advance(isa::DelayPic{53, 1, 1}), 53);
  EXPECT_EQ(exchange_advance(isa::DelayXpic{113, 0, 9}), 113);
  EXPECT_EQ(exchange_advance(isa::Send{64, 0, 3}), 64);
  EXPECT_EQ(exchange_advance(isa::SendOff{4096, 0, 3}), 4096);
  EXPECT_EQ(exchange_advance(isa::SendPic{5, 2, 0x14000}), 5);
  EXPECT_EQ(exchange_advance(isa::SendPicP{43, 0x14021, 1, 0, 0, 0x640, 0x15000}), 43);
  EXPECT_EQ(exchange_advance(isa::Sync{3}), 0);
  EXPECT_EQ(exchange_advance(isa::Br{isa::Reg::m10}), 0);
  EXPECT_EQ(exchange_advance(isa::Setzi{isa::Reg::m8, 1}), std::nullopt);
  EXPECT_EQ(exchange_advance(isa::Unknown{0}), std::nullopt);
}

TEST(RowTimeline, SdkReceiverRowForFourMessages) {
  // §4.3 [SDK][T]: XPIC = 130 at event 1, then controls at 53 (XPIC 192, PIC
  // 0x14048), 105 (194, 0x15000), 157 (256, 0x16000), 209 (0x640, 0x17000);
  // horizon 266.
  const std::vector<std::uint32_t> row = {0x64000082, 0x40A00032, 0xF6600000, 0x03014048,
                                          0xF6600000, 0x03095000, 0xF6600000, 0x04016000,
                                          0xF7200000, 0x19017000, 0x43A00000};
  const RowTimeline timeline = row_timeline(row);
  EXPECT_EQ(timeline.horizon, 266);
  EXPECT_TRUE(timeline.sends.empty()) << "sctl 0: the sendpicps only advance";
  const std::vector<ReceiveControl> expected = {
      xpic(1, 130),    pic(53, 0x14048),  xpic(53, 192),   pic(105, 0x15000), xpic(105, 194),
      pic(157, 0x16000), xpic(157, 256), pic(209, 0x17000), xpic(209, 0x640)};
  EXPECT_EQ(timeline.controls, expected);
}

TEST(RowTimeline, SdkFullDuplexSendpicpActsAtItsFirstEvent) {
  // §4.3 [SDK][T]: 43 words from word 0x14021 in direction 1, with XPIC :=
  // 0x640 and PIC := 0x15000 at cycle 189.
  const std::vector<isa::Instruction> row = {
      isa::Sync{3}, isa::Delay{188}, isa::SendPicP{43, 0x14021, 1, 0, 0, 0x640, 0x15000},
      isa::Br{isa::Reg::m10}};
  const RowTimeline timeline = row_timeline(row);
  ASSERT_EQ(timeline.sends.size(), 1u);
  EXPECT_EQ(timeline.sends[0], (SendWindow{188, 43, 0x14021, 1}));
  EXPECT_EQ(timeline.controls, (std::vector{pic(189, 0x15000), xpic(189, 0x640)}));
  EXPECT_EQ(timeline.horizon, 231);
}

TEST(RowTimeline, StreamContinuesThroughSendoffAndSendpic) {
  const std::vector<isa::Instruction> row = {isa::Send{64, 0x14000, 3}, isa::SendOff{100, 0, 3},
                                             isa::SendPic{10, 0, 0x640}};
  const RowTimeline timeline = row_timeline(row);
  const std::vector<SendWindow> expected = {
      {0, 64, 0x14000, 3}, {64, 100, 0x14040, 3}, {164, 10, 0x140A4, 3}};
  EXPECT_EQ(timeline.sends, expected);
  EXPECT_EQ(timeline.controls, (std::vector{xpic(165, 0x640)}));
  EXPECT_EQ(timeline.horizon, 174);
}

TEST(RowTimeline, NonExchangeInstructionsAndCodeAfterTheReturnAreErrors) {
  const std::vector<isa::Instruction> with_setzi = {isa::Delay{3}, isa::Setzi{isa::Reg::m8, 1}};
  try {
    row_timeline(with_setzi);
    FAIL();
  } catch (const ExchangeTimingError& error) {
    EXPECT_STREQ(error.what(),
                 "row instruction 1: 'setzi $m8, 0x1' is not an exchange-row instruction");
  }
  const std::vector<isa::Instruction> after_return = {isa::Br{isa::Reg::m10}, isa::Delay{1}};
  EXPECT_THROW(row_timeline(after_return), ExchangeTimingError);
  const std::vector<std::uint32_t> unknown_word = {0x40A00000, 0x00000000};
  EXPECT_THROW(row_timeline(unknown_word), ExchangeTimingError);
}

TEST(Word32Transfer, FormulasOfTheReference) {
  // §5.2: X = S + ttm + 1; P = X + 52 + 2·row(d); teardown X + n;
  // horizon max(X + n, P + n) + 5. ttm(0, 53) = −23, row(53) = 0.
  const Word32Timing t = word32_transfer(p(0), p(53), 23, 1);
  EXPECT_EQ(t.source_select, 1);
  EXPECT_EQ(t.pointer, 53);
  EXPECT_EQ(t.teardown, 2);
  EXPECT_EQ(t.horizon, 59);
  // ttm(32, 260) = 49, row(260) = 4.
  const Word32Timing far = word32_transfer(p(32), p(260), 0, 100);
  EXPECT_EQ(far.source_select, 50);
  EXPECT_EQ(far.pointer, 50 + 52 + 8);
  EXPECT_EQ(far.teardown, 150);
  EXPECT_EQ(far.horizon, 110 + 100 + 5);
}

TEST(Word32Transfer, PointToPointPrimitiveSelectsAtEvent113) {
  // §5.2: the primitive sender delays 111 − ttm (field units) so S = 112 − ttm
  // and the receiver's `delayxpic 112, src` acts at X = 113, for any pair.
  const std::vector<std::pair<PhysicalTile, PhysicalTile>> pairs = {
      {p(0), p(53)}, {p(32), p(260)}, {p(53), p(63)}, {p(1024), p(0)}, {p(0), p(1471)}};
  for (const auto& [s, d] : pairs) {
    const Event send_start = 112 - ttm(s, d);
    EXPECT_EQ(word32_transfer(s, d, send_start, 52).source_select, 113) << s << "→" << d;
  }
}

TEST(Word32Transfer, RejectsBadCountsAndEarlyStarts) {
  EXPECT_THROW(word32_transfer(p(0), p(53), 23, 0), ExchangeTimingError);
  EXPECT_THROW(word32_transfer(p(0), p(53), 23, kMaxTransferWords + 1), ExchangeTimingError);
  EXPECT_NO_THROW(word32_transfer(p(0), p(53), 23, kMaxTransferWords));
  EXPECT_EQ(earliest_send_start(p(0), p(53)), 23);
  EXPECT_THROW(word32_transfer(p(0), p(53), 22, 1), ExchangeTimingError);
  EXPECT_EQ(earliest_send_start(p(32), p(260)), 0) << "ttm 49 ≥ 0 needs no wait";
}

TEST(Word32Transfer, OneMessageCarriesAtMostTheVerifiedWords) {
  // The rule the simulator holds every delivery to as well (§5.2).
  EXPECT_NO_THROW(check_message_words(p(0), p(53), kMaxTransferWords));
  EXPECT_NO_THROW(check_message_words(p(0), p(53), 1));
  EXPECT_THROW(check_message_words(p(0), p(53), 0), ExchangeTimingError);
  try {
    check_message_words(p(0), p(53), 5000);
    ADD_FAILURE() << "5000 words passed";
  } catch (const ExchangeTimingError& error) {
    EXPECT_EQ(error.message(), "p0 → p53: 5000 words is outside 1..4148");
  }
}

TEST(Multicast, StartsSoThatTheEarliestReceiverSelectsAtEventOne) {
  // The hardware-verified 1→2 multicast to physical 32 and 53 (§5.6), from 0.
  const std::vector<PhysicalTile> receivers = {p(32), p(53)};
  const MulticastTiming timing = multicast_transfer(p(0), receivers, 64);
  const Event min_ttm = std::min(ttm(p(0), p(32)), ttm(p(0), p(53)));
  EXPECT_EQ(timing.send_start, std::max<Event>(0, -min_ttm));
  Event earliest = timing.receivers[0].source_select;
  for (const auto& r : timing.receivers) earliest = std::min(earliest, r.source_select);
  EXPECT_EQ(earliest, 1);
  EXPECT_EQ(multicast_transfer(p(0), receivers, 64, 10).send_start, timing.send_start + 10);
  EXPECT_EQ(word32_sctl(p(0), receivers), kSctlBroadcast);
  EXPECT_EQ(word32_sctl(p(32), std::vector{p(260)}), 2u) << "direction(32 → 260) = 2";
  EXPECT_THROW(multicast_transfer(p(0), {}, 1), ExchangeTimingError);
}

// §5.4 [T]: s = L0 (phys 0) → {L2, L3} (phys 64, 66), 64 items, src 0x50000,
// dst 0x60000. The golden rows, replayed, must show exactly the events the
// paired timing functions predict.
TEST(PairedTransfer, GoldenRowsReplayToThePredictedEvents) {
  const std::vector<PhysicalTile> receivers = {p(64)};
  const PairedTiming timing = paired_transfer(p(0), receivers, 64);
  ASSERT_EQ(timing.pairs.size(), 1u);
  const PairedReceiverTiming& pair = timing.pairs[0];
  EXPECT_EQ(timing.send_start, 31);
  EXPECT_EQ(timing.sctl, 5u);
  EXPECT_EQ(pair.early, p(64));
  EXPECT_EQ(pair.late, p(66));
  EXPECT_EQ(pair.source_select, 1);
  EXPECT_EQ(pair.format_start, 54);
  EXPECT_EQ(pair.pointer, 56);
  EXPECT_EQ(pair.teardown, 65);
  EXPECT_EQ(pair.format_end, 118);
  EXPECT_EQ(pair.horizon, 125);

  const auto direction_value = static_cast<std::uint32_t>(direction(p(0), p(64)));
  const std::uint32_t destination_item = 0x60000 / 8 * 2;  // word address 0x18000

  const RowTimeline sender = row_timeline(std::vector<std::uint32_t>{
      0x41800003, 0x40A0001E, 0x7FE50005, 0x43A00000});
  ASSERT_EQ(sender.sends.size(), 1u);
  EXPECT_EQ(sender.sends[0], (SendWindow{timing.send_start, 64, 0x50000 / 8, timing.sctl}));

  const RowTimeline early = row_timeline(std::vector<std::uint32_t>{
      0x41800003, 0x64002000, 0x61A40001, 0x60098000, 0x64022640, 0x61A40000, 0x40A00006,
      0x43A00000});
  const std::vector<ReceiveControl> early_expected = {
      xpic(pair.source_select, 0 ^ (64 & 2), 1), pic(pair.format_start, direction_value, 1),
      pic(pair.pointer, destination_item),       xpic(pair.teardown, 0x640, 1),
      pic(pair.format_end, 0, 1)};
  EXPECT_EQ(early.controls, early_expected);
  EXPECT_EQ(early.horizon, pair.horizon);

  const RowTimeline late = row_timeline(std::vector<std::uint32_t>{
      0x41800003, 0x61AC0001, 0x60098000, 0x61EC0000, 0x40A00006, 0x43A00000});
  const std::vector<ReceiveControl> late_expected = {pic(pair.format_start, direction_value, 1),
                                                     pic(pair.pointer, destination_item),
                                                     pic(pair.format_end, 0, 1)};
  EXPECT_EQ(late.controls, late_expected);
  EXPECT_EQ(late.horizon, pair.horizon);
}

TEST(PairedTransfer, RejectsWhatTheHardwareCannotDo) {
  EXPECT_THROW(paired_transfer(p(0), std::vector{p(64)}, 63), ExchangeTimingError);
  EXPECT_THROW(paired_transfer(p(0), std::vector{p(64), p(66)}, 64), ExchangeTimingError)
      << "one pair listed twice";
  EXPECT_THROW(paired_transfer(p(0), std::vector{p(2)}, 64), ExchangeTimingError)
      << "the sender's own pair";
  // Row 10: the format start F = Xp + 51 + 20 meets the teardown Xp + n at n = 71.
  EXPECT_THROW(paired_transfer(p(0), std::vector{p(640)}, 71), ExchangeTimingError);
  EXPECT_NO_THROW(paired_transfer(p(0), std::vector{p(640)}, 72));
  EXPECT_EQ(paired_transfer(p(0), std::vector{p(64), p(640)}, 64).sctl, 7u);
}

// A minimal receiver-row emitter for the property below: sorted control
// events become delay/delaypic/delayxpic instructions, then a final delay to
// the horizon. It is test scaffolding, not the compiler's emitter.
std::vector<isa::Instruction> emit_receiver_row(std::vector<ReceiveControl> controls,
                                                Event horizon) {
  std::vector<isa::Instruction> row = {isa::Sync{3}};
  Event now = 0;
  for (const auto& control : controls) {
    Event gap = control.event - now;
    const Event limit = control.target == Register::kPic ? 128 : 4096;
    while (gap > limit) {
      const Event filler = std::min<Event>(gap - 1, 0x80000);
      row.push_back(isa::Delay{static_cast<std::uint32_t>(filler)});
      gap -= filler;
    }
    if (control.target == Register::kPic) {
      row.push_back(isa::DelayPic{static_cast<std::uint32_t>(gap), control.selector, control.value});
    } else {
      row.push_back(isa::DelayXpic{static_cast<std::uint32_t>(gap), control.selector, control.value});
    }
    now = control.event;
  }
  if (horizon > now) row.push_back(isa::Delay{static_cast<std::uint32_t>(horizon - now)});
  row.push_back(isa::Br{isa::Reg::m10});
  return row;
}

RC_GTEST_PROP(Word32TransferProperties, ReceiverRowReplaysToItsTiming, ()) {
  const auto s = p(*rc::gen::inRange<std::uint16_t>(0, 1472));
  const auto d = p(*rc::gen::inRange<std::uint16_t>(0, 1472));
  RC_PRE(s != d);
  const auto words = *rc::gen::inRange<std::uint32_t>(1, kMaxTransferWords + 1);
  const Event start = earliest_send_start(s, d) + *rc::gen::inRange<Event>(0, 300);
  const Word32Timing t = word32_transfer(s, d, start, words);

  RC_ASSERT(t.source_select >= 1);
  RC_ASSERT(t.pointer > t.source_select);
  RC_ASSERT(t.teardown == t.source_select + words);
  RC_ASSERT(t.horizon == std::max(t.teardown, t.write_end()) + kReceiveGuard);

  std::vector<ReceiveControl> controls = {xpic(t.source_select, s.value), pic(t.pointer, 0x18000),
                                          xpic(t.teardown, 0x640)};
  std::stable_sort(controls.begin(), controls.end(),
                   [](const auto& a, const auto& b) { return a.event < b.event; });
  RC_PRE(controls[0].event != controls[1].event && controls[1].event != controls[2].event);
  const RowTimeline replay = row_timeline(emit_receiver_row(controls, t.horizon));
  RC_ASSERT(replay.controls == controls);
  RC_ASSERT(replay.horizon == t.horizon);
}

}  // namespace
}  // namespace tessera::target
