#include "compiler/lower/layout_policy.hpp"

#include <algorithm>

#include "schema/model.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {

Layout default_layout(const TensorType& type, std::uint32_t tiles, std::uint64_t min_shard_bytes) {
  Layout layout = single_tile_layout(type.element);
  layout.memory_class = MemoryClass::kInterleaved;
  if (type.shape.empty() || tiles <= 1) return layout;
  std::uint64_t row_bytes = schema::dtype_size(type.dtype());
  for (std::size_t a = 1; a < type.shape.size(); ++a) row_bytes *= type.shape[a];
  std::uint64_t block = 1;
  while ((block * row_bytes) % 4 != 0) block *= 2;  // 1, 2 or 4 rows
  const std::uint64_t blocks = (type.shape[0] + block - 1) / block;
  std::uint64_t most = std::min<std::uint64_t>(blocks, tiles);
  if (min_shard_bytes > 0) most = std::min(most, std::max<std::uint64_t>(1, byte_size(type) / min_shard_bytes));
  const auto partitions = checked_cast<std::uint32_t>(most, "partitions");
  if (partitions <= 1) return layout;
  layout.tiling = {AxisTiling{0, partitions, block, 1}};
  return layout;
}

LayoutPolicy::LayoutPolicy(std::uint32_t tiles, std::uint64_t min_shard_bytes)
    : tiles_(tiles), min_shard_bytes_(min_shard_bytes) {}

TensorPlacement LayoutPolicy::computed(const TensorType& type) const {
  TensorPlacement placement{default_layout(type, tiles_, min_shard_bytes_), {}};
  const std::uint32_t count = tile_count(placement.layout);
  for (std::uint32_t k = 0; k < count; ++k) {
    placement.tiles.emplace_back(checked_cast<std::uint16_t>(k, "logical tile"));
  }
  return placement;
}

TensorPlacement LayoutPolicy::computed_like(const TensorType& type, const TensorType& other) const {
  TensorPlacement own = computed(type);
  // Own rows serve `other` too when they are one tile, or blocks whose bytes
  // in `other`'s dtype are whole words as well.
  if (own.layout.tiling.empty()) return own;
  std::uint64_t other_row_bytes = schema::dtype_size(other.dtype());
  for (std::size_t a = 1; a < other.shape.size(); ++a) other_row_bytes *= other.shape[a];
  if ((own.layout.tiling[0].block_size * other_row_bytes) % 4 == 0) return own;
  // Else `other`'s rows: one tile, or a larger block (a power of two, so a
  // multiple of own's, whole words in both dtypes).
  TensorPlacement theirs = computed(other);
  theirs.layout.precision = own.layout.precision;
  return theirs;
}

TensorPlacement LayoutPolicy::binding(const TensorType& type) {
  TensorPlacement placement = computed(type);
  const auto count = static_cast<std::uint32_t>(placement.tiles.size());
  if (count >= tiles_) return placement;  // on every tile, from tile 0 like any value
  for (std::uint32_t k = 0; k < count; ++k) {
    placement.tiles[k] = target::LogicalTile(
        checked_cast<std::uint16_t>((next_binding_tile_ + k) % tiles_, "logical tile"));
  }
  next_binding_tile_ = (next_binding_tile_ + count) % tiles_;
  return placement;
}

}  // namespace tessera::compiler::lower
