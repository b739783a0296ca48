// `tessera compile` as a user runs it: a JSON graph file → a package that
// `tessera run` runs and `tessera disasm --tile` lists; bad graphs and bad
// options are clear errors.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "schema/profile_samples.hpp"
#include "schema/reader.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

using runtime::HostTensor;
using testing::run_tessera;

// y = x transposed, s = the column sums of x.
constexpr const char* kGraph = R"({
  "format": "tessera.graph", "version": 1,
  "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [6, 4], "result": "x"},
    {"op": "transpose", "inputs": ["x"], "permutation": [1, 0], "result": "t"},
    {"op": "reduce_sum", "inputs": ["x"], "axes": [0], "result": "s"},
    {"op": "host_output", "name": "y", "inputs": ["t"]},
    {"op": "host_output", "name": "s", "inputs": ["s"]}
  ]
})";

class CompileCommand : public ::testing::Test {
 protected:
  CompileCommand() {
    graph_ = scratch_.path("graph.json");
    std::ofstream(graph_) << kGraph;
    package_ = scratch_.path("graph.ipuexe");
  }

  std::vector<float> read_f32(const std::string& path, std::vector<std::uint64_t> shape) {
    const HostTensor tensor = runtime::read_npy_file(path);
    EXPECT_EQ(tensor.shape(), shape);
    std::vector<float> values(tensor.byte_size() / 4);
    std::memcpy(values.data(), tensor.bytes().data(), tensor.byte_size());
    return values;
  }

  tessera::testing::ScratchDirectory scratch_;
  std::string graph_;
  std::string package_;
};

TEST_F(CompileCommand, CompilesAGraphThatRunsAndDisassembles) {
  const auto compiled = run_tessera({"compile", graph_, "-o", package_, "--tiles", "6", "--report"});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;
  EXPECT_NE(compiled.out.find(package_ + ": 6 tiles"), std::string::npos) << compiled.out;
  EXPECT_NE(compiled.out.find("horizon"), std::string::npos) << compiled.out;

  std::vector<float> x(24);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i) - 3.0f;
  std::vector<std::uint8_t> bytes(96);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  const std::string x_npy = scratch_.path("x.npy");
  runtime::write_tensor_file(x_npy, HostTensor(schema::DType::kF32, {6, 4}, bytes));
  const std::string y = scratch_.path("y.npy"), s = scratch_.path("s.npy");
  const auto run = run_tessera({"run", package_, "-i", "x=" + x_npy, "-o", "y=" + y, "-o", "s=" + s});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const auto ys = read_f32(y, {4, 6});
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 6; ++j) EXPECT_EQ(ys[i * 6 + j], x[j * 4 + i]);
  }
  const auto sums = read_f32(s, {4});
  for (std::size_t c = 0; c < 4; ++c) {
    float expected = x[c];
    for (std::size_t r = 1; r < 6; ++r) expected += x[r * 4 + c];
    EXPECT_EQ(sums[c], expected);
  }

  const auto listing = run_tessera({"disasm", package_, "--tile", "L1"});
  ASSERT_EQ(listing.exit_status, 0) << listing.err;
  EXPECT_NE(listing.out.find("main:"), std::string::npos) << listing.out;
  EXPECT_NE(listing.out.find("call site: tessera_sum_f32"), std::string::npos) << listing.out;
}

TEST_F(CompileCommand, CompilingTwiceWritesIdenticalPackages) {
  const std::string second = scratch_.path("second.ipuexe");
  ASSERT_EQ(run_tessera({"compile", graph_, "-o", package_, "--tiles", "3"}).exit_status, 0);
  ASSERT_EQ(run_tessera({"compile", graph_, "-o", second, "--tiles", "3"}).exit_status, 0);
  std::ifstream a(package_, std::ios::binary), b(second, std::ios::binary);
  const std::string first_bytes((std::istreambuf_iterator<char>(a)), {});
  const std::string second_bytes((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(first_bytes, second_bytes);
}

TEST_F(CompileCommand, BadGraphsAndOptionsAreClearErrors) {
  const std::string bad = scratch_.path("bad.json");
  std::ofstream(bad) << R"({"format": "tessera.graph", "version": 1, "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [4, 8], "result": "x"},
    {"op": "host_input", "name": "b", "dtype": "f32", "shape": [3], "result": "b"},
    {"op": "add", "inputs": ["x", "b"], "result": "y"},
    {"op": "host_output", "name": "y", "inputs": ["y"]}]})";
  const auto shapes = run_tessera({"compile", bad, "-o", package_});
  EXPECT_EQ(shapes.exit_status, 1);
  EXPECT_NE(shapes.err.find("do not broadcast"), std::string::npos) << shapes.err;
  EXPECT_FALSE(std::ifstream(package_).good()) << "no package is written for a bad graph";

  const auto tiles = run_tessera({"compile", graph_, "-o", package_, "--tiles", "1473"});
  EXPECT_EQ(tiles.exit_status, 2);
  EXPECT_NE(tiles.err.find("--tiles 1473 is outside 1..1472"), std::string::npos) << tiles.err;
  const auto missing = run_tessera({"compile", scratch_.path("none.json"), "-o", package_});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.err;
}

// --profile-samples[=RECORDS]: every tile of the package gets a sample
// buffer (at most RECORDS records), the report says what the busiest tile
// appends, and the package computes what it computes without them.
TEST_F(CompileCommand, ProfileSamplesGiveEveryTileABufferAndChangeNoResult) {
  const std::string plain = scratch_.path("plain.ipuexe"), small = scratch_.path("small.ipuexe");
  const auto compiled = run_tessera(
      {"compile", graph_, "-o", package_, "--tiles", "6", "--profile-samples", "--report"});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;
  EXPECT_NE(compiled.out.find("profile samples: up to "), std::string::npos) << compiled.out;
  EXPECT_NE(compiled.out.find("0 tiles append more than their buffer holds"), std::string::npos)
      << compiled.out;
  ASSERT_EQ(run_tessera({"compile", graph_, "-o", small, "--tiles", "6", "--profile-samples=3"})
                .exit_status,
            0);
  ASSERT_EQ(run_tessera({"compile", graph_, "-o", plain, "--tiles", "6"}).exit_status, 0);
  const schema::Application with = schema::read_package_file(package_);
  const schema::Application capped = schema::read_package_file(small);
  const schema::Application without = schema::read_package_file(plain);
  for (const auto& debug : with.debug.tiles) {
    const schema::Allocation* buffer = schema::sample_buffer(debug);
    ASSERT_NE(buffer, nullptr) << debug.tile;
    EXPECT_GT(buffer->size, schema::sample_buffer_bytes(3)) << debug.tile;
  }
  for (const auto& debug : capped.debug.tiles) {
    ASSERT_NE(schema::sample_buffer(debug), nullptr) << debug.tile;
    EXPECT_EQ(schema::sample_buffer(debug)->size, schema::sample_buffer_bytes(3)) << debug.tile;
  }
  for (const auto& debug : without.debug.tiles) EXPECT_EQ(schema::sample_buffer(debug), nullptr);

  std::vector<std::uint8_t> bytes(96);
  for (std::size_t i = 0; i < 24; ++i) {
    const float value = 0.25f * static_cast<float>(i) - 2.0f;
    std::memcpy(bytes.data() + 4 * i, &value, 4);
  }
  const std::string x_npy = scratch_.path("x.npy");
  runtime::write_tensor_file(x_npy, HostTensor(schema::DType::kF32, {6, 4}, bytes));
  for (const auto& [package, tag] : {std::pair{package_, "p"}, std::pair{plain, "q"}}) {
    const auto run = run_tessera({"run", package, "-i", "x=" + x_npy, "-o",
                                  "y=" + scratch_.path(std::string(tag) + "y.npy"), "-o",
                                  "s=" + scratch_.path(std::string(tag) + "s.npy")});
    ASSERT_EQ(run.exit_status, 0) << run.err;
  }
  for (const char* output : {"y.npy", "s.npy"}) {
    std::ifstream a(scratch_.path(std::string("p") + output), std::ios::binary);
    std::ifstream b(scratch_.path(std::string("q") + output), std::ios::binary);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(a)), {}),
              std::string((std::istreambuf_iterator<char>(b)), {}))
        << output;
  }
}

TEST_F(CompileCommand, BadProfileSampleCountsAreUsageErrors) {
  const auto zero = run_tessera({"compile", graph_, "-o", package_, "--profile-samples=0"});
  EXPECT_EQ(zero.exit_status, 2);
  EXPECT_NE(zero.err.find("--profile-samples: a buffer needs room for at least 1 record"),
            std::string::npos)
      << zero.err;
  const auto many = run_tessera({"compile", graph_, "-o", package_, "--profile-samples=65537"});
  EXPECT_EQ(many.exit_status, 2);
  EXPECT_NE(many.err.find("--profile-samples: '65537' is more than 65536"), std::string::npos)
      << many.err;
  // Its value is optional, so it takes a following word that is no option:
  // the graph, here, which the error says.
  const auto taken = run_tessera({"compile", "--profile-samples", graph_, "-o", package_});
  EXPECT_EQ(taken.exit_status, 2);
  EXPECT_NE(
      taken.err.find("GRAPH is missing (--profile-samples took '" + graph_ +
                     "' as its value: write --profile-samples=VALUE, or give it after GRAPH)"),
      std::string::npos)
      << taken.err;
  EXPECT_FALSE(std::ifstream(package_).good());
}

// --threads N: the package is the same bytes on one thread as on four (the
// one-thread package schedules the phases one after another); outside 1 … 16
// it is a usage error naming the option.
TEST_F(CompileCommand, ThreadsChangeNoByteAndOutOfRangeCountsAreUsageErrors) {
  const std::string four = scratch_.path("four.ipuexe");
  ASSERT_EQ(run_tessera({"compile", graph_, "-o", package_, "--tiles", "6", "--threads", "1"})
                .exit_status,
            0);
  ASSERT_EQ(
      run_tessera({"compile", graph_, "-o", four, "--tiles", "6", "--threads", "4"}).exit_status, 0);
  std::ifstream a(package_, std::ios::binary), b(four, std::ios::binary);
  const std::string one_bytes((std::istreambuf_iterator<char>(a)), {});
  const std::string four_bytes((std::istreambuf_iterator<char>(b)), {});
  EXPECT_FALSE(one_bytes.empty());
  EXPECT_TRUE(one_bytes == four_bytes);

  const std::string other = scratch_.path("other.ipuexe");
  const auto zero = run_tessera({"compile", graph_, "-o", other, "--threads", "0"});
  EXPECT_EQ(zero.exit_status, 2);
  EXPECT_NE(zero.err.find("--threads: at least 1 thread is needed"), std::string::npos) << zero.err;
  const auto many = run_tessera({"compile", graph_, "-o", other, "--threads", "17"});
  EXPECT_EQ(many.exit_status, 2);
  EXPECT_NE(many.err.find("--threads: '17' is more than 16"), std::string::npos) << many.err;
  EXPECT_FALSE(std::ifstream(other).good());
}

// A loop with an exchange in every iteration: `inspect --debug` shows where
// the planned phases repeat (described once, with the loop's count).
TEST_F(CompileCommand, InspectDebugShowsThePlannedPhaseLoops) {
  std::ofstream(graph_) << R"({
    "format": "tessera.graph", "version": 1,
    "operations": [
      {"op": "host_input", "name": "x", "dtype": "f32", "shape": [4, 4], "result": "x"},
      {"op": "repeat", "count": 5, "carried": ["x"], "invariant": [], "results": ["h"],
       "body": {"arguments": ["a"],
                "operations": [{"op": "transpose", "inputs": ["a"], "permutation": [1, 0],
                                "result": "t"}],
                "yield": ["t"]}},
      {"op": "host_output", "name": "y", "inputs": ["h"]}
    ]
  })";
  const auto compiled = run_tessera({"compile", graph_, "-o", package_, "--tiles", "4"});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;
  const auto text = run_tessera({"inspect", package_, "--debug"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("per iteration, 5 iterations"), std::string::npos) << text.out;
  // Each tile's loop counter word (where a profiler reads the iteration).
  EXPECT_NE(text.out.find(" 5 iterations  <- op 1 (repeat %0)"), std::string::npos) << text.out;
  const auto json_out = run_tessera({"inspect", package_, "--debug", "--json"});
  ASSERT_EQ(json_out.exit_status, 0) << json_out.err;
  EXPECT_NE(json_out.out.find("\"phaseLoops\""), std::string::npos) << json_out.out;
  EXPECT_NE(json_out.out.find("\"count\": 5"), std::string::npos) << json_out.out;
}

}  // namespace
}  // namespace tessera
