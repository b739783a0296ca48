#include <fmt/format.h>

#include <limits>

#include "compiler/lower/operations.hpp"
#include "kernels/registry.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {

void lower_binary_elementwise(LoweringContext& context, OpId id, const std::string& described,
                              std::string_view name, std::string_view f32_kernel,
                              std::string_view f16_kernel) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  if (type.dtype() != DType::kF32 && type.dtype() != DType::kF16) {
    throw LoweringError(fmt::format("{}: {} takes f32 or f16", described, name));
  }
  const std::uint32_t provenance = program.add_provenance(described);
  const Storage& out = context.allocate(result, type, format_value(result), provenance);
  MoveLowering moves(program, fmt::format("op {}", id.index), provenance, element_bytes(type));
  // Each operand in the result's layout: itself, or a broadcast (or moved) copy.
  std::vector<BufferId> operands;
  for (std::size_t k = 0; k < 2; ++k) {
    const ValueId input = op.inputs[k];
    // An operand of the result's type and placement is used where it is;
    // any other is brought into the result's layout (a broadcast is
    // materialised, a tensor on other tiles is moved).
    if (graph.type(input) == type && context.storage(input).resolved == out.resolved) {
      operands.push_back(context.storage(input).buffer);
      continue;
    }
    const Storage& source = gathered_broadcast(context, input, type, out, id, provenance);
    const Storage& holder = context.scratch_like(
        out, fmt::format("{} broadcast to {}", format_value(input), format_shape(type.shape)),
        format_value(input), provenance);
    Index index(type.shape.size(), 0);
    const std::uint64_t count = element_count(type.shape);
    for (std::uint64_t n = 0; n < count; ++n, next_index(index, type.shape)) {
      moves.move(holder.location(index),
                 source.location(broadcast_source(graph.type(input).shape, index)));
    }
    operands.push_back(holder.buffer);
  }
  const std::string kernel(type.dtype() == DType::kF32 ? f32_kernel : f16_kernel);
  auto compute = binary_elementwise_runs(kernel, out, operands[0], operands[1], element_bytes(type),
                                         provenance);
  context.finish_steps(moves, std::move(compute), provenance);
}

void lower_add(LoweringContext& context, OpId id, const std::string& described) {
  lower_binary_elementwise(context, id, described, "add", kernels::kAddF32, kernels::kAddF16);
}

void lower_reduce_sum(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  const TensorType& in_type = graph.type(op.inputs[0]);
  const auto& reduce = std::get<ReduceAttributes>(op.attributes);
  const std::uint32_t s = element_bytes(type);
  if (type.dtype() != DType::kF32 && type.dtype() != DType::kF16) {
    throw LoweringError(fmt::format("{}: reduce_sum takes f32 or f16", described));
  }
  const std::uint32_t provenance = program.add_provenance(described);
  const Storage& out = context.allocate(result, type, format_value(result), provenance);
  const Storage& source = context.storage(op.inputs[0]);

  std::vector<bool> reduced(in_type.shape.size(), false);
  Shape reduced_shape;
  for (const std::uint32_t axis : reduce.axes) {
    reduced[axis] = true;
    reduced_shape.push_back(in_type.shape[axis]);
  }
  const std::uint64_t contributions = element_count(reduced_shape);

  // The partials buffer on each result tile: row k holds the k-th
  // contribution of every element of the tile's shard.
  Buffer partials;
  partials.name = fmt::format("partials (op {})", id.index);
  partials.kind = schema::AllocationKind::kScratch;
  partials.provenance = provenance;
  std::map<LogicalTile, std::uint32_t> stride;
  std::map<LogicalTile, std::uint64_t> shard_offset;
  for (const Shard& shard : out.resolved.shards) {
    if (shard.bytes == 0) continue;
    shard_offset[shard.tile] = shard.offset;
    const std::uint64_t row = (shard.bytes + 3) / 4 * 4;
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(row, contributions, &bytes)) {
      bytes = std::numeric_limits<std::uint64_t>::max();
    }
    // Partials that could never fit are the placement report now, not
    // after lowering every contribution's move.
    LoweringContext::require_placeable(partials, shard.tile, bytes, out.resolved.layout.memory_class);
    stride[shard.tile] = checked_cast<std::uint32_t>(row, "partials row");
    partials.bytes[shard.tile] = checked_cast<std::uint32_t>(bytes, "partials bytes");
  }
  const BufferId partials_id = program.add_buffer(std::move(partials));

  MoveLowering moves(program, fmt::format("op {}", id.index), provenance, s);
  Index k_index(reduced_shape.size(), 0);
  Index from(in_type.shape.size(), 0);
  for (std::uint64_t k = 0; k < contributions; ++k, next_index(k_index, reduced_shape)) {
    Index index(type.shape.size(), 0);
    const std::uint64_t count = element_count(type.shape);
    for (std::uint64_t n = 0; n < count; ++n, next_index(index, type.shape)) {
      // The input index: kept axes from the result, reduced ones from k.
      std::size_t kept = 0, r = 0;
      for (std::size_t a = 0; a < from.size(); ++a) {
        if (reduced[a]) {
          from[a] = k_index[r++];
          if (reduce.keep_dims) ++kept;
        } else {
          from[a] = index[kept++];
        }
      }
      const Location target = out.location(index);
      const auto slot = checked_cast<std::uint32_t>(
          k * stride.at(target.tile) + (target.offset - shard_offset.at(target.tile)),
          "partials slot");
      moves.move(Location{target.tile, partials_id, slot}, source.location(from));
    }
  }
  const std::string kernel(type.dtype() == DType::kF32 ? kernels::kSumF32 : kernels::kSumF16);
  std::map<LogicalTile, std::vector<KernelRun>> compute;
  for (const Shard& shard : out.resolved.shards) {
    if (shard.bytes == 0) continue;
    compute[shard.tile].push_back(
        KernelRun{kernel,
                  {{2, out.buffer, checked_cast<std::uint32_t>(shard.offset, "shard offset")},
                   {3, partials_id, 0}},
                  {{4, checked_cast<std::uint32_t>(shard.bytes / s, "sum elements")},
                   {5, checked_cast<std::uint32_t>(contributions, "sum rows")},
                   {6, stride.at(shard.tile)}},
                  provenance});
  }
  context.finish_steps(moves, std::move(compute), provenance);
}

}  // namespace tessera::compiler::lower
