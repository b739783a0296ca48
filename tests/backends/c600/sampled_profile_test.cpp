// A package built with profile samples, run on the simulator: every tile's
// sample buffer, read back over the transport's debug read and decoded by
// the C600 backend's decoder (read_device_profile), against the
// simulator's own profile of the same run — an independent record of what
// each tile did, from its activities and the package's debug section, not
// from the samples.
//
// The oracle: in the simulator's profile each sample is a step of the
// sample helper (its kernel is kernels::kProfileSample), so its records are
// those steps, in order. A record's value must be its helper's start plus
// kCycleSampleReadCycles (worker 0's read of the counter); a decoded step
// runs from one step record to the next, so it lasts exactly the time from
// one helper's start to the next's, and it must name what the simulator
// says ran between them: the one kernel call there (kernel, operation,
// loop iteration), or, for a step record, no kernel call and the kind of
// wait or row it says. Every kernel call the simulator saw appears once,
// in order.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "kernels/costs.hpp"
#include "kernels/registry.hpp"
#include "tests/backends/c600/sampled_graph.hpp"

namespace tessera::backends::c600 {
namespace {

using schema::SiteKind;
using schema::StepKind;
using testing::run_sampled;
using testing::SampledRun;

struct Call {
  std::string kernel, operation, layer;
  friend bool operator==(const Call&, const Call&) = default;
  friend std::ostream& operator<<(std::ostream& out, const Call& call) {
    return out << call.kernel << " " << call.operation << " [" << call.layer << "]";
  }
};

bool is_sample(const schema::Profile& profile, const schema::ProfileStep& step) {
  return profile.kernel(step) == kernels::kProfileSample;
}

std::uint32_t site_kind(std::uint32_t site) { return site >> 29; }

const schema::TileProfile& tile_of(const schema::Profile& profile, target::PhysicalTile tile) {
  const auto found = std::find_if(profile.tiles.begin(), profile.tiles.end(),
                                  [&](const auto& t) { return t.tile == tile; });
  EXPECT_NE(found, profile.tiles.end()) << tile;
  return *found;
}

// The oracle above, for one tile.
void expect_tile_matches(const SampledRun& run, const schema::TileProfile& device) {
  SCOPED_TRACE(fmt::format("{}", device.tile));
  const schema::Profile& sim = *run.simulated;
  const schema::Profile& decoded = *run.decoded;
  const auto& steps = tile_of(sim, device.tile).steps;
  const auto& words = run.buffers.at(device.tile.value);
  std::vector<std::size_t> helpers;  // the sim's sample steps: one per record
  for (std::size_t s = 0; s < steps.size(); ++s) {
    if (is_sample(sim, steps[s])) helpers.push_back(s);
  }
  ASSERT_GE(words.size(), 2u);
  ASSERT_EQ(words[0], helpers.size()) << "every sample was recorded";
  // The buffer was sized for exactly the records its run appends.
  EXPECT_EQ(words.size(), 2 + 2 * helpers.size());
  ASSERT_EQ(words[1], 0u) << "nothing dropped";
  std::vector<std::size_t> step_records;  // records that begin or end a step
  for (std::size_t r = 0; r < helpers.size(); ++r) {
    const std::uint32_t site = words[2 + 2 * r], value = words[3 + 2 * r];
    const auto& helper = steps[helpers[r]];
    EXPECT_EQ(helper.cycles(), kernels::kProfileSampleCycles) << "record " << r;
    if (site_kind(site) == static_cast<std::uint32_t>(SiteKind::kLoop)) continue;
    EXPECT_EQ(value,
              helper.start_cycle + static_cast<std::uint32_t>(kernels::kCycleSampleReadCycles))
        << "record " << r;
    step_records.push_back(r);
  }
  ASSERT_GE(step_records.size(), 2u);
  EXPECT_EQ(site_kind(words[2 + 2 * step_records.back()]),
            static_cast<std::uint32_t>(SiteKind::kEnd));
  ASSERT_EQ(device.steps.size(), step_records.size() - 1);

  std::vector<Call> simulated_calls, decoded_calls;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    if (is_sample(sim, steps[s]) || sim.kernel(steps[s]).empty()) continue;
    // Every kernel call lies between the first record and the end.
    EXPECT_GT(s, helpers[step_records.front()]);
    EXPECT_LT(s, helpers[step_records.back()]);
    simulated_calls.push_back({sim.kernel(steps[s]), sim.operation(steps[s]), sim.layer(steps[s])});
  }
  for (std::size_t j = 0; j + 1 < step_records.size(); ++j) {
    SCOPED_TRACE(fmt::format("decoded step {}", j));
    const std::size_t a = step_records[j], b = step_records[j + 1];
    const std::uint32_t site = words[2 + 2 * a];
    const schema::ProfileStep& step = device.steps[j];
    const schema::StepText text = decoded.text(step);
    EXPECT_EQ(step.start_cycle, words[3 + 2 * a]);
    EXPECT_EQ(step.end_cycle, words[3 + 2 * b]);
    // Exactly the simulated time between the two samples (each read lands
    // the same offset after its helper starts).
    EXPECT_EQ(step.cycles(), steps[helpers[b]].start_cycle - steps[helpers[a]].start_cycle);
    std::vector<const schema::ProfileStep*> between;
    for (std::size_t s = helpers[a] + 1; s < helpers[b]; ++s) {
      if (!is_sample(sim, steps[s])) between.push_back(&steps[s]);
    }
    ASSERT_FALSE(between.empty());
    std::vector<const schema::ProfileStep*> calls;
    for (const auto* s : between) {
      if (!sim.kernel(*s).empty()) calls.push_back(s);
    }
    if (site_kind(site) == static_cast<std::uint32_t>(SiteKind::kKernelCall)) {
      EXPECT_EQ(text.kind, StepKind::kCompute);
      ASSERT_EQ(calls.size(), 1u);
      EXPECT_EQ((Call{text.kernel, text.operation, text.layer}),
                (Call{sim.kernel(*calls[0]), sim.operation(*calls[0]), sim.layer(*calls[0])}));
      decoded_calls.push_back({text.kernel, text.operation, text.layer});
      continue;
    }
    EXPECT_TRUE(calls.empty());
    EXPECT_TRUE(text.kernel.empty());
    EXPECT_EQ(text.layer, sim.layer(*between.front()));
    const auto has = [&](StepKind kind) {
      return std::any_of(between.begin(), between.end(),
                         [&](const auto* s) { return sim.kind(*s) == kind; });
    };
    switch (text.kind) {
      case StepKind::kExchange:  // the phase's entry sync, its row, its closing sync
        EXPECT_TRUE(has(StepKind::kExchange));
        EXPECT_FALSE(has(StepKind::kHost));
        for (const auto* s : between) {  // the row serves the phase's operation
          if (sim.kind(*s) == StepKind::kExchange) {
            EXPECT_EQ(text.operation, sim.operation(*s));
          }
        }
        break;
      case StepKind::kSynchronization:  // a phase without a row, a host batch waited out
        EXPECT_TRUE(has(StepKind::kSynchronization));
        EXPECT_FALSE(has(StepKind::kExchange));
        EXPECT_FALSE(has(StepKind::kHost));
        break;
      case StepKind::kHost:  // the startup rendezvous, a host batch: no graph operation's
        EXPECT_TRUE(has(StepKind::kHost));
        EXPECT_FALSE(has(StepKind::kExchange));
        EXPECT_EQ(text.operation, "");
        break;
      default:
        ADD_FAILURE() << "a record of kind " << schema::step_kind_name(text.kind);
    }
  }
  EXPECT_EQ(decoded_calls, simulated_calls);
}

TEST(SampledProfile, DecodedStepsAreTheSimulatorsStepsBetweenSamples) {
  const SampledRun run =
      run_sampled(testing::compile_sampled_graph(compiler::emit::kDefaultProfileSampleRecords));
  ASSERT_TRUE(run.simulated.has_value());
  ASSERT_TRUE(run.decoded.has_value());
  const schema::Profile& decoded = *run.decoded;
  EXPECT_EQ(decoded.origin, schema::ClockOrigin::kPerTile);
  EXPECT_EQ(decoded.dropped_samples, 0u);
  EXPECT_EQ(decoded.build_digest, run.simulated->build_digest);
  // Every tile of the package has a buffer and a decoded run.
  ASSERT_EQ(decoded.tiles.size(), run.app.debug.tiles.size());
  std::size_t iterations_seen = 0, exchanges = 0, hosts = 0, calls = 0;
  for (const auto& tile : decoded.tiles) {
    expect_tile_matches(run, tile);
    for (const auto& step : tile.steps) {
      const std::string& layer = decoded.layer(step);
      if (layer.find(fmt::format("iteration {}", testing::kSampledGraphIterations - 1)) !=
          std::string::npos) {
        ++iterations_seen;
      }
      exchanges += decoded.kind(step) == StepKind::kExchange;
      hosts += decoded.kind(step) == StepKind::kHost;
      calls += !decoded.kernel(step).empty();
    }
  }
  // The run exercised what the records mark: the loop's last iteration,
  // exchange phases, host batches, kernel calls.
  EXPECT_GT(iterations_seen, 0u);
  EXPECT_GT(exchanges, 0u);
  EXPECT_GT(hosts, 0u);
  EXPECT_GT(calls, 0u);
}

// The records do not change what the program computes.
TEST(SampledProfile, ThePackageComputesWhatItDoesWithoutSamples) {
  const SampledRun sampled = run_sampled(testing::compile_sampled_graph(64));
  const SampledRun plain = run_sampled(testing::compile_sampled_graph(std::nullopt));
  EXPECT_EQ(sampled.outputs, plain.outputs);
  EXPECT_FALSE(plain.decoded.has_value());
  EXPECT_TRUE(plain.buffers.empty());
  for (const auto& debug : plain.app.debug.tiles) {
    for (const auto& symbol : debug.symbols) EXPECT_NE(symbol.name, kernels::kProfileSample);
  }
  // y = x · 2^3.
  const auto x = testing::sampled_graph_input();
  ASSERT_EQ(sampled.outputs.at("y").size(), x.size());
  for (std::size_t i = 0; i < 128; ++i) {
    float in = 0, out = 0;
    std::memcpy(&in, x.data() + 4 * i, 4);
    std::memcpy(&out, sampled.outputs.at("y").data() + 4 * i, 4);
    EXPECT_EQ(out, 8 * in) << i;
  }
  EXPECT_GT(sampled.cycles, plain.cycles);
}

// A buffer smaller than the run's records keeps the first ones, counts the
// rest as dropped, and the profile says how many; its steps are the full
// buffer's, but for the last one, whose end was dropped.
TEST(SampledProfile, ASmallBufferDropsTheRestAndTheProfileSaysSo) {
  constexpr std::uint32_t kRecords = 5;
  const SampledRun full =
      run_sampled(testing::compile_sampled_graph(compiler::emit::kDefaultProfileSampleRecords));
  const SampledRun small = run_sampled(testing::compile_sampled_graph(kRecords));
  ASSERT_TRUE(small.decoded.has_value());
  std::uint64_t dropped = 0;
  for (const auto& [tile, words] : small.buffers) {
    SCOPED_TRACE(fmt::format("p{}", tile));
    // The simulator's count of the tile's samples is the run's records.
    std::uint64_t records = 0;
    for (const auto& step : tile_of(*small.simulated, target::PhysicalTile(tile)).steps) {
      records += is_sample(*small.simulated, step);
    }
    ASSERT_GT(records, kRecords);
    ASSERT_EQ(words.size(), 2 + 2 * std::size_t{kRecords});  // sized at the cap
    EXPECT_EQ(words[0], kRecords);
    EXPECT_EQ(words[1], records - kRecords);
    dropped += records - kRecords;
    // The records it kept are the first of the full buffer's, bit for bit.
    const auto& whole = full.buffers.at(tile);
    EXPECT_TRUE(std::equal(words.begin() + 2, words.end(), whole.begin() + 2)) << "same records";
    // Its steps begin the full buffer's.
    const auto& kept = tile_of(*small.decoded, target::PhysicalTile(tile)).steps;
    const auto& all = tile_of(*full.decoded, target::PhysicalTile(tile)).steps;
    ASSERT_LT(kept.size(), all.size());
    for (std::size_t i = 0; i < kept.size(); ++i) {
      EXPECT_EQ(small.decoded->text(kept[i]), full.decoded->text(all[i])) << i;
      EXPECT_EQ(kept[i].start_cycle, all[i].start_cycle) << i;
      EXPECT_EQ(kept[i].end_cycle, all[i].end_cycle) << i;
    }
  }
  EXPECT_EQ(small.decoded->dropped_samples, dropped);
  EXPECT_GT(dropped, 0u);
}

}  // namespace
}  // namespace tessera::backends::c600
