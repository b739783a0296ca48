// Writes the demo graph (tests/compiler/demo_graphs.hpp: an all-tile
// permutation of f32[1472, 1024] plus a two-level column-sum tree), an input x
// and the CPU reference outputs (tests/testing/graph_reference.hpp), for
// `make demo`:  make_demo_graph DIR
//   DIR/graph.json  DIR/x.npy  DIR/y_expected.npy  DIR/s_expected.npy
// The package itself is compiled by `tessera compile` from graph.json.
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "compiler/ir/graph_json.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "tests/compiler/demo_graphs.hpp"
#include "tests/testing/graph_reference.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  if (argc != 2) {
    std::cerr << "usage: make_demo_graph DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  try {
    const compiler::Graph graph = compiler::testing::permutation_and_reduction_graph();
    std::ofstream(dir + "/graph.json") << compiler::write_graph_json(graph);
    // Values with fractional parts of very different sizes, so that the
    // order of every sum shows in its bits.
    const std::size_t rows = 1472, columns = 1024;
    std::vector<float> x(rows * columns);
    std::uint32_t state = 12345;
    for (auto& value : x) {
      state = state * 1664525u + 1013904223u;
      value = static_cast<float>(static_cast<std::int32_t>(state >> 8) - (1 << 23)) /
              static_cast<float>(1u << ((state >> 4) % 20));
    }
    std::vector<std::uint8_t> bytes(x.size() * 4);
    std::memcpy(bytes.data(), x.data(), bytes.size());
    runtime::write_tensor_file(dir + "/x.npy", runtime::HostTensor(schema::DType::kF32, {rows, columns}, bytes));
    const auto outputs = testing::evaluate_graph(graph, {{"x", bytes}});
    runtime::write_tensor_file(dir + "/y_expected.npy",
                               runtime::HostTensor(schema::DType::kF32, {rows, columns}, outputs.at("y")));
    runtime::write_tensor_file(dir + "/s_expected.npy",
                               runtime::HostTensor(schema::DType::kF32, {columns}, outputs.at("s")));
  } catch (const std::exception& error) {
    std::cerr << "make_demo_graph: " << error.what() << '\n';
    return 1;
  }
  return 0;
}
