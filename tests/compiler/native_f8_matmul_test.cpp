// The native FP8 GEMM (issue 19's f8 precision): f16 activations converted
// to F143 at a tensor-wide scale, times block-scaled F143 weights whose codes
// the host packed in 32-deep weight panels (block_scale panels 32), compiled
// and run on the simulator against the CPU reference — the converted codes
// bit for bit, the product within docs/GRAPH_FORMAT.md's matmul bound — on
// the awkward extents, in a loop over sequence weights, with K
// splits and several waves; the plan keeps every call inside one scale
// block; and what is not lowered, or out of the product scale's range, is
// an error naming the op.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>

#include "compiler/compile.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/plan/gemm_plan.hpp"
#include "kernels/f143_kernels.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/weight_panels.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/compiler/reference_check.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler {
namespace {

using testing::random_bytes;
using tessera::testing::TensorBytes;

// The activations' scale: the moderate f16 test values (|x| ≤ 6) are codes
// up to 96; ±Inf and the largest f16 saturate to ±240·2^−4 = ±15.
constexpr int kActivationScale = -4;

Shape scales_shape_of(const Shape& lead, std::uint32_t k, std::uint32_t n) {
  Shape shape = lead;
  shape.push_back((k + 63) / 64);
  shape.push_back((n + 63) / 64);
  return shape;
}

Shape panels_shape_of(const Shape& lead, std::uint32_t k, std::uint32_t n) {
  Shape shape = lead;
  for (const std::uint32_t extent : {(n + 15) / 16, (k + 31) / 32, 16u, 32u}) shape.push_back(extent);
  return shape;
}

// `matrices` [k, n] weights: codes of magnitude at most 3.75 (never the NaN
// code 0x80), packed in 32-deep panels, and a scale in [−6, −2] per 64 × 64
// block — so that products over K ≤ 600 stay far inside f16 and the product
// scale (−4 + weight scale) inside [−32, 31].
struct Weights {
  std::vector<std::uint8_t> panels, scales;
};

Weights weights_bytes(std::size_t matrices, std::uint32_t k, std::uint32_t n, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> sign(0, 1), exponent(0, 9), mantissa(0, 7),
      scale(-6, -2);
  Weights bytes;
  for (std::size_t m = 0; m < matrices; ++m) {
    std::vector<std::uint8_t> codes(std::size_t{k} * n);
    for (auto& code : codes) {
      const int c = (sign(random) << 7) | (exponent(random) << 3) | mantissa(random);
      code = static_cast<std::uint8_t>(c == 0x80 ? 0 : c);
    }
    const auto packed = kernels::amp::to_weight_panels<std::uint8_t>(codes, k, n, 32);
    bytes.panels.insert(bytes.panels.end(), packed.begin(), packed.end());
    for (std::size_t b = 0; b < std::size_t{(k + 63) / 64} * ((n + 63) / 64); ++b) {
      const std::int32_t value = scale(random);
      std::uint8_t word[4];
      std::memcpy(word, &value, 4);
      bytes.scales.insert(bytes.scales.end(), word, word + 4);
    }
  }
  return bytes;
}

// a f16 [..., M, K] → F143 at kActivationScale (output "a8") · weights →
// f16 "c".
Graph native_graph(const Shape& a_shape, const Shape& lead, std::uint32_t k, std::uint32_t n) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, a_shape);
  const ValueId a8 = g.convert(a, ElementType{DType::kF8F143, kActivationScale});
  const ValueId codes = g.parameter("codes", DType::kU8, panels_shape_of(lead, k, n));
  const ValueId scales = g.parameter("scales", DType::kI32, scales_shape_of(lead, k, n));
  g.host_output("a8", a8);
  g.host_output("c", g.matmul(a8, g.block_scale_panels(codes, scales, 32, {k, n})));
  return g;
}

// Compiles and runs `g` with these bindings, every output checked against
// the reference (a8 exactly, c within its bound); returns the compile.
CompileResult expect_reference(const Graph& g, const TensorBytes& bindings, std::uint32_t tiles) {
  const auto reference = tessera::testing::evaluate_graph_with_bounds(g, bindings);
  CompileResult compiled = compile(g, {.tiles = tiles});
  const auto run = testing::run_on_simulator(compiled.application, bindings);
  std::uint64_t within = 0;  // product elements the bound constrains
  for (const OpId op : g.top_level(OpKind::kHostOutput)) {
    const auto& name = std::get<BindingAttributes>(g.operation(op).attributes).name;
    const auto problem = tessera::testing::check_within_bounds(
        g.type(g.operation(op).inputs[0]), run.outputs.at(name), reference.outputs.at(name),
        reference.bounds.at(name));
    EXPECT_FALSE(problem.has_value()) << name << ": " << *problem << "\n" << format_report(compiled);
    for (const auto& bound : reference.bounds.at(name)) {
      if (name != "a8" && bound.kind == tessera::testing::ElementBound::Kind::kWithin) ++within;
    }
  }
  EXPECT_GT(within, 0u) << "every product element was NaN or unbounded";
  return compiled;
}

CompileResult check_native(const Shape& a_shape, const Shape& lead, std::uint32_t k, std::uint32_t n,
                           std::uint32_t tiles) {
  SCOPED_TRACE(fmt::format("f8 [{}] · panels of [{}, {}, {}] on {} tiles", fmt::join(a_shape, ", "),
                           fmt::join(lead, ", "), k, n, tiles));
  const Graph g = native_graph(a_shape, lead, k, n);
  std::size_t matrices = 1;
  for (const std::uint32_t extent : lead) matrices *= extent;
  const Weights weights = weights_bytes(matrices, k, n, 3);
  TensorBytes bindings;
  // Specials (NaN, ±Inf, the largest f16, subnormals) in about one row in
  // five: a NaN makes its whole row NaN.
  bindings["a"] = random_bytes(TensorType{{DType::kF16}, a_shape}, 2, static_cast<int>(std::max(100u, 50 * k)));
  bindings["codes"] = weights.panels;
  bindings["scales"] = weights.scales;
  CompileResult compiled = expect_reference(g, bindings, tiles);
  EXPECT_NE(compiled.plans.back().find("F143 GEMM"), std::string::npos) << compiled.plans.back();
  return compiled;
}

// M, K and N of 1, 12, 13, 71, 72, 80 and 129 (issue 18's extents: partial
// passes, panels, scale blocks and row minimums), on 2, 16 and 64 tiles.
TEST(NativeF8Matmul, MatchesTheReferenceOnAwkwardShapes) {
  const std::vector<std::array<std::uint32_t, 3>> shapes{{1, 1, 1},     {12, 13, 71},  {13, 72, 80},
                                                         {71, 80, 129}, {72, 129, 12}, {80, 12, 13},
                                                         {129, 71, 72}, {1, 129, 1}};
  for (const auto& [m, k, n] : shapes) {
    for (const std::uint32_t tiles : {2u, 16u, 64u}) check_native({m, k}, {}, k, n, tiles);
  }
}

TEST(NativeF8Matmul, BatchesBroadcastsKSplitsAndWaves) {
  check_native({2, 13, 72}, {}, 72, 129, 8);      // one weight for both products
  check_native({2, 13, 129}, {2}, 129, 72, 8);    // one weight per product
  check_native({1, 13, 64}, {3}, 64, 72, 8);      // a broadcast over the weights' batch
  check_native({12, 600}, {}, 600, 40, 64);       // K split
  check_native({129, 129}, {}, 129, 129, 2);      // several waves
}

// The plan keeps every call inside one 64 × 64 scale block (one weight scale
// per call): K blocks of 32 or 64 at multiples of themselves, K parts whole
// numbers of K blocks, column blocks of 32 or 64.
TEST(NativeF8Matmul, EveryCallLiesInsideOneScaleBlock) {
  const std::vector<std::array<std::uint32_t, 3>> shapes{
      {729, 1152, 1152}, {729, 1152, 4304}, {729, 4304, 1152}, {12, 600, 40}, {13, 129, 72}, {1, 1, 1}};
  for (const auto& [m, k, n] : shapes) {
    for (const std::uint32_t tiles : {m > 100 ? 64u : 1u, 1472u}) {
      plan::GemmProblem problem;
      problem.family = kernels::GemmFamily::kF143;
      problem.rows = m;
      problem.inner = k;
      problem.columns = n;
      problem.tiles = tiles;
      problem.panel_weights = true;
      const plan::GemmPlan plan = plan::plan_gemm(problem);
      SCOPED_TRACE(plan::format_gemm_plan(plan));
      EXPECT_TRUE(plan.choice.block_columns == 32 || plan.choice.block_columns == 64);
      EXPECT_TRUE(plan.choice.block_inner == 32 || plan.choice.block_inner == 64);
      EXPECT_EQ(plan.part_inner % plan.choice.block_inner, 0u);
      // Every call's K range from its part and block.
      for (std::uint32_t part = 0; part < plan.choice.k_split; ++part) {
        for (std::uint32_t block = 0; block < plan.inner_blocks; ++block) {
          const std::uint32_t begin = part * plan.part_inner + block * plan.choice.block_inner;
          if (begin >= k) continue;
          EXPECT_LE(begin % 64 + plan.choice.block_inner, 64u) << "part " << part << " block " << block;
        }
      }
      // Not a shape the planner could not price: the f16 path's blocks
      // would have been deeper; this is the constraint, not a failure.
      EXPECT_GT(plan.cycles, 0u);
    }
  }
  // A choice that would cross scale blocks is refused.
  plan::GemmProblem problem;
  problem.family = kernels::GemmFamily::kF143;
  problem.rows = 13;
  problem.inner = 256;
  problem.columns = 128;
  problem.tiles = 16;
  EXPECT_FALSE(plan::evaluate_gemm(problem, {13, 128, 64, 1, false}).has_value());  // N 128
  EXPECT_FALSE(plan::evaluate_gemm(problem, {13, 64, 96, 1, false}).has_value());   // K 96
  EXPECT_FALSE(plan::evaluate_gemm(problem, {13, 64, 128, 1, false}).has_value());  // K 128
  EXPECT_TRUE(plan::evaluate_gemm(problem, {13, 64, 64, 1, false}).has_value());
}

// The layers' weights as sequence values (what models/siglip binds at f8):
// iteration i multiplies by entry i's codes at entry i's scales, each call's
// $m8 loaded from that entry's scale word plus the activation scale. The
// products are summed into the carried value (the reference's bounds follow
// add, not a convert of a bounded value).
TEST(NativeF8Matmul, SequenceWeightsInARepeatMatchTheReference) {
  const std::uint32_t k = 72, n = 72, layers = 3;
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {13, k});
  const ValueId y = g.host_input("y0", DType::kF16, {13, n});
  const ValueId codes = g.parameter("codes", DType::kU8, panels_shape_of({layers}, k, n));
  const ValueId scales = g.parameter("scales", DType::kI32, scales_shape_of({layers}, k, n));
  const auto looped = g.repeat(
      layers, {y}, {g.block_scale_panels(codes, scales, 32, {k, n})},
      {g.convert(x, ElementType{DType::kF8F143, kActivationScale})},
      [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> sequence,
         std::span<const ValueId> invariant) {
        return std::vector<ValueId>{body.add(carried[0], body.matmul(invariant[0], sequence[0]))};
      });
  g.host_output("y", looped[0]);
  const Weights weights = weights_bytes(layers, k, n, 7);
  TensorBytes bindings;
  bindings["x"] = random_bytes(TensorType{{DType::kF16}, {13, k}}, 1, 50 * k);
  bindings["y0"] = random_bytes(TensorType{{DType::kF16}, {13, n}}, 2, 50 * k);
  bindings["codes"] = weights.panels;
  bindings["scales"] = weights.scales;
  const auto checked = testing::check_against_reference(g, bindings, {.tiles = 8});
  EXPECT_GT(checked.within, 13u * n / 2) << "most rows hold no special";
}

// The calls are the native GEMM's, each with its product scale loaded (no
// expansion, no rearrange, no byte move of weight codes).
TEST(NativeF8Matmul, CallsTheNativeGemmWithTheProductScaleLoaded) {
  const Graph g = native_graph({13, 129}, {}, 129, 72);
  const lower::Program program = lower::lower_graph(g, {.tiles = 8});
  std::size_t calls = 0;
  for (const lower::Step& step : program.steps) {
    for (const auto& [tile, runs] : step.runs) {
      for (const lower::KernelRun& run : runs) {
        EXPECT_NE(run.kernel, kernels::kExpandF143ToF16);
        EXPECT_NE(run.kernel, kernels::kRearrangeBlockMajorF16);
        if (run.kernel != kernels::kGemmF143Init && run.kernel != kernels::kGemmF143Accumulate) continue;
        ++calls;
        ASSERT_EQ(run.loaded.size(), 1u);
        EXPECT_EQ(run.loaded[0].reg, kernels::kGemmScaleRegister);
        EXPECT_EQ(run.loaded[0].add, kActivationScale);
      }
    }
  }
  EXPECT_GT(calls, 0u);
}

// At f8 the projections are F143 GEMMs and the patch embedding and head f16
// ones: every family shares one A block (panel rows are 32 bytes in each),
// which here the F143 calls write after one f16 GEMM and before another —
// every product still within the reference's bounds.
TEST(NativeF8Matmul, F16AndF143GemmsShareOneABlockAndBothMatchTheReference) {
  const std::uint32_t k = 72, n = 40;
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, {13, k});
  const ValueId w16 = g.parameter("w16", DType::kF16, {k, k});
  const ValueId codes = g.parameter("codes", DType::kU8, panels_shape_of({}, k, n));
  const ValueId scales = g.parameter("scales", DType::kI32, scales_shape_of({}, k, n));
  const ValueId h = g.matmul(a, w16);
  const ValueId a8 = g.convert(h, ElementType{DType::kF8F143, kActivationScale});
  g.host_output("h", h);
  g.host_output("a8", a8);
  const ValueId c = g.matmul(a8, g.block_scale_panels(codes, scales, 32, {k, n}));
  g.host_output("c", c);
  // After the F143 GEMM (its input depends on c), f16 again.
  g.host_output("h2", g.matmul(g.add(a, g.slice(g.concat({c, c}, 1), {0, 0}, {13, k})), w16));
  const lower::Program program = lower::lower_graph(g, {.tiles = 4});
  std::size_t a_blocks = 0;
  for (const lower::Buffer& buffer : program.buffers) {
    if (buffer.name.find("A block") != std::string::npos) ++a_blocks;
  }
  EXPECT_EQ(a_blocks, 1u);
  const Weights weights = weights_bytes(1, k, n, 9);
  TensorBytes bindings;
  bindings["a"] = random_bytes(TensorType{{DType::kF16}, {13, k}}, 1, 50 * k);
  bindings["w16"] = random_bytes(TensorType{{DType::kF16}, {k, k}}, 4, 50 * k);
  bindings["codes"] = weights.panels;
  bindings["scales"] = weights.scales;
  (void)expect_reference(g, bindings, 4);
}

// A weight scale is bound at run time, so a product scale outside the
// 6-bit ISCL range (activation scale −4 + weight scale −31 = −35) cannot be
// refused at compile time: the call that would compute it faults, naming the
// kernel, the register's value and the op.
TEST(NativeF8Matmul, AProductScaleOutsideTheIsclRangeFaultsNamingTheCallAndTheOp) {
  const std::uint32_t k = 72, n = 40;
  const Graph g = native_graph({13, k}, {}, k, n);
  Weights weights = weights_bytes(1, k, n, 5);
  const std::int32_t low = -31;
  std::memcpy(weights.scales.data() + 4, &low, 4);  // the second K block's scale
  TensorBytes bindings;
  bindings["a"] = random_bytes(TensorType{{DType::kF16}, {13, k}}, 1, 50 * k);
  bindings["codes"] = weights.panels;
  bindings["scales"] = weights.scales;
  const CompileResult compiled = compile(g, {.tiles = 4});
  try {
    (void)testing::run_on_simulator(compiled.application, bindings);
    ADD_FAILURE() << "ran";
  } catch (const std::exception& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("KernelPrecondition"), std::string::npos) << what;
    EXPECT_NE(what.find("kernel 'tessera_gemm_f143_"), std::string::npos) << what;
    EXPECT_NE(what.find("$m8 (product scale) = -35 is outside [-32, 31]"), std::string::npos) << what;
    EXPECT_NE(what.find("[graph: op 6 (matmul"), std::string::npos) << what;
  }
  // The same weights with that block at −28 (ISCL −32) run.
  const std::int32_t lowest = -28;
  std::memcpy(bindings["scales"].data() + 4, &lowest, 4);
  EXPECT_NO_THROW((void)testing::run_on_simulator(compiled.application, bindings));
}

// Row-major codes (block_scale without panels) and 16-deep panels are not
// the native GEMM's B32×16: a LoweringError naming the op.
TEST(NativeF8Matmul, WeightsNotIn32DeepPanelsAreALoweringErrorNamingTheOp) {
  for (const std::uint32_t panels : {0u, 16u}) {
    Graph g;
    const ValueId a = g.host_input("a", DType::kF16, {12, 64});
    const ValueId scales = g.parameter("scales", DType::kI32, {1, 1});
    const ValueId a8 = g.convert(a, ElementType{DType::kF8F143, 0});
    const ValueId w = panels == 0 ? g.block_scale(g.parameter("codes", DType::kU8, {64, 64}), scales)
                                  : g.block_scale_panels(g.parameter("codes", DType::kU8, {4, 4, 16, 16}),
                                                         scales, 16, {64, 64});
    g.host_output("c", g.matmul(a8, w));
    try {
      (void)compile(g, {.tiles = 4});
      ADD_FAILURE() << "compiled";
    } catch (const lower::LoweringError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("(matmul"), std::string::npos) << what;
      EXPECT_NE(what.find(panels == 0 ? "32-deep weight panels" : "panels of 16 inner values"), std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace tessera::compiler
