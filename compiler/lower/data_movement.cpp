#include <fmt/format.h>

#include <algorithm>

#include "compiler/lower/operations.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {

// For every result element, the input it comes from and where in it.
void lower_data_movement(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  const std::uint32_t provenance = program.add_provenance(described);
  const Storage& out = context.allocate(result, type, format_value(result), provenance);
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
