#include "compiler/layout/locate.hpp"

#include <algorithm>
#include <stdexcept>

#include "schema/model.hpp"

namespace tessera::compiler {

ElementLocator::ElementLocator(const ResolvedLayout& resolved)
    : resolved_(resolved),
      element_bytes_(schema::dtype_size(resolved.layout.precision.dtype)),
      element_count_(element_count(resolved.shape)) {
  const Layout& layout = resolved.layout;
  std::uint64_t cells = 1;
  for (std::size_t e = 0; e < layout.tiling.size(); ++e) {
    TiledAxis tiled{layout.tiling[e].axis, {}};
    tiled.starts.resize(layout.tiling[e].partitions, 0);
    cell_strides_.push_back(cells);
    cells *= layout.tiling[e].partitions;
    tiled_.push_back(std::move(tiled));
  }
  // Replica-0 shards, in packing order, give each partition's start.
  for (std::size_t k = 0; k < resolved.shards.size(); ++k) {
    const Shard& shard = resolved.shards[k];
    if (shard.replica != 0) continue;
    for (std::size_t e = 0; e < tiled_.size(); ++e) {
      tiled_[e].starts[shard.partition[e]] = shard.extents[tiled_[e].axis].start;
    }
  }
}

ElementPlace ElementLocator::locate(std::uint64_t flat_index) const {
  if (flat_index >= element_count_) throw std::out_of_range("element index past the tensor");
  const auto& shape = resolved_.shape;
  std::vector<std::uint64_t> index(shape.size());
  for (std::size_t a = shape.size(); a-- > 0;) {
    index[a] = flat_index % shape[a];
    flat_index /= shape[a];
  }
  return locate(index);
}

ElementPlace ElementLocator::locate(std::span<const std::uint64_t> index) const {
  std::uint64_t cell = 0;
  for (std::size_t e = 0; e < tiled_.size(); ++e) {
    const TiledAxis& tiled = tiled_[e];
    const auto& starts = tiled.starts;
    const std::uint64_t coordinate = index[tiled.axis];
    const bool same = starts[tiled.last] <= coordinate &&
                      (tiled.last + 1 == starts.size() || coordinate < starts[tiled.last + 1]);
    if (!same) {
      tiled.last = static_cast<std::uint64_t>(
          std::upper_bound(starts.begin(), starts.end(), coordinate) - starts.begin() - 1);
    }
    cell += tiled.last * cell_strides_[e];
  }
  const std::size_t shard_index = static_cast<std::size_t>(cell * resolved_.layout.replicas);
  const Shard& shard = resolved_.shards.at(shard_index);
  std::uint64_t offset = 0;  // in elements, row-major over the physical extents
  for (std::size_t a = 0; a < shard.extents.size(); ++a) {
    offset = offset * shard.extents[a].physical_size() + (index[a] - shard.extents[a].start);
  }
  return {shard_index, shard.offset + offset * element_bytes_};
}

ElementLocator::Run ElementLocator::locate_run(std::span<const std::uint64_t> index) const {
  const ElementPlace place = locate(index);
  if (index.empty()) return {place, 1};
  // Row-major over the physical extents: the last axis is the contiguous
  // one, up to the shard's last logical element on it.
  const ShardExtent& last = resolved_.shards[place.shard].extents.back();
  return {place, last.logical_end - index.back()};
}

}  // namespace tessera::compiler
