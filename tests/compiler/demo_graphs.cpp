#include "tests/compiler/demo_graphs.hpp"

#include <string>

namespace tessera::compiler::testing {
namespace {

ValueId rotate(Graph& g, ValueId x, std::uint32_t rows, std::uint32_t columns, std::uint32_t shift) {
  const ValueId tail = g.slice(x, {shift, 0}, {rows, columns});
  const ValueId head = g.slice(x, {0, 0}, {shift, columns});
  return g.concat({tail, head}, 0);
}

}  // namespace

Graph rotation_graph(std::uint32_t rows, std::uint32_t columns, std::uint32_t shift) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {rows, columns});
  g.host_output("y", rotate(g, x, rows, columns, shift));
  return g;
}

Graph rotations_graph(std::uint32_t rows, std::uint32_t columns, std::uint32_t count) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {rows, columns});
  for (std::uint32_t k = 0; k < count; ++k) {
    g.host_output("y" + std::to_string(k), rotate(g, x, rows, columns, (737 + 2 * k) % rows));
  }
  return g;
}

Graph permutation_and_reduction_graph() {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {1472, 1024});
  const ValueId y = rotate(g, x, 1472, 1024, 737);
  g.host_output("y", y);
  const ValueId groups = g.reduce_sum(g.reshape(y, {46, 32, 1024}), {1});
  g.host_output("s", g.reduce_sum(groups, {0}));
  return g;
}

}  // namespace tessera::compiler::testing
