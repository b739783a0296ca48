#pragma once
// Compiled-graph conformance cases: the exchange patterns of the simulator's
// exchange tests (point-to-point sizes, multicast, relay, the all-tile
// permutation, tree reduction) written as graphs, compiled by
// compiler::compile and run on any runtime::Transport through
// runtime::Session. Every output is compared byte for byte with the CPU
// reference (tests/testing/graph_reference.hpp), so a backend passes a case
// exactly when it computes what the graph means.
//
// The patterns come from the default layout (compiler/lower/layout_policy.hpp):
// a value is split along axis 0 in row blocks over logical tiles 0 … N−1 and
// every operation materialises its result in that layout, so
//   slice / concat of rows    moves a row between two tiles (point to point),
//   broadcast_to [1, n]→[k, n] sends tile 0's row to k − 1 other tiles at once,
//   successive row rotations  pass a row on from the tile that just received it,
//   reshape then reduce_sum   gathers partial sums on fewer tiles, twice.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "runtime/transport.hpp"
#include "schema/model.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::conformance {

using testing::TensorBytes;

// What goes into a case's host inputs and parameters.
enum class GraphInputs {
  kAnyBits,      // every bit pattern (NaN payloads, denormals): data movement must keep bits
  kFiniteValues,  // finite values of mixed magnitude: sums whose rounding depends on order
  // Values a model's tensors take: floats with |x| < 2 (random significand),
  // i32 block scales in [−8, −4], u8 F143 codes of any finite value (never
  // 0x80, the NaN): what matmul, GeLU, LayerNorm, softmax and attention cases need.
  kModelValues
};

struct GraphCase {
  std::string name;       // a GoogleTest-safe name: letters, digits, '_'
  std::string exercises;  // one line: the pattern and its sizes
  std::uint32_t tiles = 1;
  std::function<compiler::Graph()> build;
  GraphInputs inputs = GraphInputs::kAnyBits;
  std::uint64_t seed = 1;
};

// GoogleTest prints a case by its name and tile count.
void PrintTo(const GraphCase& graph_case, std::ostream* os);

// Every case, in a fixed order (docs: conformance/README.md).
const std::vector<GraphCase>& graph_cases();
// The case named `name`; UsageError when there is none.
const GraphCase& graph_case(const std::string& name);

// Deterministic bytes for every host input and parameter of `graph`.
TensorBytes graph_case_bindings(const compiler::Graph& graph, GraphInputs inputs,
                                std::uint64_t seed);

// The first element where `actual` differs from `expected` for a tensor of
// `type`, described with its index ("y[1, 37] (element 1061): expected
// 0x3f800000, got 0x00000000"); empty when the bytes are equal.
std::string first_difference(const std::string& binding, const compiler::TensorType& type,
                             const std::vector<std::uint8_t>& expected,
                             const std::vector<std::uint8_t>& actual);

struct GraphCaseRun {
  TensorBytes outputs;
  std::uint64_t compiled_bytes = 0;  // the serialized package
  double compile_seconds = 0;
  double run_seconds = 0;  // Session: load, every host call, finish
};

// Runs every host call of `application` in order through a runtime::Session
// on `transport`, each with its input bindings from `bindings`, finishes the
// session and returns every host output by name.
TensorBytes run_package(runtime::Transport& transport, const schema::Application& application,
                        const TensorBytes& bindings);

// Compiles the case, runs every host call of the package in order through a
// runtime::Session on `transport` ("load_parameters" when the graph has
// parameters, then "run"), and expects every host output to equal the CPU
// reference's bytes (GoogleTest assertions: run it inside a TEST).
GraphCaseRun run_graph_case(runtime::Transport& transport, const GraphCase& graph_case);

// For a backend that cannot run compiled packages yet (c600: the kernels are
// host models, so a compiled package is not hardware-loadable): expects the
// compiled package to say so and a Session on `transport` to refuse it with
// an error naming the reason ("… not hardware-loadable: kernels are emulated
// only"). Returns the error's message.
std::string expect_graph_case_refused(runtime::Transport& transport, const GraphCase& graph_case);

}  // namespace tessera::conformance
