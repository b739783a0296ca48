// layer_norm and softmax compiled, run on the simulator and compared with the
// CPU reference within graph_bounds.hpp's bounds: rows and columns of 1, 12,
// 13, 71, 72, 80, 129 (not multiples of 16), rank 1 (one row, kept on one
// tile) and rank 3, on 1, 7 and 1472 tiles, f32 and f16, with rare NaN, ±Inf,
// subnormals and the largest finite values among the data (a special makes
// its row NaN or unbounded, so most rows stay bounded).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compiler/compile.hpp"
#include "compiler/lower/lower.hpp"
#include "tests/compiler/reference_check.hpp"

namespace tessera::compiler {
namespace {

using testing::expect_reference;

constexpr int kRareSpecials = 3000;
// A seed whose first rows hold no special (one row is a whole rank-1 tensor).
constexpr std::uint32_t kSeed = 3;

const std::vector<Shape> kShapes = {{1},      {13},      {129},         {1, 80},      {12, 72},
                                    {71, 13}, {80, 129}, {3, 13, 71},  {2, 12, 16}, {129, 1}};

const char* name_of(DType dtype) { return dtype == DType::kF32 ? "f32" : "f16"; }

TEST(Normalisation, SoftmaxIsWithinItsBound) {
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    for (const Shape& shape : kShapes) {
      for (const std::uint32_t tiles : {1u, 7u, 1472u}) {
        SCOPED_TRACE(fmt::format("{} {} on {}", name_of(dtype), format_shape(shape), tiles));
        Graph g;
        g.host_output("y", g.softmax(g.host_input("x", dtype, shape),
                                     static_cast<std::uint32_t>(shape.size() - 1)));
        EXPECT_GT(expect_reference(g, tiles, kSeed, kRareSpecials), element_count(shape) / 2);
      }
    }
  }
}

TEST(Normalisation, LayerNormIsWithinItsBound) {
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    for (const Shape& shape : kShapes) {
      for (const std::uint32_t tiles : {1u, 7u, 1472u}) {
        for (const double epsilon : {1e-6, 1e-2}) {
          SCOPED_TRACE(fmt::format("{} {} on {}, ε {}", name_of(dtype), format_shape(shape), tiles,
                                   epsilon));
          Graph g;
          const ValueId x = g.host_input("x", dtype, shape);
          const ValueId gamma = g.parameter("gamma", dtype, {shape.back()});
          const ValueId beta = g.parameter("beta", dtype, {shape.back()});
          g.host_output("y", g.layer_norm(x, gamma, beta, epsilon));
          // A one-column row is constant: its variance 0, its result β (or
          // unbounded when ε is small), so only count the others.
          const std::uint64_t constrained = expect_reference(g, tiles, kSeed, kRareSpecials);
          if (shape.back() > 1) {
            EXPECT_GT(constrained, element_count(shape) / 2);
          }
        }
      }
    }
  }
}

TEST(Normalisation, ChainsAndInputsOnOtherTiles) {
  // A softmax of a layer_norm's result, each compared op by op: the two
  // outputs' inputs lie on other tiles than where the ops put their rows.
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    Graph g;
    const ValueId x = g.host_input("x", dtype, {13, 71});
    const ValueId small = g.host_input("small", dtype, {71});
    const ValueId gamma = g.parameter("gamma", dtype, {71});
    const ValueId beta = g.parameter("beta", dtype, {71});
    g.host_output("norm", g.layer_norm(g.transpose(g.transpose(x, {1, 0}), {1, 0}), gamma, beta, 1e-5));
    g.host_output("soft", g.softmax(g.add(small, small), 0));
    g.host_output("row", g.layer_norm(small, gamma, beta, 1e-5));
    for (const std::uint32_t tiles : {3u, 7u}) {
      SCOPED_TRACE(fmt::format("{} on {}", name_of(dtype), tiles));
      (void)expect_reference(g, tiles, 5, kRareSpecials);
    }
  }
}

TEST(Normalisation, AnEpsilonTheRegisterCannotHoldIsRefusedNamingTheOp) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {2, 8});
  const ValueId w = g.parameter("w", DType::kF32, {8});
  g.host_output("y", g.layer_norm(x, w, w, 1e10));
  try {
    (void)compile(g, {.tiles = 4});
    ADD_FAILURE() << "compiled";
  } catch (const lower::LoweringError& error) {
    EXPECT_NE(std::string(error.what()).find("op 2 (layer_norm %0, %1, %1): LayerNorm epsilon"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace tessera::compiler
