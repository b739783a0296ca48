#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "compiler/lower/operations.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

// Where a reshape's result lies so that each element stays on its tile: the
// input's shards when they are contiguous, unpadded ranges of the row-major
// tensor that a layout of the result's shape cuts the same way (leading axes
// cut into single indices and one axis split in blocks, the default
// layouts' family). The reshape is then local copies, not an exchange phase
// with its rows in every tile's code (SigLIP's [1, 729, 1152] → [1, 729, 16,
// 72], whose default layout splits the heads too). nullopt otherwise.
std::optional<TensorPlacement> same_ranges(const Storage& in, const TensorType& type) {
  const ResolvedLayout& from = in.resolved;
  if (from.layout.replicas != 1 || from.shards.size() < 2) return std::nullopt;
  std::vector<target::LogicalTile> tiles;
  for (const Shard& shard : from.shards) {
    const bool contiguous = shard.host.loops.empty() && shard.logical_bytes > 0 &&
                            shard.logical_bytes == shard.bytes && shard.host.run_bytes == shard.bytes;
    if (!contiguous) return std::nullopt;
    tiles.push_back(shard.tile);
  }
  const auto count = static_cast<std::uint64_t>(from.shards.size());
  const auto matches = [&](const ResolvedLayout& candidate) {
    for (std::size_t k = 0; k < from.shards.size(); ++k) {
      const Shard& a = from.shards[k];
      const Shard& b = candidate.shards[k];
      if (b.host.host_offset != a.host.host_offset || b.bytes != a.bytes ||
          b.logical_bytes != a.logical_bytes || !b.host.loops.empty()) {
        return false;
      }
    }
    return true;
  };
  const auto& shape = type.shape;
  std::uint64_t outer = 1;
  for (std::size_t axis = 0; axis < shape.size(); outer *= shape[axis], ++axis) {
    if (count % outer != 0) continue;
    const std::uint64_t partitions = count / outer;
    if (partitions > shape[axis]) continue;
    Layout layout = from.layout;
    for (std::uint64_t block = 1; block <= shape[axis]; block *= 2) {
      layout.tiling = row_range_tiling(shape, static_cast<std::uint32_t>(axis),
                                       static_cast<std::uint32_t>(partitions), block);
      if (tile_count(layout) != count) break;
      try {
        const ResolvedLayout candidate = resolve(layout, shape, tiles);
        if (matches(candidate)) return TensorPlacement{layout, tiles};
      } catch (const LayoutError&) {
      }
      if (partitions == 1) break;
    }
  }
  return std::nullopt;
}

}  // namespace

// For every result element, the input it comes from and where in it.
void lower_data_movement(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  const std::uint32_t provenance = program.add_provenance(described);
  std::optional<TensorPlacement> kept;
  if (op.kind == OpKind::kReshape &&
      context.layouts().place(result, type, false).layout == context.layouts().computed(type).layout) {
    // (Not for a value a repeat reads as a sequence: that one lies entry-major.)
    kept = same_ranges(context.storage(op.inputs[0]), type);
  }
  const Storage& out =
      kept ? context.allocate_at(result, type, *kept, format_value(result), provenance)
           : context.allocate(result, type, format_value(result), provenance);
  MoveLowering moves(program, fmt::format("op {}", id.index), provenance, element_bytes(type));
  const auto& shape = type.shape;
  // concat: where each input starts along the axis, so an element's input
  // is one binary search (not a scan of the inputs before it).
  std::vector<std::uint64_t> starts;
  if (op.kind == OpKind::kConcat) {
    const std::uint32_t axis = std::get<ConcatAttributes>(op.attributes).axis;
    std::uint64_t at = 0;
    for (const ValueId input : op.inputs) {
      starts.push_back(at);
      at += graph.type(input).shape[axis];
    }
  }
  Index index(shape.size(), 0);
  Index from;
  const std::uint64_t count = element_count(shape);
  std::uint64_t flat = 0;
  for (std::uint64_t n = 0; n < count; ++n, next_index(index, shape), ++flat) {
    std::size_t input = 0;
    switch (op.kind) {
      case OpKind::kCopy: from = index; break;
      case OpKind::kReshape: {
        const auto& in_shape = graph.type(op.inputs[0]).shape;
        from.assign(in_shape.size(), 0);
        std::uint64_t rest = flat;
        for (std::size_t a = in_shape.size(); a-- > 0;) {
          from[a] = rest % in_shape[a];
          rest /= in_shape[a];
        }
        break;
      }
      case OpKind::kSlice: {
        const auto& slice = std::get<SliceAttributes>(op.attributes);
        from = index;
        for (std::size_t a = 0; a < from.size(); ++a) from[a] += slice.begin[a];
        break;
      }
      case OpKind::kTranspose: {
        const auto& permutation = std::get<TransposeAttributes>(op.attributes).permutation;
        from.assign(index.size(), 0);
        for (std::size_t a = 0; a < index.size(); ++a) from[permutation[a]] = index[a];
        break;
      }
      case OpKind::kBroadcastTo: from = broadcast_source(graph.type(op.inputs[0]).shape, index); break;
      case OpKind::kConcat: {
        const std::uint32_t axis = std::get<ConcatAttributes>(op.attributes).axis;
        from = index;
        const auto after = std::upper_bound(starts.begin(), starts.end(), index[axis]);
        input = static_cast<std::size_t>(after - starts.begin()) - 1;
        from[axis] -= starts[input];
        break;
      }
      default:
        throw LoweringError(fmt::format("{}: not a data-movement operation", described));
    }
    moves.move(out.location(index), context.storage(op.inputs[input]).location(from));
  }
  context.finish_steps(moves, {}, provenance);
}

}  // namespace tessera::compiler::lower
