// Attention through head views (compiler/lower/head_views.hpp): the head
// split of a [B, S, 3·heads·d] projection (slice, reshape, transpose) and the
// merge of the result (transpose, reshape) addressed in place. Oracles: the
// same graph with every view value also an output (so nothing is a view)
// gives the same bits, and both meet the CPU reference's bounds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "compiler/compile.hpp"
#include "compiler/lower/head_views.hpp"
#include "compiler/lower/lower.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/compiler/reference_check.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler {
namespace {

using tessera::testing::TensorBytes;

struct Heads {
  Graph graph;
  ValueId qkv;                  // [B, S, 3·heads·d]
  std::vector<ValueId> thirds;  // the slices
  std::vector<ValueId> splits;  // q, k, v [B, heads, S, d]
  ValueId attended, merged;     // [B, heads, S, d], [B, S, heads·d]
};

// SigLIP's fused-projection attention in miniature: x [B, S, 3·heads·d]
// split into q, k and v, attention, heads merged and read by a matmul. With
// `views_read` every intermediate value is an output too.
Heads heads_graph(std::uint32_t b, std::uint32_t s, std::uint32_t heads, std::uint32_t d, bool views_read) {
  Heads h;
  Graph& g = h.graph;
  const std::uint32_t width = heads * d;
  h.qkv = g.host_input("x", DType::kF16, {b, s, 3 * width});
  for (std::uint32_t part = 0; part < 3; ++part) {
    h.thirds.push_back(g.slice(h.qkv, {0, 0, part * width}, {b, s, (part + 1) * width}));
    h.splits.push_back(g.transpose(g.reshape(h.thirds.back(), {b, s, heads, d}), {0, 2, 1, 3}));
  }
  h.attended = g.attention(h.splits[0], h.splits[1], h.splits[2], 1.0 / std::sqrt(static_cast<double>(d)));
  h.merged = g.reshape(g.transpose(h.attended, {0, 2, 1, 3}), {b, s, width});
  g.host_output("y", g.matmul(h.merged, g.parameter("w", DType::kF16, {width, 16})));
  if (views_read) {
    for (std::uint32_t part = 0; part < 3; ++part) {
      g.host_output(fmt::format("third{}", part), h.thirds[part]);
      g.host_output(fmt::format("split{}", part), h.splits[part]);
    }
    g.host_output("attended", h.attended);
    g.host_output("merged", h.merged);
  }
  return h;
}

TEST(HeadViews, TheSplitAndTheMergeAroundAnAttentionAreViews) {
  const Heads h = heads_graph(1, 20, 2, 8, false);
  for (std::uint32_t part = 0; part < 3; ++part) {
    const auto view = lower::split_heads_view(h.graph, h.splits[part]);
    ASSERT_TRUE(view.has_value()) << part;
    EXPECT_EQ(view->value, h.qkv);
    EXPECT_EQ(view->column0, part * 16);
    EXPECT_EQ(view->head_dim, 8u);
    EXPECT_EQ(view->ops.size(), 3u);  // slice, reshape, transpose
    for (const OpId op : view->ops) EXPECT_TRUE(lower::in_head_view(h.graph, op));
  }
  const OpId attention = *h.graph.value(h.attended).op;
  const auto merged = lower::merged_heads_view(h.graph, attention);
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->value, h.merged);
  for (const OpId op : merged->ops) EXPECT_TRUE(lower::in_head_view(h.graph, op));
}

TEST(HeadViews, ValuesReadElsewhereAreNotViews) {
  const Heads h = heads_graph(1, 20, 2, 8, true);
  for (const ValueId split : h.splits) EXPECT_FALSE(lower::split_heads_view(h.graph, split).has_value());
  EXPECT_FALSE(lower::merged_heads_view(h.graph, *h.graph.value(h.attended).op).has_value());
  for (OpId op{0}; op.index < h.graph.operation_count(); ++op.index) {
    EXPECT_FALSE(lower::in_head_view(h.graph, op)) << h.graph.describe(op);
  }
  // Another permutation is not a head split.
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {1, 20, 16});
  const ValueId q = g.transpose(g.reshape(x, {1, 20, 2, 8}), {0, 2, 3, 1});  // [1, 2, 8, 20]
  g.host_output("y", g.attention(q, q, q, 0.5));
  EXPECT_FALSE(lower::split_heads_view(g, q).has_value());
}

// Views and materialised copies give the same bits (same plans: the
// attention's and the matmul's shapes do not change), within the
// reference's bounds, and the views' operations leave no step behind.
void expect_views_equal_copies(std::uint32_t b, std::uint32_t s, std::uint32_t heads, std::uint32_t d,
                               std::uint32_t tiles, std::uint32_t seed) {
  SCOPED_TRACE(fmt::format("[{}, {}, {}·{}] on {} tiles", b, s, heads, d, tiles));
  const Heads viewed = heads_graph(b, s, heads, d, false);
  const Heads copied = heads_graph(b, s, heads, d, true);
  TensorBytes bindings;
  const ElementType f16{DType::kF16};
  bindings["x"] = testing::random_bytes(TensorType{f16, {b, s, 3 * heads * d}}, seed, 1000);
  bindings["w"] = testing::random_bytes(TensorType{f16, {heads * d, 16}}, seed + 1, 1000);
  const auto with = testing::run_on_simulator(compile(viewed.graph, {.tiles = tiles}).application, bindings);
  const auto without = testing::run_on_simulator(compile(copied.graph, {.tiles = tiles}).application, bindings);
  EXPECT_EQ(with.outputs.at("y"), without.outputs.at("y"));
  const auto reference = tessera::testing::evaluate_graph_with_bounds(viewed.graph, bindings);
  const ValueId y = viewed.graph.operation(viewed.graph.top_level(OpKind::kHostOutput).at(0)).inputs.at(0);
  const auto problem = tessera::testing::check_within_bounds(viewed.graph.type(y), with.outputs.at("y"),
                                                             reference.outputs.at("y"), reference.bounds.at("y"));
  EXPECT_FALSE(problem.has_value()) << *problem;

  const lower::Program program = lower::lower_graph(viewed.graph, {.tiles = tiles});
  for (const lower::Step& step : program.steps) {
    if (step.provenance >= program.provenance.size()) continue;
    const std::string& named = program.provenance[step.provenance];
    EXPECT_EQ(named.find("transpose"), std::string::npos) << named;
    EXPECT_EQ(named.find("reshape"), std::string::npos) << named;
    EXPECT_EQ(named.find("slice"), std::string::npos) << named;
  }
}

TEST(HeadViews, AttentionThroughViewsEqualsItThroughCopies) {
  expect_views_equal_copies(1, 20, 2, 8, 8, 3);
  expect_views_equal_copies(2, 13, 3, 72, 16, 5);  // batch 2, SigLIP's head dim, odd rows
}

}  // namespace
}  // namespace tessera::compiler
