// The random compilable graphs: every one verifies, stays inside what the
// compiler property test asks for, and the reference evaluates it.

#include "tests/testing/random_compiler_graph.hpp"

#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "compiler/ir/verifier.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::testing {
namespace {

using compiler::DType;
using compiler::Graph;
using compiler::OpKind;

InputRecipe input_of_shape(compiler::Shape shape, bool parameter = false) {
  InputRecipe input;
  input.shape = std::move(shape);
  input.parameter = parameter;
  return input;
}

StepRecipe step_of(StepKind kind) {
  StepRecipe step;
  step.kind = kind;
  return step;
}

std::size_t count_of(const Graph& graph, OpKind kind) { return graph.top_level(kind).size(); }

RC_GTEST_PROP(RandomCompilerGraph, GraphsVerifyAndTheReferenceEvaluatesThem, ()) {
  const GraphRecipe recipe = *graph_recipe();
  const Graph graph = build_graph(recipe);
  compiler::verify(graph);
  RC_ASSERT(build_graph(recipe) == graph);

  // layer_norm steps add their gamma and beta parameters, matmul steps
  // their weights, repeat steps their sequence.
  const std::size_t layer_norms = count_of(graph, OpKind::kLayerNorm);
  const std::size_t matmuls = count_of(graph, OpKind::kMatmul);
  const std::size_t repeats = count_of(graph, OpKind::kRepeat);
  const std::size_t bindings = count_of(graph, OpKind::kHostInput) + count_of(graph, OpKind::kParameter);
  RC_ASSERT(bindings >= 1u);
  RC_ASSERT(bindings <= 3u + 2 * layer_norms + matmuls + repeats);
  const std::size_t outputs = count_of(graph, OpKind::kHostOutput);
  RC_ASSERT(outputs >= 1u);
  RC_ASSERT(outputs <= 2u);
  RC_ASSERT(graph.block_count() == 1u + repeats);  // a body per repeat, none nested
  const std::size_t ops = graph.top().operations.size() - bindings - outputs;
  RC_ASSERT(ops >= 1u);
  RC_ASSERT(ops <= 6u * 3);  // a convert step is up to three converts
  for (const OpKind kind : {OpKind::kHostInput, OpKind::kParameter}) {
    for (const compiler::OpId id : graph.top_level(kind)) {
      const auto& name = std::get<compiler::BindingAttributes>(graph.operation(id).attributes).name;
      // [C] and [K, N] of any value's last axis
      if (name.starts_with("gamma") || name.starts_with("beta") || name.starts_with("w") || name.starts_with("s")) {
        continue;
      }
      const auto& type = graph.type(graph.operation(id).results[0]);
      RC_ASSERT(type.shape.size() >= 1u);
      RC_ASSERT(type.shape.size() <= 3u);
      RC_ASSERT(std::all_of(type.shape.begin(), type.shape.end(),
                            [](std::uint32_t extent) { return extent <= 9; }));
      RC_ASSERT(type.dtype() == DType::kF32 || type.dtype() == DType::kF16 ||
                type.dtype() == DType::kU32);
    }
  }
  RC_TAG(std::string(schema::dtype_name(recipe.dtype)));

  const TensorBytes values = *binding_bytes(graph);
  const TensorBytes results = evaluate_graph(graph, values);
  RC_ASSERT(results.size() == outputs);
  for (const compiler::OpId id : graph.top_level(OpKind::kHostOutput)) {
    const auto& op = graph.operation(id);
    const auto& name = std::get<compiler::BindingAttributes>(op.attributes).name;
    RC_ASSERT(results.at(name).size() == compiler::byte_size(graph.type(op.inputs[0])));
  }
}

RC_GTEST_PROP(RandomCompilerGraph, LargerExtentsStayWithinTheElementBound, ()) {
  RandomGraphOptions options;
  options.max_extent = 40;
  options.max_elements = 20000;
  const GraphRecipe recipe = *graph_recipe(options);
  const Graph graph = build_graph(recipe);
  compiler::verify(graph);
  for (std::uint32_t v = 0; v < graph.value_count(); ++v) {
    RC_ASSERT(compiler::element_count(graph.type({v}).shape) <= 20000u);
  }
}

// The plainest recipes (what shrinking ends at) still build: missing choices
// read as 0, missing inputs and outputs as one of each.
TEST(RandomCompilerGraph, EmptyAndAllZeroRecipesBuild) {
  const Graph empty = build_graph(GraphRecipe{});
  compiler::verify(empty);
  EXPECT_EQ(count_of(empty, OpKind::kHostInput), 1u);
  EXPECT_EQ(count_of(empty, OpKind::kHostOutput), 1u);

  GraphRecipe recipe;
  recipe.dtype = DType::kF16;
  InputRecipe derived;
  derived.derived = true;
  derived.drop_leading = 1;
  recipe.inputs = {input_of_shape({2, 3}), derived};
  for (std::uint8_t kind = 0; kind < kStepKindCount; ++kind) {
    recipe.steps.push_back(step_of(static_cast<StepKind>(kind)));
  }
  recipe.outputs = {0, 1};
  const Graph graph = build_graph(recipe);
  compiler::verify(graph);
  // Each kind built its own op (nothing fell back to a copy), chained.
  std::vector<OpKind> kinds;
  for (const compiler::OpId id : graph.top().operations) kinds.push_back(graph.operation(id).kind);
  EXPECT_EQ(kinds, (std::vector<OpKind>{OpKind::kHostInput, OpKind::kHostInput, OpKind::kCopy,
                                        OpKind::kSlice, OpKind::kConcat, OpKind::kReshape,
                                        OpKind::kTranspose, OpKind::kBroadcastTo, OpKind::kAdd,
                                        OpKind::kReduceSum, OpKind::kMul, OpKind::kGelu,
                                        OpKind::kConvert, OpKind::kConvert,  // f16 → f32 → f16
                                        OpKind::kParameter, OpKind::kParameter, OpKind::kLayerNorm,
                                        OpKind::kSoftmax, OpKind::kParameter, OpKind::kMatmul,
                                        // attention of a last axis of 1: no head dimension
                                        // the kernels take (AttentionSteps below)
                                        OpKind::kCopy,
                                        // one iteration adding entry 0 of s0
                                        OpKind::kParameter, OpKind::kRepeat,
                                        OpKind::kHostOutput, OpKind::kHostOutput}));
  EXPECT_EQ(graph.type({1}).shape, compiler::Shape({3}));  // derived: [2, 3] without axis 0
}

// Attention takes the value's last axis as the head dimension, cut to a
// multiple of 4, and its other axes as the sequence.
TEST(RandomCompilerGraph, AttentionSteps) {
  GraphRecipe recipe;
  recipe.dtype = DType::kF16;
  recipe.inputs = {input_of_shape({3, 2, 9})};
  recipe.steps = {step_of(StepKind::kAttention)};
  const Graph graph = build_graph(recipe);
  compiler::verify(graph);
  std::vector<OpKind> kinds;
  for (const compiler::OpId id : graph.top().operations) kinds.push_back(graph.operation(id).kind);
  EXPECT_EQ(kinds, (std::vector<OpKind>{OpKind::kHostInput, OpKind::kSlice, OpKind::kReshape,
                                        OpKind::kAttention, OpKind::kHostOutput}));
  EXPECT_EQ(graph.type(graph.operation(graph.top_level(OpKind::kAttention)[0]).results[0]).shape,
            compiler::Shape({1, 1, 6, 8}));
}

// A repeat step carries the value through its iterations, combining it with
// the entries of a sequence of extent `count` on axis 0: the choices read
// the count (1 + 2 = 3), then the combination (2 = matmul by [C, C]).
TEST(RandomCompilerGraph, RepeatSteps) {
  for (const DType dtype : {DType::kF32, DType::kU32}) {
    GraphRecipe recipe;
    recipe.dtype = dtype;
    recipe.inputs = {input_of_shape({2, 3})};
    StepRecipe repeat = step_of(StepKind::kRepeat);
    repeat.choices = {2, 2};
    recipe.steps = {repeat};
    const Graph graph = build_graph(recipe);
    compiler::verify(graph);
    ASSERT_EQ(count_of(graph, OpKind::kRepeat), 1u);
    const auto& op = graph.operation(graph.top_level(OpKind::kRepeat)[0]);
    const auto& attributes = std::get<compiler::RepeatAttributes>(op.attributes);
    EXPECT_EQ(attributes.count, 3u);
    EXPECT_EQ(attributes.sequence, 1u);
    ASSERT_EQ(graph.block_count(), 2u);
    std::vector<OpKind> body;
    for (const compiler::OpId id : graph.block(attributes.body).operations) body.push_back(graph.operation(id).kind);
    if (dtype == DType::kF32) {
      EXPECT_EQ(graph.type(op.inputs[1]).shape, compiler::Shape({3, 3, 3}));  // [count, C, C]
      EXPECT_NE(std::find(body.begin(), body.end(), OpKind::kMatmul), body.end());
    } else {
      EXPECT_EQ(graph.type(op.inputs[1]).shape, compiler::Shape({3, 2, 3}));  // entries replace the value
      EXPECT_NE(std::find(body.begin(), body.end(), OpKind::kCopy), body.end());
    }
    // The reference runs it (and the compile property test compares).
    const TensorBytes results = evaluate_graph(graph, binding_bytes(graph)(rc::Random(), 10).value());
    EXPECT_EQ(results.size(), 1u);
  }
}

TEST(RandomCompilerGraph, U32GraphsMoveDataOnly) {
  GraphRecipe recipe;
  recipe.dtype = DType::kU32;
  recipe.inputs = {input_of_shape({4})};
  recipe.steps = {step_of(StepKind::kAdd),  step_of(StepKind::kReduceSum),
                  step_of(StepKind::kMul),  step_of(StepKind::kGelu),
                  step_of(StepKind::kConvert), step_of(StepKind::kLayerNorm),
                  step_of(StepKind::kSoftmax), step_of(StepKind::kMatmul),
                  step_of(StepKind::kAttention)};
  const Graph graph = build_graph(recipe);
  compiler::verify(graph);
  EXPECT_EQ(count_of(graph, OpKind::kCopy), 9u);
}

TEST(RandomCompilerGraph, TheDescriptionShowsTheGraph) {
  GraphRecipe recipe;
  recipe.inputs = {input_of_shape({2}, /*parameter=*/true)};
  recipe.steps = {step_of(StepKind::kAdd)};
  std::ostringstream text;
  text << recipe;
  EXPECT_NE(text.str().find("add operand -0"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("%1 = add %0, %0 : f32[2]"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("parameter \"p0\""), std::string::npos) << text.str();
}

}  // namespace
}  // namespace tessera::testing
