#include "compiler/layout/resolve.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/checked.hpp"

namespace tessera::compiler {
namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple, std::string_view what) {
  const std::uint64_t units = value / multiple + (value % multiple != 0 ? 1 : 0);
  return checked_mul(units, multiple, what);
}

// The partitions of one axis (layout.hpp, AxisTiling): ⌊B/p⌋ blocks each,
// one more for the first B mod p.
std::vector<ShardExtent> partition_axis(std::uint64_t extent, std::uint64_t padded,
                                        const AxisTiling& tiling) {
  const std::uint64_t blocks =
      padded / tiling.block_size + (padded % tiling.block_size != 0 ? 1 : 0);
  const std::uint64_t base = blocks / tiling.partitions;
  const std::uint64_t extra = blocks % tiling.partitions;
  std::vector<ShardExtent> extents;
  extents.reserve(tiling.partitions);
  std::uint64_t first_block = 0;
  for (std::uint64_t i = 0; i < tiling.partitions; ++i) {
    const std::uint64_t count = base + (i < extra ? 1 : 0);
    // Block counts never exceed ⌈padded / block_size⌉, so start ≤ padded;
    // only the end of a short last block needs clamping.
    const std::uint64_t start =
        std::min(checked_mul(first_block, tiling.block_size, "shard start"), padded);
    const std::uint64_t end_blocks = first_block + count;
    std::uint64_t end = padded;
    std::uint64_t end_elements = 0;
    if (!__builtin_mul_overflow(end_blocks, tiling.block_size, &end_elements)) {
      end = std::min(end_elements, padded);
    }
    extents.push_back(ShardExtent{start, std::clamp(extent, start, end), end});
    first_block = end_blocks;
  }
  return extents;
}

HostMapping host_mapping(std::span<const std::uint32_t> shape, std::span<const ShardExtent> extents,
                         std::uint64_t element_size) {
  HostMapping mapping;
  const std::size_t rank = shape.size();
  for (const ShardExtent& extent : extents) {
    if (extent.logical_size() == 0) return mapping;  // no logical data, no runs
  }
  // Row-major strides of the shard (over physical sizes) and of the host tensor.
  std::vector<std::uint64_t> shard_stride(rank), host_stride(rank);
  std::uint64_t shard_step = element_size, host_step = element_size;
  for (std::size_t a = rank; a-- > 0;) {
    shard_stride[a] = shard_step;
    host_stride[a] = host_step;
    shard_step = checked_mul(shard_step, extents[a].physical_size(), "shard bytes");
    host_step = checked_mul<std::uint64_t>(host_step, shape[a], "tensor bytes");
  }
  for (std::size_t a = 0; a < rank; ++a) {
    mapping.host_offset += extents[a].start * host_stride[a];
  }
  // Merge inner axes into one run while every axis inside it is whole in the
  // shard (no padding) and in the host tensor (not split).
  std::uint64_t run = element_size;
  std::size_t merged = rank;
  while (merged > 0) {
    --merged;
    const ShardExtent& extent = extents[merged];
    run *= extent.logical_size();
    const bool whole =
        extent.logical_size() == extent.physical_size() && extent.logical_size() == shape[merged];
    if (!whole) break;
  }
  mapping.run_bytes = run;
  for (std::size_t a = 0; a < merged; ++a) {
    if (extents[a].logical_size() == 1) continue;  // a loop of one adds nothing
    mapping.loops.push_back({extents[a].logical_size(), shard_stride[a], host_stride[a]});
  }
  return mapping;
}

ResolvedLayout resolve_checked(const Layout& layout, std::span<const std::uint32_t> shape,
                               std::span<const target::LogicalTile> tiles) {
  const std::size_t rank = shape.size();
  ResolvedLayout resolved;
  resolved.layout = layout;
  resolved.shape.assign(shape.begin(), shape.end());
  resolved.padded_shape.assign(shape.begin(), shape.end());
  const std::uint64_t element_size = schema::dtype_size(layout.precision.dtype);

  // Per axis, its partitions; an axis no entry tiles is one whole partition.
  std::vector<std::vector<ShardExtent>> axis_partitions(rank);
  for (std::size_t a = 0; a < rank; ++a) {
    axis_partitions[a] = {ShardExtent{0, shape[a], shape[a]}};
  }
  for (const AxisTiling& entry : layout.tiling) {
    const std::uint64_t padded =
        round_up(shape[entry.axis], entry.padding_multiple, "padded extent");
    resolved.padded_shape[entry.axis] = padded;
    axis_partitions[entry.axis] = partition_axis(shape[entry.axis], padded, entry);
  }

  const std::size_t cells = tiles.size() / layout.replicas;
  std::vector<std::uint32_t> partition(layout.tiling.size(), 0);
  for (std::size_t cell = 0; cell < cells; ++cell) {
    // Entry 0's partition varies fastest.
    std::size_t rest = cell;
    for (std::size_t t = 0; t < layout.tiling.size(); ++t) {
      partition[t] = static_cast<std::uint32_t>(rest % layout.tiling[t].partitions);
      rest /= layout.tiling[t].partitions;
    }
    std::vector<ShardExtent> extents(rank);
    for (std::size_t a = 0; a < rank; ++a) extents[a] = axis_partitions[a][0];
    for (std::size_t t = 0; t < layout.tiling.size(); ++t) {
      extents[layout.tiling[t].axis] = axis_partitions[layout.tiling[t].axis][partition[t]];
    }
    std::uint64_t bytes = element_size;
    std::uint64_t logical_bytes = element_size;
    for (const ShardExtent& extent : extents) {
      bytes = checked_mul(bytes, extent.physical_size(), "shard bytes");
      logical_bytes *= extent.logical_size();  // ≤ bytes
    }
    const std::uint64_t allocation = round_up(bytes, layout.alignment, "allocation bytes");
    const HostMapping mapping = host_mapping(shape, extents, element_size);
    for (std::uint32_t replica = 0; replica < layout.replicas; ++replica) {
      Shard shard;
      shard.tile = tiles[cell * layout.replicas + replica];
      shard.replica = replica;
      shard.partition = partition;
      shard.extents = extents;
      shard.offset = 0;
      shard.bytes = bytes;
      shard.logical_bytes = logical_bytes;
      shard.allocation_bytes = allocation;
      shard.host = mapping;
      resolved.shards.push_back(std::move(shard));
    }
    resolved.max_allocation_bytes = std::max(resolved.max_allocation_bytes, allocation);
  }
  return resolved;
}

}  // namespace

ResolvedLayout resolve(const Layout& layout, std::span<const std::uint32_t> shape,
                       std::span<const target::LogicalTile> tiles) {
  const auto context = [&] {
    return fmt::format("resolving {} for shape {}", format_layout(layout), format_shape(shape));
  };
  if (auto problem = shape_problem(shape)) throw LayoutError(context() + ": " + *problem);
  if (auto problem = layout_problem(layout, shape.size())) {
    throw LayoutError(context() + ": " + *problem);
  }
  const std::uint32_t needed = tile_count(layout);
  if (tiles.size() != needed) {
    throw LayoutError(fmt::format("{}: the layout occupies {} tiles, but {} were given", context(),
                                  needed, tiles.size()));
  }
  for (const target::LogicalTile tile : tiles) {
    if (tile.value >= target::kTileCount) {
      throw LayoutError(fmt::format("{}: tile L{} is not on the chip (L0 to L{})", context(),
                                    tile.value, target::kTileCount - 1));
    }
  }
  std::vector<target::LogicalTile> sorted(tiles.begin(), tiles.end());
  std::sort(sorted.begin(), sorted.end());
  if (const auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
      repeated != sorted.end()) {
    throw LayoutError(fmt::format("{}: tile L{} is given twice", context(), repeated->value));
  }
  try {
    return resolve_checked(layout, shape, tiles);
  } catch (const ArithmeticError& error) {
    throw LayoutError(context() + ": " + error.message());
  }
}

ResolvedLayout resolve(const Layout& layout, std::span<const std::uint32_t> shape) {
  std::vector<target::LogicalTile> tiles;
  // tile_count checks the count against the chip, so it fits a tile id.
  const std::uint32_t count = layout_problem(layout, shape.size()) ? 0 : tile_count(layout);
  for (std::uint32_t i = 0; i < count; ++i) {
    tiles.emplace_back(static_cast<std::uint16_t>(i));
  }
  return resolve(layout, shape, tiles);
}

std::uint64_t host_run_count(const Shard& shard) {
  if (shard.host.run_bytes == 0) return 0;
  std::uint64_t count = 1;
  for (const auto& loop : shard.host.loops) count *= loop.count;  // ≤ elements of the shard
  return count;
}

std::vector<ByteRun> host_runs(const Shard& shard) {
  std::vector<ByteRun> runs;
  const HostMapping& mapping = shard.host;
  if (mapping.run_bytes == 0) return runs;
  runs.reserve(host_run_count(shard));
  std::vector<std::uint64_t> index(mapping.loops.size(), 0);
  while (true) {
    ByteRun run{mapping.shard_offset, mapping.host_offset, mapping.run_bytes};
    for (std::size_t l = 0; l < index.size(); ++l) {
      run.shard_offset += index[l] * mapping.loops[l].shard_stride;
      run.host_offset += index[l] * mapping.loops[l].host_stride;
    }
    runs.push_back(run);
    // Odometer, innermost loop fastest.
    std::size_t l = index.size();
    while (l > 0 && ++index[l - 1] == mapping.loops[l - 1].count) index[--l] = 0;
    if (l == 0) break;
  }
  return runs;
}

}  // namespace tessera::compiler
