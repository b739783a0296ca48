#include "compiler/lower/layout_policy.hpp"

#include <algorithm>

#include "schema/model.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

// The fewest rows (1, 2 or 4) of `type` whose bytes are whole words.
std::uint64_t word_block(const TensorType& type) {
  std::uint64_t row_bytes = schema::dtype_size(type.dtype());
  for (std::size_t a = 1; a < type.shape.size(); ++a) row_bytes *= type.shape[a];
  std::uint64_t block = 1;
  while ((block * row_bytes) % 4 != 0) block *= 2;
  return block;
}

}  // namespace

Layout default_layout(const TensorType& type, std::uint32_t tiles, std::uint64_t min_shard_bytes) {
  Layout layout = single_tile_layout(type.element);
  layout.memory_class = MemoryClass::kInterleaved;
  if (type.shape.empty() || tiles <= 1) return layout;
  const std::uint64_t block = word_block(type);
  const std::uint64_t blocks = (type.shape[0] + block - 1) / block;
  std::uint64_t most = std::min<std::uint64_t>(blocks, tiles);
  if (min_shard_bytes > 0)
    most = std::min(most, std::max<std::uint64_t>(1, byte_size(type) / min_shard_bytes));
  const auto partitions = checked_cast<std::uint32_t>(most, "partitions");
  if (partitions <= 1) return layout;
  layout.tiling = {AxisTiling{0, partitions, block, 1}};
  return layout;
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
  const std::uint64_t block = word_block(entry);
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
