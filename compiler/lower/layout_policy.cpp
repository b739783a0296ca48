#include "compiler/lower/layout_policy.hpp"

#include <algorithm>

#include "schema/model.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

// Bytes of one index of `axis` of `shape` in `dtype`: the sub-tensor of the
// axes after it.
std::uint64_t slice_bytes(std::span<const std::uint32_t> shape, std::size_t axis, DType dtype) {
  std::uint64_t bytes = schema::dtype_size(dtype);
  for (std::size_t a = axis + 1; a < shape.size(); ++a) bytes *= shape[a];
  return bytes;
}

// The fewest indices (1, 2 or 4) of `axis` whose bytes are whole words.
std::uint64_t word_block(std::span<const std::uint32_t> shape, std::size_t axis, DType dtype) {
  const std::uint64_t row_bytes = slice_bytes(shape, axis, dtype);
  std::uint64_t block = 1;
  while ((block * row_bytes) % 4 != 0) block *= 2;
  return block;
}

std::uint64_t blocks_of(std::uint64_t extent, std::uint64_t block) {
  return (extent + block - 1) / block;
}

}  // namespace

Layout default_layout(const TensorType& type, std::uint32_t tiles, std::uint64_t min_shard_bytes) {
  Layout layout = single_tile_layout(type.element);
  layout.memory_class = MemoryClass::kInterleaved;
  const std::span<const std::uint32_t> shape = type.shape;
  if (shape.empty() || tiles <= 1) return layout;
  std::uint64_t most = tiles;
  if (min_shard_bytes > 0) {
    most = std::min(most, std::max<std::uint64_t>(1, byte_size(type) / min_shard_bytes));
  }
  // The split axis: the first whose blocks, times the indices of the axes
  // before it (each cut into single indices), give `most` shards. Moving
  // past an axis only while every index of it is whole words (so shard
  // boundaries stay on words), it has no more indices than `most`, and the
  // next axis is not the last of the tensor (rows stay whole).
  std::size_t axis = 0;
  std::uint64_t outer = 1;
  while (axis + 2 < shape.size() &&
         outer * blocks_of(shape[axis], word_block(shape, axis, type.dtype())) < most &&
         slice_bytes(shape, axis, type.dtype()) % 4 == 0 && outer * shape[axis] <= most) {
    outer *= shape[axis];
    ++axis;
  }
  const std::uint64_t block = word_block(shape, axis, type.dtype());
  const std::uint64_t blocks = blocks_of(shape[axis], block);
  std::uint64_t partitions = std::min(blocks, std::max<std::uint64_t>(1, most / outer));
  if (min_shard_bytes > 0) {
    // The smallest partition holds ⌊blocks / p⌋ blocks (resolve.hpp): enough
    // of them for min_shard_bytes. (Cutting the leading axes made equal
    // slices of at least that already: outer · extent ≤ most.)
    const std::uint64_t block_bytes = block * slice_bytes(shape, axis, type.dtype());
    const std::uint64_t needed = (min_shard_bytes + block_bytes - 1) / block_bytes;
    partitions = std::max<std::uint64_t>(1, std::min(partitions, blocks / needed));
  }
  if (outer * partitions <= 1) return layout;
  layout.tiling = row_range_tiling(shape, checked_cast<std::uint32_t>(axis, "axis"),
                                   checked_cast<std::uint32_t>(partitions, "partitions"), block);
  return layout;
}

std::vector<AxisTiling> row_range_tiling(std::span<const std::uint32_t> shape, std::uint32_t axis,
                                         std::uint32_t partitions, std::uint64_t block) {
  // Entry 0's partition varies fastest (layout.hpp): the split axis first,
  // then the cut axes from the innermost out, so shard k holds the k-th
  // range of the row-major tensor.
  std::vector<AxisTiling> tiling;
  if (partitions > 1) tiling.push_back(AxisTiling{axis, partitions, block, 1});
  for (std::uint32_t a = axis; a-- > 0;) {
    if (shape[a] > 1) tiling.push_back(AxisTiling{a, shape[a], 1, 1});
  }
  return tiling;
}

bool whole_words_in(const Layout& layout, std::span<const std::uint32_t> shape, DType dtype) {
  for (const AxisTiling& tiling : layout.tiling) {
    if ((tiling.block_size * slice_bytes(shape, tiling.axis, dtype)) % 4 != 0) return false;
  }
  return true;
}

TensorType entry_type(const TensorType& sequence) {
  TensorType entry = sequence;
  entry.shape.erase(entry.shape.begin());
  return entry;
}

std::optional<Layout> sequence_layout(const TensorType& type, std::uint32_t tiles,
                                      std::uint64_t min_shard_bytes) {
  const TensorType entry = entry_type(type);
  Layout layout = default_layout(entry, tiles, min_shard_bytes);
  if (entry.shape.empty()) {
    // A scalar entry: the stride is its element, whole words or nothing.
    if (schema::dtype_size(entry.dtype()) % 4 != 0) return std::nullopt;
    return layout;
  }
  const std::uint64_t block = word_block(entry.shape, 0, entry.dtype());
  if (layout.tiling.empty()) {
    // On one tile: pad its rows to whole blocks (a no-op for whole-word entries).
    layout.tiling = {AxisTiling{1, 1, block, block}};
  } else {
    for (AxisTiling& tiling : layout.tiling) {
      ++tiling.axis;
      tiling.padding_multiple = tiling.block_size;
    }
  }
  return layout;
}

std::set<ValueId> sequence_inputs(const Graph& graph) {
  std::set<ValueId> values;
  for (std::size_t k = 0; k < graph.operation_count(); ++k) {
    const Operation& op = graph.operation(OpId{checked_cast<std::uint32_t>(k, "operation")});
    if (op.kind != OpKind::kRepeat) continue;
    const auto& attributes = std::get<RepeatAttributes>(op.attributes);
    for (std::uint32_t j = 0; j < attributes.sequence; ++j) {
      const ValueId input = op.inputs[attributes.carried + j];
      values.insert(input);
      // A block-scaled sequence is read as its codes' and scales' entries.
      const std::optional<OpId> producer = graph.value(input).op;
      if (producer && graph.operation(*producer).kind == OpKind::kBlockScale) {
        for (const ValueId part : graph.operation(*producer).inputs) values.insert(part);
      }
    }
  }
  return values;
}

LayoutPolicy::LayoutPolicy(std::uint32_t tiles, std::uint64_t min_shard_bytes,
                           std::set<ValueId> sequences)
    : tiles_(tiles), min_shard_bytes_(min_shard_bytes), sequences_(std::move(sequences)) {}

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
  if (whole_words_in(own.layout, other.shape, other.dtype())) return own;
  // Else `other`'s layout: `other` is the narrower dtype (own's boundaries
  // are words in anything wider), so its word-aligned boundaries are words
  // in `type`'s dtype too.
  TensorPlacement theirs = computed(other);
  theirs.layout.precision = own.layout.precision;
  return theirs;
}

TensorPlacement LayoutPolicy::binding(const TensorType& type) { return spread(computed(type)); }

TensorPlacement LayoutPolicy::spread(TensorPlacement placement) {
  const auto count = static_cast<std::uint32_t>(placement.tiles.size());
  if (count >= tiles_) return placement;  // on every tile, from tile 0 like any value
  for (std::uint32_t k = 0; k < count; ++k) {
    placement.tiles[k] = target::LogicalTile(
        checked_cast<std::uint16_t>((next_binding_tile_ + k) % tiles_, "logical tile"));
  }
  next_binding_tile_ = (next_binding_tile_ + count) % tiles_;
  return placement;
}

std::optional<TensorPlacement> LayoutPolicy::sequence(const TensorType& type) const {
  std::optional<Layout> layout = sequence_layout(type, tiles_, min_shard_bytes_);
  if (!layout) return std::nullopt;
  TensorPlacement placement{std::move(*layout), {}};
  const std::uint32_t count = tile_count(placement.layout);
  for (std::uint32_t k = 0; k < count; ++k) {
    placement.tiles.emplace_back(checked_cast<std::uint16_t>(k, "logical tile"));
  }
  return placement;
}

TensorPlacement LayoutPolicy::entry(const TensorType& sequence_type,
                                    const TensorPlacement& sequence) const {
  return TensorPlacement{default_layout(entry_type(sequence_type), tiles_, min_shard_bytes_),
                         sequence.tiles};
}

TensorPlacement LayoutPolicy::place(ValueId value, const TensorType& type, bool binding) {
  if (sequences_.contains(value) && byte_size(entry_type(type)) % 4 == 0) {
    // Whole-word entries need no padding, so the host tensor's runs of each
    // tile start on words and a binding can lie entry-major too. Other
    // sequences are copied into entry-major scratch by the repeat.
    if (std::optional<TensorPlacement> placement = sequence(type)) {
      return binding ? spread(std::move(*placement)) : std::move(*placement);
    }
  }
  return binding ? this->binding(type) : computed(type);
}

}  // namespace tessera::compiler::lower
