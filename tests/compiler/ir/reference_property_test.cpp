// The CPU reference (tests/testing/graph_reference.hpp) on the random graphs
// of every operation that testing::random_graph() builds — issue 18's
// included, on small shapes, with block-scaled weights and sequences: it
// evaluates every one, deterministically, with one bound per output element,
// and bit-exact bounds wherever the graph has no plan-dependent operation.

#include <cmath>
#include <set>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "compiler/ir/printer.hpp"
#include "random_graph.hpp"
#include "kernels/weight_panels.hpp"
#include "tests/testing/graph_reference.hpp"
#include "tests/testing/random_compiler_graph.hpp"

namespace tessera::compiler {
namespace {

using tessera::testing::ElementBound;

bool plan_dependent(OpKind kind) {
  return kind == OpKind::kMatmul || kind == OpKind::kGelu || kind == OpKind::kLayerNorm ||
         kind == OpKind::kSoftmax || kind == OpKind::kAttention;
}

// Binding bytes for a random graph: the float values of
// tessera::testing::binding_bytes, and block scales inside the F143 range
// (any other i32 would be refused, as it should: BlockScaleGivesEach64x64BlockItsScale).
tessera::testing::TensorBytes random_bindings(const Graph& g) {
  auto bindings = *tessera::testing::binding_bytes(g);
  const auto found = bindings.find("scales");
  if (found != bindings.end()) {
    for (std::size_t i = 0; i < found->second.size(); i += 4) {
      const auto scale = static_cast<std::int32_t>(*rc::gen::inRange(-8, 9));
      for (std::size_t b = 0; b < 4; ++b) {
        found->second[i + b] =
            static_cast<std::uint8_t>(static_cast<std::uint32_t>(scale) >> (8 * b));
      }
    }
  }
  // Codes in weight panels: their padding must be 0 (the reference refuses
  // another: BlockScaleOfPanelCodes), so the random codes are packed from a
  // random [K, N] as a host packs them.
  for (std::uint32_t i = 0; i < g.operation_count(); ++i) {
    const Operation& op = g.operation(OpId{i});
    if (op.kind != OpKind::kBlockScale) continue;
    const auto& packing = std::get<BlockScaleAttributes>(op.attributes);
    if (packing.panels == 0) continue;
    const auto& name = std::get<BindingAttributes>(g.operation(*g.value(op.inputs[0]).op).attributes).name;
    auto& codes = bindings.at(name);
    const std::uint32_t k = packing.matrix[0], n = packing.matrix[1];
    std::vector<std::uint8_t> matrix(codes.begin(), codes.begin() + std::ptrdiff_t{k} * n);
    codes = kernels::amp::to_weight_panels<std::uint8_t>(matrix, k, n, packing.panels);
  }
  return bindings;
}

std::set<OpKind> kinds_of(const Graph& g) {
  std::set<OpKind> kinds;
  for (std::uint32_t i = 0; i < g.operation_count(); ++i) kinds.insert(g.operation(OpId{i}).kind);
  return kinds;
}

RC_GTEST_PROP(ReferenceProperty, EvaluatesRandomGraphsOfEveryOperationWithBounds, ()) {
  const Graph g = testing::random_graph();
  const auto bindings = random_bindings(g);
  RC_LOG() << print_graph(g);
  const auto first = tessera::testing::evaluate_graph_with_bounds(g, bindings);
  const auto second = tessera::testing::evaluate_graph_with_bounds(g, bindings);
  RC_ASSERT(first.outputs == second.outputs);
  RC_ASSERT(first.bounds == second.bounds);
  const auto kinds = kinds_of(g);
  const bool exact = std::none_of(kinds.begin(), kinds.end(), plan_dependent);
  for (const OpId id : g.top_level(OpKind::kHostOutput)) {
    const Operation& op = g.operation(id);
    const std::string& name = std::get<BindingAttributes>(op.attributes).name;
    const TensorType& type = g.type(op.inputs[0]);
    RC_ASSERT(first.outputs.at(name).size() == byte_size(type));
    const auto& bounds = first.bounds.at(name);
    RC_ASSERT(bounds.size() == element_count(type.shape));
    for (const ElementBound& bound : bounds) {
      if (exact) RC_ASSERT(bound.kind == ElementBound::Kind::kExact);
      if (bound.kind == ElementBound::Kind::kWithin) {
        RC_ASSERT(std::isfinite(bound.max_error));
        RC_ASSERT(bound.max_error > 0);
      }
    }
    // The reference meets its own bounds.
    RC_ASSERT(!tessera::testing::check_within_bounds(type, first.outputs.at(name),
                                                     first.outputs.at(name), bounds));
  }
}

// The property above must evaluate every new operation, and sequences.
TEST(ReferenceProperty, RandomGraphsEvaluateEveryNewOperation) {
  std::set<OpKind> evaluated;
  std::size_t within = 0;
  const auto result = rc::check([&] {
    const Graph g = testing::random_graph();
    const auto out = tessera::testing::evaluate_graph_with_bounds(g, random_bindings(g));
    const auto kinds = kinds_of(g);
    evaluated.insert(kinds.begin(), kinds.end());
    for (const auto& [name, bounds] : out.bounds) {
      for (const ElementBound& bound : bounds) within += bound.kind == ElementBound::Kind::kWithin;
    }
  });
  EXPECT_TRUE(result);
  for (const OpKind kind :
       {OpKind::kMatmul, OpKind::kMul, OpKind::kGelu, OpKind::kLayerNorm, OpKind::kSoftmax,
        OpKind::kAttention, OpKind::kConvert, OpKind::kBlockScale, OpKind::kRepeat}) {
    EXPECT_TRUE(evaluated.contains(kind)) << op_kind_name(kind);
  }
  EXPECT_GT(within, 0u);
}

}  // namespace
}  // namespace tessera::compiler
