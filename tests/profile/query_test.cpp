// The query engine on a hand-built profile whose answers are worked out by
// hand in the comments (the oracle): offsets and wrapping durations from
// counters that start at 2^32 − 11, kind shares, group sums, percentiles,
// filters and the critical tile.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>

#include "runtime/profile/query.hpp"
#include "support/error.hpp"

namespace tessera::profile {
namespace {

using schema::StepKind;

constexpr std::uint32_t kNearWrap = 0xFFFFFFFFu - 10;  // 2^32 − 11

// A step spelled out; add_tile interns it into the profile.
struct TextStep {
  schema::StepText text;
  std::uint32_t start = 0, end = 0;
};

TextStep step(StepKind kind, std::string kernel, std::string operation, std::uint32_t start,
              std::uint32_t end) {
  return {{kind, std::move(kernel), std::move(operation), "", {}}, start, end};
}

void add_tile(schema::Profile& profile, target::PhysicalTile tile,
              const std::vector<TextStep>& steps) {
  schema::ProfileInterner names(profile);
  schema::TileProfile out{tile, {}};
  for (const auto& s : steps) out.steps.push_back(names.step(s.text, s.start, s.end));
  profile.tiles.push_back(std::move(out));
}

// p0: add 10, exchange 10 (wraps through 0), add 30, sync 10   → offsets 0, 10, 20, 50; ends at 60
// p1: reduce 20 (wraps), sync 40 with no operation              → ends at 60
// p2: add 20, starting 10 cycles after the others               → offset 10, ends at 30
schema::Profile hand_built(schema::ClockOrigin origin = schema::ClockOrigin::kShared) {
  schema::Profile profile;
  profile.clock_hz = 1'000'000'000;
  profile.origin = origin;
  const std::uint32_t w = kNearWrap;
  add_tile(profile, target::PhysicalTile(0), {step(StepKind::kCompute, "add", "op 1 (add)", w, w + 10),
                            step(StepKind::kExchange, "", "op 2 (transpose)", w + 10, w + 20),
                            step(StepKind::kCompute, "add", "op 1 (add)", w + 20, w + 50),
                            step(StepKind::kSynchronization, "", "op 1 (add)", w + 50, w + 60)});
  add_tile(profile, target::PhysicalTile(1), {step(StepKind::kCompute, "reduce", "encoder.layers.3.mlp op", w, w + 20),
        step(StepKind::kSynchronization, "", "", w + 20, w + 60)});
  add_tile(profile, target::PhysicalTile(2), {step(StepKind::kCompute, "add", "op 1 (add)", w + 10, w + 30)});
  return profile;
}

const Group& find(const std::vector<Group>& groups, std::string_view name) {
  const auto it =
      std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.name == name; });
  if (it == groups.end()) throw std::runtime_error("no group " + std::string(name));
  return *it;
}

TEST(ProfileTimeline, WrappingCountersBecomeOffsetsOnOneClock) {
  const auto profile = hand_built();
  const Timeline timeline(profile);
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> cycles;
  for (const auto& s : timeline.samples()) {
    offsets.push_back(s.offset);
    cycles.push_back(s.cycles);
  }
  EXPECT_EQ(offsets, (std::vector<std::uint64_t>{0, 10, 20, 50, 0, 20, 10}));
  EXPECT_EQ(cycles, (std::vector<std::uint32_t>{10, 10, 30, 10, 20, 40, 20}));
  EXPECT_EQ(timeline.total_cycles(), 60u);
  EXPECT_DOUBLE_EQ(timeline.milliseconds(60), 60e-6);
}

TEST(ProfileTimeline, PerTileOriginsStartEveryTileAtZero) {
  const auto profile = hand_built(schema::ClockOrigin::kPerTile);
  const Timeline timeline(profile);
  EXPECT_EQ(timeline.samples().back().offset, 0u);  // p2's only step
  EXPECT_EQ(timeline.tiles()[2].end, 20u);
  EXPECT_EQ(timeline.total_cycles(), 60u);
}

TEST(ProfileSummary, SharesCriticalTileAndNamedCycles) {
  const auto profile = hand_built();
  const Summary s = summarize(Timeline(profile));
  EXPECT_EQ(s.total_cycles, 60u);
  EXPECT_EQ(s.tiles, 3u);
  EXPECT_EQ(s.samples, 7u);
  EXPECT_EQ(s.tile_cycles, 180u);
  // exchange 10; compute 10 + 30 + 20 + 20; sync 10 + 40; host 0; idle: p2's 40 off-step cycles.
  EXPECT_EQ(s.kind_cycles, (std::array<std::uint64_t, 5>{10, 80, 50, 0, 40}));
  ASSERT_TRUE(s.critical_tile);
  EXPECT_EQ(*s.critical_tile, target::PhysicalTile(0));  // 50 cycles of compute and exchange
  EXPECT_EQ(s.critical_work_cycles, 50u);
  EXPECT_EQ(s.step_cycles, 140u);
  EXPECT_EQ(s.named_cycles, 100u);  // all but p1's unnamed 40-cycle sync
}

TEST(ProfileGroups, ByKernelSumsPercentilesAndActiveTiles) {
  const auto profile = hand_built();
  const auto groups = group_samples(Timeline(profile), GroupBy::kKernel);
  ASSERT_EQ(groups.size(), 3u);
  // 60 and 60 tie: name order breaks it.
  EXPECT_EQ(groups[0].name, "(no kernel)");
  EXPECT_EQ(groups[1].name, "add");
  EXPECT_EQ(groups[2].name, "reduce");
  const Group& add = groups[1];
  EXPECT_EQ(add.samples, 3u);
  EXPECT_EQ(add.tiles, 2u);
  EXPECT_EQ(add.cycles, 60u);
  EXPECT_EQ(add.p50, 20u);  // sorted {10, 20, 30}[(3 − 1)·50/100 = 1]
  EXPECT_EQ(add.p95, 20u);  // [(3 − 1)·95/100 = 1]
  EXPECT_EQ(add.max, 30u);
  EXPECT_EQ(add.span_cycles, 50u);  // [0, 10) ∪ [20, 50) ∪ [10, 30) = [0, 50)
  EXPECT_DOUBLE_EQ(add.average_active_tiles, 1.2);
  const Group& none = groups[0];
  EXPECT_EQ(none.samples, 3u);
  EXPECT_EQ(none.max, 40u);
  EXPECT_EQ(none.span_cycles, 50u);  // [10, 20) ∪ [50, 60) ∪ [20, 60)
}

TEST(ProfileGroups, ByKindLayerOperationAndTile) {
  const auto profile = hand_built();
  const Timeline timeline(profile);
  const auto kinds = group_samples(timeline, GroupBy::kKind);
  EXPECT_EQ(find(kinds, "compute").cycles, 80u);
  EXPECT_EQ(find(kinds, "synchronization").cycles, 50u);
  EXPECT_EQ(find(kinds, "exchange").cycles, 10u);
  const auto layers = group_samples(timeline, GroupBy::kLayer);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(find(layers, "layer 3").cycles, 20u);
  EXPECT_EQ(find(layers, "(no layer)").cycles, 120u);
  const auto operations = group_samples(timeline, GroupBy::kOperation);
  EXPECT_EQ(find(operations, "op 1 (add)").cycles, 70u);
  EXPECT_EQ(find(operations, "(no operation)").cycles, 40u);
  const auto tiles = group_samples(timeline, GroupBy::kTile);
  EXPECT_EQ(find(tiles, "p0").cycles, 60u);
  EXPECT_EQ(find(tiles, "p2").tiles, 1u);
}

TEST(ProfileGroups, FiltersCombineWithAnd) {
  const auto profile = hand_built();
  const Timeline timeline(profile);
  Filter filter;
  add_filter_term(filter, "kind=compute");
  add_filter_term(filter, "tiles=p0-1");
  const auto kernels = group_samples(timeline, GroupBy::kKernel, filter);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(find(kernels, "add").cycles, 40u);  // p2's add is outside the range
  EXPECT_EQ(find(kernels, "reduce").cycles, 20u);

  Filter by_operation;
  add_filter_term(by_operation, "operation=add");
  const auto kinds = group_samples(timeline, GroupBy::kKind, by_operation);
  EXPECT_EQ(find(kinds, "compute").cycles, 60u);
  EXPECT_EQ(find(kinds, "synchronization").cycles, 10u);

  Filter by_kernel;
  add_filter_term(by_kernel, "kernel=ad");  // exact, not a substring
  EXPECT_TRUE(group_samples(timeline, GroupBy::kKernel, by_kernel).empty());
}

TEST(ProfileGroups, BadFilterTermsAreUsageErrors) {
  Filter filter;
  for (const char* term :
       {"kind", "kind=busy", "colour=red", "tiles=5", "tiles=9-3", "tile=p9999"}) {
    EXPECT_THROW(add_filter_term(filter, term), UsageError) << term;
  }
}

TEST(ProfileGroups, PercentilesOfAHundredAndOneDurations) {
  // Durations 1..101 in a scrambled order: p50 = sorted[50] = 51, p95 = sorted[95] = 96.
  schema::Profile profile;
  profile.clock_hz = 1;
  std::vector<TextStep> steps;
  std::uint32_t at = kNearWrap;
  for (std::uint32_t i = 0; i < 101; ++i) {
    const std::uint32_t length = (i * 37) % 101 + 1;
    steps.push_back(step(StepKind::kCompute, "k", "op", at, at + length));
    at += length;
  }
  add_tile(profile, target::PhysicalTile(5), steps);
  const auto groups = group_samples(Timeline(profile), GroupBy::kKernel);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].p50, 51u);
  EXPECT_EQ(groups[0].p95, 96u);
  EXPECT_EQ(groups[0].max, 101u);
  EXPECT_EQ(groups[0].cycles, 101u * 102u / 2u);
  EXPECT_DOUBLE_EQ(groups[0].average_active_tiles, 1.0);
}

// The hand-built timeline (offsets above): what each tile does at a cycle.
TEST(ProfileStepsAt, EachTilesStepAtACycle) {
  const auto profile = hand_built();
  const Timeline timeline(profile);
  const auto kind_at = [&](const StepsAt& at, std::size_t t) {
    return at.tiles[t] == nullptr ? StepKind::kIdle : profile.kind(timeline.step(*at.tiles[t]));
  };
  const StepsAt at15 = steps_at(timeline, 15);
  EXPECT_EQ(kind_at(at15, 0), StepKind::kExchange);  // p0 [10, 20)
  EXPECT_EQ(profile.kernel(timeline.step(*at15.tiles[1])), "reduce");  // p1 [0, 20)
  EXPECT_EQ(at15.tiles[2]->offset, 10u);              // p2 [10, 30)
  EXPECT_EQ(at15.kind_tiles, (std::array<std::uint64_t, 5>{1, 2, 0, 0, 0}));
  const StepsAt at55 = steps_at(timeline, 55);  // p0 sync [50, 60), p1 sync [20, 60), p2 done
  EXPECT_EQ(at55.kind_tiles, (std::array<std::uint64_t, 5>{0, 0, 2, 0, 1}));
  EXPECT_EQ(at55.tiles[2], nullptr);
  const StepsAt at60 = steps_at(timeline, 60);  // ends are exclusive
  EXPECT_EQ(at60.kind_tiles, (std::array<std::uint64_t, 5>{0, 0, 0, 0, 3}));
}

TEST(ProfileGroups, LayerNamesComeFromTheProvenance) {
  EXPECT_EQ(layer_of("vision_model.encoder.layers.26.mlp.fc1"), "layer 26");
  EXPECT_EQ(layer_of("layer 4 attention"), "layer 4");
  EXPECT_EQ(layer_of("op 3 (add %1, %2)"), "(no layer)");
}

// Whatever the counters, the kinds and the off-step idle time add up to the
// run's tile-cycles when no tile's steps overlap.
RC_GTEST_PROP(ProfileSummary, KindsAddUpToTileCycles, ()) {
  schema::Profile profile;
  profile.clock_hz = 1;
  const auto tiles = *rc::gen::inRange<std::uint16_t>(1, 5);
  for (std::uint16_t t = 0; t < tiles; ++t) {
    std::uint32_t at = *rc::gen::arbitrary<std::uint32_t>();
    std::vector<TextStep> steps;
    const auto count = *rc::gen::inRange(0, 8);
    for (int s = 0; s < count; ++s) {
      at += *rc::gen::inRange<std::uint32_t>(0, 1000);  // a gap: idle
      const auto length = *rc::gen::inRange<std::uint32_t>(0, 1000);
      const auto kind = static_cast<StepKind>(*rc::gen::inRange(0, 5));
      steps.push_back(step(kind, "", "", at, at + length));
      at += length;
    }
    add_tile(profile, target::PhysicalTile(t), steps);
  }
  profile.origin = schema::ClockOrigin::kPerTile;
  const Summary s = summarize(Timeline(profile));
  std::uint64_t sum = 0;
  for (const auto cycles : s.kind_cycles) sum += cycles;
  // Idle gaps between steps are not steps: they count as idle through the
  // off-step time, so the total is exact.
  RC_ASSERT(sum == s.tile_cycles);
}

// Bytes from anywhere are a profile or a clear error, never a crash.
RC_GTEST_PROP(ProfileFile, AnyBytesReadOrFailWithAnInputError, ()) {
  const auto good = schema::serialize_profile(hand_built());
  auto bytes = good;
  const auto flips = *rc::gen::inRange<std::size_t>(1, 8);
  for (std::size_t i = 0; i < flips; ++i) {
    const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
    bytes[at] = *rc::gen::arbitrary<std::uint8_t>();
  }
  bytes.resize(*rc::gen::inRange<std::size_t>(0, bytes.size() + 1));
  try {
    const schema::Profile profile = schema::read_profile(bytes);
    const Timeline timeline(profile);  // whatever it holds, the queries run
    (void)summarize(timeline);
    (void)group_samples(timeline, GroupBy::kOperation);
  } catch (const InputError&) {
  }
}

}  // namespace
}  // namespace tessera::profile
