#pragma once
// Cycle costs of the element-wise, activation, layout, F143 and LayerNorm
// kernels, built on costs.hpp's constants and tagged as there: [HW] measured
// on a C600 by the prior art (kernels-siglip-f143.md §5, the HEAD cost model
// `crates/ipu-codegen/src/cost.rs`), [SDK] Poplar's figures, [INF] our
// estimate until a measurement replaces it. tests/kernels/pointwise_cost_test.cpp
// reproduces every published figure within ±10 %.
//
// The memory-bound kernels without a published figure follow costs.hpp's
// worker model [INF]: launch (11) + runall/sync handoff (36) + the slowest
// worker moving its bytes one 64-bit access per worker cycle (6 tile
// cycles), arithmetic bundled with the accesses. Kernels with more
// arithmetic than accesses (GeLU, LayerNorm) are bound by their arithmetic
// instead: one f16v2 / f32v2 operation per worker cycle.

#include <cstdint>

#include "kernels/costs.hpp"
#include "kernels/kernel_shapes.hpp"

namespace tessera::kernels {

// ---- Published packing and copy rates [HW] (§5, HEAD cost.rs)

// Row-major → A16 ("AMP-left"): about 4 cycles per element; the measured
// 640-element attention shard took 2,364 cycles, 3.69 per element, which
// is the rate used here (the launch is the 11 cycles HEAD adds).
inline constexpr std::uint64_t kAmpLeftPackTenthsPerElement = 37;    // [HW]
inline constexpr std::uint64_t kContiguousPanelPackPerElement = 3;   // [HW] transposed right
inline constexpr std::uint64_t kBlockMajorPackPerElement = 4;        // [HW]
inline constexpr std::uint64_t kBlockMajorPackStartupCycles = 4096;  // [HW]
inline constexpr std::uint64_t kIndexedF16TransformPerElement = 10;  // [HW] indexed packs, unpack

// Arithmetic issue: a worker issues one instruction per six tile cycles.
constexpr std::uint64_t worker_issue_cycles(std::uint64_t instructions) noexcept {
  return saturating_mul(kWorkerCount, instructions);
}

// The call and the runall/sync handoff every six-worker kernel pays.
inline constexpr std::uint64_t kSixWorkerCallCycles = kKernelLaunchCycles + kWorkerBarrierCycles;

// ---- Element-wise [INF]

// tessera_mul_{f32,f16}: as the add, two loads and one store per element.
constexpr std::uint64_t mul_cycles(std::uint64_t count, unsigned element_bytes) noexcept {
  return add_cycles(count, element_bytes);
}

// tessera_convert_*: one f32 and one f16 access per element.
constexpr std::uint64_t convert_cycles(std::uint64_t count) noexcept {
  return six_worker_kernel_cycles(count, 6);
}

// tessera_add_bias_c16_*: rows balanced over the workers; each reads and
// writes its rows of every panel and loads the σ-ordered bias once.
constexpr std::uint64_t bias_add_cycles(std::uint64_t rows, std::uint64_t columns,
                                        unsigned element_bytes) noexcept {
  const std::uint64_t row_bytes = saturating_mul(amp::padded_columns(columns), element_bytes);
  return six_worker_kernel_cycles(rows, 2 * row_bytes) +
         (rows == 0 ? 0 : worker_move_cycles(row_bytes));
}

// ---- Activation [INF]

// Nine f16v2 (or f32v2) operations per pair of elements, one per worker
// cycle, the loads and stores bundled with them (kernels/activation_math.hpp
// lists the nine steps).
inline constexpr std::uint64_t kGeluOperationsPerPair = 9;

// tessera_gelu_{f16,f32}: elements balanced over the workers.
constexpr std::uint64_t gelu_cycles(std::uint64_t count) noexcept {
  const std::uint64_t pairs = (worker_share(count, 0) + 1) / 2;
  return kSixWorkerCallCycles + worker_issue_cycles(pairs * kGeluOperationsPerPair);
}

// tessera_gelu_c16_to_a16_f16: rows balanced; every padded element is
// computed (padding is then written as zero).
constexpr std::uint64_t gelu_relayout_cycles(std::uint64_t rows, std::uint64_t columns) noexcept {
  const std::uint64_t pairs =
      saturating_mul(worker_share(rows, 0), amp::padded_columns(columns) / 2);
  return kSixWorkerCallCycles + worker_issue_cycles(saturating_mul(pairs, kGeluOperationsPerPair));
}

// ---- Layout

// tessera_relayout_c16_to_a16_f16 and tessera_reblock_*: a six-worker copy
// of the rows moved, at the measured copy call (288 cycles including the
// rendezvous) plus 8 bytes per cycle [HW]; undoing σ permutes 32-bit words
// within each 32-byte row, which we take to be free [INF].
constexpr std::uint64_t panel_copy_cycles(std::uint64_t rows, std::uint64_t columns) noexcept {
  return local_copy_cycles(saturating_mul(panel_block_elements(rows, columns), 2));
}

// tessera_rearrange_*: row-major → AMP layout, per element of the (padded)
// destination, padding included [HW rates, HEAD's launch of 11].
constexpr std::uint64_t rearrange_left_cycles(std::uint64_t elements) noexcept {
  return kKernelLaunchCycles + (saturating_mul(elements, kAmpLeftPackTenthsPerElement) + 9) / 10;
}
constexpr std::uint64_t rearrange_transposed_right_cycles(std::uint64_t elements) noexcept {
  return kKernelLaunchCycles + saturating_mul(elements, kContiguousPanelPackPerElement);
}
// (An empty block returns before the start-up work: only the launch.)
constexpr std::uint64_t rearrange_block_major_cycles(std::uint64_t elements) noexcept {
  if (elements == 0) return kKernelLaunchCycles;
  return kBlockMajorPackStartupCycles + saturating_mul(elements, kBlockMajorPackPerElement);
}
// The rearranges Tessera's device kernels run (kernels/device/rearrange.cpp)
// when the matrix has an even number of columns, so each of its rows is
// whole 32-bit words [INF, the worker model]. HEAD's rates above are for its
// kernels, which move one element at a time; here a pair of logical columns
// is one word on both sides (A16 and transposed-right panels keep a row's
// pairs whole: σ permutes pairs, never splits one), so the workers split
// the block's words and each is one load and one store (a padding word, a
// store: counted as two issues all the same). The word-pair unpacks below
// are the same copy the other way.
constexpr std::uint64_t word_pairs_copy_cycles(std::uint64_t words) noexcept {
  if (words == 0) return kKernelLaunchCycles;
  return kSixWorkerCallCycles + worker_issue_cycles(saturating_mul(worker_share(words, 0), 2));
}
// Block-major panels hold a column's consecutive K rows, so each block word
// pairs two matrix rows: the workers split 2 × 2 squares (rows k, k + 1 ×
// columns n, n + 1) and transpose each with two loads, two half-word
// shuffles (sort4x16lo / hi) and two stores — six issues per two block
// words [INF].
constexpr std::uint64_t rearrange_block_major_pairs_cycles(std::uint64_t block_words) noexcept {
  if (block_words == 0) return kKernelLaunchCycles;
  return kSixWorkerCallCycles +
         worker_issue_cycles(saturating_mul(worker_share((block_words + 1) / 2, 0), 6));
}
// What rearranging a matrix of `columns` columns into a block of
// `block_elements` (padded) elements costs: the word paths above when the
// columns pair up, else HEAD's rates. The host models and the planners ask
// here.
constexpr std::uint64_t rearrange_left_amp_cycles(std::uint64_t columns,
                                                  std::uint64_t block_elements) noexcept {
  return columns % 2 == 0 ? word_pairs_copy_cycles(block_elements / 2)
                          : rearrange_left_cycles(block_elements);
}
constexpr std::uint64_t rearrange_transposed_right_amp_cycles(std::uint64_t columns,
                                                              std::uint64_t block_elements) noexcept {
  return columns % 2 == 0 ? word_pairs_copy_cycles(block_elements / 2)
                          : rearrange_transposed_right_cycles(block_elements);
}
constexpr std::uint64_t rearrange_block_major_amp_cycles(std::uint64_t columns,
                                                         std::uint64_t block_elements) noexcept {
  return columns % 2 == 0 ? rearrange_block_major_pairs_cycles(block_elements / 2)
                          : rearrange_block_major_cycles(block_elements);
}
// Row-major → C16 has no specialised device kernel: HEAD prices it as an
// indexed f16 transform.
constexpr std::uint64_t rearrange_output_cycles(std::uint64_t elements) noexcept {
  return kKernelLaunchCycles + saturating_mul(elements, kIndexedF16TransformPerElement);
}
// tessera_unpack_*: AMP layout → row-major, per element of the (padded)
// source, as HEAD prices every unpack [HW].
constexpr std::uint64_t unpack_cycles(std::uint64_t elements) noexcept {
  return kKernelLaunchCycles + saturating_mul(elements, kIndexedF16TransformPerElement);
}
// tessera_unpack_{left,output}_f16 of an even number of columns: a pair of
// logical columns is one 32-bit word in A16 and in C16 (σ permutes pairs,
// never splits one) and in the row-major matrix, so the device kernel moves
// its share of the matrix's words (kernels/device/rearrange.cpp, balanced
// contiguous) with one load and one store each from a per-panel table — not
// HEAD's indexed transform of one element at a time. Priced by the worker
// model [INF]: two issues per word on the slowest worker.
constexpr std::uint64_t unpack_pairs_cycles(std::uint64_t words) noexcept {
  return word_pairs_copy_cycles(words);
}
// What unpacking a rows × columns matrix from an A16 or C16 block of
// `block_elements` (padded) costs: the word path when the columns pair up,
// else the indexed transform. The host models and the planners ask here.
constexpr std::uint64_t unpack_amp_cycles(std::uint64_t rows, std::uint64_t columns,
                                          std::uint64_t block_elements) noexcept {
  if (rows == 0 || columns == 0) return unpack_cycles(0);
  if (columns % 2 == 0) return unpack_pairs_cycles(saturating_mul(rows, columns / 2));
  return unpack_cycles(block_elements);
}

// ---- F143 [INF]

// tessera_quantize_f16_to_f143 and tessera_expand_f143_to_f16: f16v8tof8 /
// f8v4tof16 convert several elements per instruction, so the two bytes read
// and one written per element bound them.
constexpr std::uint64_t f143_convert_cycles(std::uint64_t count) noexcept {
  return six_worker_kernel_cycles(count, 3);
}
// tessera_quantize_a16_to_a32_f143: rows balanced, every element of the
// A32 block written (two A16 panels make one A32 panel).
constexpr std::uint64_t quantize_a16_to_a32_cycles(std::uint64_t rows,
                                                   std::uint64_t columns) noexcept {
  return six_worker_kernel_cycles(rows, 3 * amp::round_up(columns, 32));
}

// ---- LayerNorm [INF]

// Per row: a first pass loads x and accumulates Σx and Σx² in f32 (two
// f32v2 operations per pair), ~40 instructions of statistics (division,
// rsqrt, conversions), and a second pass that loads x, γ and β and stores y
// with four f16v2 operations per pair. Rows are strided over the workers.
inline constexpr std::uint64_t kLayerNormRowInstructions = 40;

constexpr std::uint64_t layer_norm_cycles(std::uint64_t rows, std::uint64_t columns,
                                          bool residual) noexcept {
  const std::uint64_t pairs = amp::padded_columns(columns) / 2;
  // The fused residual add is one more f16v2 operation per pair, before the
  // first pass.
  const std::uint64_t per_row =
      saturating_add(saturating_mul(pairs, residual ? 7 : 6), kLayerNormRowInstructions);
  return kSixWorkerCallCycles + worker_issue_cycles(saturating_mul(strided_share(rows), per_row));
}

}  // namespace tessera::kernels
