// `tessera profile --by layer` on a `repeat`: the loop is compiled once (its
// body's code computes each iteration's addresses) and run on the simulator,
// and every step inside it must be attributed to the iteration it ran in.
// The oracle is the per-step samples read straight from the profile file:
// a body operation's k-th kernel call on a tile (of n = count × calls per
// iteration) runs in iteration k / (n / count), whatever the counters say;
// each tile is in the loop for one stretch of time, its iterations in order;
// and the table's rows are sums of those samples.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "schema/profile.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

using nlohmann::json;
using testing::run_tessera;

constexpr unsigned kCount = 4;

// Four iterations of an add and two transposes (exchange in every one).
constexpr const char* kGraph = R"({
  "format": "tessera.graph", "version": 1,
  "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [16, 8], "result": "x"},
    {"op": "repeat", "count": 4, "carried": ["x"], "invariant": [], "results": ["h"],
     "body": {"arguments": ["a"],
              "operations": [
                {"op": "add", "inputs": ["a", "a"], "result": "d"},
                {"op": "transpose", "inputs": ["d"], "permutation": [1, 0], "result": "t"},
                {"op": "transpose", "inputs": ["t"], "permutation": [1, 0], "result": "u"}],
              "yield": ["u"]}},
    {"op": "host_output", "name": "y", "inputs": ["h"]}
  ]
})";

bool in_body(const std::string& operation) {
  return operation.find("(add ") != std::string::npos ||
         operation.find("(transpose ") != std::string::npos;
}

// Compiles `graph` on 8 tiles and runs it with x = 0.5 i on the simulator;
// checks y = x × factor (the loops ran) and returns the profile's path.
std::string compile_and_profile(tessera::testing::ScratchDirectory& scratch, const char* graph,
                                float factor) {
  const std::string graph_path = scratch.path("graph.json");
  std::ofstream(graph_path) << graph;
  const std::string package = scratch.path("loop.ipuexe");
  const auto compiled = run_tessera({"compile", graph_path, "-o", package, "--tiles", "8"});
  EXPECT_EQ(compiled.exit_status, 0) << compiled.err;
  std::vector<float> x(128);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i);
  std::vector<std::uint8_t> bytes(x.size() * 4);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  const std::string x_npy = scratch.path("x.npy"), y_npy = scratch.path("y.npy");
  runtime::write_tensor_file(x_npy, runtime::HostTensor(schema::DType::kF32, {16, 8}, bytes));
  const std::string profile_path = scratch.path("run.profile");
  const auto run = run_tessera(
      {"run", package, "-i", "x=" + x_npy, "-o", "y=" + y_npy, "--profile", profile_path});
  EXPECT_EQ(run.exit_status, 0) << run.err;
  // A .npy file ends with its data.
  std::ifstream in(y_npy, std::ios::binary);
  const std::string npy((std::istreambuf_iterator<char>(in)), {});
  EXPECT_GE(npy.size(), bytes.size());
  for (std::size_t i = 0; i < x.size() && npy.size() >= bytes.size(); ++i) {
    float value = 0;
    std::memcpy(&value, npy.data() + (npy.size() - bytes.size()) + 4 * i, 4);
    EXPECT_EQ(value, x[i] * factor) << i;
  }
  return profile_path;
}

TEST(ProfileLayers, EachRepeatIterationIsOneLayer) {
  tessera::testing::ScratchDirectory scratch;
  const std::string profile_path = compile_and_profile(scratch, kGraph, 16.0f);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const schema::Profile profile = schema::read_profile_file(profile_path);
  const std::regex label(R"((op \d+ \(repeat [^)]*\)) iteration (\d+))");
  std::set<std::string> loops;
  std::map<std::string, std::uint64_t> cycles_by_layer;
  std::uint64_t in_loop_cycles = 0, body_calls = 0;
  for (const auto& tile : profile.tiles) {
    std::map<std::pair<std::string, std::string>, std::vector<unsigned>> calls;  // iterations
    constexpr std::size_t kNone = ~std::size_t{0};
    std::size_t first = kNone, last = kNone;
    int previous_iteration = -1;
    for (std::size_t s = 0; s < tile.steps.size(); ++s) {
      const schema::StepText step = profile.text(tile.steps[s]);
      cycles_by_layer[step.layer.empty() ? "(no layer)" : step.layer] += tile.steps[s].cycles();
      if (!step.kernel.empty() && in_body(step.operation)) {
        EXPECT_FALSE(step.layer.empty()) << tile.tile << " step " << s << " " << step.operation;
      }
      if (step.layer.empty()) continue;
      std::smatch match;
      ASSERT_TRUE(std::regex_match(step.layer, match, label)) << step.layer;
      loops.insert(match[1].str());
      const int iteration = std::stoi(match[2].str());
      EXPECT_LT(iteration, static_cast<int>(kCount)) << step.layer;
      EXPECT_GE(iteration, previous_iteration) << tile.tile << " step " << s << ": in order";
      previous_iteration = iteration;
      if (first == kNone) first = s;
      last = s;
      if (!step.kernel.empty() && in_body(step.operation)) {
        calls[{step.kernel, step.operation}].push_back(static_cast<unsigned>(iteration));
      }
    }
    // The loop is one stretch of the tile's time: every step in it is in an
    // iteration, and together they cover it from start to end.
    if (first == kNone) continue;
    std::uint64_t covered = 0;
    for (std::size_t s = first; s <= last; ++s) {
      EXPECT_FALSE(profile.layer(tile.steps[s]).empty())
          << tile.tile << " step " << s << " inside the loop";
      covered += tile.steps[s].cycles();
    }
    EXPECT_EQ(covered, std::uint64_t{static_cast<std::uint32_t>(tile.steps[last].end_cycle -
                                                               tile.steps[first].start_cycle)})
        << tile.tile;
    in_loop_cycles += covered;
    // The oracle: the k-th of a body operation's n calls is in iteration k / (n / count).
    for (const auto& [call, iterations] : calls) {
      ASSERT_EQ(iterations.size() % kCount, 0u) << tile.tile << " " << call.second;
      const std::size_t per_iteration = iterations.size() / kCount;
      for (std::size_t k = 0; k < iterations.size(); ++k) {
        EXPECT_EQ(iterations[k], k / per_iteration) << tile.tile << " " << call.second << " #" << k;
      }
      body_calls += iterations.size();
    }
  }
  ASSERT_EQ(loops.size(), 1u) << "one repeat";
  EXPECT_GT(body_calls, 0u);

  // The table: one row per iteration and one for the steps outside the loop,
  // each the sum of its samples; the iterations' rows add up to the loop's time.
  const auto table = run_tessera({"profile", profile_path, "--json", "--by", "layer", "--limit", "0"});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  const json doc = json::parse(table.out);
  std::set<std::string> rows;
  std::uint64_t iteration_cycles = 0;
  for (const auto& group : doc["groups"]) {
    const std::string name = group["name"];
    rows.insert(name);
    EXPECT_EQ(group["cycles"].get<std::uint64_t>(), cycles_by_layer[name]) << name;
    if (name != "(no layer)") iteration_cycles += group["cycles"].get<std::uint64_t>();
  }
  std::set<std::string> expected = {"(no layer)"};
  for (unsigned i = 0; i < kCount; ++i) {
    expected.insert(fmt::format("{} iteration {}", *loops.begin(), i));
  }
  EXPECT_EQ(rows, expected);
  EXPECT_EQ(iteration_cycles, in_loop_cycles);
}

// A repeat inside a repeat: a step in the inner body is in an iteration of
// both, outer first. Oracle as above: the k-th of an operation's n calls on a
// tile is in (flattened) iteration k / (n / iterations of its body).
TEST(ProfileLayers, NestedRepeatsNameBothIterations) {
  constexpr const char* kNested = R"({
    "format": "tessera.graph", "version": 1,
    "operations": [
      {"op": "host_input", "name": "x", "dtype": "f32", "shape": [16, 8], "result": "x"},
      {"op": "repeat", "count": 2, "carried": ["x"], "invariant": [], "results": ["h"],
       "body": {"arguments": ["a"],
                "operations": [
                  {"op": "add", "inputs": ["a", "a"], "result": "d"},
                  {"op": "repeat", "count": 3, "carried": ["d"], "invariant": [], "results": ["e"],
                   "body": {"arguments": ["b"],
                            "operations": [
                              {"op": "transpose", "inputs": ["b"], "permutation": [1, 0],
                               "result": "t"},
                              {"op": "transpose", "inputs": ["t"], "permutation": [1, 0],
                               "result": "u"}],
                            "yield": ["u"]}}],
                "yield": ["e"]}},
      {"op": "host_output", "name": "y", "inputs": ["h"]}
    ]
  })";
  tessera::testing::ScratchDirectory scratch;
  const std::string profile_path = compile_and_profile(scratch, kNested, 4.0f);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const schema::Profile profile = schema::read_profile_file(profile_path);
  const std::string outer = "op 1 (repeat %0)", inner = "op 3 (repeat %2)";
  const auto outer_label = [&](std::size_t i) { return fmt::format("{} iteration {}", outer, i); };
  const auto inner_label = [&](std::size_t q) {
    return fmt::format("{} / {} iteration {}", outer_label(q / 3), inner, q % 3);
  };
  std::size_t checked = 0;
  for (const auto& tile : profile.tiles) {
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> calls;
    for (const auto& counted : tile.steps) {
      const schema::StepText step = profile.text(counted);
      if (!step.kernel.empty() && in_body(step.operation)) {
        calls[{step.kernel, step.operation}].push_back(step.layer);
      }
    }
    for (const auto& [call, layers] : calls) {
      const bool in_inner = call.second.find("(transpose ") != std::string::npos;
      const std::size_t iterations = in_inner ? 6 : 2;
      ASSERT_EQ(layers.size() % iterations, 0u) << tile.tile << " " << call.second;
      const std::size_t per_iteration = layers.size() / iterations;
      for (std::size_t k = 0; k < layers.size(); ++k) {
        const std::size_t q = k / per_iteration;
        EXPECT_EQ(layers[k], in_inner ? inner_label(q) : outer_label(q))
            << tile.tile << " " << call.second << " #" << k;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0u);
  const auto table = run_tessera({"profile", profile_path, "--json", "--by", "layer", "--limit", "0"});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  std::set<std::string> rows, expected = {"(no layer)"};
  const json doc = json::parse(table.out);
  for (const auto& group : doc["groups"]) rows.insert(group["name"].get<std::string>());
  for (std::size_t i = 0; i < 2; ++i) expected.insert(outer_label(i));
  for (std::size_t q = 0; q < 6; ++q) expected.insert(inner_label(q));
  EXPECT_EQ(rows, expected);
}

// A SigLIP tower's encoder layers are one repeat (never unrolled): `siglip
// run --profile` gives one --by layer row per layer, and the rows (with the
// steps outside the loop) partition the steps.
TEST(ProfileLayers, ASiglipTowersEncoderLayersAreItsLayers) {
  tessera::testing::ScratchDirectory scratch;
  const std::string config = scratch.path("tiny.json");
  std::ofstream(config) << R"({"model_type": "siglip_vision_model", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 2,
    "image_size": 32, "patch_size": 8})";
  const std::string model = scratch.path("tiny");
  ASSERT_EQ(run_tessera({"siglip", "random-weights", "--config", config, "-o", model}).exit_status,
            0);
  std::vector<float> pixels(3 * 32 * 32);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    pixels[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
  }
  std::vector<std::uint8_t> bytes(pixels.size() * 4);
  std::memcpy(bytes.data(), pixels.data(), bytes.size());
  const std::string pixels_npy = scratch.path("pixels.npy");
  runtime::write_tensor_file(pixels_npy,
                             runtime::HostTensor(schema::DType::kF32, {1, 3, 32, 32}, bytes));
  const std::string profile = scratch.path("tower.profile");
  const auto ran = run_tessera({"siglip", "run", "--model", model, "--precision", "f16", "--tiles",
                                "64", "--pixels", pixels_npy, "--profile", profile});
  ASSERT_EQ(ran.exit_status, 0) << ran.err;
  const auto table = run_tessera({"profile", profile, "--json", "--by", "layer", "--limit", "0"});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  const json doc = json::parse(table.out);
  const std::regex layer(R"(op \d+ \(repeat [^)]*\) iteration (\d+))");
  std::set<int> iterations;
  std::uint64_t cycles = 0;
  for (const auto& group : doc["groups"]) {
    const std::string name = group["name"];
    cycles += group["cycles"].get<std::uint64_t>();
    if (name == "(no layer)") continue;
    std::smatch match;
    ASSERT_TRUE(std::regex_match(name, match, layer)) << name;
    iterations.insert(std::stoi(match[1].str()));
    EXPECT_GT(group["cycles"].get<std::uint64_t>(), 0u) << name;
  }
  EXPECT_EQ(iterations, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(cycles, doc["summary"]["stepCycles"].get<std::uint64_t>());
}

}  // namespace
}  // namespace tessera
