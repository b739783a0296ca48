// The lowering of mul, gelu and convert (operations.hpp): element-wise
// kernels on each shard of the result, every operand first brought into the
// result's rows (docs/GRAPH_FORMAT.md "Numerics": mul and convert are exact,
// so the kernels' bits are the reference's; gelu is within its bound).
//
//   mul      as add (arithmetic.cpp): a broadcast or misplaced operand is
//            materialised in the result's layout (a broadcast one spread over
//            tiles gathered on one tile first), then tessera_mul_{f32,f16}.
//   gelu     tessera_gelu_{f32,f16} per shard, the input moved into the
//            result's layout when it lies elsewhere.
//   convert  the result on the rows both dtypes' default layouts allow
//            (LayoutPolicy::computed_like), the input moved there when it
//            is not, then per shard:
//              f32 → f16, f16 → f32   tessera_convert_*;
//              f16 → f8f143           tessera_quantize_f16_to_f143;
//              f8f143 → f16           tessera_expand_f143_to_f16 (≤ 4096
//                                     codes per call: one scale block);
//              f8f143 → f32           expand into an f16 scratch, then
//                                     f16 → f32 — exact only where every
//                                     code's value is an f16 (scales −14 … 8),
//                                     refused elsewhere;
//              f32 → f8f143           refused: the device quantises from f16,
//                                     and rounding through f16 first is not
//                                     the reference's one rounding.
//            The F143 kernels take counts that are multiples of 4; a shard's
//            last group is rounded up to 4 into its allocation's padding
//            (allocations are whole multiples of 8 bytes, so 4 codes and 4
//            f16s always fit), whose bytes no logical element reads.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/lower/lower.hpp"
#include "compiler/lower/operations.hpp"
#include "kernels/f143.hpp"
#include "kernels/f143_kernels.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16; }

std::uint32_t shard_offset(const Shard& shard) {
  return checked_cast<std::uint32_t>(shard.offset, "shard offset");
}

std::uint32_t shard_elements(const Shard& shard, std::uint32_t element_size) {
  return checked_cast<std::uint32_t>(shard.bytes / element_size, "shard elements");
}

// `input` where `like` (of the same shape) lies: itself when it is there
// already, else a scratch in `like`'s layout that `moves` fills.
const Storage& in_layout_of(LoweringContext& context, MoveLowering& moves, ValueId input,
                            const TensorType& type, const Storage& like, std::uint32_t provenance) {
  const Storage& source = context.storage(input);
  if (source.resolved == like.resolved) return source;
  const Storage& holder = context.scratch_like(
      like, fmt::format("{} moved for op", format_value(input)), format_value(input), provenance);
  move_same_index(moves, holder, source, type.shape, element_bytes(type));
  return holder;
}

void lower_mul(LoweringContext& context, OpId id, const std::string& described) {
  lower_binary_elementwise(context, id, described, "mul", kernels::kMulF32, kernels::kMulF16);
}

void lower_gelu(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  if (!is_float(type.dtype())) throw LoweringError(fmt::format("{}: gelu takes f32 or f16", described));
  const std::uint32_t provenance = program.add_provenance(described);
  const Storage& out = context.allocate(result, type, format_value(result), provenance);
  MoveLowering moves(program, fmt::format("op {}", id.index), provenance, element_bytes(type));
  const Storage& in = in_layout_of(context, moves, op.inputs[0], type, out, provenance);
  const std::string kernel(type.dtype() == DType::kF32 ? kernels::kGeluF32 : kernels::kGeluF16);
  std::map<LogicalTile, std::vector<KernelRun>> compute;
  for (const Shard& shard : out.resolved.shards) {
    const std::uint32_t elements = shard_elements(shard, element_bytes(type));
    if (elements == 0) continue;
    const std::uint32_t offset = shard_offset(shard);
    compute[shard.tile].push_back(KernelRun{
        kernel, {{2, out.buffer, offset}, {3, in.buffer, offset}}, {{4, elements}}, provenance});
  }
  context.finish_steps(moves, std::move(compute), provenance);
}

// Calls of an F143 kernel ($m2 out, $m3 in, $m4 count, $m5 scale) over one
// shard of `elements`, in pieces of at most `most` (a multiple of 4), the
// last rounded up to a multiple of 4.
void f143_runs(std::vector<KernelRun>& runs, std::string_view kernel, BufferId out,
               std::uint32_t out_offset, std::uint32_t out_size, BufferId in, std::uint32_t in_offset,
               std::uint32_t in_size, std::uint32_t elements, int scale, std::uint32_t most,
               std::uint32_t provenance) {
  const std::uint32_t group = kernels::kF143GroupElements;
  const std::uint32_t padded = checked_add(elements, (group - elements % group) % group, "F143 count");
  for (std::uint32_t done = 0; done < padded;) {
    const std::uint32_t count = std::min(padded - done, most);
    runs.push_back(KernelRun{std::string(kernel),
                             {{2, out, out_offset + done * out_size}, {3, in, in_offset + done * in_size}},
                             {{4, count}, {5, static_cast<std::uint32_t>(scale)}},
                             provenance});
    done += count;
  }
}

void lower_convert(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  const TensorType& in_type = graph.type(op.inputs[0]);
  const DType to = type.dtype(), from = in_type.dtype();
  const std::string pair =
      fmt::format("{} → {}", format_type(in_type), format_type(type));
  if (from == DType::kF8F143 && in_type.element.block_scaled()) {
    throw LoweringError(fmt::format(
        "{}: convert of a block-scaled f8f143 value is not lowered (a matmul expands its "
        "weights on the tile)", described));
  }
  if (from == DType::kF32 && to == DType::kF8F143) {
    throw LoweringError(fmt::format(
        "{}: convert {} is not lowered: the device quantises from f16, and rounding to f16 "
        "first is not the one rounding the semantics defines; convert to f16, then to f8f143",
        described, pair));
  }
  const bool floats = is_float(from) && is_float(to) && from != to;
  const bool quantize = from == DType::kF16 && to == DType::kF8F143;
  const bool expand = from == DType::kF8F143 && is_float(to);
  if (!floats && !quantize && !expand) {
    throw LoweringError(fmt::format("{}: convert {} is not lowered", described, pair));
  }
  // f8f143 → f32 goes through f16, exact only where every code's value is an f16.
  constexpr int kExactF16Lowest = -14, kExactF16Highest = 8;
  if (expand && to == DType::kF32 &&
      (in_type.element.scale < kExactF16Lowest || in_type.element.scale > kExactF16Highest)) {
    throw LoweringError(fmt::format(
        "{}: convert {} is lowered through f16, exact only for scales {} … {}; convert to f16 "
        "instead", described, pair, kExactF16Lowest, kExactF16Highest));
  }

  const std::uint32_t provenance = program.add_provenance(described);
  const TensorPlacement placement = context.layouts().computed_like(type, in_type);
  const Storage& out = context.allocate_at(result, type, placement, format_value(result), provenance);
  // The input on the result's rows, in its own dtype.
  TensorPlacement in_placement = placement;
  in_placement.layout.precision = in_type.element;
  const Storage& source = context.storage(op.inputs[0]);
  MoveLowering moves(program, fmt::format("op {}", id.index), provenance, element_bytes(in_type));
  const Storage* in = &source;
  if (resolve(in_placement.layout, in_type.shape, in_placement.tiles) != source.resolved) {
    in = &context.scratch_at(in_type, in_placement,
                             fmt::format("{} moved for op {}", format_value(op.inputs[0]), id.index),
                             format_value(op.inputs[0]), provenance);
    move_same_index(moves, *in, source, in_type.shape, element_bytes(in_type));
  }
  // f8f143 → f32: the f16 expansion in between, on the same rows.
  const Storage* halves = nullptr;
  if (expand && to == DType::kF32) {
    TensorType half_type = type;
    half_type.element = ElementType{DType::kF16};
    TensorPlacement half_placement = placement;
    half_placement.layout.precision = half_type.element;
    halves = &context.scratch_at(half_type, half_placement,
                                 fmt::format("f16 expansion (op {})", id.index),
                                 format_value(result), provenance);
  }

  const std::uint32_t out_size = element_bytes(type);
  std::map<LogicalTile, std::vector<KernelRun>> compute;
  for (std::size_t k = 0; k < out.resolved.shards.size(); ++k) {
    const Shard& shard = out.resolved.shards[k];
    const Shard& in_shard = in->resolved.shards[k];
    const std::uint32_t elements = shard_elements(shard, out_size);
    if (elements == 0) continue;
    auto& runs = compute[shard.tile];
    const std::uint32_t out_offset = shard_offset(shard), in_offset = shard_offset(in_shard);
    if (floats) {
      const auto kernel = to == DType::kF16 ? kernels::kConvertF32ToF16 : kernels::kConvertF16ToF32;
      runs.push_back(KernelRun{std::string(kernel),
                               {{2, out.buffer, out_offset}, {3, in->buffer, in_offset}},
                               {{4, elements}},
                               provenance});
    } else if (quantize) {
      f143_runs(runs, kernels::kQuantizeF16ToF143, out.buffer, out_offset, 1, in->buffer, in_offset,
                2, elements, type.element.scale, ~0u & ~3u, provenance);
    } else if (halves == nullptr) {
      f143_runs(runs, kernels::kExpandF143ToF16, out.buffer, out_offset, 2, in->buffer, in_offset,
                1, elements, in_type.element.scale, kernels::kExpandMaxElements, provenance);
    } else {
      const std::uint32_t half_offset = shard_offset(halves->resolved.shards[k]);
      f143_runs(runs, kernels::kExpandF143ToF16, halves->buffer, half_offset, 2, in->buffer,
                in_offset, 1, elements, in_type.element.scale, kernels::kExpandMaxElements,
                provenance);
      runs.push_back(KernelRun{std::string(kernels::kConvertF16ToF32),
                               {{2, out.buffer, out_offset}, {3, halves->buffer, half_offset}},
                               {{4, elements}},
                               provenance});
    }
  }
  context.finish_steps(moves, std::move(compute), provenance);
}

}  // namespace

bool lies_in_small_pieces(const Storage& held) {
  std::size_t tiles = 0;
  bool small = false;
  for (const Shard& shard : held.resolved.shards) {
    if (shard.bytes == 0) continue;
    ++tiles;
    small = small || shard.logical_bytes < kMinBroadcastRunBytes;
  }
  return tiles > 1 && small;
}

const Storage& gathered_broadcast(LoweringContext& context, ValueId input, const TensorType& type,
                                  const Storage& out, OpId id, std::uint32_t provenance) {
  const Storage& source = context.storage(input);
  const TensorType& in_type = context.graph().type(input);
  const bool read_once = element_count(in_type.shape) == element_count(type.shape);
  const bool too_large = element_count(in_type.shape) * element_bytes(in_type) > kMaxGatheredBroadcastBytes;
  if (read_once || too_large || !lies_in_small_pieces(source)) return source;
  const TensorPlacement one{default_layout(in_type, 1), {out.resolved.shards.front().tile}};
  const Storage& gathered = context.scratch_at(
      in_type, one, fmt::format("{} gathered for op {}", format_value(input), id.index),
      format_value(input), provenance);
  context.copy_value(source, gathered, in_type, provenance, fmt::format("op {} gather", id.index));
  return gathered;
}


void lower_pointwise(LoweringContext& context, OpId id, const std::string& described) {
  switch (context.graph().operation(id).kind) {
    case OpKind::kMul: return lower_mul(context, id, described);
    case OpKind::kGelu: return lower_gelu(context, id, described);
    default: return lower_convert(context, id, described);
  }
}

}  // namespace tessera::compiler::lower
