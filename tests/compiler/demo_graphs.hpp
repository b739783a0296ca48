#pragma once
// Whole-chip graphs shared by the compile benchmark and `make demo`.

#include <cstdint>

#include "compiler/ir/graph.hpp"

namespace tessera::compiler::testing {

// y = x with its rows rotated by `shift` (concat of two slices): with one row
// per tile, every tile sends its row to another — an all-tile permutation.
// x, y: f32[rows, columns].
Graph rotation_graph(std::uint32_t rows, std::uint32_t columns, std::uint32_t shift);

// `count` rotations of one input (shifts 737, 739, …), each its own output:
// `count` times the transfers of one rotation.
Graph rotations_graph(std::uint32_t rows, std::uint32_t columns, std::uint32_t count);

// The demo: y = x rotated by 737 rows (f32[1472, 1024] on all tiles, 4 KiB
// per tile), and s = its column sums by a two-level tree: the rows in 46
// groups of 32 (reshape, reduce over the group), then the 46 group sums.
Graph permutation_and_reduction_graph();

}  // namespace tessera::compiler::testing
