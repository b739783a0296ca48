// ElementLocator::locate_run against locate() element by element: the run it
// reports from an index is exactly the elements along the last axis that
// locate() puts in the same shard, one element size apart, and it stops
// where that stops (a split of the last axis, padding, the tensor's end).

#include <gtest/gtest.h>

#include "compiler/layout/locate.hpp"
#include "compiler/layout/resolve.hpp"

namespace tessera::compiler {
namespace {

Layout tiled(ElementType precision, std::vector<AxisTiling> tiling) {
  Layout layout = single_tile_layout(precision);
  layout.tiling = std::move(tiling);
  return layout;
}

// The brute-force run length: step along the last axis while locate() stays
// in the shard and one element further on.
std::uint64_t walked_run(const ElementLocator& locator, std::vector<std::uint64_t> index,
                         std::uint64_t extent) {
  const ElementPlace first = locator.locate(index);
  std::uint64_t elements = 1;
  for (index.back() += 1; index.back() < extent; ++index.back(), ++elements) {
    const ElementPlace next = locator.locate(index);
    if (next.shard != first.shard || next.offset != first.offset + elements * locator.element_bytes()) break;
  }
  return elements;
}

void expect_runs_match(const Layout& layout, const Shape& shape) {
  const ResolvedLayout resolved = resolve(layout, shape);
  const ElementLocator locator(resolved);
  std::vector<std::uint64_t> index(shape.size(), 0);
  for (;;) {
    const ElementLocator::Run run = locator.locate_run(index);
    EXPECT_EQ(run.place, locator.locate(index));
    EXPECT_EQ(run.elements, walked_run(locator, index, shape.back()))
        << "at column " << index.back() << " of row starting " << index.front();
    std::size_t a = shape.size();
    while (a-- > 0) {
      if (++index[a] < shape[a]) break;
      index[a] = 0;
    }
    if (a == static_cast<std::size_t>(-1)) return;
  }
}

TEST(LocateRun, MatchesLocateElementByElement) {
  constexpr ElementType kF16{DType::kF16, 0};
  constexpr ElementType kF32{DType::kF32, 0};
  expect_runs_match(tiled(kF32, {{0, 3, 1, 1}}), Shape{7, 5});                    // rows split: whole rows
  expect_runs_match(tiled(kF32, {{1, 3, 4, 1}}), Shape{3, 10});                   // the last axis in blocks
  expect_runs_match(tiled(kF16, {{1, 2, 4, 4}}), Shape{2, 5});                    // padding inside rows
  expect_runs_match(tiled(kF16, {{1, 3, 1, 1}, {0, 2, 1, 1}}), Shape{4, 6});      // two split axes
  expect_runs_match(tiled(kF16, {{2, 4, 3, 1}, {0, 2, 1, 1}}), Shape{3, 2, 13});  // rank 3
  expect_runs_match(tiled(kF32, {{0, 3, 8, 8}}), Shape{10});                      // rank 1, padded
}

TEST(LocateRun, AScalarIsOneElement) {
  const ResolvedLayout resolved = resolve(single_tile_layout({DType::kF32, 0}), Shape{});
  const ElementLocator locator(resolved);
  const ElementLocator::Run run = locator.locate_run(std::vector<std::uint64_t>{});
  EXPECT_EQ(run.elements, 1u);
  EXPECT_EQ(run.place.offset, 0u);
}

}  // namespace
}  // namespace tessera::compiler
