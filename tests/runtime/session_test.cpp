// The host-call protocol end to end on the simulator: a hand-built package
// moves x host → device in batches, computes, passes results round a ring
// (D2D) and returns y device → host; the results are checked against a CPU
// reference. Also: host delays change nothing, bad calls fail cleanly and
// leave the session usable, device faults and stalls surface with context.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "backends/sim/sim_transport.hpp"
#include "runtime/session.hpp"
#include "support/little_endian.hpp"
#include "tests/runtime/ring_package.hpp"

namespace tessera::runtime {
namespace {

using target::PhysicalTile;
using testing::ring_package;
using testing::ring_reference;
using testing::RingSpec;

// Compute tiles across rows and columns; their XREQ owners (p4, p5, p40,
// p61) join the package.
RingSpec spec(std::uint32_t words = 2048) {
  return RingSpec{{PhysicalTile(5), PhysicalTile(260), PhysicalTile(1000), PhysicalTile(1471)},
                  words};
}

std::vector<std::uint32_t> input(const RingSpec& ring, std::uint32_t seed) {
  std::vector<std::uint32_t> x(ring.compute_tiles.size() * ring.words_per_tile);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<std::uint32_t>(i * 2654435761u) ^ seed;
  }
  return x;
}

std::vector<std::uint32_t> as_words(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint32_t> words(bytes.size() / 4);
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = load_u32_le(bytes.data() + 4 * i);
  return words;
}

struct RingRun {
  std::vector<std::uint32_t> y;
  std::uint64_t cycles = 0;
  std::uint64_t rendezvous = 0;
};

RingRun run_ring(const RingSpec& ring, std::uint32_t seed, SessionOptions options = {}) {
  backends::SimTransportOptions sim_options;
  sim_options.sim.trace = true;
  backends::SimTransport transport(target::Topology::c600(), sim_options);
  Session session(transport, ring_package(ring), options);
  const auto x = input(ring, seed);
  const auto bytes = words_to_bytes(x);
  const auto outputs = session.call("run", {{"x", bytes}});
  session.finish();
  return RingRun{as_words(outputs.at("y")), transport.chip().now(), session.rendezvous_count()};
}

TEST(Session, H2dComputeD2dD2hMatchesTheCpuReference) {
  const RingSpec ring = spec();
  const RingRun run = run_ring(ring, 7);
  EXPECT_EQ(run.y, ring_reference(ring, input(ring, 7)));
  // Startup, then two rendezvous for each of 2 input and 2 output batches.
  EXPECT_EQ(run.rendezvous, 1u + 2 * (2 + 2));
}

TEST(Session, ASharePartOfOneSlotMovesToo) {
  const RingSpec ring = spec(1000);  // 4000 bytes: one batch, not a whole slot
  EXPECT_EQ(run_ring(ring, 3).y, ring_reference(ring, input(ring, 3)));
}

TEST(Session, RandomHostDelaysChangeNothing) {
  const RingSpec ring = spec();
  const RingRun calm = run_ring(ring, 11);
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    SessionOptions options;
    options.write_jitter_max_us = 40;  // up to 60,000 simulated cycles per write
    options.write_jitter_seed = seed;
    const RingRun jittered = run_ring(ring, 11, options);
    EXPECT_EQ(jittered.y, calm.y) << "seed " << seed;
    EXPECT_GT(jittered.cycles, calm.cycles) << "the device waited for the late credits";
  }
}

TEST(Session, TheSamePackageTwiceGivesIdenticalResultsAndCycles) {
  const RingSpec ring = spec();
  const RingRun first = run_ring(ring, 5);
  const RingRun second = run_ring(ring, 5);
  EXPECT_EQ(first.y, second.y);
  EXPECT_EQ(first.cycles, second.cycles);
}

TEST(Session, ABadCallFailsCleanlyAndTheSessionStaysUsable) {
  const RingSpec ring = spec();
  backends::SimTransport transport;
  Session session(transport, ring_package(ring));
  const auto good = words_to_bytes(input(ring, 9));
  const std::vector<std::uint8_t> short_x(good.begin(), good.end() - 4);
  try {
    session.call("run", {{"x", short_x}});
    FAIL() << "a short input was accepted";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("input 'x' has 32764 bytes, expected 32768"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(session.call("run", {}), UsageError);
  EXPECT_THROW(session.call("run", {{"x", good}, {"w", good}}), UsageError);
  EXPECT_THROW(session.call("walk", {{"x", good}}), UsageError);
  EXPECT_EQ(session.rendezvous_count(), 1u) << "nothing reached the device";
  const auto outputs = session.call("run", {{"x", good}});
  session.finish();
  EXPECT_EQ(as_words(outputs.at("y")), ring_reference(ring, input(ring, 9)));
}

TEST(Session, TypedCallsCheckDtypeAndShapeAndReturnTypedOutputs) {
  const RingSpec ring = spec(64);
  backends::SimTransport transport;
  Session session(transport, ring_package(ring));
  const auto x = input(ring, 4);
  const HostTensor as_f32(schema::DType::kF32, {x.size()}, words_to_bytes(x));
  EXPECT_THROW(session.invoke("run", {{"x", as_f32}}), Error);
  const HostTensor wrong_shape(schema::DType::kU32, {2, x.size() / 2}, words_to_bytes(x));
  EXPECT_THROW(session.invoke("run", {{"x", wrong_shape}}), Error);
  EXPECT_EQ(session.rendezvous_count(), 1u) << "nothing reached the device";
  const auto outputs =
      session.invoke("run", {{"x", HostTensor(schema::DType::kU32, {x.size()}, words_to_bytes(x))}});
  session.finish();
  const HostTensor& y = outputs.at("y");
  EXPECT_EQ(y.dtype(), schema::DType::kU32);
  EXPECT_EQ(y.shape(), (TensorShape{x.size()}));
  EXPECT_EQ(as_words({y.bytes().begin(), y.bytes().end()}), ring_reference(ring, x));
}

TEST(Session, ADeviceFaultSurfacesWithTilePcAndProvenance) {
  RingSpec ring = spec();
  ring.overrun = true;
  backends::SimTransport transport;
  Session session(transport, ring_package(ring));
  try {
    session.call("run", {{"x", words_to_bytes(input(ring, 1))}});
    FAIL() << "the overrun went unnoticed";
  } catch (const DeviceError& error) {
    ASSERT_FALSE(error.faults().empty());
    const DeviceFault& fault = error.faults().front();
    EXPECT_EQ(fault.kind, "KernelOverrun");
    EXPECT_EQ(fault.tile, PhysicalTile(5));
    EXPECT_TRUE(fault.pc.has_value());
    EXPECT_EQ(fault.provenance, "y0 = add(x, x)");
    const std::string what = error.what();
    EXPECT_NE(what.find("KernelOverrun on p5"), std::string::npos) << what;
    EXPECT_NE(what.find("rendezvous"), std::string::npos) << what;
  }
}

TEST(Session, AStalledDeviceReportsWhereEachTileWaits) {
  const RingSpec ring = spec();
  backends::SimTransport transport;
  Session session(transport, ring_package(ring));
  // Nobody calls "run": every tile waits at the first batch's entry.
  try {
    session.finish();
    FAIL() << "a device waiting for the host counted as halted";
  } catch (const TimeoutError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("can make no progress"), std::string::npos) << what;
    EXPECT_NE(what.find("waits at sync 15"), std::string::npos) << what;  // the XREQ owners
    EXPECT_NE(what.find("waits at sync 7"), std::string::npos) << what;   // the targets
    EXPECT_NE(what.find("p1471"), std::string::npos) << what;
  }
}

TEST(Session, TheProfileCoversEveryTileAndRoundTrips) {
  const RingSpec ring = spec(256);
  backends::SimTransportOptions options;
  options.sim.trace = true;
  backends::SimTransport transport(target::Topology::c600(), options);
  Session session(transport, ring_package(ring));
  session.call("run", {{"x", words_to_bytes(input(ring, 2))}});
  session.finish();
  const auto profile = session.profile();
  ASSERT_TRUE(profile.has_value());
  EXPECT_EQ(profile->tiles.size(), session.application().tiles.size());
  EXPECT_EQ(profile->build_digest.size(), 32u);
  std::size_t steps = 0;
  for (const auto& tile : profile->tiles) {
    EXPECT_FALSE(tile.steps.empty()) << tile.tile;
    steps += tile.steps.size();
  }
  // The simulator interns: each text and each label once, far fewer than the steps.
  const std::set<std::string> names(profile->names.begin(), profile->names.end());
  EXPECT_EQ(names.size(), profile->names.size());
  EXPECT_EQ(profile->names.front(), "");
  for (std::size_t a = 0; a < profile->labels.size(); ++a) {
    for (std::size_t b = a + 1; b < profile->labels.size(); ++b) {
      EXPECT_FALSE(profile->labels[a] == profile->labels[b]) << "labels " << a << " and " << b;
    }
  }
  EXPECT_LT(profile->labels.size(), steps);  // 16 labels for 145 steps today
  EXPECT_EQ(schema::read_profile(schema::serialize_profile(*profile)), *profile);
}

TEST(Session, AUnknownBindingOrCallNamesTheAlternatives) {
  backends::SimTransport transport;
  Session session(transport, ring_package(spec(64)));
  try {
    session.binding("z");
    FAIL();
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("inputs: 'x'; outputs: 'y'"), std::string::npos)
        << error.what();
  }
  try {
    session.host_call("go");
    FAIL();
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("calls: 'run'"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tessera::runtime
