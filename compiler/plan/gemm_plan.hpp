#pragma once
// GEMM planning (issue 18 item 4): how one matmul of `batch` independent
// [M, K] · [K, N] products is cut into kernel calls on tiles. Pure functions
// of the problem — lowering (compiler/lower/matmul.cpp) consumes the plan,
// tests check it without compiling anything.
//
// The plan is output-stationary (compiler-prior-art.md §2, "GEMM at HEAD"):
//   * the result of each product is cut into row blocks (balanced, every
//     call's row register at least kernels::kGemmMinimumRows: a shorter block
//     is padded to 12 rows) and column blocks of `block_columns` ∈ {32, 64,
//     128} (f32: 64, kernels::gemm_columns_supported);
//   * K is padded to the family's pass and cut into K blocks of
//     `block_inner` (a multiple of the pass) such that a call's A block,
//     rows × block_inner, arrives in one ≤ 4148-word transfer
//     (kernels::gemm_maximum_rows); one exchange phase brings every task's A
//     and B block for K block j, then one init (j = 0) or accumulate call per
//     task;
//   * the native F143 GEMM (GemmFamily::kF143) applies one weight scale per
//     call, so its calls stay inside one 64 × 64 scale block of the weights:
//     column blocks of 32 or 64, K blocks of 32 or 64 at multiples of
//     themselves (a K part is a whole number of them);
//   * optionally K is split `k_split` ways: each part is its own task writing
//     partial sums, reduced scattered — each part owns a range of the
//     block's rows (reduction_rows), receives the other parts' partials of
//     those rows, sums them in part order and moves its rows out;
//   * tasks (batch, row block, column block, part) go round robin over the
//     tiles used; one pass over them is a wave. With a K split the tiles
//     used are a multiple of the parts, so an output block's parts share a
//     wave.
// Among all candidates within the per-tile scratch budget the modelled
// cycles decide (then fewer waves, then fewer tiles, then wider blocks).
//
// The model: first the weight packing (each home receives its row-major
// blocks and, for f16, rearranges them; the blocks go round robin over the
// tiles used); per wave, when the A blocks have homes, one phase gathering
// them there; then per wave and K block, one
// exchange phase — the largest number
// of words one tile receives (its A and B blocks) plus kExchangePhaseCycles —
// then the tile's GEMM call (kernels/costs.hpp); then, per
// wave, the K-split reduction (each part's rows: the other parts' partials
// in, adds) and the output phase (C out: each tile keeps one C block, reused
// by the next wave); an f16 C block is unpacked row-major on its tile before
// either. The
// receive bound and the 600 cycles per phase are the prior art's exchange
// model (§6, "Exchange cost"); senders are assumed not to be the bottleneck
// (multicast: a source sends each word once whatever its fan-out).

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/plan/plan_costs.hpp"
#include "kernels/gemm.hpp"

namespace tessera::compiler::plan {

// Per-tile bytes a GEMM's staging and output blocks may take: 7 of region
// 1's 13 interleaved elements, leaving the rest to the tensors themselves.
inline constexpr std::uint64_t kGemmScratchBytes = 7 * 32 * 1024;

struct GemmProblem {
  kernels::GemmFamily family = kernels::GemmFamily::kF16;
  std::uint64_t batch = 1;  // independent products (the broadcast leading axes)
  std::uint32_t rows = 1;     // M
  std::uint32_t inner = 1;    // K (logical)
  std::uint32_t columns = 1;  // N
  std::uint32_t tiles = 1;    // tiles the planner may use
  bool allow_k_split = true;
  // The weights arrive row-major and the GEMM packs each distinct weight
  // block once into B_m×16 on its home tile before the waves (the lowering's
  // way today; f16 through tessera_rearrange_block_major_f16, expanded F143
  // as codes expanded into that f16 staging first; panel codes skip it:
  // panel_weights); false models
  // weights already packed by the host (the prior art's resident,
  // block-major weights).
  bool pack_weights = true;
  // F143 weights whose codes the host packed in weight panels
  // (BlockScaleAttributes::panels): no homes and no packing phase — in each
  // K-block phase every task receives its block's codes as a few runs of
  // whole panels (a byte per weight) and, expanded, expands them in place
  // into its f16 block (one call per column group and 64-deep scale block),
  // or, native, reads them as its B32×16 block; one phase per op brings the
  // scale words. The native F143 GEMM's weights always come so, in 32-deep
  // panels.
  bool panel_weights = false;
  // Whether the A blocks go through homes (GemmChoice::a_homes): nullopt
  // lets the model choose; a value is preferred over every plan without it
  // (kept when no such plan exists, as homes need two column blocks), so
  // tests and benchmarks can compare both gathers.
  std::optional<bool> a_homes = std::nullopt;
  // The epilogue the lowering applies to each task's result rows before they
  // move out (lower/gemm_epilogue.hpp): a bias row added (its slice of the
  // bias gathered onto the tile), then a GeLU. f16 results only.
  bool bias = false;
  bool gelu = false;
  // Distinct weight products among the batch (b's own leading extents: 1
  // for a [K, N] b every product shares); 0: batch. Each distinct weight
  // block is packed once (lower/matmul.cpp packed_), so only these are
  // priced.
  std::uint64_t weight_batch = 0;
};

// A choice of blocking; plan_gemm searches these, evaluate_gemm costs one.
struct GemmChoice {
  std::uint32_t block_rows = 12;     // logical rows per row block
  std::uint32_t block_columns = 64;  // N per call
  std::uint32_t block_inner = 64;    // K per call (a multiple of the pass)
  std::uint32_t k_split = 1;         // K parts, each a multiple of the pass
  // Gather each wave's A blocks once onto home tiles and multicast them to
  // the column blocks from there (a_block_has_home), instead of gathering
  // every task's A block straight from a's rows. Needs ≥ 2 column blocks.
  bool a_homes = false;
};

struct GemmPlan {
  GemmProblem problem;
  GemmChoice choice;
  std::uint32_t call_rows = 12;        // the rows register: max(block_rows, 12)
  std::uint32_t row_blocks = 1;        // per product
  std::uint32_t column_blocks = 1;
  std::uint32_t padded_inner = 16;     // K padded to the pass
  std::uint32_t part_inner = 16;       // K of one split part (padded; the last may be shorter)
  std::uint32_t inner_blocks = 1;      // K blocks per task (the most any part has)
  std::uint64_t tasks = 1;
  std::uint32_t tiles_used = 1;
  std::uint32_t waves = 1;
  std::uint64_t scratch_bytes = 0;     // modelled per-tile staging + output bytes
  // Modelled tile cycles.
  std::uint64_t packing_cycles = 0;    // weight blocks packed on their homes
  std::uint64_t compute_cycles = 0;
  std::uint64_t exchange_cycles = 0;
  std::uint64_t reduction_cycles = 0;  // K-split partials in + adds
  std::uint64_t output_cycles = 0;     // the C blocks out to the result's layout
  std::uint64_t cycles = 0;
  std::uint64_t flop_bound_cycles = 0;
};

// Whether one K block of a row block, `extent` logical K wide, is gathered
// once per wave onto a home tile and brought from there to the
// `tasks_in_wave` column-block tasks of that row block in the wave
// (lower/matmul.cpp assign_homes): when the plan chose homes, two or more
// of those tasks share the wave, and the block is whole A16 panels (a
// partial last panel is gathered straight into each task, zero padded).
// The one rule: the lowering places homes by it and the planner prices
// them by it.
bool a_block_has_home(const GemmPlan& plan, std::size_t tasks_in_wave, std::uint32_t extent);

// The rows [begin, end) of a C block of `rows` rows that K part `part` of
// `parts` owns in the K-split reduction: ranges of ⌈rows / parts⌉ rounded
// up to even (a range of an f16 block of odd columns starts on a word), in
// part order, the last ones short or empty. The one rule: the lowering scatters
// the reduction by it and the planner prices it (attention's key parts
// combine by it too: attention_plan.hpp's combine_rows).
struct RowRange {
  std::uint32_t begin = 0, end = 0;
  std::uint32_t size() const { return end - begin; }
};
RowRange reduction_rows(std::uint32_t rows, std::uint32_t parts, std::uint32_t part);

// Whether the plan's results are unpacked row-major on their tiles before
// the output phase (f16 results: tessera_unpack_output_f16) — a range of
// rows is then one run — or moved out of C16 (f32: a run per logical column
// pair's stretch). Without a K split the whole C block is unpacked; with one,
// the partials are reduced in C16 (a run per 16-column panel, whatever the
// family: unpacking every part's whole block first cost the split times the
// work) and each part unpacks only the rows it reduced.
bool unpacks_output(const GemmPlan& plan);

// The bytes of the row-major buffer an unpacked result lands in, 8-byte
// aligned: call rows × block columns, or with a K split
// reduction_slot_rows × block columns. The lowering's buffer, the
// planner's scratch.
std::uint64_t unpacked_block_bytes(const GemmPlan& plan);

// The most rows one part owns in the K-split reduction: reduction_rows of
// a whole row block, part 0 (every range is at most its size).
std::uint32_t reduction_slot_rows(const GemmPlan& plan);

// Bytes of one part's slot in a tile's K-split partials buffer:
// reduction_slot_rows rows of a C block in C16 (whole panels), 8-byte
// aligned. A tile holds a slot per part: the other parts' partials, and its
// own slot as the accumulator. Each slot holds the owner's rows as C16 of
// exactly that many rows (lower/matmul.cpp), so every element it reads was
// written.
std::uint64_t reduction_slot_bytes(const GemmPlan& plan);

// 2·batch·M·K·N / (128 · tiles), rounded up: the problem's FLOP bound on
// `problem.tiles` tiles.
std::uint64_t gemm_flop_bound_cycles(const GemmProblem& problem);

// The plan of `choice`, or nullopt when it breaks a kernel limit (rows,
// columns, the A transfer) or the scratch budget. UsageError on an empty
// problem.
std::optional<GemmPlan> evaluate_gemm(const GemmProblem& problem, const GemmChoice& choice);

// The cheapest valid plan. UsageError when none exists (a K too deep for one
// pass of 12 rows never happens: K blocks shrink to one pass).
GemmPlan plan_gemm(const GemmProblem& problem);

// The prior art's blocking (§2, "GEMM at OLD"/"HEAD"): K blocks of 64,
// output-column blocks of 64, resident packed weights, no K split, and row
// blocks of at least 12 rows chosen by OLD's rule (fewest waves·rows +
// ⌈blocks·(K/64)·4/5 / tiles⌉), capped by the A transfer limit.
GemmPlan plan_gemm_prior_art(const GemmProblem& problem);

// One line: "f16 GEMM 729×1152·1152×4304 (batch 1): 61 row blocks of 12 (call
// rows 12) × 34 column blocks of 128, K 1152 in 2 blocks of 576, split 1 —
// 2074 tasks on 1472 tiles in 2 waves; modelled 123456 cycles (compute …,
// exchange …, reduction …, output …) vs FLOP bound 1234 (×100.0)".
std::string format_gemm_plan(const GemmPlan& plan);

}  // namespace tessera::compiler::plan
