// An attention graph through `tessera compile` and `tessera run`, as a user
// runs it, compared with the CPU reference within its bound.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "compiler/ir/graph_json.hpp"
#include "kernels/half.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/graph_reference.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

using runtime::HostTensor;
using testing::run_tessera;

// Two heads of 72, 13 queries, 71 keys.
constexpr const char* kGraph = R"({
  "format": "tessera.graph", "version": 1,
  "operations": [
    {"op": "host_input", "name": "q", "dtype": "f16", "shape": [1, 2, 13, 72], "result": "q"},
    {"op": "host_input", "name": "k", "dtype": "f16", "shape": [1, 2, 71, 72], "result": "k"},
    {"op": "host_input", "name": "v", "dtype": "f16", "shape": [1, 2, 71, 72], "result": "v"},
    {"op": "attention", "inputs": ["q", "k", "v"], "scale": 0.1178511301977579, "result": "o"},
    {"op": "host_output", "name": "o", "inputs": ["o"]}
  ]
})";

TEST(AttentionCommand, CompilesAndRunsWithinTheReferenceBound) {
  tessera::testing::ScratchDirectory scratch;
  const std::string graph = scratch.path("attention.json"), package = scratch.path("attention.ipuexe");
  std::ofstream(graph) << kGraph;
  const auto compiled = run_tessera({"compile", graph, "-o", package, "--tiles", "8"});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;

  std::mt19937 random(5);
  std::uniform_real_distribution<float> value(-1, 1);
  tessera::testing::TensorBytes bindings;
  std::vector<std::string> arguments{"run", package};
  for (const auto& [name, rows] : {std::pair{"q", std::size_t{13}}, {"k", std::size_t{71}}, {"v", std::size_t{71}}}) {
    std::vector<std::uint8_t> bytes(2 * 2 * rows * 72);
    for (std::size_t i = 0; i < bytes.size(); i += 2) {
      const std::uint16_t h = kernels::f32_to_f16(value(random));
      bytes[i] = static_cast<std::uint8_t>(h);
      bytes[i + 1] = static_cast<std::uint8_t>(h >> 8);
    }
    const std::string path = scratch.path(std::string(name) + ".npy");
    runtime::write_tensor_file(
        path, HostTensor(schema::DType::kF16, {1, 2, static_cast<std::uint64_t>(rows), 72}, bytes));
    bindings[name] = bytes;
    arguments.insert(arguments.end(), {"-i", std::string(name) + "=" + path});
  }
  const std::string out = scratch.path("o.npy");
  arguments.insert(arguments.end(), {"-o", "o=" + out});
  const auto run = run_tessera(arguments);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const HostTensor result = runtime::read_npy_file(out);
  EXPECT_EQ(result.shape(), (std::vector<std::uint64_t>{1, 2, 13, 72}));

  const compiler::Graph g = compiler::read_graph_json(kGraph);
  const auto reference = tessera::testing::evaluate_graph_with_bounds(g, bindings);
  const compiler::TensorType& type =
      g.type(g.operation(g.top_level(compiler::OpKind::kHostOutput).at(0)).inputs.at(0));
  const std::vector<std::uint8_t> device(result.bytes().begin(), result.bytes().end());
  const auto problem = tessera::testing::check_within_bounds(type, device, reference.outputs.at("o"),
                                                             reference.bounds.at("o"));
  EXPECT_FALSE(problem.has_value()) << *problem;
}

}  // namespace
}  // namespace tessera
