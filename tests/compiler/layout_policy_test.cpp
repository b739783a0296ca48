// The default layouts (compiler/lower/layout_policy.hpp) against what they
// promise, checked by walking every element of the resolved layout: shards
// are contiguous ranges of the row-major tensor in tile order, every shard
// boundary is a word of the host tensor, rows (the last axis of rank ≥ 2)
// are never cut, no shard is below the minimum size, and a tensor whose
// leading axes are too short is split past them (SigLIP's activations).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compiler/ir/graph.hpp"
#include "compiler/layout/locate.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/layout/resolve.hpp"
#include "compiler/lower/layout_policy.hpp"
#include "schema/model.hpp"
#include "tests/compiler/reference_check.hpp"

namespace tessera::compiler {
namespace {

TensorType type_of(DType dtype, Shape shape) {
  TensorType type;
  type.element.dtype = dtype;
  type.shape = std::move(shape);
  return type;
}

// Checks every promise on `type` laid out over `tiles`; returns the shard
// count that holds data.
std::size_t check_default_layout(const TensorType& type, std::uint32_t tiles,
                                 std::uint64_t min_shard_bytes) {
  SCOPED_TRACE(fmt::format("{} on {} tiles, min shard {}", format_type(type), tiles, min_shard_bytes));
  const Layout layout = lower::default_layout(type, tiles, min_shard_bytes);
  const ResolvedLayout resolved = resolve(layout, type.shape);
  EXPECT_LE(resolved.shards.size(), tiles);
  const ElementLocator locator(resolved);
  const std::uint64_t count = element_count(type.shape);
  const std::uint64_t size = schema::dtype_size(type.dtype());
  const std::uint64_t row = type.shape.size() >= 2 ? type.shape.back() : count;
  std::size_t shard = 0;
  std::uint64_t first_of_shard = 0;
  std::size_t holding = count > 0 ? 1 : 0;
  for (std::uint64_t n = 0; n < count; ++n) {
    const ElementPlace place = locator.locate(n);
    // Contiguous ranges in tile order: the shard index never goes back.
    EXPECT_GE(place.shard, shard) << "element " << n;
    if (place.shard != shard) {
      EXPECT_EQ((n * size) % 4, 0u) << "shard " << place.shard << " starts off a word at element " << n;
      if (type.shape.size() >= 2) {
        EXPECT_EQ(n % row, 0u) << "a row is cut at element " << n;
      }
      if (min_shard_bytes > 0) {
        EXPECT_GE((n - first_of_shard) * size, min_shard_bytes) << "shard " << shard;
      }
      shard = place.shard;
      first_of_shard = n;
      ++holding;
    }
    EXPECT_EQ(place.offset, (n - first_of_shard) * size) << "element " << n;
  }
  return holding;
}

TEST(DefaultLayout, KeepsItsPromisesOnEveryShape) {
  const std::vector<Shape> shapes = {{1},         {13},          {1472},        {3000},
                                     {71, 72},    {1, 4096},     {1, 9, 144},   {2, 9, 144},
                                     {1, 729, 1152}, {3, 13, 71}, {1, 16, 29, 72}, {5, 1, 7, 3}};
  for (const DType dtype : {DType::kF32, DType::kF16, DType::kU8}) {
    for (const Shape& shape : shapes) {
      for (const std::uint32_t tiles : {1u, 7u, 64u, 1472u}) {
        for (const std::uint64_t min_shard : {std::uint64_t{0}, std::uint64_t{1024}}) {
          check_default_layout(type_of(dtype, shape), tiles, min_shard);
        }
      }
    }
  }
}

TEST(DefaultLayout, SplitsPastShortLeadingAxes) {
  // SigLIP so400m at batch 1: the residual stream along its 729 tokens, the
  // heads' [1, 16, 729, 72] into 16 heads × 92 token ranges (1472 tiles).
  EXPECT_EQ(check_default_layout(type_of(DType::kF16, {1, 729, 1152}), 1472, 1024), 729u);
  EXPECT_EQ(check_default_layout(type_of(DType::kF16, {1, 16, 729, 72}), 1472, 0), 16u * 92u);
  EXPECT_EQ(check_default_layout(type_of(DType::kF16, {2, 729, 1152}), 1472, 0), 1458u);
  // The last axis is never cut: one [1, 4096] row is one shard.
  EXPECT_EQ(check_default_layout(type_of(DType::kF32, {1, 4096}), 1472, 0), 1u);
  // A leading axis whose indices are not whole words is not cut (its
  // boundaries would fall inside words): split along axis 0 in blocks.
  EXPECT_EQ(check_default_layout(type_of(DType::kU8, {3, 13, 71}), 1472, 0), 1u);
}

// A reshape whose input's row ranges a layout of its result can cut the
// same way keeps every element on its tile: local copies, no exchange phase
// (SigLIP's [1, T, H] → [1, T, heads, D]); its result is still the
// reference's, bit for bit, and so is the transpose that follows.
TEST(DefaultLayout, AReshapeKeepsItsInputsTilesWhenItsRangesAllow) {
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    SCOPED_TRACE(dtype == DType::kF32 ? "f32" : "f16");
    Graph g;
    const ValueId x = g.host_input("x", dtype, {1, 9, 144});
    const ValueId heads = g.reshape(x, {1, 9, 2, 72});
    g.host_output("heads", heads);
    g.host_output("t", g.transpose(heads, {0, 2, 1, 3}));
    const lower::Program program = lower::lower_graph(g, {.tiles = 128});
    for (const lower::Step& step : program.steps) {
      if (step.kind != lower::StepKind::kExchange) continue;
      EXPECT_EQ(program.provenance[step.provenance].find("reshape"), std::string::npos)
          << program.provenance[step.provenance];
    }
    testing::expect_reference(g, 128);
  }
}

}  // namespace
}  // namespace tessera::compiler
