// Layout descriptions: what layout_problem() refuses and how tiles are counted.

#include <gtest/gtest.h>

#include "compiler/layout/layout.hpp"
#include "compiler/layout/resolve.hpp"

namespace tessera::compiler {
namespace {

constexpr ElementType kF32{DType::kF32, 0};

struct Refusal {
  const char* what;
  Layout layout;
  std::size_t rank;
  const char* message;
};

Layout with(std::vector<AxisTiling> tiling, std::uint32_t replicas = 1,
            std::uint32_t alignment = 8) {
  Layout layout = single_tile_layout(kF32);
  layout.tiling = std::move(tiling);
  layout.replicas = replicas;
  layout.alignment = alignment;
  return layout;
}

TEST(Layout, Problems) {
  const std::vector<Refusal> rows = {
      {"axis out of range", with({{2, 2, 1, 1}}), 2,
       "tiling[0]: axis 2 is not an axis of a rank-2 tensor"},
      {"axis twice", with({{0, 2, 1, 1}, {0, 3, 1, 1}}), 2, "tiling[1]: axis 0 is tiled twice"},
      {"zero partitions", with({{0, 0, 1, 1}}), 1, "must be at least 1 (have 0, 1, 1)"},
      {"zero block", with({{0, 2, 0, 1}}), 1, "must be at least 1 (have 2, 0, 1)"},
      {"zero padding multiple", with({{0, 2, 1, 0}}), 1, "must be at least 1 (have 2, 1, 0)"},
      {"zero replicas", with({}, 0), 1, "replicas must be at least 1"},
      {"alignment", with({}, 1, 12), 1, "alignment 12 is not a power of two"},
      {"too many tiles", with({{0, 1000, 1, 1}}, 2), 1,
       "needs 2000 tiles, more than the chip's 1472"},
      {"overflowing tile product", with({{0, 0xFFFFFFFF, 1, 1}, {1, 0xFFFFFFFF, 1, 1}}, 2), 2,
       "more than the chip's 1472"},
      {"bad scale", single_tile_layout({DType::kF8F143, 40}), 1, "outside [-32, 31]"},
  };
  for (const Refusal& row : rows) {
    SCOPED_TRACE(row.what);
    const auto problem = layout_problem(row.layout, row.rank);
    ASSERT_TRUE(problem.has_value());
    EXPECT_NE(problem->find(row.message), std::string::npos) << *problem;
    EXPECT_THROW(resolve(row.layout, Shape(row.rank, 4)), LayoutError);
  }
  EXPECT_FALSE(layout_problem(with({{1, 4, 2, 8}, {0, 2, 1, 1}}, 3), 2).has_value());
}

TEST(Layout, TileCount) {
  EXPECT_EQ(tile_count(single_tile_layout(kF32)), 1u);
  EXPECT_EQ(tile_count(with({{1, 4, 2, 8}, {0, 2, 1, 1}}, 3)), 24u);
  EXPECT_EQ(tile_count(split_layout(kF32, 0, 1472)), 1472u);
  EXPECT_THROW(tile_count(split_layout(kF32, 0, 1473)), LayoutError);
}

TEST(Layout, Format) {
  EXPECT_EQ(format_layout(with({{0, 7, 2, 4}}, 2)),
            "f32 row_major split(axis 0: 7 × block 2, pad 4) replicas 2 standard align 8");
}

}  // namespace
}  // namespace tessera::compiler
