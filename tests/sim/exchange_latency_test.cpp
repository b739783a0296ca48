// The exchange timing against the only hardware measurements there are: the
// prior art's latency table (ipu21-target.md §5.6), a direct multicast from
// one sender to physical tiles 32 and 53, each interval sampled through the
// cycle-sample helper before the phase and after the tile's row.
//
// The timing rules are target/'s and are never tuned to this table. What the
// model does not describe — mostly the phase-entry sync's release, charged at
// 600 cycles, and the skew between sender and receivers; not the sampling
// handoff, which the sample helper models — are two calibration offsets,
// fitted here and documented in sim/README.md with what they are not; the
// test checks what the model does claim: the per-word slope of every
// interval and the difference between the two receivers.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "tests/sim/phase.hpp"
#include "tests/sim/rows.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::PhysicalTile;
using Kind = RowAction::Kind;

struct Measured {
  double words, sender, rx32, rx53;
};

// [HW] BRINGUP (OLD): sender and the two receivers' intervals, in cycles.
constexpr Measured kTable[] = {
    {1, 204, 552, 534},     {52, 258, 606, 582},     {64, 270, 618, 594},
    {65, 270, 618, 594},    {1024, 1230, 1578, 1554}, {4148, 4350, 4698, 4680},
};

// Least-squares slope of y over x.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    num += (x[i] - mx) * (y[i] - my);
    den += (x[i] - mx) * (x[i] - mx);
  }
  return num / den;
}

Measured simulate(std::uint32_t words) {
  const PhysicalTile sender(0), rx32(32), rx53(53);
  const std::vector<PhysicalTile> receivers{rx32, rx53};
  Phase phase({sender, rx32, rx53}, {}, /*sampled=*/true);
  const auto timing = target::multicast_transfer(sender, receivers, words);
  phase.row(sender, build_row({{Kind::kSend, timing.send_start, kSource / 4, words,
                                target::word32_sctl(sender, receivers)}},
                              timing.send_start + words, kRow));
  phase.source(sender, words);
  for (std::size_t i = 0; i < receivers.size(); ++i) {
    const auto& t = timing.receivers[i];
    phase.row(receivers[i], build_row(receive_actions(t, sender.value, kDestination / 4),
                                      t.horizon, kRow));
    phase.guarded_destination(receivers[i], kDestination, words);
  }
  const RunResult result = phase.run();
  EXPECT_EQ(result.reason, StopReason::kAllHalted);
  // The first and the last word were correct at 1 and 4148 words [HW].
  phase.expect_received(rx32, kDestination, sender, words);
  phase.expect_received(rx53, kDestination, sender, words);
  return {static_cast<double>(words), static_cast<double>(phase.sampled_interval(sender)),
          static_cast<double>(phase.sampled_interval(rx32)),
          static_cast<double>(phase.sampled_interval(rx53))};
}

TEST(ExchangeLatency, MatchesTheMeasuredTableUpToTwoCalibrationOffsets) {
  std::vector<Measured> model;
  for (const auto& row : kTable) model.push_back(simulate(static_cast<std::uint32_t>(row.words)));

  std::vector<double> words, table_sender, table_rx32, table_rx53, model_sender, model_rx32,
      model_rx53;
  for (std::size_t i = 0; i < model.size(); ++i) {
    words.push_back(kTable[i].words);
    table_sender.push_back(kTable[i].sender);
    table_rx32.push_back(kTable[i].rx32);
    table_rx53.push_back(kTable[i].rx53);
    model_sender.push_back(model[i].sender);
    model_rx32.push_back(model[i].rx32);
    model_rx53.push_back(model[i].rx53);
  }
  // Per-word slopes within ±2 %.
  for (const auto& [name, table, simulated] :
       {std::tuple{"sender", &table_sender, &model_sender},
        std::tuple{"receiver 32", &table_rx32, &model_rx32},
        std::tuple{"receiver 53", &table_rx53, &model_rx53}}) {
    const double measured = slope(words, *table);
    const double predicted = slope(words, *simulated);
    EXPECT_NEAR(predicted / measured, 1.0, 0.02) << name << ": measured slope " << measured
                                                 << ", simulated " << predicted;
  }
  // The difference between the two receivers within ±6 cycles at every size.
  for (std::size_t i = 0; i < model.size(); ++i) {
    const double measured = kTable[i].rx32 - kTable[i].rx53;
    const double predicted = model[i].rx32 - model[i].rx53;
    EXPECT_NEAR(predicted, measured, 6.0) << kTable[i].words << " words";
  }
  // The calibration offsets (documented in sim/README.md): the mean of
  // measured minus simulated, for the sender and for the receivers.
  double sender_offset = 0, receiver_offset = 0;
  for (std::size_t i = 0; i < model.size(); ++i) {
    sender_offset += kTable[i].sender - model[i].sender;
    receiver_offset += (kTable[i].rx32 - model[i].rx32 + kTable[i].rx53 - model[i].rx53) / 2;
  }
  sender_offset /= static_cast<double>(model.size());
  receiver_offset /= static_cast<double>(model.size());
  RecordProperty("sender_offset", std::to_string(sender_offset));
  RecordProperty("receiver_offset", std::to_string(receiver_offset));
  std::printf("fitted calibration offsets: sender %.1f cycles, receivers %.1f cycles\n",
              sender_offset, receiver_offset);
  // With the offsets, every interval is within a few cycles of the table.
  for (std::size_t i = 0; i < model.size(); ++i) {
    EXPECT_NEAR(model[i].sender + sender_offset, kTable[i].sender, 8.0) << kTable[i].words;
    EXPECT_NEAR(model[i].rx32 + receiver_offset, kTable[i].rx32, 8.0) << kTable[i].words;
    EXPECT_NEAR(model[i].rx53 + receiver_offset, kTable[i].rx53, 8.0) << kTable[i].words;
  }
}

}  // namespace
}  // namespace tessera::sim
