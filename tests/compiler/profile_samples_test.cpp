// Building with profile samples (CompileOptions::profile_samples): the
// option's range, and a sample buffer the tile cannot hold is a
// PlacementError that says so. What the records say is checked against the
// simulator in tests/backends/c600/sampled_profile_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "compiler/compile.hpp"
#include "compiler/ir/graph_json.hpp"
#include "compiler/placement.hpp"
#include "schema/profile_samples.hpp"
#include "support/error.hpp"

namespace tessera::compiler {
namespace {

// `count` iterations of one add: about two records an iteration.
std::string looped_add(std::uint32_t count) {
  return R"({"format": "tessera.graph", "version": 1, "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [4, 8], "result": "x"},
    {"op": "repeat", "count": )" +
         std::to_string(count) + R"(, "carried": ["x"], "invariant": [], "results": ["h"],
     "body": {"arguments": ["a"],
              "operations": [{"op": "add", "inputs": ["a", "a"], "result": "d"}],
              "yield": ["d"]}},
    {"op": "host_output", "name": "y", "inputs": ["h"]}]})";
}

CompileOptions with_samples(std::uint32_t records) {
  CompileOptions options;
  options.tiles = 2;
  options.profile_samples = records;
  return options;
}

TEST(ProfileSamples, RecordsPerTileOutsideTheRangeAreAUsageError) {
  const Graph graph = read_graph_json(looped_add(2));
  for (const std::uint32_t records : {0u, emit::kMaxProfileSampleRecords + 1}) {
    try {
      (void)compile(graph, with_samples(records));
      ADD_FAILURE() << records << " records were accepted";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("is outside 1..65536"), std::string::npos)
          << error.what();
    }
  }
}

// Each tile's buffer holds the records its run appends, up to the cap: a
// loop's records count once per iteration.
TEST(ProfileSamples, EachBufferHoldsItsRunsRecordsUpToTheCap) {
  const Graph few = read_graph_json(looped_add(2)), many = read_graph_json(looped_add(200));
  const auto capacity = [](const schema::Application& app) {
    std::uint64_t largest = 0;
    for (const auto& debug : app.debug.tiles) {
      const schema::Allocation* buffer = schema::sample_buffer(debug);
      EXPECT_NE(buffer, nullptr) << debug.tile;
      if (buffer == nullptr) continue;
      largest = std::max<std::uint64_t>(largest, (buffer->size - 8) / 8);
    }
    return largest;
  };
  const std::uint64_t two = capacity(compile(few, with_samples(4096)).application);
  const std::uint64_t hundred = capacity(compile(many, with_samples(4096)).application);
  EXPECT_LT(two, 100u);
  // 198 more iterations of a body with at least its add's record and the
  // loop's record.
  EXPECT_GE(hundred, two + 2 * 198);
  EXPECT_EQ(capacity(compile(many, with_samples(50)).application), 50u);
}

// A buffer a tile cannot place is a PlacementError naming it, and saying
// how many records would fit on every tile: that many fit, one more does not.
TEST(ProfileSamples, ABufferTheTileCannotHoldIsAPlacementErrorSayingWhatFits) {
  // 40 000 iterations: far more records than the largest buffer, whose
  // 512 KiB exceed the code region.
  const Graph graph = read_graph_json(looped_add(40000));
  std::uint32_t fits = 0;
  try {
    (void)compile(graph, with_samples(emit::kMaxProfileSampleRecords));
    ADD_FAILURE() << "a 512 KiB sample buffer was placed";
  } catch (const PlacementError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("cannot place 'profile samples' (524296 bytes"), std::string::npos)
        << what.substr(0, 300);
    const std::string said =
        "tiles cannot hold their sample buffers of up to 65536 records; at "
        "most ";
    const auto at = what.find(said);
    ASSERT_NE(at, std::string::npos) << what.substr(what.size() - 300);
    fits = static_cast<std::uint32_t>(std::stoul(what.substr(at + said.size())));
    EXPECT_NE(
        what.find(" records fit on every one (--profile-samples=" + std::to_string(fits) + ")"),
        std::string::npos);
  }
  ASSERT_GT(fits, 1000u);
  EXPECT_NO_THROW((void)compile(graph, with_samples(fits)));
  EXPECT_THROW((void)compile(graph, with_samples(fits + 1)), PlacementError);
  // A buffer of the default size fits.
  EXPECT_NO_THROW((void)compile(graph, with_samples(emit::kDefaultProfileSampleRecords)));
}

}  // namespace
}  // namespace tessera::compiler
