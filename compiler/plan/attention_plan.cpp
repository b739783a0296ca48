#include "compiler/plan/attention_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/costs.hpp"
#include "kernels/gemm.hpp"
#include "kernels/pointwise_costs.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::plan {
namespace {

using kernels::GemmFamily;

constexpr std::uint64_t kF16 = 2;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
std::uint64_t align8(std::uint64_t bytes) { return (bytes + 7) / 8 * 8; }

// n rows in `blocks` balanced blocks (the first n mod blocks one longer).
std::vector<RowBlock> split(std::uint32_t n, std::uint32_t blocks) {
  std::vector<RowBlock> result;
  std::uint32_t start = 0;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint32_t rows = n / blocks + (b < n % blocks ? 1 : 0);
    result.push_back({start, rows});
    start += rows;
  }
  return result;
}

// The largest R both GEMMs of a task accept: the QK call (K = D, N = C) and
// the PV call (K = C, N = D).
std::uint32_t maximum_rows(std::uint32_t padded_head, std::uint32_t key_columns) {
  return std::min(kernels::gemm_maximum_rows(GemmFamily::kF16, padded_head, key_columns),
                  kernels::gemm_maximum_rows(GemmFamily::kF16, key_columns, padded_head));
}

kernels::MergeInstructions merge_stage(std::size_t block, std::size_t blocks) {
  if (blocks == 1) return kernels::kMergeSingleInstructions;
  if (block == 0) return kernels::kMergeInitialInstructions;
  if (block + 1 == blocks) return kernels::kMergeFinalInstructions;
  return kernels::kMergeMiddleInstructions;
}

AttentionBuffers buffers_of(const AttentionShape& shape, std::uint32_t query_rows,
                            std::uint32_t key_rows, std::uint32_t packs_per_task, bool streamed,
                            std::uint32_t parts) {
  const std::uint32_t d = shape.head_dim;
  const std::uint32_t rows = kernels::attention_query_rows(query_rows);
  const std::uint32_t padded_head = kernels::attention_padded_head_dim(d);
  const std::uint32_t columns = kernels::attention_key_columns(key_rows);
  AttentionBuffers b;
  b.query_rows = std::uint64_t{query_rows} * d * kF16;
  b.query_block = kernels::attention_query_block_bytes(query_rows, d);
  b.key_rows = std::uint64_t{key_rows} * d * kF16;
  b.packed_block = std::max(kernels::gemm_weight_bytes(GemmFamily::kF16, rows, padded_head, columns),
                            kernels::gemm_weight_bytes(GemmFamily::kF16, rows, columns, padded_head));
  b.scores = kernels::attention_scores_bytes(query_rows, key_rows, d);
  b.weights = kernels::attention_weights_buffer_bytes(query_rows, key_rows);
  b.accumulator = kernels::attention_accumulator_bytes(rows, d);
  b.output_rows = std::uint64_t{query_rows} * d * kF16;
  b.parts = parts > 1 ? std::uint64_t{parts} * combine_slot_bytes(query_rows, parts, d) : 0;
  // The scores scratch takes whole 32 KiB interleaved elements (it must share
  // none with the GEMMs' A operands); K_b and V_b are received; a packer
  // keeps the raw rows and packed blocks of each block it packs (streamed:
  // every task the raw rows of one block, packed into the received buffers).
  b.per_tile = align8(b.query_rows) + align8(b.query_block) + 32 * 1024 * ceil_div(b.scores, 32 * 1024) +
               align8(b.weights) + align8(b.accumulator) + b.parts + align8(b.output_rows) +
               2 * align8(b.packed_block) +
               (streamed ? 2 * align8(b.key_rows)
                         : packs_per_task * 2 * (align8(b.key_rows) + align8(b.packed_block)));
  return b;
}

struct Candidate {
  std::uint32_t query_blocks = 0;
  std::uint32_t key_blocks = 0;
  std::uint32_t key_parts = 1;
  bool streamed = false;
};

// The merge stage of step s of a part: a whole walk (one part) ends in the
// final (or single) stage; a key part's walk never finishes — part 0
// combines the parts and divides once.
kernels::MergeInstructions part_merge_stage(std::size_t step, std::size_t steps, std::uint32_t parts) {
  if (parts == 1) return merge_stage(step, steps);
  return step == 0 ? kernels::kMergeInitialInstructions : kernels::kMergeMiddleInstructions;
}

// The modelled cycles of one wave: every phase is a barrier, so each compute
// step costs its busiest tile and each exchange phase its busiest receiver
// (a task that packs `packs` blocks; the packer's own reads of its blocks
// are in place, the busiest receiver is another task).
AttentionCycles model_wave(const AttentionShape& shape, const std::vector<RowBlock>& query_blocks,
                           const std::vector<RowBlock>& key_blocks, const std::vector<RowBlock>& parts,
                           std::uint32_t packs, bool streamed) {
  const std::uint32_t d = shape.head_dim;
  const std::uint32_t padded_head = kernels::attention_padded_head_dim(d);
  const std::uint32_t q = query_blocks.front().rows;  // the largest block comes first
  const std::uint32_t rows = kernels::attention_query_rows(q);
  const std::uint32_t k = key_blocks.front().rows;
  const std::uint32_t columns = kernels::attention_key_columns(k);
  AttentionCycles c;
  if (streamed) packs = 0;  // every block arrives raw in its own phase and is packed there
  const std::uint64_t gathered = std::uint64_t{q} * d * kF16 + packs * 2 * std::uint64_t{k} * d * kF16;
  c.gather_exchange = kExchangePhaseCycles + ceil_div(gathered, kExchangeBytesPerCycle);
  // Q, K and V are row-major d columns wide (the rearranges' costs depend on it).
  c.pack_compute = kernels::rearrange_left_amp_cycles(d, std::uint64_t{rows} * padded_head) +
                   packs * (kernels::rearrange_transposed_right_amp_cycles(d, std::uint64_t{columns} * padded_head) +
                            kernels::rearrange_block_major_amp_cycles(d, std::uint64_t{columns} * padded_head));
  // Part 0 holds the most blocks (the first of them the largest): its walk
  // is every step's busiest tile.
  const auto key_parts = static_cast<std::uint32_t>(parts.size());
  for (std::size_t b = 0; b < parts.front().rows; ++b) {
    const std::uint32_t cb = kernels::attention_key_columns(key_blocks[b].rows);
    c.block_exchange += kExchangePhaseCycles +
                        ceil_div(streamed ? 2 * std::uint64_t{key_blocks[b].rows} * d * kF16
                                          : 2 * std::uint64_t{cb} * padded_head * kF16,
                                 kExchangeBytesPerCycle);
    if (streamed) {
      c.block_compute += kernels::rearrange_transposed_right_amp_cycles(d, std::uint64_t{cb} * padded_head) +
                         kernels::rearrange_block_major_amp_cycles(d, std::uint64_t{cb} * padded_head);
    }
    c.block_compute += kernels::gemm_f16_cycles(rows, padded_head, cb) + kernels::attention_softmax_cycles(rows, cb) +
                       kernels::gemm_f16_cycles(rows, cb, padded_head) +
                       kernels::attention_merge_cycles(rows, d, part_merge_stage(b, parts.front().rows, key_parts));
  }
  // The rows each tile finishes and moves out: with key parts, its share
  // of the block (part 0's is the largest), else the whole block.
  std::uint64_t finished_rows = q;
  if (key_parts > 1) {
    // Scattered: each part receives every other part's accumulator of its
    // rows and folds them in, in part order; part 0 owns the most rows.
    finished_rows = combine_rows(q, key_parts, 0).size();
    const auto slice = static_cast<std::uint32_t>(finished_rows);
    c.combine_exchange =
        kExchangePhaseCycles + ceil_div((key_parts - 1) * combine_slot_bytes(q, key_parts, d), kExchangeBytesPerCycle);
    c.combine_compute = (key_parts - 2) * kernels::attention_merge_cycles(slice, d, kernels::kMergeMiddleInstructions) +
                        kernels::attention_merge_cycles(slice, d, kernels::kMergeFinalInstructions);
  }
  c.finish_compute = kernels::attention_f32_to_f16_cycles(finished_rows * d);
  c.output_exchange = kExchangePhaseCycles + ceil_div(finished_rows * d * kF16, kExchangeBytesPerCycle);
  return c;
}

AttentionCycles times(AttentionCycles c, std::uint64_t waves) {
  for (std::uint64_t* part : {&c.gather_exchange, &c.pack_compute, &c.block_exchange, &c.block_compute,
                              &c.combine_exchange, &c.combine_compute, &c.finish_compute, &c.output_exchange}) {
    *part = checked_mul(*part, waves, "attention cycles");
  }
  return c;
}

// Waves and the smallest group of a blocking (the header's rule).
struct Waves {
  std::uint64_t waves = 0;
  std::uint32_t smallest_group = 0;
};
Waves waves_of(std::uint64_t heads, std::uint32_t query_blocks, std::uint32_t tiles) {
  if (query_blocks <= tiles) {
    const std::uint64_t per_wave = tiles / query_blocks;
    return {ceil_div(heads, per_wave), query_blocks};
  }
  const std::uint64_t parts = ceil_div(query_blocks, tiles);
  return {checked_mul(heads, parts, "attention waves"),
          static_cast<std::uint32_t>(query_blocks - (parts - 1) * tiles)};
}

}  // namespace

RowRange combine_rows(std::uint32_t query_rows, std::uint32_t parts, std::uint32_t part) {
  return reduction_rows(query_rows, parts, part);
}

std::uint64_t combine_slot_bytes(std::uint32_t query_rows, std::uint32_t parts, std::uint32_t head_dim) {
  return align8(kernels::attention_accumulator_bytes(combine_rows(query_rows, parts, 0).size(), head_dim));
}

RowRange AttentionPlan::combine_rows(std::uint32_t query_block, std::uint32_t part) const {
  return plan::combine_rows(query_blocks.at(query_block).rows, key_parts(), part);
}

std::uint32_t AttentionPlan::part_of(std::uint32_t key_block) const {
  for (std::uint32_t p = 0; p < parts.size(); ++p) {
    if (key_block < parts[p].start + parts[p].rows) return p;
  }
  throw AttentionPlanError(fmt::format("key block {} of {} is in no part", key_block, key_blocks.size()));
}

std::size_t AttentionPlan::task_index(std::uint32_t batch, std::uint32_t head, std::uint32_t query_block,
                                      std::uint32_t part) const {
  return ((std::size_t{batch} * shape.heads + head) * query_blocks.size() + query_block) * parts.size() + part;
}

std::vector<std::size_t> AttentionPlan::consumers(std::uint32_t group, std::uint32_t key_block) const {
  const std::uint32_t part = part_of(key_block);
  std::vector<std::size_t> tasks_of_part;
  for (const std::size_t t : groups.at(group)) {
    if (tasks[t].part == part) tasks_of_part.push_back(t);
  }
  return tasks_of_part;
}

std::size_t AttentionPlan::packer(std::uint32_t group, std::uint32_t key_block) const {
  const std::vector<std::size_t> members = consumers(group, key_block);
  return members[(key_block - parts[part_of(key_block)].start) % members.size()];
}

std::uint32_t AttentionPlan::pack_entry(std::uint32_t group, std::uint32_t key_block) const {
  const std::size_t members = consumers(group, key_block).size();
  return static_cast<std::uint32_t>((key_block - parts[part_of(key_block)].start) / members);
}

std::uint64_t prior_art_scores_bytes(std::uint32_t query_rows, std::uint32_t key_rows) {
  return kernels::gemm_output_bytes(GemmFamily::kF16, kernels::attention_query_rows(query_rows),
                                    kernels::attention_key_columns(key_rows));
}

std::uint64_t attention_flop_bound_cycles(const AttentionShape& s, std::uint32_t tiles) {
  std::uint64_t flop = 4;  // 2 GEMMs × 2 FLOP per multiply-add
  for (const std::uint64_t extent : {std::uint64_t{s.batch}, std::uint64_t{s.heads}, std::uint64_t{s.queries},
                                     std::uint64_t{s.keys}, std::uint64_t{s.head_dim}}) {
    flop = checked_mul(flop, extent, "attention FLOP");
  }
  return ceil_div(flop, checked_mul(kFlopPerTileCycle, std::uint64_t{tiles}, "chip FLOP per cycle"));
}

AttentionPlan plan_attention(const AttentionShape& shape, std::uint32_t tiles,
                             const AttentionPlanOptions& options) {
  const std::uint32_t d = shape.head_dim;
  if (shape.batch == 0 || shape.heads == 0 || shape.queries == 0 || shape.keys == 0 || d == 0) {
    throw AttentionPlanError("every extent must be at least 1");
  }
  if (d % 4 != 0 || kernels::attention_padded_head_dim(d) > kernels::kAttentionMaxColumns) {
    throw AttentionPlanError(fmt::format(
        "head dimension {} is not planned: the attention kernels take a multiple of 4 up to {}", d,
        kernels::kAttentionMaxColumns));
  }
  if (tiles == 0) throw AttentionPlanError("no tiles");
  const std::uint32_t padded_head = kernels::attention_padded_head_dim(d);
  const std::uint64_t heads = checked_mul(std::uint64_t{shape.batch}, std::uint64_t{shape.heads}, "heads");

  struct Scored {
    Candidate candidate;
    std::uint64_t cycles = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t tasks = 0;
  };
  std::optional<Scored> best;
  const std::uint64_t working_memory = options.working_memory.value_or(kWorkingMemoryBudget);
  std::string refused;  // why the last forced or candidate blocking was refused

  // Key blocks: from the fewest that keep C ≤ 128 up to blocks of 16 keys
  // (smaller blocks only add launches and merges).
  const std::uint32_t fewest_key_blocks = static_cast<std::uint32_t>(
      ceil_div(shape.keys, kernels::kAttentionMaxColumns));
  const std::uint32_t most_key_blocks =
      std::max(fewest_key_blocks, static_cast<std::uint32_t>(ceil_div(shape.keys, 16)));
  const std::uint32_t key_from = options.key_blocks.value_or(fewest_key_blocks);
  const std::uint32_t key_to = options.key_blocks.value_or(most_key_blocks);
  for (std::uint32_t nk = key_from; nk <= key_to; ++nk) {
    if (nk == 0 || nk > shape.keys) {
      refused = fmt::format("{} key blocks of {} keys", nk, shape.keys);
      continue;
    }
    const std::vector<RowBlock> key_blocks = split(shape.keys, nk);
    const std::uint32_t columns = kernels::attention_key_columns(key_blocks.front().rows);
    if (columns > kernels::kAttentionMaxColumns) {
      refused = fmt::format("key blocks of {} keys exceed {} columns", key_blocks.front().rows,
                            kernels::kAttentionMaxColumns);
      continue;
    }
    const std::uint32_t max_rows = maximum_rows(padded_head, columns);
    // Query blocks: from the fewest within the GEMMs' row limit up to blocks
    // of 12 rows (the GEMM minimum: smaller blocks are padded to 12 anyway).
    const std::uint32_t fewest = static_cast<std::uint32_t>(ceil_div(shape.queries, max_rows));
    const std::uint32_t most =
        std::max(fewest, static_cast<std::uint32_t>(ceil_div(shape.queries, kernels::kGemmMinimumRows)));
    const std::uint32_t query_from = options.query_blocks.value_or(fewest);
    const std::uint32_t query_to = options.query_blocks.value_or(most);
    for (std::uint32_t nq = query_from; nq <= query_to; ++nq) {
      if (nq == 0 || nq > shape.queries) {
        refused = fmt::format("{} query blocks of {} queries", nq, shape.queries);
        continue;
      }
      const std::vector<RowBlock> query_blocks = split(shape.queries, nq);
      const std::uint32_t rows = kernels::attention_query_rows(query_blocks.front().rows);
      if (rows > max_rows) {
        refused = fmt::format("query blocks of {} rows exceed the GEMMs' limit of {} at D = {}, C = {}",
                              rows, max_rows, padded_head, columns);
        continue;
      }
      // Key parts: 1, or as many as the head's tasks still fit one wave
      // (a part's blocks are at least one).
      const std::uint32_t most_parts = nq > tiles ? 1 : std::min(nk, tiles / nq);
      // A forced blocking (the prior art's) keeps its tasks whole unless
      // the parts are forced too.
      const bool forced = options.query_blocks.has_value() || options.key_blocks.has_value();
      const std::uint32_t parts_from = options.key_parts.value_or(1);
      const std::uint32_t parts_to = options.key_parts.value_or(forced ? 1 : most_parts);
      for (std::uint32_t np = parts_from; np <= parts_to; ++np) {
        if (np == 0 || np > nk || (np > 1 && std::uint64_t{nq} * np > tiles)) {
          refused = fmt::format("{} key parts of {} key blocks, {} query blocks on {} tiles", np, nk, nq, tiles);
          continue;
        }
        const std::vector<RowBlock> parts = split(nk, np);
        const std::uint64_t tasks = checked_mul(heads, std::uint64_t{nq} * np, "attention tasks");
        const Waves waves = waves_of(heads, nq * np, tiles);
        // A part's blocks are packed by that part's tasks of the group.
        const auto packs = static_cast<std::uint32_t>(
            ceil_div(parts.front().rows, np == 1 ? waves.smallest_group : nq));
        for (const bool streamed : {false, true}) {
          if (streamed && options.streamed == false) continue;
          if (!streamed && options.streamed == true) continue;
          const AttentionBuffers buffers =
              buffers_of(shape, query_blocks.front().rows, key_blocks.front().rows, packs, streamed, np);
          if (!options.ignore_memory_budget && buffers.per_tile > working_memory) {
            refused = fmt::format("a task {} needs {} bytes, more than the {}-byte working memory",
                                  streamed ? "streaming its key blocks" : fmt::format("packing {} key blocks", packs),
                                  buffers.per_tile, working_memory);
            continue;
          }
          const std::uint64_t cycles =
              times(model_wave(shape, query_blocks, key_blocks, parts, packs, streamed), waves.waves).total();
          const Candidate candidate{nq, nk, np, streamed};
          // Ties: fewer tasks, then fewer key blocks (then the first found:
          // fewer parts, packed before streamed).
          const bool better = !best || cycles < best->cycles ||
                              (cycles == best->cycles &&
                               (tasks < best->tasks || (tasks == best->tasks && nk < best->candidate.key_blocks)));
          if (better) best = Scored{candidate, cycles, tasks};
        }
      }
    }
  }
  if (!best) throw AttentionPlanError(fmt::format("no blocking fits: {}", refused));

  AttentionPlan plan;
  plan.shape = shape;
  plan.tiles = tiles;
  plan.query_blocks = split(shape.queries, best->candidate.query_blocks);
  plan.key_blocks = split(shape.keys, best->candidate.key_blocks);
  plan.parts = split(best->candidate.key_blocks, best->candidate.key_parts);
  plan.rows = kernels::attention_query_rows(plan.query_blocks.front().rows);
  plan.padded_head = padded_head;
  plan.key_columns = kernels::attention_key_columns(plan.key_blocks.front().rows);
  const std::uint32_t nq = best->candidate.query_blocks;
  const std::uint32_t np = best->candidate.key_parts;
  const std::uint32_t head_tasks = nq * np;  // ≤ tiles whenever np > 1
  const Waves waves = waves_of(heads, head_tasks, tiles);
  plan.waves = static_cast<std::uint32_t>(waves.waves);
  plan.packs_per_task =
      static_cast<std::uint32_t>(ceil_div(plan.parts.front().rows, np == 1 ? waves.smallest_group : nq));
  plan.streamed = best->candidate.streamed;
  if (plan.streamed) plan.packs_per_task = 0;
  plan.buffers = buffers_of(shape, plan.query_blocks.front().rows, plan.key_blocks.front().rows,
                            plan.packs_per_task, plan.streamed, np);
  plan.cycles = times(model_wave(shape, plan.query_blocks, plan.key_blocks, plan.parts, plan.packs_per_task,
                                 plan.streamed),
                      waves.waves);
  const std::uint32_t heads_per_wave = head_tasks <= tiles ? tiles / head_tasks : 0;
  for (std::uint64_t g = 0; g < heads; ++g) {
    for (std::uint32_t i = 0; i < head_tasks; ++i) {
      AttentionTask task;
      task.batch = static_cast<std::uint32_t>(g / shape.heads);
      task.head = static_cast<std::uint32_t>(g % shape.heads);
      task.query_block = i / np;
      task.part = i % np;
      if (heads_per_wave > 0) {
        task.wave = static_cast<std::uint32_t>(g / heads_per_wave);
        task.tile = static_cast<std::uint32_t>(g % heads_per_wave) * head_tasks + i;
      } else {
        const std::uint64_t parts = ceil_div(head_tasks, tiles);
        task.wave = static_cast<std::uint32_t>(g * parts + i / tiles);
        task.tile = i % tiles;
      }
      // A new group when the head or the wave changes.
      if (i == 0 || plan.tasks.back().wave != task.wave) plan.groups.emplace_back();
      task.group = static_cast<std::uint32_t>(plan.groups.size() - 1);
      task.rank = static_cast<std::uint32_t>(plan.groups.back().size());
      plan.groups.back().push_back(plan.tasks.size());
      plan.tasks.push_back(task);
    }
  }
  return plan;
}

std::string describe(const AttentionPlan& plan) {
  const AttentionCycles& c = plan.cycles;
  return fmt::format(
      "attention [{}, {}, {}|{}, {}]: {} tasks on {} tiles in {} waves, {} query blocks of ≤ {} rows "
      "(R = {}), {} key blocks of ≤ {} keys (C = {}) in {} key parts of ≤ {} blocks, {}, D = {}; modelled {} "
      "cycles (gather {}, pack {}, key-block exchange {}, key-block compute {}, parts exchange {}, combine {}, "
      "convert {}, output {})",
      plan.shape.batch, plan.shape.heads, plan.shape.queries, plan.shape.keys, plan.shape.head_dim,
      plan.tasks.size(), plan.tiles, plan.waves, plan.query_blocks.size(), plan.query_blocks.front().rows,
      plan.rows, plan.key_blocks.size(), plan.key_blocks.front().rows, plan.key_columns, plan.key_parts(),
      plan.steps(), plan.streamed ? "streamed (each task packs every block)" : "packed once per group and multicast",
      plan.padded_head, c.total(), c.gather_exchange, c.pack_compute, c.block_exchange, c.block_compute,
      c.combine_exchange, c.combine_compute, c.finish_compute, c.output_exchange);
}

}  // namespace tessera::compiler::plan
