// The lowering of layer_norm and softmax (operations.hpp): both work on
// whole rows of the last axis, so the result lies where every row is on one
// tile — the default layout for rank ≥ 2 (it never splits the last axis, so
// a shard holds whole rows), one tile for rank 1 (where the one row is the
// whole tensor and the default split would cut it). The input is moved there when it lies
// elsewhere; then per tile, on its shard of `rows` rows of C columns:
//
//   softmax      tessera_softmax_rows_{f32,f16} (kernels/row_normalisation.hpp).
//   layer_norm   γ and β are brought to every tile that holds rows, into one
//                affine buffer [γ ∣ β] (the kernels' operand) — gathered on
//                the first row tile first when they are spread over tiles,
//                then multicast whole from there —, ε as its Q30
//                register (kernels/layer_norm.hpp's encoding), and
//                then tessera_layer_norm_rows_{f32,f16} on the row-major
//                shard (the f16 kernel has the A16 kernel's numerics, and on
//                SigLIP's one row per tile its six workers share the row).
//
// Their numerics are plan-dependent: docs/GRAPH_FORMAT.md's bounds, which the
// kernels' arithmetic meets (single-pass variance, f32 sums, Q30 ε).
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "compiler/lower/lower.hpp"
#include "compiler/lower/operations.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/row_normalisation.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16; }

// Where a row-wise op's result lies: the default layout when its last axis
// is whole in every shard (rank ≥ 2: default_layout never splits it), else
// one tile.
TensorPlacement row_placement(const LoweringContext& context, const TensorType& type) {
  TensorPlacement placement = context.layouts().computed(type);
  const auto last = static_cast<std::uint32_t>(type.shape.size()) - 1;
  const bool whole_rows =
      type.shape.size() >= 2 &&
      std::none_of(placement.layout.tiling.begin(), placement.layout.tiling.end(),
                   [&](const AxisTiling& tiling) { return tiling.axis == last; });
  if (whole_rows) return placement;
  return TensorPlacement{default_layout(type, 1), {LogicalTile(0)}};
}

// `input` in `like`'s layout (same type): itself, or a scratch `moves` fills.
const Storage& in_layout_of(LoweringContext& context, MoveLowering& moves, ValueId input,
                            const TensorType& type, const Storage& like, OpId id,
                            std::uint32_t provenance) {
  const Storage& source = context.storage(input);
  if (source.resolved == like.resolved) return source;
  const Storage& holder = context.scratch_like(
      like, fmt::format("{} moved for op {}", format_value(input), id.index), format_value(input),
      provenance);
  move_same_index(moves, holder, source, type.shape, element_bytes(type));
  return holder;
}

struct RowShard {
  const Shard* shard;
  std::uint32_t rows;
};

// The shards that hold rows, with their row counts.
std::vector<RowShard> row_shards(const Storage& out, std::uint32_t columns, std::uint32_t s) {
  std::vector<RowShard> result;
  for (const Shard& shard : out.resolved.shards) {
    const std::uint64_t rows = shard.bytes / (std::uint64_t{columns} * s);
    if (rows > 0) result.push_back({&shard, checked_cast<std::uint32_t>(rows, "shard rows")});
  }
  return result;
}

std::uint32_t offset_of(const Shard& shard) {
  return checked_cast<std::uint32_t>(shard.offset, "shard offset");
}

void lower_softmax(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  if (!is_float(type.dtype())) throw LoweringError(fmt::format("{}: softmax takes f32 or f16", described));
  const std::uint32_t provenance = program.add_provenance(described);
  const Storage& out =
      context.allocate_at(result, type, row_placement(context, type), format_value(result), provenance);
  const std::uint32_t s = element_bytes(type);
  MoveLowering moves(program, fmt::format("op {}", id.index), provenance, s);
  const Storage& in = in_layout_of(context, moves, op.inputs[0], type, out, id, provenance);
  const std::uint32_t columns = type.shape.back();
  const std::string kernel(type.dtype() == DType::kF32 ? kernels::kSoftmaxRowsF32
                                                        : kernels::kSoftmaxRowsF16);
  std::map<LogicalTile, std::vector<KernelRun>> compute;
  for (const RowShard& piece : row_shards(out, columns, s)) {
    const std::uint32_t offset = offset_of(*piece.shard);
    compute[piece.shard->tile].push_back(KernelRun{
        kernel, {{2, out.buffer, offset}, {3, in.buffer, offset}}, {{4, piece.rows}, {5, columns}},
        provenance});
  }
  context.finish_steps(moves, std::move(compute), provenance);
}

// A scratch buffer of `bytes` per tile.
BufferId scratch(Program& program, std::string name, std::uint32_t provenance,
                 const std::map<LogicalTile, std::uint64_t>& bytes, MemoryClass memory_class) {
  Buffer buffer;
  buffer.name = std::move(name);
  buffer.kind = schema::AllocationKind::kScratch;
  buffer.provenance = provenance;
  for (const auto& [tile, size] : bytes) {
    LoweringContext::require_placeable(buffer, tile, size, memory_class);
    // Allocations are whole multiples of the 8-byte alignment, as resolve()'s.
    buffer.bytes[tile] = checked_cast<std::uint32_t>((size + 7) / 8 * 8, "scratch bytes");
  }
  return program.add_buffer(std::move(buffer));
}

void lower_layer_norm(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  if (!is_float(type.dtype())) {
    throw LoweringError(fmt::format("{}: layer_norm takes f32 or f16", described));
  }
  const double epsilon = std::get<LayerNormAttributes>(op.attributes).epsilon;
  std::uint32_t epsilon_register = 0;
  try {
    epsilon_register = kernels::epsilon_q30(epsilon);
  } catch (const std::invalid_argument& error) {
    throw LoweringError(fmt::format("{}: {}", described, error.what()));
  }
  const std::uint32_t provenance = program.add_provenance(described);
  const Storage& out =
      context.allocate_at(result, type, row_placement(context, type), format_value(result), provenance);
  const std::uint32_t s = element_bytes(type);
  const std::uint32_t columns = type.shape.back();
  MoveLowering moves(program, fmt::format("op {}", id.index), provenance, s);
  const Storage& in = in_layout_of(context, moves, op.inputs[0], type, out, id, provenance);
  const std::vector<RowShard> pieces = row_shards(out, columns, s);
  const MemoryClass memory_class = out.resolved.layout.memory_class;

  // [γ ∣ β] on every tile that holds rows.
  std::map<LogicalTile, std::uint64_t> affine_bytes;
  for (const RowShard& piece : pieces) affine_bytes[piece.shard->tile] = 2ull * columns * s;
  const BufferId affine =
      scratch(program, fmt::format("affine (op {})", id.index), provenance, affine_bytes, memory_class);
  const Storage& gamma = context.storage(op.inputs[1]);
  const Storage& beta = context.storage(op.inputs[2]);
  if (pieces.size() > 1 && (lies_in_small_pieces(gamma) || lies_in_small_pieces(beta))) {
    // γ and β cut in small pieces (a [C] parameter's default layout without
    // --min-shard-bytes) would be one multicast per source word to every row
    // tile: gather them on the first row tile in a phase of their own, then
    // multicast the whole affine buffer (2·C·s bytes, whole words) from
    // there. In a few whole runs they are multicast from where they lie.
    const LogicalTile first = pieces.front().shard->tile;
    MoveLowering gather(program, fmt::format("op {} affine", id.index), provenance, s);
    for (std::uint32_t c = 0; c < columns; ++c) {
      const Index index{c};
      gather.move(Location{first, affine, c * s}, gamma.location(index));
      gather.move(Location{first, affine, (columns + c) * s}, beta.location(index));
    }
    context.finish_steps(gather, {}, provenance);
    for (const RowShard& piece : pieces) {
      if (piece.shard->tile == first) continue;
      for (std::uint32_t e = 0; e < 2 * columns; ++e) {
        moves.move(Location{piece.shard->tile, affine, e * s}, Location{first, affine, e * s});
      }
    }
  } else {
    for (const RowShard& piece : pieces) {
      for (std::uint32_t c = 0; c < columns; ++c) {
        const Index index{c};
        moves.move(Location{piece.shard->tile, affine, c * s}, gamma.location(index));
        moves.move(Location{piece.shard->tile, affine, (columns + c) * s}, beta.location(index));
      }
    }
  }

  std::map<LogicalTile, std::vector<KernelRun>> compute;
  const std::string_view kernel =
      type.dtype() == DType::kF32 ? kernels::kLayerNormRowsF32 : kernels::kLayerNormRowsF16;
  for (const RowShard& piece : pieces) {
    const std::uint32_t offset = offset_of(*piece.shard);
    compute[piece.shard->tile].push_back(
        KernelRun{std::string(kernel),
                  {{2, out.buffer, offset}, {3, in.buffer, offset}, {4, affine, 0}},
                  {{5, piece.rows}, {6, columns}, {7, epsilon_register}},
                  provenance});
  }
  context.finish_steps(moves, std::move(compute), provenance);
}

}  // namespace

void lower_normalisation(LoweringContext& context, OpId id, const std::string& described) {
  if (context.graph().operation(id).kind == OpKind::kSoftmax) {
    return lower_softmax(context, id, described);
  }
  return lower_layer_norm(context, id, described);
}

}  // namespace tessera::compiler::lower
