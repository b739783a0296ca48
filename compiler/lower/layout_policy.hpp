#pragma once
// Which layout the compiler gives a tensor, and on which tiles (the one place
// that decides it).
//
// Every value is split along axis 0 in blocks of whole rows, over as many of
// the first `tiles` logical tiles as it has blocks — but no more tiles than
// leave each at least `min_shard_bytes` (one tile when the tensor is
// smaller). A block is the fewest rows (1, 2 or 4) whose bytes are a whole
// number of words, so every shard boundary falls on a word of the row-major
// host tensor: host transfers and exchange transfers of whole shards move
// whole words (an odd f16 or f8 tail exists only at the very end, inside the
// allocation's alignment padding). Data lives in interleaved memory (region
// 1), leaving region 0 to code and exchange rows, so a row never shares a
// memory element with the data it moves (reference §2.2).
//
// Computed values lie on logical tiles 0, 1, … (a scalar on tile 0), so
// values of one shape share their tiles and element-wise work stays local.
// Host inputs and parameters that take fewer tiles than the compiler spreads
// over start on the tile after the previous such binding's last (round
// robin): many small bindings do not pile onto tile 0, where each would cost
// that tile memory and host-phase code, and their host transfers run in
// parallel in one batch.

#include <cstdint>
#include <vector>

#include "compiler/ir/tensor_type.hpp"
#include "compiler/layout/layout.hpp"
#include "target/topology.hpp"

namespace tessera::compiler::lower {

Layout default_layout(const TensorType& type, std::uint32_t tiles, std::uint64_t min_shard_bytes = 0);

// A layout and the logical tiles of its shards (shard k on tiles[k]), as
// resolve(layout, shape, tiles) takes them.
struct TensorPlacement {
  Layout layout;
  std::vector<target::LogicalTile> tiles;
};

class LayoutPolicy {
 public:
  LayoutPolicy(std::uint32_t tiles, std::uint64_t min_shard_bytes);

  // A value an operation computes: on logical tiles 0 … p − 1.
  TensorPlacement computed(const TensorType& type) const;
  // A value of `type` computed element by element from one of `other`'s
  // shape and another dtype (a convert): `type`'s default rows when their
  // blocks are whole words in `other`'s dtype too (or lie on one tile), else
  // `other`'s (one tile, or the larger block: blocks are 1, 2 or 4 rows, so
  // it is a multiple of `type`'s). Either way each element of the two lies
  // on the same tile and every shard boundary is a word in both dtypes.
  TensorPlacement computed_like(const TensorType& type, const TensorType& other) const;
  // A host input or parameter, in the order they are bound.
  TensorPlacement binding(const TensorType& type);

 private:
  std::uint32_t tiles_;
  std::uint64_t min_shard_bytes_;
  std::uint32_t next_binding_tile_ = 0;
};

}  // namespace tessera::compiler::lower
