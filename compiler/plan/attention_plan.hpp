#pragma once
// The attention planner (issue 18 item 5): a pure function from an attention
// shape and a tile count to (batch, head, query block) tasks on tiles, the key
// blocks every task walks through, the per-task buffer sizes and the plan's
// modelled cycles. Lowering (compiler/lower/attention.cpp) consumes it; this
// layer knows nothing of buffers, steps or graphs.
//
// What a task runs on its tile (kernels/README.md, "Attention"):
//
//   Q   ← rearrange_left(q rows)                          A16, R × D
//   for each key block b (k_b keys, C_b = attention_key_columns(k_b)):
//     K_b, V_b arrive packed (B16×16) from the head's packer task
//     scores ← gemm_f16_init(Q, K_b)          rows R, K = D,   N = C_b
//     P_b    ← softmax(scores)                A16 R × C_b + state
//     scores ← gemm_f16_init(P_b, V_b)        rows R, K = C_b, N = D
//     merge (single | initial, middle…, final)
//   out ← attention_f32_to_f16(O)                         row-major q × d
//
// Key block j of a head is packed once, by task j mod (query blocks) of that
// head, from row-major staging (rearrange_transposed_right for K,
// rearrange_block_major for V), and multicast to the head's other tasks: the
// packing work is spread over the head's tiles instead of repeated on each.
//
// Every padded extent (R, D, C), every buffer size and every kernel cost comes
// from kernels/ (attention.hpp, attention_costs.hpp, gemm.hpp, costs.hpp,
// pointwise_costs.hpp): the planner chooses block counts, never re-derives
// what a kernel needs.
//
// Waves. More tasks than tiles run in waves, one after another, each wave
// the whole sequence above on at most one task per tile, so every tile
// holds one task's buffers whatever the task count (waves reuse them). A
// head's tasks stay in one wave when its query blocks fit the tiles
// (⌊tiles / query blocks⌋ heads per wave, task (head g, block i) on tile
// (g mod heads per wave)·query blocks + i); a head with more query blocks
// than tiles is cut into waves of `tiles` tasks. The tasks of one head in
// one wave are a *group*: key block j is packed by the group's task
// j mod (group size) and multicast to the rest of the group.
//
// Streamed packing. A small group (one query block per head, say) would
// keep every packed block of the head on one tile; instead each key block's
// raw k and v rows go to every task of the group in the block's own phase
// and each task packs them into its receive buffers — repeated packing work,
// one block of memory. The planner models both and takes the cheaper that
// fits.
//
// Key parts. A (batch, head, query block) may be cut further by its key
// blocks into `key_parts` tasks on as many tiles, each walking a contiguous
// share of the key blocks (balanced, the first parts one longer) into its
// own f32 accumulator — so short query blocks, which leave the GEMMs'
// weight term dominant, and few query blocks per head still fill the chip.
// Block j is packed by one of the tasks of its part (the group's tasks of
// that part, j's place in the part mod their count) and multicast to the
// others; step s of the key-block loop runs block s of every part at once.
// Then the parts combine scattered, as a GEMM's K-split partials reduce
// (gemm_plan.hpp): part p owns rows combine_rows(q, parts, p) of the block,
// every part's accumulator of those rows (its O rows, m and l) comes into
// slot p' of p's combine buffer — by exchange, a local copy of its own —
// and p folds slots 1 … parts − 1 into slot 0 in part order
// (tessera_attention_combine_middle_f32 …, combine_final_f32: the online
// softmax of the merges across parts, the same operations in the same order
// as one tile folding every part), converts its rows to f16 and moves them
// out. Part 0 holds the most blocks, so it sets the steps.
//
// Choice: every feasible (query blocks, key blocks, key parts) is modelled —
// query blocks within the GEMMs' row limits (gemm_maximum_rows of both the QK
// and the PV call), key blocks of ≤ 128 keys (C ≤ 128), the per-tile working
// memory within kWorkingMemoryBudget or the options' working_memory — and the fewest modelled
// cycles wins (ties: fewer tasks, then fewer key blocks), so the choice is deterministic.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/gemm_plan.hpp"
#include "compiler/plan/plan_costs.hpp"
#include "support/error.hpp"

namespace tessera::compiler::plan {

class AttentionPlanError : public Error {
 public:
  using Error::Error;
};

struct AttentionShape {
  std::uint32_t batch = 1;
  std::uint32_t heads = 1;
  std::uint32_t queries = 1;   // S
  std::uint32_t keys = 1;      // T
  std::uint32_t head_dim = 4;  // d
};

struct AttentionPlanOptions {
  // Force the blocking (the prior art's plan, a test): the number of query
  // blocks per head and of key blocks. Infeasible forced blocking is an
  // AttentionPlanError.
  std::optional<std::uint32_t> query_blocks;
  std::optional<std::uint32_t> key_blocks;
  // Force the packing (nullopt: the cheaper that fits).
  std::optional<bool> streamed;
  // Model a blocking whatever its memory (the prior art's plan at batch 8,
  // whose tasks outnumber the tiles seven times); never for lowering.
  bool ignore_memory_budget = false;
  // Force the key parts per query block (nullopt: the cheapest, or 1 when
  // the query or key blocks are forced).
  std::optional<std::uint32_t> key_parts;
  // The bytes one tile's attention buffers may take (nullopt:
  // kWorkingMemoryBudget). A caller that knows what else its tiles hold
  // through the attention — a model's bound weights — says what they leave.
  std::optional<std::uint64_t> working_memory;
};

// A contiguous range of rows [start, start + rows).
struct RowBlock {
  std::uint32_t start = 0;
  std::uint32_t rows = 0;
  friend bool operator==(const RowBlock&, const RowBlock&) = default;
};

struct AttentionTask {
  std::uint32_t batch = 0;
  std::uint32_t head = 0;
  std::uint32_t query_block = 0;
  std::uint32_t part = 0;   // which key part (0 … key_parts − 1)
  std::uint32_t tile = 0;   // logical tile
  std::uint32_t wave = 0;
  std::uint32_t group = 0;  // index into AttentionPlan::groups
  std::uint32_t rank = 0;   // its place in the group
  friend bool operator==(const AttentionTask&, const AttentionTask&) = default;
};

// The bytes of one task's buffers (each the largest footprint of every
// kernel that touches it, from kernels/attention.hpp and gemm.hpp).
struct AttentionBuffers {
  std::uint64_t query_rows = 0;   // row-major q × d f16 staging (the largest query block)
  std::uint64_t query_block = 0;  // Q, A16 R × D plus the GEMM's read tail
  std::uint64_t key_rows = 0;     // row-major k × d f16 staging, one key block
  std::uint64_t packed_block = 0; // K_b or V_b, B16×16 C × D
  std::uint64_t scores = 0;       // THE scores scratch: both GEMM outputs
  std::uint64_t weights = 0;      // P_b and the block state (and the PV read tail)
  std::uint64_t accumulator = 0;  // O (f32 R × d), m, l
  std::uint64_t parts = 0;        // with key parts: a combine slot per part (combine_slot_bytes)
  std::uint64_t output_rows = 0;  // row-major q × d f16
  // Per-tile bytes: everything above, with `packs_per_task` packed blocks.
  std::uint64_t per_tile = 0;
};

// Modelled cycles of the whole op, summed over its waves (kernels' cost
// functions; exchange at the prior art's 4 B/cycle per receiving tile plus
// 600 cycles per phase, §6).
struct AttentionCycles {
  std::uint64_t gather_exchange = 0;  // q rows and the raw K/V rows of packed blocks
  std::uint64_t pack_compute = 0;     // rearranges of Q and of the packed blocks
  std::uint64_t block_exchange = 0;   // every key block's multicast phase
  std::uint64_t block_compute = 0;    // QK, softmax, PV, merge over every key block
  std::uint64_t combine_exchange = 0; // the key parts' accumulators, each part's rows to it
  std::uint64_t combine_compute = 0;  // the combines of a part's rows
  std::uint64_t finish_compute = 0;   // f32 → f16
  std::uint64_t output_exchange = 0;  // output rows to the result
  std::uint64_t total() const {
    return gather_exchange + pack_compute + block_exchange + block_compute + combine_exchange +
           combine_compute + finish_compute + output_exchange;
  }
};

struct AttentionPlan {
  AttentionShape shape;
  std::uint32_t tiles = 0;
  std::vector<RowBlock> query_blocks;  // of one head (every head the same)
  std::vector<RowBlock> key_blocks;    // likewise
  // The key blocks of each part: parts[p] = {first block, blocks}.
  std::vector<RowBlock> parts;
  // Padded extents of the largest blocks (kernels' functions).
  std::uint32_t rows = 0;         // R of the largest query block
  std::uint32_t padded_head = 0;  // D
  std::uint32_t key_columns = 0;  // C of the largest key block
  std::vector<AttentionTask> tasks;  // (batch, head, query block) order
  std::vector<std::vector<std::size_t>> groups;  // task indices, by wave
  std::uint32_t waves = 0;
  std::uint32_t packs_per_task = 0;  // ⌈a part's key blocks / its tasks in the smallest group⌉ (0 when streamed)
  bool streamed = false;
  AttentionBuffers buffers;
  AttentionCycles cycles;

  std::uint32_t key_parts() const { return static_cast<std::uint32_t>(parts.size()); }
  // Steps of the key-block loop: the blocks of the longest part (part 0).
  std::uint32_t steps() const { return parts.front().rows; }
  // The part key block j belongs to.
  std::uint32_t part_of(std::uint32_t key_block) const;
  // The task of (batch, head, query block, part).
  std::size_t task_index(std::uint32_t batch, std::uint32_t head, std::uint32_t query_block,
                         std::uint32_t part = 0) const;
  // The tasks of `group` that walk key block j (its part's), in query-block
  // order; the one of them that packs it, and which of its packed blocks it
  // is (0 … packs_per_task − 1).
  std::vector<std::size_t> consumers(std::uint32_t group, std::uint32_t key_block) const;
  std::size_t packer(std::uint32_t group, std::uint32_t key_block) const;
  std::uint32_t pack_entry(std::uint32_t group, std::uint32_t key_block) const;
  // The rows of query block `query_block` that key part `part` combines,
  // finishes and moves out (combine_rows below).
  RowRange combine_rows(std::uint32_t query_block, std::uint32_t part) const;
};

// With a key split, the rows [begin, end) of a query block of `query_rows`
// logical rows that part `part` of `parts` combines: gemm_plan.hpp's
// reduction_rows, the one rule for cutting a block's rows over its parts
// (the lowering cuts by it, the planner prices it).
RowRange combine_rows(std::uint32_t query_rows, std::uint32_t parts, std::uint32_t part);

// Bytes of one slot of a part's combine buffer: an accumulator (O, m, l;
// kernels' attention_accumulator_bytes) of the most rows a part combines,
// 8-byte aligned.
std::uint64_t combine_slot_bytes(std::uint32_t query_rows, std::uint32_t parts, std::uint32_t head_dim);

// The tile's data memory the attention working set may take per tile (of
// the 624 KiB SRAM: the rest is code, rows and the op's inputs and result),
// unless AttentionPlanOptions::working_memory says less is left.
inline constexpr std::uint64_t kWorkingMemoryBudget = 320 * 1024;

// The exchange cost and the FLOP rate: plan_costs.hpp.

// AttentionPlanError when the shape cannot be planned: d not a positive
// multiple of 4 or D > 128, a forced blocking the GEMMs or memory refuse, or
// no blocking that fits the working-memory budget.
// Tasks go to logical tiles 0 … tiles − 1.
AttentionPlan plan_attention(const AttentionShape& shape, std::uint32_t tiles,
                             const AttentionPlanOptions& options = {});

// The scores scratch sized the prior art's way before review #1: R·C·2 bytes,
// only the QK output. Too small whenever D > C; kept so a test can show that
// link rejects it.
std::uint64_t prior_art_scores_bytes(std::uint32_t query_rows, std::uint32_t key_rows);

// 2·B·H·S·T·d·2 (QK and PV) FLOP over tiles at 128 FLOP per tile cycle.
std::uint64_t attention_flop_bound_cycles(const AttentionShape& shape, std::uint32_t tiles);

// One line per plan fact, for reports and the benchmark.
std::string describe(const AttentionPlan& plan);

}  // namespace tessera::compiler::plan
