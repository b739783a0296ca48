// `tessera compile` + `tessera run` on a JSON graph of every pointwise and
// normalisation op (mul with a broadcast, gelu, convert f32 → f16 → f8f143 →
// f16 → f32 of the exact product, layer_norm, softmax), f32 and f16: the outputs the CLI writes
// equal the CPU reference (bit for bit for mul and convert, within the
// bounds for the others).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "compiler/ir/graph_json.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/graph_reference.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

using runtime::HostTensor;
using testing::run_tessera;

constexpr const char* kGraph = R"({
  "format": "tessera.graph", "version": 1,
  "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [13, 71], "result": "x"},
    {"op": "parameter", "name": "w", "dtype": "f32", "shape": [71], "result": "w"},
    {"op": "parameter", "name": "gamma", "dtype": "f16", "shape": [71], "result": "gamma"},
    {"op": "parameter", "name": "beta", "dtype": "f16", "shape": [71], "result": "beta"},
    {"op": "mul", "inputs": ["x", "w"], "result": "xw"},
    {"op": "gelu", "inputs": ["xw"], "approximation": "tanh", "result": "g"},
    {"op": "convert", "inputs": ["xw"], "dtype": "f16", "result": "h"},
    {"op": "convert", "inputs": ["h"], "dtype": "f8f143", "scale": -2, "result": "q"},
    {"op": "convert", "inputs": ["q"], "dtype": "f16", "result": "e"},
    {"op": "convert", "inputs": ["e"], "dtype": "f32", "result": "f"},
    {"op": "layer_norm", "inputs": ["h", "gamma", "beta"], "epsilon": 1e-6, "result": "n"},
    {"op": "softmax", "inputs": ["x"], "axis": 1, "result": "p"},
    {"op": "host_output", "name": "xw", "inputs": ["xw"]},
    {"op": "host_output", "name": "g", "inputs": ["g"]},
    {"op": "host_output", "name": "f", "inputs": ["f"]},
    {"op": "host_output", "name": "n", "inputs": ["n"]},
    {"op": "host_output", "name": "p", "inputs": ["p"]}
  ]
})";

std::vector<std::uint8_t> random_f32(std::size_t n, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = value(random);
  std::vector<std::uint8_t> bytes(4 * n);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

std::vector<std::uint8_t> random_f16(std::size_t n, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> mantissa(0, 1023), exponent(13, 16), sign(0, 1);
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = 0; i < n; ++i) {
    const auto bits = static_cast<std::uint16_t>((sign(random) << 15) | (exponent(random) << 10) |
                                                 mantissa(random));
    bytes.push_back(static_cast<std::uint8_t>(bits));
    bytes.push_back(static_cast<std::uint8_t>(bits >> 8));
  }
  return bytes;
}

TEST(PointwiseCommand, CompilesAndRunsEveryPointwiseAndNormalisationOp) {
  tessera::testing::ScratchDirectory scratch;
  const std::string graph_path = scratch.path("graph.json"), package = scratch.path("graph.ipuexe");
  std::ofstream(graph_path) << kGraph;
  const auto compiled = run_tessera({"compile", graph_path, "-o", package, "--tiles", "7"});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;

  const compiler::Graph graph = compiler::read_graph_json(kGraph);
  tessera::testing::TensorBytes bindings{{"x", random_f32(13 * 71, 1)},
                                         {"w", random_f32(71, 2)},
                                         {"gamma", random_f16(71, 3)},
                                         {"beta", random_f16(71, 4)}};
  const std::map<std::string, std::pair<schema::DType, std::vector<std::uint64_t>>> inputs = {
      {"x", {schema::DType::kF32, {13, 71}}},
      {"w", {schema::DType::kF32, {71}}},
      {"gamma", {schema::DType::kF16, {71}}},
      {"beta", {schema::DType::kF16, {71}}}};
  std::vector<std::string> arguments{"run", package};
  for (const auto& [name, type] : inputs) {
    const std::string path = scratch.path(name + ".npy");
    runtime::write_tensor_file(path, HostTensor(type.first, type.second, bindings.at(name)));
    arguments.insert(arguments.end(), {"-i", name + "=" + path});
  }
  for (const char* name : {"xw", "g", "f", "n", "p"}) {
    arguments.insert(arguments.end(), {"-o", std::string(name) + "=" + scratch.path(std::string(name) + ".npy")});
  }
  const auto run = run_tessera(arguments);
  ASSERT_EQ(run.exit_status, 0) << run.err;

  const auto reference = tessera::testing::evaluate_graph_with_bounds(graph, bindings);
  for (const compiler::OpId op : graph.top_level(compiler::OpKind::kHostOutput)) {
    const auto& name = std::get<compiler::BindingAttributes>(graph.operation(op).attributes).name;
    SCOPED_TRACE(name);
    const HostTensor tensor = runtime::read_npy_file(scratch.path(name + ".npy"));
    const auto problem = tessera::testing::check_within_bounds(
        graph.type(graph.operation(op).inputs[0]),
        std::vector<std::uint8_t>(tensor.bytes().begin(), tensor.bytes().end()), reference.outputs.at(name),
        reference.bounds.at(name));
    EXPECT_FALSE(problem.has_value()) << *problem;
  }
}

}  // namespace
}  // namespace tessera
