// Attention's shapes, footprints, buffer sizes and preconditions
// (kernels/attention.hpp); the models are in attention_pack.cpp,
// attention_softmax.cpp and attention_merge.cpp.
#include "kernels/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "kernels/amp_layout.hpp"
#include "kernels/gemm.hpp"
#include "kernels/operand_checks.hpp"

namespace tessera::kernels {
namespace {

constexpr std::uint64_t kF16Bytes = 2;
constexpr std::uint64_t kF32Bytes = 4;
// Q, K and V move in half4 groups (64-bit loads and stores) [INF: the prior
// art's pack and unpack kernels do].
constexpr std::uint32_t kHalfGroup = 4;

// Register values are 32-bit, so products of two or three fit 64 bits except
// rows·columns·bytes chains of large values: saturate, so such a footprint
// reads as too large and is refused, never wrapped small.
std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<std::uint64_t>::max()
                                                : product;
}

std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
}

// ---- Precondition pieces

Violation head_dim_violation(unsigned reg, std::uint32_t head_dim) {
  if (head_dim == 0 || head_dim % kHalfGroup != 0) {
    return fmt::format(
        "$m{} (head dimension) = {} is not a positive multiple of {}: the attention kernels "
        "move a head's columns in half4 groups (8-byte accesses)",
        reg, head_dim, kHalfGroup);
  }
  if (attention_padded_head_dim(head_dim) > kAttentionMaxColumns) {
    return fmt::format(
        "$m{} (head dimension) = {} pads to {} columns, more than {}, the widest output of the "
        "PV GEMM (the f16 GEMM's N)",
        reg, head_dim, attention_padded_head_dim(head_dim), kAttentionMaxColumns);
  }
  return std::nullopt;
}

Violation key_rows_violation(unsigned reg, std::uint32_t key_rows) {
  if (key_rows == 0) {
    return fmt::format(
        "$m{} (key rows) = 0: a key block holds at least one key row (its softmax would "
        "divide by an empty sum)",
        reg);
  }
  if (attention_key_columns(key_rows) > kAttentionMaxColumns) {
    return fmt::format(
        "$m{} (key rows) = {} pads to {} key columns, more than {}, the widest output of the "
        "QK GEMM (the f16 GEMM's N)",
        reg, key_rows, attention_key_columns(key_rows), kAttentionMaxColumns);
  }
  return std::nullopt;
}

Violation column_violation(unsigned reg, std::uint32_t column) {
  if (column % kHalfGroup == 0) return std::nullopt;
  return fmt::format(
      "$m{} (hidden column) = {} is not a multiple of {}: the head's half4 groups must be "
      "8-byte aligned inside the shard's panels",
      reg, column, kHalfGroup);
}

Violation row_range_violation(std::string_view which, std::uint32_t start, std::uint32_t rows,
                              unsigned extent_reg, std::string_view extent_role,
                              std::uint32_t extent) {
  if (std::uint64_t{start} + rows <= extent) return std::nullopt;
  return fmt::format(
      "the {} rows [{}, {}) ($m6 row start, $m7 copy rows) reach past $m{} ({}) = {}", which, start,
      std::uint64_t{start} + rows, extent_reg, extent_role, extent);
}

Violation memory_violation(const Registers& r, std::initializer_list<OperandExtent> operands) {
  for (const OperandExtent& operand : operands) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  return std::nullopt;
}

}  // namespace

// ---- Shapes

std::uint32_t attention_query_rows(std::uint32_t query_rows) noexcept {
  if (query_rows == 0) return 0;
  return std::max(query_rows, kGemmMinimumRows);
}

std::uint32_t attention_padded_head_dim(std::uint32_t head_dim) noexcept {
  return static_cast<std::uint32_t>(amp::padded_inner(head_dim, amp::kPanelColumns));
}

std::uint32_t attention_key_columns(std::uint32_t key_rows) noexcept {
  return static_cast<std::uint32_t>(amp::padded_columns(key_rows));
}

// ---- Footprints

std::uint64_t attention_pack_out_bytes(AttentionPack pack, std::uint32_t block_rows,
                                       std::uint32_t head_dim) {
  const std::uint64_t padded_head = attention_padded_head_dim(head_dim);
  const std::uint64_t rows = pack == AttentionPack::kQuery ? attention_query_rows(block_rows)
                                                           : attention_key_columns(block_rows);
  return saturating_product(saturating_product(rows, padded_head), kF16Bytes);
}

std::uint64_t attention_shard_slice_bytes(std::uint32_t shard_rows, std::uint32_t column,
                                          std::uint32_t row_start, std::uint32_t rows,
                                          std::uint32_t head_dim) {
  if (rows == 0 || head_dim == 0) return 0;
  // The last element of the slice has the largest offset: the last panel,
  // then the last row, then the last column inside the panel (A16).
  const std::uint64_t last_row = std::uint64_t{row_start} + rows - 1;
  const std::uint64_t last_column = std::uint64_t{column} + head_dim - 1;
  const std::uint64_t panel = last_column / amp::kPanelColumns;
  const std::uint64_t last =
      saturating_sum(saturating_product(saturating_product(panel, shard_rows), amp::kPanelColumns),
                     saturating_sum(saturating_product(last_row, amp::kPanelColumns),
                                    last_column % amp::kPanelColumns));
  return saturating_product(saturating_sum(last, 1), kF16Bytes);
}

std::uint64_t attention_head_rows_bytes(std::uint32_t row_start, std::uint32_t rows,
                                        std::uint32_t head_dim) {
  if (rows == 0) return 0;
  return saturating_product(saturating_product(std::uint64_t{row_start} + rows, head_dim),
                            kF16Bytes);
}

std::uint64_t attention_block_state_offset(std::uint32_t rows, std::uint32_t key_rows) {
  return saturating_product(saturating_product(rows, attention_key_columns(key_rows)), kF16Bytes);
}

std::uint64_t attention_block_weights_bytes(std::uint32_t rows, std::uint32_t key_rows) {
  return saturating_sum(attention_block_state_offset(rows, key_rows),
                        saturating_product(rows, 2 * kF32Bytes));
}

AttentionAccumulatorLayout attention_accumulator_layout(std::uint32_t rows, std::uint32_t head_dim) {
  AttentionAccumulatorLayout layout;
  layout.maxima = saturating_product(rows, head_dim);
  layout.sums = saturating_sum(layout.maxima, rows);
  layout.elements = saturating_sum(layout.sums, rows);
  return layout;
}

std::uint64_t attention_accumulator_bytes(std::uint32_t rows, std::uint32_t head_dim) {
  return saturating_product(attention_accumulator_layout(rows, head_dim).elements, kF32Bytes);
}

// ---- Buffer sizes of one task

std::uint64_t attention_scores_bytes(std::uint32_t query_rows, std::uint32_t key_rows,
                                     std::uint32_t head_dim) {
  const std::uint32_t rows = attention_query_rows(query_rows);
  const std::uint64_t qk =
      gemm_output_bytes(GemmFamily::kF16, rows, attention_key_columns(key_rows));
  const std::uint64_t pv =
      gemm_output_bytes(GemmFamily::kF16, rows, attention_padded_head_dim(head_dim));
  return std::max(qk, pv);
}

std::uint64_t attention_query_block_bytes(std::uint32_t query_rows, std::uint32_t head_dim) {
  const std::uint32_t rows = attention_query_rows(query_rows);
  return std::max(attention_pack_out_bytes(AttentionPack::kQuery, query_rows, head_dim),
                  gemm_left_bytes(GemmFamily::kF16, rows, attention_padded_head_dim(head_dim)));
}

std::uint64_t attention_weights_buffer_bytes(std::uint32_t query_rows, std::uint32_t key_rows) {
  const std::uint32_t rows = attention_query_rows(query_rows);
  return std::max(attention_block_weights_bytes(rows, key_rows),
                  gemm_left_bytes(GemmFamily::kF16, rows, attention_key_columns(key_rows)));
}

// ---- Preconditions

std::optional<std::string> attention_pack_violation(AttentionPack pack, const Registers& r) {
  const std::uint32_t head_dim = r[kPackHeadDim], copy = r[kPackCopyRows],
                      block_rows = r[kPackBlockRows];
  const std::uint32_t source_start = low_half(r[kPackRowStarts]),
                      destination_start = high_half(r[kPackRowStarts]);
  if (auto v = head_dim_violation(kPackHeadDim, head_dim)) return v;
  if (copy == 0) return std::nullopt;  // zero work, whatever the pointers
  if (pack != AttentionPack::kQuery) {
    if (auto v = key_rows_violation(kPackBlockRows, block_rows)) return v;
  }
  if (auto v = column_violation(kPackSourceColumn, r[kPackSourceColumn])) return v;
  if (auto v = row_range_violation("source", source_start, copy, kPackSourceRows, "source rows",
                                   r[kPackSourceRows])) {
    return v;
  }
  if (auto v = row_range_violation("destination", destination_start, copy, kPackBlockRows,
                                   "block rows", block_rows)) {
    return v;
  }
  const OperandExtent out{kPackOut, "destination",
                          attention_pack_out_bytes(pack, block_rows, head_dim)};
  const OperandExtent source{kPackSource, "source",
                             attention_shard_slice_bytes(r[kPackSourceRows], r[kPackSourceColumn],
                                                         source_start, copy, head_dim)};
  if (auto v = misaligned(r, {kPackOut, kPackSource}, 8)) return v;
  if (auto v = memory_violation(r, {out, source})) return v;
  return overlaps(r, out, source);
}

std::optional<std::string> attention_softmax_violation(const Registers& r) {
  const std::uint32_t rows = r[kSoftmaxRows], key_rows = r[kSoftmaxKeyRows];
  if (auto v = key_rows_violation(kSoftmaxKeyRows, key_rows)) return v;
  const float scale = std::bit_cast<float>(r[kSoftmaxScale]);
  if (!(std::isfinite(scale) && scale > 0.0F)) {
    return fmt::format(
        "$m6 (scale) = {} (f32 bits {:#010x}) is not a positive finite number: the block's "
        "largest scaled score scale·s is scale·max(s) only for scale > 0 (pass 1/sqrt(head "
        "dimension))",
        scale, r[kSoftmaxScale]);
  }
  if (rows == 0) return std::nullopt;
  const OperandExtent out{kSoftmaxOut, "block weights",
                          attention_block_weights_bytes(rows, key_rows)};
  const OperandExtent scores{
      kSoftmaxScores, "scores",
      gemm_output_bytes(GemmFamily::kF16, rows, attention_key_columns(key_rows))};
  if (auto v = misaligned(r, {kSoftmaxOut, kSoftmaxScores}, 8)) return v;
  if (auto v = memory_violation(r, {out, scores})) return v;
  return overlaps(r, out, scores);
}

std::optional<std::string> attention_merge_violation(const Registers& r) {
  const std::uint32_t rows = r[kMergeRows], key_rows = r[kMergeKeyRows],
                      head_dim = r[kMergeHeadDim];
  if (auto v = head_dim_violation(kMergeHeadDim, head_dim)) return v;
  if (auto v = key_rows_violation(kMergeKeyRows, key_rows)) return v;
  if (rows == 0) return std::nullopt;
  const OperandExtent accumulator{kMergeAccumulator, "accumulator",
                                  attention_accumulator_bytes(rows, head_dim)};
  const OperandExtent values{
      kMergeValues, "block values",
      gemm_output_bytes(GemmFamily::kF16, rows, attention_padded_head_dim(head_dim))};
  const OperandExtent weights{kMergeWeights, "block weights",
                              attention_block_weights_bytes(rows, key_rows)};
  if (auto v = misaligned(r, {kMergeAccumulator, kMergeValues, kMergeWeights}, 8)) return v;
  if (auto v = memory_violation(r, {accumulator, values, weights})) return v;
  if (auto v = overlaps(r, accumulator, values)) return v;
  return overlaps(r, accumulator, weights);
}

std::optional<std::string> attention_combine_violation(const Registers& r) {
  const std::uint32_t rows = r[kCombineRows], head_dim = r[kCombineHeadDim];
  if (auto v = head_dim_violation(kCombineHeadDim, head_dim)) return v;
  if (rows == 0) return std::nullopt;
  const std::uint64_t bytes = attention_accumulator_bytes(rows, head_dim);
  const OperandExtent accumulator{kCombineAccumulator, "accumulator", bytes};
  const OperandExtent part{kCombinePart, "part", bytes};
  if (auto v = misaligned(r, {kCombineAccumulator, kCombinePart}, 8)) return v;
  if (auto v = memory_violation(r, {accumulator, part})) return v;
  return overlaps(r, accumulator, part);
}

std::optional<std::string> attention_convert_violation(const Registers& r) {
  const std::uint32_t count = r[kConvertCount];
  if (count == 0) return std::nullopt;
  const OperandExtent out{kConvertOut, "output", std::uint64_t{count} * kF16Bytes};
  const OperandExtent in{kConvertIn, "input", std::uint64_t{count} * kF32Bytes};
  if (auto v = misaligned(r, {kConvertOut, kConvertIn}, 4)) return v;
  if (auto v = memory_violation(r, {out, in})) return v;
  return overlaps(r, out, in);
}

std::optional<std::string> attention_unpack_violation(const Registers& r) {
  const std::uint32_t head_dim = r[kUnpackHeadDim], copy = r[kUnpackCopyRows];
  const std::uint32_t source_start = low_half(r[kUnpackRowStarts]),
                      destination_start = high_half(r[kUnpackRowStarts]);
  if (auto v = head_dim_violation(kUnpackHeadDim, head_dim)) return v;
  if (copy == 0) return std::nullopt;
  if (auto v = column_violation(kUnpackOutColumn, r[kUnpackOutColumn])) return v;
  if (auto v = row_range_violation("destination", destination_start, copy, kUnpackOutRows,
                                   "destination rows", r[kUnpackOutRows])) {
    return v;
  }
  const OperandExtent out{kUnpackOut, "destination",
                          attention_shard_slice_bytes(r[kUnpackOutRows], r[kUnpackOutColumn],
                                                      destination_start, copy, head_dim)};
  const OperandExtent source{kUnpackSource, "source",
                             attention_head_rows_bytes(source_start, copy, head_dim)};
  if (auto v = misaligned(r, {kUnpackOut, kUnpackSource}, 8)) return v;
  if (auto v = memory_violation(r, {out, source})) return v;
  return overlaps(r, out, source);
}

void add_attention_kernels(KernelRegistry& registry) {
  attention_detail::add_pack_kernels(registry);
  attention_detail::add_softmax_kernel(registry);
  attention_detail::add_merge_kernels(registry);
}

}  // namespace tessera::kernels
