// The compiler's graph-level property (issue 8, part 10): random graphs of
// the data-movement, add, reduce_sum, mul, gelu, convert, layer_norm,
// softmax, matmul and (f16) attention operations over random shapes, dtypes (f32, f16, u32) and tile
// counts compile, run on the simulator backend through runtime::Session, and
// equal the CPU reference (tests/testing/graph_reference.hpp) bit for bit
// where the semantics is exact, within graph_bounds.hpp's bounds elsewhere.
// A failure shrinks to a small graph (printed with its recipe) and prints
// the RC_PARAMS that replays it; TESSERA_PROPERTY_SCALE multiplies the case count
// (compiler/README.md, "Property tests").
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <algorithm>

#include "compiler/compile.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/compiler/property_check.hpp"
#include "tests/testing/graph_reference.hpp"
#include "tests/testing/random_compiler_graph.hpp"

namespace tessera::compiler {
namespace {

// The first byte where `actual` differs from `expected`, or "".
std::string first_difference(const std::vector<std::uint8_t>& expected, const std::vector<std::uint8_t>& actual) {
  if (expected.size() != actual.size()) {
    return fmt::format("{} bytes, expected {}", actual.size(), expected.size());
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != actual[i]) {
      return fmt::format("byte {}: {:#04x}, expected {:#04x}", i, actual[i], expected[i]);
    }
  }
  return "";
}

// Input bytes, shown in a counterexample as names and sizes only (the bytes
// of a larger graph would bury the graph itself; the reproduce string
// regenerates them).
struct Inputs {
  tessera::testing::TensorBytes bytes;
};

std::ostream& operator<<(std::ostream& out, const Inputs& inputs) {
  for (const auto& [name, bytes] : inputs.bytes) out << name << ": " << bytes.size() << " bytes; ";
  return out;
}

// One case: a graph from `options`, compiled for one of `tile_counts`, run on
// the simulator, every output compared with the reference.
void check_random_graph(const tessera::testing::RandomGraphOptions& options,
                        const std::vector<std::uint32_t>& tile_counts) {
  const auto recipe = *tessera::testing::graph_recipe(options);
  const std::uint32_t tiles = *rc::gen::elementOf(tile_counts);
  const Graph graph = tessera::testing::build_graph(recipe);
  const auto bindings =
      (*rc::gen::map(tessera::testing::binding_bytes(graph), [](auto bytes) { return Inputs{std::move(bytes)}; }))
          .bytes;
  RC_TAG(tiles);
  const auto expected = tessera::testing::evaluate_graph_with_bounds(graph, bindings);
  const CompileResult compiled = compile(graph, {.tiles = tiles});
  const auto run = testing::run_on_simulator(compiled.application, bindings);
  for (const OpId op : graph.top_level(OpKind::kHostOutput)) {
    const auto& name = std::get<BindingAttributes>(graph.operation(op).attributes).name;
    const auto found = run.outputs.find(name);
    RC_ASSERT(found != run.outputs.end());
    const auto& bytes = expected.outputs.at(name);
    // Bit for bit where every element is exact; else within its bounds.
    const auto& bounds = expected.bounds.at(name);
    const bool exact = std::all_of(bounds.begin(), bounds.end(), [](const auto& bound) {
      return bound.kind == tessera::testing::ElementBound::Kind::kExact;
    });
    const std::string difference =
        exact ? first_difference(bytes, found->second)
              : tessera::testing::check_within_bounds(graph.type(graph.operation(op).inputs[0]),
                                                      found->second, bytes, bounds)
                    .value_or("");
    if (!difference.empty()) RC_FAIL(fmt::format("output {} on {} tiles: {}", name, tiles, difference));
  }
}

// Small graphs (extents ≤ 9), many cases: 10 × max_success.
TEST(CompileProperty, RandomGraphsEqualTheCpuReferenceOnTheSimulator) {
  testing::check_scaled(10, [] { check_random_graph({}, {1, 2, 3, 4, 7, 16, 64, 300}); });
}

// Larger tensors (extents ≤ 64, ≤ 16384 elements) spread up to the whole chip:
// about 0.5 s a case, so a tenth of max_success.
TEST(CompileProperty, LargerGraphsOnUpToTheWholeChip) {
  tessera::testing::RandomGraphOptions options;
  options.max_extent = 64;
  options.max_elements = 16384;
  testing::check_scaled(0.1, [options] { check_random_graph(options, {5, 64, 1000, 1472}); });
}

}  // namespace
}  // namespace tessera::compiler
