// A GEMM's epilogue (compiler/lower/gemm_epilogue.hpp): the bias add and
// GeLU a matmul's result alone feeds, applied on the GEMM's tiles. Oracles:
// the same graph with the product also an output (so nothing is fused) must
// give the same bits — the epilogue runs the separate operations' kernels in
// their order — and both must meet the CPU reference's bounds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "compiler/compile.hpp"
#include "compiler/lower/gemm_epilogue.hpp"
#include "compiler/lower/lower.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/registry.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/compiler/reference_check.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler {
namespace {

using tessera::testing::TensorBytes;

struct Linear {
  Graph graph;
  ValueId product, sum, activation;
};

// gelu(a · w + bias), a [m, k], w [k, n], bias [n]; `product_out` makes the
// product an output too.
Linear linear_gelu(std::uint32_t m, std::uint32_t k, std::uint32_t n, bool product_out, DType dtype = DType::kF16) {
  Linear l;
  const ValueId a = l.graph.host_input("a", dtype, {m, k});
  const ValueId w = l.graph.parameter("w", dtype, {k, n});
  const ValueId bias = l.graph.parameter("bias", dtype, {n});
  l.product = l.graph.matmul(a, w);
  l.sum = l.graph.add(l.product, bias);
  l.activation = l.graph.gelu(l.sum);
  l.graph.host_output("y", l.activation);
  if (product_out) l.graph.host_output("p", l.product);
  return l;
}

OpId defining(const Graph& g, ValueId v) { return *g.value(v).op; }

TEST(GemmEpilogue, ABiasAddAndTheGeluAfterItAreTheEpilogue) {
  const Linear l = linear_gelu(12, 40, 24, false);
  const auto epilogue = lower::gemm_epilogue(l.graph, defining(l.graph, l.product));
  ASSERT_TRUE(epilogue.has_value());
  EXPECT_EQ(epilogue->add, defining(l.graph, l.sum));
  ASSERT_TRUE(epilogue->gelu.has_value());
  EXPECT_EQ(*epilogue->gelu, defining(l.graph, l.activation));
  EXPECT_EQ(epilogue->result, l.activation);
}

TEST(GemmEpilogue, OnlyWhatTheProductAloneFeedsIsFused) {
  // The product read elsewhere: nothing.
  const Linear shared = linear_gelu(12, 40, 24, true);
  EXPECT_FALSE(lower::gemm_epilogue(shared.graph, defining(shared.graph, shared.product)).has_value());
  // The sum read twice: the add alone.
  {
    Graph g;
    const ValueId a = g.host_input("a", DType::kF16, {12, 40});
    const ValueId w = g.parameter("w", DType::kF16, {40, 24});
    const ValueId bias = g.parameter("bias", DType::kF16, {24});
    const ValueId p = g.matmul(a, w);
    const ValueId s = g.add(bias, p);  // either order
    g.host_output("y", g.gelu(s));
    g.host_output("s", s);
    const auto epilogue = lower::gemm_epilogue(g, defining(g, p));
    ASSERT_TRUE(epilogue.has_value());
    EXPECT_FALSE(epilogue->gelu.has_value());
    EXPECT_EQ(epilogue->result, s);
  }
  // Not a bias: a full matrix, or a [1, N] row (the add would still broadcast).
  for (const Shape& other : {Shape{12, 24}, Shape{1, 24}}) {
    Graph g;
    const ValueId a = g.host_input("a", DType::kF16, {12, 40});
    const ValueId w = g.parameter("w", DType::kF16, {40, 24});
    const ValueId p = g.matmul(a, w);
    g.host_output("y", g.add(p, g.parameter("o", DType::kF16, other)));
    EXPECT_FALSE(lower::gemm_epilogue(g, defining(g, p)).has_value()) << other.size();
  }
  // f32 results are not unpacked row-major: left to the add.
  const Linear f32 = linear_gelu(12, 40, 24, false, DType::kF32);
  EXPECT_FALSE(lower::gemm_epilogue(f32.graph, defining(f32.graph, f32.product)).has_value());
}

// Each plan line up to its modelled cycles (the epilogue is priced, so the
// cycles differ; the blocking must not).
std::string blocking(const std::string& plan) { return plan.substr(0, plan.find("; modelled")); }

// Fused and unfused compiles of gelu(a · w + bias) give the same bits, and
// the fused program runs the add and the GeLU as the GEMM's kernels, named
// after their operations.
void expect_fused_equals_separate(std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t tiles,
                                  std::uint32_t seed) {
  SCOPED_TRACE(fmt::format("{} × {} · {} × {} on {} tiles", m, k, k, n, tiles));
  const Linear fused = linear_gelu(m, k, n, false);
  const Linear separate = linear_gelu(m, k, n, true);
  TensorBytes bindings;
  const ElementType f16{DType::kF16};
  bindings["a"] = testing::random_bytes(TensorType{f16, {m, k}}, seed, 1000);
  bindings["w"] = testing::random_bytes(TensorType{f16, {k, n}}, seed + 1, 1000);
  bindings["bias"] = testing::random_bytes(TensorType{f16, {n}}, seed + 2, 1000);

  const CompileResult with = compile(fused.graph, {.tiles = tiles});
  const CompileResult without = compile(separate.graph, {.tiles = tiles});
  ASSERT_EQ(with.plans.size(), 1u);
  ASSERT_EQ(without.plans.size(), 1u);
  ASSERT_EQ(blocking(with.plans[0]), blocking(without.plans[0]));
  const auto fused_run = testing::run_on_simulator(with.application, bindings);
  const auto separate_run = testing::run_on_simulator(without.application, bindings);
  EXPECT_EQ(fused_run.outputs.at("y"), separate_run.outputs.at("y"));

  const auto reference = tessera::testing::evaluate_graph_with_bounds(fused.graph, bindings);
  const auto problem = tessera::testing::check_within_bounds(
      fused.graph.type(fused.activation), fused_run.outputs.at("y"), reference.outputs.at("y"),
      reference.bounds.at("y"));
  EXPECT_FALSE(problem.has_value()) << *problem;

  // Lowered: no add of two operands, and the GEMM's row-broadcast add and
  // GeLU carry the add's and the GeLU's names for profiles.
  const lower::Program program = lower::lower_graph(fused.graph, {.tiles = tiles});
  std::size_t adds = 0, broadcast_adds = 0, gelus = 0;
  for (const lower::Step& step : program.steps) {
    for (const auto& [tile, runs] : step.runs) {
      for (const lower::KernelRun& run : runs) {
        const std::string& named = program.provenance.at(run.provenance);
        if (run.kernel == kernels::kAddF16) ++adds;
        if (run.kernel == kernels::kAddRowBroadcastF16) {
          ++broadcast_adds;
          EXPECT_NE(named.find("add"), std::string::npos) << named;
        }
        if (run.kernel == kernels::kGeluF16) {
          ++gelus;
          EXPECT_NE(named.find("gelu"), std::string::npos) << named;
        }
      }
    }
  }
  EXPECT_EQ(adds, 0u);
  EXPECT_GT(broadcast_adds, 0u);
  EXPECT_EQ(gelus, broadcast_adds);
}

TEST(GemmEpilogue, FusedEqualsTheSeparateOperationsBitForBit) {
  expect_fused_equals_separate(71, 129, 72, 16, 3);   // no K split: every task unpacks its block
  expect_fused_equals_separate(12, 600, 40, 64, 5);   // K split: later parts own no rows
  expect_fused_equals_separate(13, 600, 13, 64, 7);   // odd rows, odd columns
}

}  // namespace
}  // namespace tessera::compiler
