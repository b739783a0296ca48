#pragma once
// resolve(): the one source of padded shapes, per-tile shards, allocation
// sizes and the shard ↔ host-tensor byte mapping (ARCHITECTURE.md decision 7).
// Host bindings' RegionSlices, exchange transfers and kernel operand extents
// are all computed from a ResolvedLayout; none of them re-derives a shard
// boundary or a padded extent.
//
// Model: the tiling forms a grid of replicas × Π partitions shards, one per
// tile. A shard is a box of the padded tensor: per axis [start, physical_end),
// of which [start, logical_end) holds real elements and the rest is padding.
// It is stored row-major over its physical extents at offset 0 of its tile's
// allocation; the logical box sits at the low corner, padding after it on
// every axis. Replicas hold identical copies.

#include <cstdint>
#include <span>
#include <vector>

#include "compiler/layout/layout.hpp"
#include "target/topology.hpp"

namespace tessera::compiler {

// Along one axis: padded elements [start, physical_end), the real ones
// [start, logical_end); start ≤ logical_end ≤ physical_end.
struct ShardExtent {
  std::uint64_t start = 0;
  std::uint64_t logical_end = 0;
  std::uint64_t physical_end = 0;

  std::uint64_t logical_size() const noexcept { return logical_end - start; }
  std::uint64_t physical_size() const noexcept { return physical_end - start; }
  friend bool operator==(const ShardExtent&, const ShardExtent&) = default;
};

// One contiguous piece of a shard's logical data and where it sits in the
// row-major host tensor.
struct ByteRun {
  std::uint64_t shard_offset = 0;  // from the start of the shard
  std::uint64_t host_offset = 0;   // from the start of the host tensor
  std::uint64_t bytes = 0;
  friend bool operator==(const ByteRun&, const ByteRun&) = default;
};

// The shard's logical data as a strided copy: runs of `run_bytes`, repeated
// over nested loops (outermost first). Run (i0, i1, …) starts at shard_offset
// + Σ i_k · shard_stride_k in the shard and host_offset + Σ i_k · host_stride_k
// in the host tensor. Inner axes that are whole on both sides are merged into
// the run, so a shard holding whole rows is one run. No runs when the shard
// holds no logical data.
struct HostMapping {
  struct Loop {
    std::uint64_t count = 0;
    std::uint64_t shard_stride = 0;
    std::uint64_t host_stride = 0;
    friend bool operator==(const Loop&, const Loop&) = default;
  };
  std::uint64_t run_bytes = 0;  // 0 when the shard has no logical data
  std::uint64_t shard_offset = 0;
  std::uint64_t host_offset = 0;
  std::vector<Loop> loops;
  friend bool operator==(const HostMapping&, const HostMapping&) = default;
};

struct Shard {
  target::LogicalTile tile;
  std::uint32_t replica = 0;
  std::vector<std::uint32_t> partition;  // per tiling entry, the partition index
  std::vector<ShardExtent> extents;      // one per tensor axis
  std::uint64_t offset = 0;              // byte offset in the tile's allocation
  std::uint64_t bytes = 0;               // physical bytes: Π physical sizes · element size
  std::uint64_t logical_bytes = 0;       // of which real data
  std::uint64_t allocation_bytes = 0;    // offset + bytes rounded up to the alignment
  HostMapping host;
  friend bool operator==(const Shard&, const Shard&) = default;
};

struct ResolvedLayout {
  Layout layout;
  Shape shape;                              // logical
  std::vector<std::uint64_t> padded_shape;  // per axis, padded to its padding multiple
  // In packing order: shard k is replica k mod R of grid cell k / R (tiling
  // entry 0's partition varying fastest among the cells).
  std::vector<Shard> shards;
  std::uint64_t max_allocation_bytes = 0;  // the largest shard allocation
  friend bool operator==(const ResolvedLayout&, const ResolvedLayout&) = default;
};

// Resolves `layout` for a tensor of `shape` on `tiles` (shard k on tiles[k]).
// LayoutError when the layout does not fit the shape (layout_problem), the
// tile list's length is not tile_count(layout), a tile repeats or is not on
// the chip, or a size
// overflows 64 bits.
ResolvedLayout resolve(const Layout& layout, std::span<const std::uint32_t> shape,
                       std::span<const target::LogicalTile> tiles);
// The same on logical tiles 0 … tile_count(layout) − 1.
ResolvedLayout resolve(const Layout& layout, std::span<const std::uint32_t> shape);

// The runs of a shard's host mapping, in increasing shard (and host) order.
std::vector<ByteRun> host_runs(const Shard& shard);
// How many runs host_runs would return, without making them.
std::uint64_t host_run_count(const Shard& shard);

}  // namespace tessera::compiler
