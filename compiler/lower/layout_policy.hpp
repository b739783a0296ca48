#pragma once
// Which layout the compiler gives a tensor, and on which tiles (the one place
// that decides it).
//
// Every value is split into contiguous ranges of its row-major elements,
// over as many of the first `tiles` logical tiles as it has blocks — but no
// more tiles than leave each at least `min_shard_bytes` (one tile when the
// tensor is smaller). The split axis is axis 0, or a later one when the
// leading axes have too few indices to fill the tiles: each leading axis is
// then cut into single indices and the split axis into ranges (an [1, 729,
// 1152] activation is split along its 729 tokens; [1, 16, 729, 72] into
// 16 heads × 92 token ranges). A block is the fewest indices of the split
// axis (1, 2 or 4) whose bytes are a whole number of words, and a leading
// axis is cut only when each of its indices is whole words, so every shard
// boundary falls on a word of the row-major host tensor: host transfers and
// exchange transfers of whole shards move whole words (an odd f16 or f8
// tail exists only at the very end, inside the allocation's alignment
// padding). The last axis of a tensor of rank ≥ 2 is never split, so a
// shard holds whole rows. Data lives in interleaved memory (region
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

// A value some repeat reads as a sequence (its entry i in iteration i) lies
// entry-major instead: axis 0 whole, the entry's own layout on axis 1, so
// each tile holds its shard of every entry, entry i's at i × (the entry
// shard's bytes) on the tiles where a value of the entry's type would lie
// (sequence_layout). A loop body then reaches entry i with one local word
// copy per tile from base + i·stride (repeat.cpp). lower.cpp finds these
// values before lowering anything (sequence_inputs), so a binding or a
// producer is allocated entry-major from the start.

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/ir/tensor_type.hpp"
#include "compiler/layout/layout.hpp"
#include "target/topology.hpp"

namespace tessera::compiler::lower {

Layout default_layout(const TensorType& type, std::uint32_t tiles,
                      std::uint64_t min_shard_bytes = 0);

// The tiling of default_layout's family: axes 0 … axis − 1 cut into single
// indices (those of extent 1 need no entry), `axis` split into `partitions`
// in blocks of `block` indices, ordered so that shard k holds the k-th
// contiguous range of the row-major tensor.
std::vector<AxisTiling> row_range_tiling(std::span<const std::uint32_t> shape, std::uint32_t axis,
                                         std::uint32_t partitions, std::uint64_t block);

// Whether every shard boundary of `layout` on a tensor of `shape` falls on a
// word when its elements are `dtype`.
bool whole_words_in(const Layout& layout, std::span<const std::uint32_t> shape, DType dtype);

// The entry-major layout of a sequence value of `type` (axis 0: the
// entries): default_layout of one entry with its split moved to axis 1 and
// that axis padded to whole blocks, so every tile's part of every entry is
// whole words (the stride between entries is a word multiple). nullopt for
// sub-word scalar entries (f16[n], u8[n]), which have no axis to pad.
std::optional<Layout> sequence_layout(const TensorType& type, std::uint32_t tiles,
                                      std::uint64_t min_shard_bytes = 0);

// One entry of a sequence type: axis 0 dropped.
TensorType entry_type(const TensorType& sequence);

// Every value that some repeat of `graph` (at any depth) takes as a
// sequence input.
std::set<ValueId> sequence_inputs(const Graph& graph);

// A layout and the logical tiles of its shards (shard k on tiles[k]), as
// resolve(layout, shape, tiles) takes them.
struct TensorPlacement {
  Layout layout;
  std::vector<target::LogicalTile> tiles;
};

class LayoutPolicy {
 public:
  // `sequences`: the values repeats read as sequences (sequence_inputs).
  LayoutPolicy(std::uint32_t tiles, std::uint64_t min_shard_bytes,
               std::set<ValueId> sequences = {});

  // The logical tiles values may spread over (0 … tiles − 1).
  std::uint32_t tiles() const { return tiles_; }
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
  // `value`'s placement: entry-major when a repeat reads it as a sequence
  // and its entries are whole words (so host slices of it start on words),
  // else computed() or binding().
  TensorPlacement place(ValueId value, const TensorType& type, bool binding);

  // A sequence value's entry-major placement on logical tiles 0 … p − 1
  // (nullopt: see sequence_layout), and the placement of its entry: the
  // entry's default layout on the sequence's tiles, so entry i's copy into
  // it is local.
  std::optional<TensorPlacement> sequence(const TensorType& type) const;
  TensorPlacement entry(const TensorType& sequence_type, const TensorPlacement& sequence) const;

 private:
  TensorPlacement spread(TensorPlacement placement);

  std::uint32_t tiles_;
  std::uint64_t min_shard_bytes_;
  std::set<ValueId> sequences_;
  std::uint32_t next_binding_tile_ = 0;
};

}  // namespace tessera::compiler::lower
