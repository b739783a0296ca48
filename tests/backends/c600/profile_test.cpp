// The C600's cycle profile over the fake device: a package built with
// profiling names a sample buffer per tile; the fake's script stands in for
// the instrumented program and writes the buffers the program would have
// (schema/profile_samples.hpp's layout), with counters that start at
// 2^32 − 11 and wrap. The oracle is the samples themselves: each step runs
// from its record's counter to the next's, named by its site, and the loop
// records name its iteration.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/c600/c600_transport.hpp"
#include "backends/c600/device_profile.hpp"
#include "runtime/session.hpp"
#include "schema/digest.hpp"
#include "schema/package_error.hpp"
#include "schema/profile_samples.hpp"
#include "support/little_endian.hpp"
#include "tests/backends/c600/fixture.hpp"
#include "tests/backends/c600/sampled_graph.hpp"
#include "tests/runtime/ring_package.hpp"

namespace tessera::backends::c600 {
namespace {

using runtime::testing::ring_package;
using runtime::testing::RingSpec;
using schema::SiteKind;
using schema::StepKind;
using schema::StepText;
using target::PhysicalTile;
using testing::FakeDevice;

constexpr std::uint32_t kBuffer = 0x70000;   // above ring_package's tensors
constexpr std::uint32_t kCounter = 0x6F000;  // the loop's counter word
constexpr std::uint32_t kCapacity = 16;      // records
constexpr std::uint32_t kNearWrap = 0xFFFFFFFFu - 10;  // 2^32 − 11
constexpr std::uint16_t kFullTile = 63;      // its buffer holds 4 records and drops 3

std::uint32_t add_call_site(const schema::TileDebug& debug) {
  for (std::size_t c = 0; c < debug.call_sites.size(); ++c) {
    if (debug.call_sites[c].kernel == "tessera_add_u32") return static_cast<std::uint32_t>(c);
  }
  ADD_FAILURE() << debug.tile << " has no add call site";
  return 0;
}

// The ring package (64 compute tiles), built with profiling: every tile a
// sample buffer and one loop of 2 iterations around its add.
schema::Application profiled_ring() {
  RingSpec ring;
  for (std::uint16_t t = 0; t < 64; ++t) ring.compute_tiles.push_back(PhysicalTile(t));
  schema::Application app = ring_package(ring);
  app.hardware_loadable = true;  // the fake runs no kernels; it only needs the protocol
  app.not_loadable_reason.clear();
  for (auto& debug : app.debug.tiles) {
    const std::uint32_t records = debug.tile.value == kFullTile ? 4 : kCapacity;
    debug.allocations.push_back({99, std::string(schema::kSampleBufferName), "", kBuffer,
                                 4 * (schema::kSampleHeaderWords + 2 * records), 0,
                                 schema::kLiveToEnd, schema::AllocationKind::kRuntime,
                                 schema::kNoProvenance});
    debug.loops = {{kCounter, 2, 0}};
  }
  return app;
}

// What tile t's program records: host 10, the add 20 (through the wrap),
// exchange 15 in the loop's next iteration, sync 5 + t, end.
std::vector<std::uint32_t> samples_of(std::uint16_t t, std::uint32_t add_site) {
  const std::uint32_t s = kNearWrap + t;
  std::vector<std::uint32_t> records = {
      schema::sample_site(StepKind::kHost, 1), s,
      schema::sample_site(SiteKind::kLoop, 0), 2,  // iteration 0
      schema::sample_site(SiteKind::kKernelCall, add_site), s + 10,
      schema::sample_site(StepKind::kExchange, 0), s + 30,
      schema::sample_site(SiteKind::kLoop, 0), 1,  // iteration 1
      schema::sample_site(StepKind::kSynchronization), s + 45,
      schema::sample_site(SiteKind::kEnd), s + 50 + t,
  };
  std::uint32_t count = static_cast<std::uint32_t>(records.size() / 2), dropped = 0;
  if (t == kFullTile) {  // room for 4: the exchange's record is the last written
    records.resize(8);
    dropped = count - 4;
    count = 4;
  }
  std::vector<std::uint32_t> words = {count, dropped};
  words.insert(words.end(), records.begin(), records.end());
  return words;
}

void write_words(FakeDevice& device, std::uint16_t tile, std::uint32_t address,
                 const std::vector<std::uint32_t>& words) {
  std::vector<std::uint8_t> bytes(4 * words.size());
  for (std::size_t i = 0; i < words.size(); ++i) store_u32_le(words[i], bytes.data() + 4 * i);
  device.write_sram(tile, address, bytes);
}
void write_words(FakeDevice& device, std::uint16_t tile, const std::vector<std::uint32_t>& words) {
  write_words(device, tile, kBuffer, words);
}

// Runs the package's one call on the fake; `program` writes the buffers at the last sync.
std::unique_ptr<runtime::Transport> run(const schema::Application& app, FakeDevice& fake,
                                        const testing::ScratchDirectory& scratch,
                                        FakeDevice::Action program) {
  auto transport = open_c600(testing::fake_options(scratch), fake);
  for (const char* sync : {"startup", "input entry", "input completion", "output entry"}) {
    fake.expect_sync(target::kHspGs2Control, sync);
  }
  fake.expect_sync(target::kHspGs2Control, "output completion", std::move(program));
  runtime::Session session(*transport, app);
  (void)session.call("run", {{"x", std::vector<std::uint8_t>(64 * 256 * 4, 0)}});
  session.finish();
  EXPECT_TRUE(fake.violations().empty()) << fake.violations().front();
  EXPECT_EQ(fake.pending_syncs(), 0u);
  return transport;
}

TEST(C600Profile, StepsAreTheSamplesTheDeviceWrote) {
  const schema::Application app = profiled_ring();
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  const auto transport = run(app, fake, scratch, [&](FakeDevice& device) {
    for (const auto& debug : app.debug.tiles) {
      write_words(device, debug.tile.value, samples_of(debug.tile.value, add_call_site(debug)));
    }
  });
  const auto profile = transport->profile();
  ASSERT_TRUE(profile.has_value());
  EXPECT_EQ(profile->origin, schema::ClockOrigin::kPerTile);
  EXPECT_EQ(profile->clock_hz, target::kC600ClockHz);
  // The session runs the package in canonical form, as a package file holds it.
  const auto digest = schema::build_digest(schema::canonical(app));
  EXPECT_TRUE(std::equal(digest.begin(), digest.end(), profile->build_digest.begin(),
                         profile->build_digest.end()));
  EXPECT_EQ(profile->dropped_samples, 3u);  // the full tile's
  ASSERT_EQ(profile->tiles.size(), 64u);
  const std::string iteration0 = "y0 = add(x, x) iteration 0";
  const std::string iteration1 = "y0 = add(x, x) iteration 1";
  for (std::uint16_t t = 0; t < 64; ++t) {
    const auto& tile = profile->tiles[t];
    EXPECT_EQ(tile.tile, PhysicalTile(t));
    const std::uint32_t s = kNearWrap + t;
    struct Expected {
      StepText text;
      std::uint32_t start, end, cycles;
    };
    std::vector<Expected> expected = {
        {{StepKind::kHost, "", "host input x", "", {}}, s, s + 10, 10},
        {{StepKind::kCompute, "tessera_add_u32", "y0 = add(x, x)", iteration0, {}}, s + 10, s + 30,
         20},
        {{StepKind::kExchange, "", "y0 = add(x, x)", iteration0, {}}, s + 30, s + 45, 15},
        {{StepKind::kSynchronization, "", "", iteration1, {}}, s + 45, s + 50 + t, 5u + t},
    };
    if (t == kFullTile) expected.resize(2);  // the exchange's end was never recorded
    ASSERT_EQ(tile.steps.size(), expected.size()) << tile.tile;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const auto& step = tile.steps[i];
      EXPECT_EQ(profile->text(step), expected[i].text) << tile.tile << " step " << i;
      EXPECT_EQ(step.start_cycle, expected[i].start) << tile.tile << " step " << i;
      EXPECT_EQ(step.end_cycle, expected[i].end) << tile.tile << " step " << i;
      EXPECT_EQ(step.cycles(), expected[i].cycles) << tile.tile << " step " << i;
    }
  }
  // Tile 0's add runs from 2^32 − 1 to 19: it wraps, and lasts 20.
  EXPECT_GT(profile->tiles[0].steps[1].start_cycle, profile->tiles[0].steps[1].end_cycle);
  // The profile writes and reads back like the simulator's.
  EXPECT_EQ(schema::read_profile(schema::serialize_profile(*profile)), *profile);
}

TEST(C600Profile, APackageBuiltWithoutProfilingHasNone) {
  RingSpec ring;
  for (std::uint16_t t = 0; t < 64; ++t) ring.compute_tiles.push_back(PhysicalTile(t));
  EXPECT_FALSE(sampled_package(ring_package(ring)).has_value());
  EXPECT_TRUE(sampled_package(profiled_ring()).has_value());
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  EXPECT_FALSE(open_c600(testing::fake_options(scratch), fake)->profile().has_value());
}

TEST(C600Profile, ABufferThatBreaksItsLayoutNamesTheTile) {
  const schema::Application app = profiled_ring();
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  const auto transport = run(app, fake, scratch, [&](FakeDevice& device) {
    for (const auto& debug : app.debug.tiles) {
      auto words = samples_of(debug.tile.value, add_call_site(debug));
      if (debug.tile.value == 0) words[2] = schema::sample_site(SiteKind::kKernelCall, 999);
      write_words(device, debug.tile.value, words);
    }
  });
  try {
    (void)transport->profile();
    FAIL() << "read a broken buffer";
  } catch (const schema::PackageError& error) {
    // Tile 0 comes first: its record 0 names a call site it does not have.
    const std::string what = error.what();
    EXPECT_NE(what.find("p0 sample buffer record 0"), std::string::npos) << what;
    EXPECT_NE(what.find("names call site 999; the tile has"), std::string::npos) << what;
  }
}

TEST(C600Profile, ACountBeyondTheBufferIsAnError) {
  const schema::Application app = profiled_ring();
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  const auto transport = run(app, fake, scratch, [&](FakeDevice& device) {
    for (const auto& debug : app.debug.tiles) {
      auto words = samples_of(debug.tile.value, add_call_site(debug));
      if (debug.tile.value == 0) words[0] = kCapacity + 1;
      write_words(device, debug.tile.value, words);
    }
  });
  try {
    (void)transport->profile();
    FAIL() << "read a count beyond the buffer";
  } catch (const schema::PackageError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("p0 sample buffer at 0x70000"), std::string::npos) << what;
    EXPECT_NE(what.find("says 17 records were written; it holds 16"), std::string::npos) << what;
  }
}

// A package the compiler built with profile samples, on the fake C600. The
// fake runs no tile code, so its script stands in for the program: at the
// run's last rendezvous it writes into each tile's buffer what the
// simulator's run of the same package left there. The package must have
// loaded each buffer's empty header where its debug section says, and the
// transport must read every tile's buffer back into the profile the
// decoder gives the simulated buffers — steps, kernels, loop iterations,
// counters (sampled_profile_test.cpp checks those against the simulator).
TEST(C600Profile, ACompiledPackageBuiltWithProfileSamplesHasAProfile) {
  schema::Application app = schema::canonical(
      testing::compile_sampled_graph(compiler::emit::kDefaultProfileSampleRecords, true));
  app.hardware_loadable = true;  // the fake runs no kernels; it only needs the protocol
  app.not_loadable_reason.clear();
  ASSERT_EQ(app.tiles.size() % 64, 0u);
  const testing::SampledRun simulated = testing::run_sampled(app);
  ASSERT_TRUE(simulated.decoded.has_value());
  ASSERT_EQ(simulated.buffers.size(), app.tiles.size());

  testing::ScratchDirectory scratch;
  FakeDevice fake;
  const auto transport = open_c600(testing::fake_options(scratch), fake);
  fake.expect_sync(target::kHspGs2Control, "startup");
  std::size_t batches = 0;
  for (const auto& call : app.host_exchange.calls) {
    batches += call.input_batch_ends.size() + call.output_batch_ends.size();
  }
  ASSERT_GT(batches, 0u);
  for (std::size_t b = 0; b < batches; ++b) {
    fake.expect_sync(target::kHspGs2Control, "batch entry");
    if (b + 1 < batches) {
      fake.expect_sync(target::kHspGs2Control, "batch completion");
      continue;
    }
    fake.expect_sync(target::kHspGs2Control, "batch completion", [&](FakeDevice& device) {
      for (const auto& debug : app.debug.tiles) {
        write_words(device, debug.tile.value, schema::sample_buffer(debug)->address,
                    simulated.buffers.at(debug.tile.value));
      }
    });
  }
  runtime::Session session(*transport, app);
  // Loaded: every tile's buffer header says nothing was written or dropped.
  for (const auto& debug : app.debug.tiles) {
    const schema::Allocation* buffer = schema::sample_buffer(debug);
    ASSERT_NE(buffer, nullptr) << debug.tile;
    EXPECT_EQ(fake.sram(debug.tile.value, buffer->address, 8), std::vector<std::uint8_t>(8, 0))
        << debug.tile;
  }
  (void)session.call("run", {{"x", testing::sampled_graph_input()}});
  session.finish();
  EXPECT_TRUE(fake.violations().empty()) << fake.violations().front();
  EXPECT_EQ(fake.pending_syncs(), 0u);
  const auto profile = transport->profile();
  ASSERT_TRUE(profile.has_value());
  EXPECT_EQ(*profile, *simulated.decoded);
  EXPECT_EQ(profile->tiles.size(), app.tiles.size());
  EXPECT_EQ(profile->dropped_samples, 0u);
  EXPECT_EQ(profile->clock_hz, target::kC600ClockHz);
}

}  // namespace
}  // namespace tessera::backends::c600
