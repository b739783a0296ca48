#pragma once
// The per-task flash-attention kernels (kernels-siglip-f143.md §1.4, §2): the
// pieces one (batch, head, query block) task runs on its tile, which the
// compiler schedules one by one:
//
//   pack query                         hidden A16 shard → Q block (A16)
//   for each key block b:
//     pack key, pack value             hidden A16 shards → K_b, V_b (B16×16)
//     tessera_gemm_f16_init            scores = Q·K_bᵀ       (C16, rows × C)
//     softmax                          scores → block weights: P_b (A16) + state
//     tessera_gemm_f16_init            scores = P_b·V_b      (C16, rows × D)
//     merge (initial/middle/final,     the online-softmax update of the f32
//            or single for one block)  accumulator O, running max m, sum l
//   f32_to_f16                         O → f16, row-major rows × head
//   unpack                             → the hidden A16 shard, columns h·head …
//
// The QK and PV products are the f16 GEMM (kernels/gemm.hpp) — no second
// GEMM — so every layout here is one of the GEMM's (kernels/amp_layout.hpp):
// Q is its A16 left operand, K_b its B16×16 weights read as the transposed
// right operand (B[c][n] = K[n][c], so the product is Q·Kᵀ), the softmax
// reads the C16 scores and writes P_b as the next GEMM's A16 left operand,
// V_b is that GEMM's B16×16 weights, and the merge reads its C16 output. The
// same scores buffer holds both GEMM outputs: attention_scores_bytes is the
// one size both must fit (review-findings #1).
//
// Shapes. Each kernel takes the logical extents — query rows, a key block's
// key rows, the head dimension — and derives every padded extent from the
// functions below, the one owner of attention's padding (review-findings
// #17: no defaults, one key per specialisation value):
//   R = attention_query_rows(q)      the GEMMs' rows: q, or 12 (the GEMM
//                                    minimum) when q < 12; rows q … R−1 of
//                                    the Q block are zero
//   D = attention_padded_head_dim(d) the QK GEMM's K and the PV GEMM's N: d
//                                    rounded up to 16 (72 → 80); columns
//                                    d … D−1 are zero
//   C = attention_key_columns(k)     the QK GEMM's N and the PV GEMM's K: k
//                                    rounded up to 16 (92 → 96); key rows
//                                    k … C−1 of K_b and V_b are zero and the
//                                    softmax gives them weight 0
// Zero padding is finite, as the AMP needs (reference H8: NaN·0 = NaN). A
// zero query row gives finite, uniform weights; unpack copies only real rows.
//
// The scale 1/√head_dim is an argument (f32 bits in $m6 of the softmax),
// never a default (review-findings #17). Numerics, costs and the register
// tables are in kernels/README.md ("Attention").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/registry.hpp"

namespace tessera::kernels {

inline constexpr std::string_view kAttentionPackQuery = "tessera_attention_pack_query_f16";
inline constexpr std::string_view kAttentionPackKey = "tessera_attention_pack_key_f16";
inline constexpr std::string_view kAttentionPackValue = "tessera_attention_pack_value_f16";
inline constexpr std::string_view kAttentionSoftmax = "tessera_attention_softmax_f16";
inline constexpr std::string_view kAttentionMergeInitial = "tessera_attention_merge_initial_f16";
inline constexpr std::string_view kAttentionMergeMiddle = "tessera_attention_merge_middle_f16";
inline constexpr std::string_view kAttentionMergeFinal = "tessera_attention_merge_final_f16";
inline constexpr std::string_view kAttentionMergeSingle = "tessera_attention_merge_single_f16";
inline constexpr std::string_view kAttentionF32ToF16 = "tessera_attention_f32_to_f16";
// A key split's parts: another part's accumulator folded into this one.
inline constexpr std::string_view kAttentionCombineMiddle = "tessera_attention_combine_middle_f32";
inline constexpr std::string_view kAttentionCombineFinal = "tessera_attention_combine_final_f32";
inline constexpr std::string_view kAttentionUnpack = "tessera_attention_unpack_head_f16";

// Registers every attention kernel (called once, from kernels/registry.cpp).
void add_attention_kernels(KernelRegistry& registry);

// ---- Shapes: the one owner of attention's padded extents

// The largest padded head dimension and key block: the PV GEMM's N and the
// QK GEMM's N are at most 128 (gemm_columns_supported).
inline constexpr std::uint32_t kAttentionMaxColumns = 128;

std::uint32_t attention_query_rows(std::uint32_t query_rows) noexcept;
std::uint32_t attention_padded_head_dim(std::uint32_t head_dim) noexcept;
std::uint32_t attention_key_columns(std::uint32_t key_rows) noexcept;

// ---- Register ABIs

// Pack (query, key, value): copy rows of one head out of an A16 row shard of
// the hidden dimension into the task's operand block.
enum AttentionPackRegister : unsigned {
  kPackOut = 2,           // $m2 destination block (Q: A16; K, V: B16×16)
  kPackSource = 3,        // $m3 A16 row shard of the hidden dimension
  kPackSourceRows = 4,    // $m4 the shard's rows (its panel stride)
  kPackSourceColumn = 5,  // $m5 the head's first hidden column, h·head_dim
  kPackRowStarts = 6,     // $m6 source row start | destination row start << 16
  kPackCopyRows = 7,      // $m7 rows to copy
  kPackBlockRows = 8,     // $m8 the block's query (Q) or key (K, V) rows
  kPackHeadDim = 9,       // $m9 head dimension
};

// Softmax of one key block.
enum AttentionSoftmaxRegister : unsigned {
  kSoftmaxOut = 2,      // $m2 block weights: P (A16 f16, R × C), then max[R], sum[R] f32
  kSoftmaxScores = 3,   // $m3 scores (C16 f16, R × C): the QK GEMM's output
  kSoftmaxRows = 4,     // $m4 R, the GEMMs' rows
  kSoftmaxKeyRows = 5,  // $m5 the key block's key rows k (C = attention_key_columns(k))
  kSoftmaxScale = 6,    // $m6 scale, f32 bits (1/√head_dim)
};

// Merge of one key block into the accumulator (four stages, one symbol each).
enum AttentionMergeRegister : unsigned {
  kMergeAccumulator = 2,  // $m2 O (f32, R × head_dim row-major), then max[R], sum[R] f32
  kMergeValues = 3,       // $m3 block values (C16 f16, R × D): the PV GEMM's output
  kMergeWeights = 4,      // $m4 block weights (the softmax's output; its state is read)
  kMergeRows = 5,         // $m5 R
  kMergeKeyRows = 6,      // $m6 the key block's key rows (locates the state)
  kMergeHeadDim = 7,      // $m7 head dimension
};

// Combine: the accumulator of another part of the same query rows (the
// same R rows, a disjoint set of key blocks) folded into this one, as a
// middle or final merge folds a block, but with the part's f32 O, m and l:
//   m' = max(m, m_p); α = e^(m − m'); β = e^(m_p − m'); l = l·α + l_p·β;
//   O = O·α + O_p·β (final: then O·(1/l)); m = m'.
enum AttentionCombineRegister : unsigned {
  kCombineAccumulator = 2,  // $m2 O (f32, R × head_dim row-major), then max[R], sum[R] f32
  kCombinePart = 3,         // $m3 the other part's accumulator, the same layout (read)
  kCombineRows = 4,         // $m4 R
  kCombineHeadDim = 5,      // $m5 head dimension
};

// f32 → f16 of the accumulator's O.
enum AttentionConvertRegister : unsigned {
  kConvertOut = 2,    // $m2 f16
  kConvertIn = 3,     // $m3 f32
  kConvertCount = 4,  // $m4 elements
};

// Unpack: rows of the f16 head output into an A16 row shard of the hidden
// dimension.
enum AttentionUnpackRegister : unsigned {
  kUnpackOut = 2,        // $m2 A16 row shard of the hidden dimension
  kUnpackSource = 3,     // $m3 f16, row-major rows × head_dim
  kUnpackOutRows = 4,    // $m4 the shard's rows (its panel stride)
  kUnpackOutColumn = 5,  // $m5 the head's first hidden column, h·head_dim
  kUnpackRowStarts = 6,  // $m6 source row start | destination row start << 16
  kUnpackCopyRows = 7,   // $m7 rows to copy
  kUnpackHeadDim = 8,    // $m8 head dimension
};

enum class AttentionPack : std::uint8_t { kQuery, kKey, kValue };
enum class AttentionMergeStage : std::uint8_t { kInitial, kMiddle, kFinal, kSingle };

constexpr std::uint32_t low_half(std::uint32_t packed) noexcept { return packed & 0xFFFFu; }
constexpr std::uint32_t high_half(std::uint32_t packed) noexcept { return packed >> 16; }
constexpr std::uint32_t row_starts(std::uint32_t source, std::uint32_t destination) noexcept {
  return (source & 0xFFFFu) | destination << 16;
}

// ---- Footprints: the bytes each operand's pointer may touch (the registry's
// only source; the compiler's allocation check and the simulator share them)

// The pack's destination block, all of it (every call may write any row: its
// own rows and the zero padding rows).
std::uint64_t attention_pack_out_bytes(AttentionPack pack, std::uint32_t block_rows,
                                       std::uint32_t head_dim);
// A slice of an A16 row shard: up to the last element of rows [row_start,
// row_start + rows) × columns [column, column + head_dim). 0 for zero rows.
std::uint64_t attention_shard_slice_bytes(std::uint32_t shard_rows, std::uint32_t column,
                                          std::uint32_t row_start, std::uint32_t rows,
                                          std::uint32_t head_dim);
// Rows [0, row_start + rows) of a row-major f16 rows × head_dim block (the
// unpack's source). 0 for zero rows.
std::uint64_t attention_head_rows_bytes(std::uint32_t row_start, std::uint32_t rows,
                                        std::uint32_t head_dim);
// The softmax's output: P, then the block state (max[R], sum[R] f32).
std::uint64_t attention_block_weights_bytes(std::uint32_t rows, std::uint32_t key_rows);
// Where the block state starts inside the block weights.
std::uint64_t attention_block_state_offset(std::uint32_t rows, std::uint32_t key_rows);
// The accumulator of R rows: O (R × head_dim f32, row-major), then max[R],
// then sum[R] (f32) — where m and l start and how long it is, in f32
// elements from its start (the one owner of that layout: the merges, the
// combines and the compiler's scattered combine read it here).
struct AttentionAccumulatorLayout {
  std::uint64_t maxima = 0;
  std::uint64_t sums = 0;
  std::uint64_t elements = 0;
};
AttentionAccumulatorLayout attention_accumulator_layout(std::uint32_t rows, std::uint32_t head_dim);
std::uint64_t attention_accumulator_bytes(std::uint32_t rows, std::uint32_t head_dim);

// ---- Buffer sizes of one task, for the compiler's allocations: each the
// largest footprint of every kernel that touches the buffer, from the same
// footprint functions the registry declares.

// THE scores scratch (review-findings #1): the QK GEMM writes R × C f16 into
// it and the PV GEMM writes R × D f16 into the same bytes, so it holds
// R·max(C, D)·2 bytes — the size for the largest key block of the task.
std::uint64_t attention_scores_bytes(std::uint32_t query_rows, std::uint32_t key_rows,
                                     std::uint32_t head_dim);
// The Q block: the pack's R × D, plus the QK GEMM's 16-byte read tail.
std::uint64_t attention_query_block_bytes(std::uint32_t query_rows, std::uint32_t head_dim);
// The block weights: P and its state, which also cover the PV GEMM's read
// tail past P.
std::uint64_t attention_weights_buffer_bytes(std::uint32_t query_rows, std::uint32_t key_rows);

// ---- Preconditions: why a call's registers violate the kernel's ABI, or nullopt.

std::optional<std::string> attention_pack_violation(AttentionPack pack, const Registers& r);
std::optional<std::string> attention_softmax_violation(const Registers& r);
std::optional<std::string> attention_merge_violation(const Registers& r);
std::optional<std::string> attention_combine_violation(const Registers& r);
std::optional<std::string> attention_convert_violation(const Registers& r);
std::optional<std::string> attention_unpack_violation(const Registers& r);

// ---- Registration of each file's kernels (attention_pack.cpp,
// attention_softmax.cpp, attention_merge.cpp), called by add_attention_kernels.
namespace attention_detail {
void add_pack_kernels(KernelRegistry& registry);
void add_softmax_kernel(KernelRegistry& registry);
void add_merge_kernels(KernelRegistry& registry);
}  // namespace attention_detail

}  // namespace tessera::kernels
