#pragma once
// Random *compilable* graphs for the compiler's property tests, and random
// bytes for their bindings.
//
// A graph is built from a GraphRecipe: plain numbers that RapidCheck shrinks
// well (fewer steps, smaller extents, choices toward 0). Every recipe builds a
// valid graph: each number is read modulo what the graph allows at that point
// (an operand counted back from the latest value, a slice bound inside its
// extent, a divisor of an element count), so any shrink of a recipe is still
// a recipe. The choices all shrink toward the plainest op (0 = the latest
// value, the identity permutation, the full slice, reduce axis 0).
//
// Unlike tests/compiler/ir/random_graph.hpp (every dtype, repeats, ops the
// builder refuses are dropped), these graphs are what the compiler is meant
// to compile today: one dtype per graph (f32 or f16, sometimes u32 for pure
// data movement; a convert goes to another dtype and back), ranks 1–3 at the
// inputs, repeats only of one op over a sequence (kRepeat).

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "compiler/ir/graph.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::testing {

struct RandomGraphOptions {
  std::uint32_t max_extent = 9;       // of input axes and of broadcast targets
  std::size_t max_inputs = 3;         // host inputs and parameters, ≥ 1
  std::size_t max_steps = 6;          // ops in the chain, ≥ 1
  std::uint64_t max_elements = 4096;  // larger inputs are cut; a larger op becomes a copy
  bool allow_u32 = true;              // some graphs are u32 data movement only
};

struct InputRecipe {
  bool parameter = false;  // else a host input
  // An explicit shape (rank 1–3, extents clamped to [1, max_extent], empty
  // read as [1]), unless derived and not the first input: then the shape of
  // input `derive_from` modulo the inputs before it, without its first
  // `drop_leading` axes (keeping at least one) and with the axes in
  // `ones_mask` set to 1, so adds between inputs broadcast.
  std::vector<std::uint32_t> shape;
  bool derived = false;
  std::uint32_t derive_from = 0;
  std::uint32_t drop_leading = 0;
  std::uint32_t ones_mask = 0;
};

// The kinds a step may take, in the order they shrink toward (copy first).
enum class StepKind : std::uint8_t {
  kCopy,
  kSlice,
  kConcat,
  kReshape,
  kTranspose,
  kBroadcastTo,
  kAdd,
  kReduceSum,
  kMul,
  kGelu,
  kConvert,    // a round trip that keeps the graph's dtype (see build_graph)
  kLayerNorm,  // gamma and beta are new parameters gamma<k>, beta<k> of [C]
  kSoftmax,
  kMatmul,     // by a new parameter w<k> of [K, N] (a rank-1 value as one row)
  kAttention,  // self-attention of an f16 value as one head: q = k = v of [1, 1, S, D],
               // D its last axis cut to a multiple of 4 (up to 128)
  kRepeat,     // 1–3 iterations carrying the value, each combining it with entry i of a
               // new sequence parameter s<k>: add, mul, or matmul by an entry of
               // [count, C, C] (u32: the entry itself replaces the value); a copy
               // where the lowering takes no such sequence (sub-word scalar entries)
};
inline constexpr std::uint8_t kStepKindCount = 16;

// One op. `operand` counts back from the latest value (0 = the previous
// step's result, so shrinking gives a chain); `choices` are read per kind
// (see random_compiler_graph.cpp, build_graph). add, mul, reduce_sum, gelu,
// convert, layer_norm, softmax and matmul on a u32 graph, attention on
// anything but f16 (f32 attention is not lowered yet), reduce_sum,
// layer_norm, softmax, matmul and attention of a scalar, concat of a scalar
// and ops whose result would exceed max_elements build a copy instead.
struct StepRecipe {
  StepKind kind = StepKind::kCopy;
  std::uint32_t operand = 0;
  std::vector<std::uint32_t> choices;
};

struct GraphRecipe {
  compiler::DType dtype = compiler::DType::kF32;
  std::vector<InputRecipe> inputs;  // 1..max_inputs
  std::vector<StepRecipe> steps;    // 1..max_steps
  std::vector<std::uint32_t> outputs;  // 1–2, each counts back from the latest value
  std::uint32_t max_extent = 9;        // the options' knobs that the build needs
  std::uint64_t max_elements = 4096;
};

// The graph a recipe describes; it always passes compiler::verify. Inputs
// are named in0, in1, … (parameters p0, p1, … with the same numbering),
// outputs out0, out1.
compiler::Graph build_graph(const GraphRecipe& recipe);

// Random recipes (shrink toward fewer inputs, steps and outputs, smaller
// extents, f32, plainer choices).
rc::Gen<GraphRecipe> graph_recipe(RandomGraphOptions options = {});

// Random bytes for every host input and parameter of `graph`: f32 and f16
// mostly moderate finite values, with ±0, subnormals, ±Inf and NaN now and
// then; every other dtype arbitrary bits.
rc::Gen<TensorBytes> binding_bytes(const compiler::Graph& graph);

std::string step_kind_name(StepKind kind);

// The recipe's numbers and the graph it builds (print_graph), which is how
// RapidCheck shows a counterexample.
std::ostream& operator<<(std::ostream& out, const GraphRecipe& recipe);

}  // namespace tessera::testing
