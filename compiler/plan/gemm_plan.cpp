#include "compiler/plan/gemm_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include "kernels/amp_layout.hpp"
#include "kernels/costs.hpp"
#include "kernels/pointwise_costs.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"
#include "target/exchange_timing.hpp"

namespace tessera::compiler::plan {
namespace {

using kernels::GemmFamily;

constexpr std::uint64_t kElementBytes = 32 * 1024;  // an interleaved effective element
constexpr std::uint64_t kTransferBytes = std::uint64_t{target::kMaxTransferWords} * 4;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// Sizes here are bounded by the tile (a few hundred KiB per operand) times
// small counts; the products that could grow are checked.
std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return checked_mul(a, b, "GEMM plan size"); }

void require_valid(const GemmProblem& p) {
  if (p.batch == 0 || p.rows == 0 || p.inner == 0 || p.columns == 0 || p.tiles == 0) {
    throw UsageError(fmt::format("GEMM plan: batch {}, M {}, K {}, N {} on {} tiles is empty",
                                 p.batch, p.rows, p.inner, p.columns, p.tiles));
  }
}

}  // namespace

std::uint64_t gemm_flop_bound_cycles(const GemmProblem& p) {
  require_valid(p);
  const std::uint64_t flop = mul(mul(mul(mul(2, p.batch), p.rows), p.inner), p.columns);
  return ceil_div(flop, mul(kFlopPerTileCycle, p.tiles));
}

std::optional<GemmPlan> evaluate_gemm(const GemmProblem& p, const GemmChoice& c) {
  require_valid(p);
  const kernels::GemmFormat f = kernels::gemm_format(p.family);
  // Output blocks of 32, 64 or 128 columns (f32: 64), the widths every
  // family's kernel computes.
  if (!kernels::gemm_columns_supported(p.family, c.block_columns) ||
      (c.block_columns != 32 && c.block_columns != 64 && c.block_columns != 128)) {
    return std::nullopt;
  }
  if (c.a_homes && ceil_div(p.columns, c.block_columns) < 2) return std::nullopt;
  if (c.block_rows == 0 || c.block_rows > p.rows || c.block_inner == 0 ||
      c.block_inner % f.pass != 0 || c.k_split == 0) {
    return std::nullopt;
  }
  // The native F143 GEMM applies one weight scale per call ($m8 ISCL =
  // activation scale + the weight block's scale, kernels::
  // gemm_f143_product_scale), so every call's K block and column block lie
  // inside one 64 × 64 scale block: K blocks of 32 or 64 at multiples of
  // themselves (each K part a whole number of them), N of 32 or 64.
  const bool one_scale_per_call = p.family == GemmFamily::kF143;
  if (one_scale_per_call &&
      (c.block_columns > kernels::f143::kBlockColumns || kernels::f143::kBlockRows % c.block_inner != 0)) {
    return std::nullopt;
  }
  GemmPlan plan;
  plan.problem = p;
  plan.call_rows = std::max(c.block_rows, kernels::kGemmMinimumRows);
  plan.row_blocks = static_cast<std::uint32_t>(ceil_div(p.rows, c.block_rows));
  plan.column_blocks = static_cast<std::uint32_t>(ceil_div(p.columns, c.block_columns));
  plan.padded_inner = static_cast<std::uint32_t>(kernels::amp::padded_inner(p.inner, f.pass));
  // Every part a whole number of passes (of K blocks for the native F143
  // GEMM) and none empty.
  plan.part_inner = static_cast<std::uint32_t>(
      kernels::amp::round_up(ceil_div(plan.padded_inner, c.k_split), one_scale_per_call ? c.block_inner : f.pass));
  if (ceil_div(plan.padded_inner, plan.part_inner) != c.k_split) return std::nullopt;
  // Balanced K blocks within a part, each a whole number of passes.
  const std::uint64_t blocks = ceil_div(plan.part_inner, std::min(c.block_inner, plan.part_inner));
  const auto call_inner = static_cast<std::uint32_t>(
      kernels::amp::round_up(ceil_div(plan.part_inner, blocks), f.pass));
  plan.inner_blocks = static_cast<std::uint32_t>(ceil_div(plan.part_inner, call_inner));
  plan.choice = c;
  plan.choice.block_inner = call_inner;
  if (plan.call_rows > kernels::gemm_maximum_rows(p.family, call_inner, c.block_columns)) {
    return std::nullopt;
  }

  plan.tasks = mul(mul(mul(p.batch, plan.row_blocks), plan.column_blocks), c.k_split);
  // A wave holds whole groups of parts (a group's parts are consecutive
  // tasks), so every part's partials reach their owner in the same wave.
  plan.tiles_used = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.tiles, plan.tasks) / c.k_split * c.k_split);
  if (plan.tiles_used == 0) return std::nullopt;
  const std::uint64_t waves = ceil_div(plan.tasks, plan.tiles_used);
  if (waves > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  plan.waves = static_cast<std::uint32_t>(waves);

  // The distinct logical K extents of the calls: each gets its own staging
  // buffers (so their K padding is never overwritten, lower/matmul.cpp).
  // Full blocks, a full part's last block, the last part's last block.
  std::set<std::uint32_t> extents;
  const auto add_part = [&](std::uint32_t length) {
    const std::uint32_t full = (length - 1) / call_inner;  // blocks before the last
    if (full > 0) extents.insert(call_inner);
    extents.insert(length - full * call_inner);
  };
  if (c.k_split > 1) add_part(plan.part_inner);
  add_part(p.inner - (c.k_split - 1) * plan.part_inner);
  // f16 and expanded F143 weights are staged row-major and rearranged (F143
  // as codes, expanded into the f16 staging first).
  const bool expanded = p.family == GemmFamily::kF16ExpandedF143;
  // Panel codes (both F143 families; the native GEMM's always come so):
  // each task receives its blocks' codes, no homes (lower/matmul.cpp).
  const bool native = p.family == GemmFamily::kF143;
  const bool panel_codes = (expanded || native) && p.panel_weights;
  const bool rearrange = (p.family == GemmFamily::kF16 || expanded) && p.pack_weights && !panel_codes;
  const std::uint64_t left = kernels::gemm_left_bytes(p.family, plan.call_rows, call_inner);
  const std::uint64_t weights =
      kernels::gemm_weight_bytes(p.family, plan.call_rows, call_inner, c.block_columns);
  const std::uint64_t output = kernels::amp::round_up(
      kernels::gemm_output_bytes(p.family, plan.call_rows, c.block_columns), 8);
  // The C block, its row-major unpacking, and a partials slot per part.
  plan.scratch_bytes = mul(extents.size(), kernels::amp::round_up(left, kElementBytes) + weights) + output +
                       (unpacks_output(plan) ? unpacked_block_bytes(plan) : 0) +
                       (c.k_split > 1 ? mul(reduction_slot_bytes(plan), c.k_split) : 0);
  // The packed weight blocks, round robin over the tiles used, and their
  // row-major staging for f16.
  const std::uint64_t packed_slot = kernels::amp::round_up(weights, expanded ? 16 : 8);
  const std::uint64_t staging_slot =
      (rearrange ? kernels::amp::round_up(mul(call_inner, c.block_columns) * 2, 8) : 0) +
      (expanded ? kernels::amp::round_up(mul(call_inner, c.block_columns), 8) : 0);
  const std::uint64_t weight_products = p.weight_batch != 0 ? std::min(p.weight_batch, p.batch) : p.batch;
  const std::uint64_t weight_blocks =
      mul(mul(weight_products, mul(c.k_split, plan.inner_blocks)), plan.column_blocks);
  const std::uint64_t blocks_per_home = ceil_div(weight_blocks, plan.tiles_used);
  if (panel_codes) {
    // No homes: each task's codes slot (lower/matmul.cpp prepare_task_codes);
    // the native GEMM's codes land in its weight slots, counted above.
    if (expanded) plan.scratch_bytes += kernels::amp::round_up(mul(call_inner, c.block_columns), 8);
  } else if (p.pack_weights) {
    plan.scratch_bytes += mul(blocks_per_home, packed_slot + staging_slot);
  }
  // The A blocks gathered on homes (a_block_has_home): a wave's homes are
  // its row blocks' full-panel K blocks, about inner_blocks / column_blocks
  // per tile.
  const bool homes = a_block_has_home(plan, std::min(plan.column_blocks, plan.tiles_used), call_inner);
  const std::uint64_t homes_per_tile = homes ? ceil_div(plan.inner_blocks, plan.column_blocks) : 0;
  plan.scratch_bytes += mul(homes_per_tile, kernels::amp::round_up(
                                                mul(kernels::amp::left_elements(plan.call_rows, call_inner), f.left_bytes), 8));
  if (plan.scratch_bytes > kGemmScratchBytes) return std::nullopt;

  // The model (gemm_plan.hpp): per wave and K block a phase, then the calls.
  const std::uint64_t a_words = ceil_div(mul(mul(c.block_rows, call_inner), f.left_bytes), 4);
  // Panel codes come to each task as codes (a byte per weight), one run
  // per column group, and are expanded there: one call per column group and
  // 64-deep scale block (lower/matmul.cpp expand_panels); the native GEMM
  // reads them as they are.
  const std::uint64_t b_words = panel_codes ? ceil_div(mul(call_inner, c.block_columns), 4)
                                            : ceil_div(mul(mul(call_inner, c.block_columns), f.weight_bytes), 4);
  const std::uint64_t b_messages = panel_codes ? c.block_columns / 16 : 1;
  // The expand calls of one F143 block: one per 16-column group and 64-deep
  // scale block.
  const std::uint64_t expand = mul(mul(c.block_columns / 16, ceil_div(call_inner, 64)),
                                   kernels::f143_convert_cycles(std::min<std::uint64_t>(call_inner, 64) * 16));
  std::uint64_t call = kernels::gemm_cycles(p.family, plan.call_rows, call_inner, c.block_columns);
  if (panel_codes) {
    if (expanded) call += expand;
    // The op's one phase of scale words (a word per scale block a task
    // meets; the native GEMM's calls each lie in one).
    plan.packing_cycles =
        kExchangePhaseCycles + (native ? ceil_div(mul(plan.inner_blocks, call_inner), 64)
                                       : mul(plan.inner_blocks, ceil_div(c.block_columns, 64) + 1));
  } else if (p.pack_weights) {
    std::uint64_t pack =
        rearrange ? kernels::rearrange_block_major_amp_cycles(c.block_columns, mul(call_inner, c.block_columns))
                  : 0;
    // Expanded F143 arrives as codes (a byte each) and is expanded there.
    std::uint64_t received = b_words;
    if (expanded) {
      received = ceil_div(mul(call_inner, c.block_columns), 4);
      pack += expand;
    }
    plan.packing_cycles = mul(blocks_per_home, received + pack) + kExchangePhaseCycles;
  }
  const std::uint64_t steps = mul(plan.waves, plan.inner_blocks);
  plan.compute_cycles = mul(steps, call);
  // A block messages per task and K block: one per row and A16 panel when
  // gathered from a's rows (each row's panels lie apart), one per panel
  // from a home.
  const std::uint64_t panels = call_inner / f.pass;
  const std::uint64_t direct_messages = mul(c.block_rows, panels);
  const std::uint64_t a_messages = homes ? panels : direct_messages;
  plan.exchange_cycles =
      mul(steps, a_words + b_words + kExchangePhaseCycles + mul(a_messages + b_messages, kReceiveMessageCycles));
  // With homes, each wave first gathers its A blocks: one phase, the
  // busiest home receiving its blocks' words and messages.
  if (homes) {
    plan.exchange_cycles += mul(
        plan.waves, mul(homes_per_tile, a_words + mul(direct_messages, kReceiveMessageCycles)) + kExchangePhaseCycles);
  }
  // Every wave ends with its reduction and output phases: the C slot is
  // reused by the next wave. The partials are reduced in C16, a run per
  // 16-column panel; an f16 result is unpacked row-major before it moves
  // out (lower/matmul.cpp): the whole block, or the rows a part reduced.
  const std::uint64_t padded_columns = kernels::amp::padded_columns(c.block_columns);
  // The rows each part reduces and moves out: the largest range.
  const std::uint64_t owned_rows = reduction_slot_rows(plan);
  const std::uint64_t unpacked_rows = c.k_split > 1 ? owned_rows : c.block_rows;
  const std::uint64_t unpack =
      unpacks_output(plan)
          ? kernels::unpack_amp_cycles(unpacked_rows, c.block_columns, mul(unpacked_rows, padded_columns))
          : 0;
  if (c.k_split > 1) {
    const std::uint64_t runs = padded_columns / kernels::amp::kPanelColumns;
    const std::uint64_t run_elements = mul(owned_rows, kernels::amp::kPanelColumns);
    const std::uint64_t range_words = ceil_div(mul(mul(runs, run_elements), f.output_bytes), 4);
    // The other parts' rows in, the part's own copied into its slot, one
    // sum per run (lower/matmul.cpp reduce_parts).
    plan.reduction_cycles = mul(
        plan.waves, mul(c.k_split - 1, range_words) + kExchangePhaseCycles +
                        kernels::local_copy_cycles(mul(range_words, 4)) +
                        mul(runs, kernels::sum_cycles(run_elements, c.k_split, f.output_bytes)));
  }
  // The epilogue on the unpacked rows (f16 results), its bias slice
  // received with the reduction's words.
  std::uint64_t epilogue = 0;
  if (p.bias) {
    epilogue += ceil_div(mul(c.block_columns, f.output_bytes), 4) +
                kernels::row_broadcast_add_cycles(unpacked_rows, c.block_columns, f.output_bytes);
  }
  if (p.gelu) epilogue += kernels::gelu_cycles(mul(unpacked_rows, c.block_columns));
  const std::uint64_t out_words = ceil_div(mul(mul(owned_rows, c.block_columns), f.output_bytes), 4);
  plan.output_cycles = mul(plan.waves, unpack + epilogue + out_words + kExchangePhaseCycles);
  plan.cycles = plan.packing_cycles + plan.compute_cycles + plan.exchange_cycles + plan.reduction_cycles +
                plan.output_cycles;
  plan.flop_bound_cycles = gemm_flop_bound_cycles(p);
  return plan;
}

RowRange reduction_rows(std::uint32_t rows, std::uint32_t parts, std::uint32_t part) {
  if (parts == 0) throw UsageError("GEMM plan: a reduction over 0 parts");
  // Even, so a range of a row-major f16 block of odd columns starts on a
  // word (the add kernels read words).
  const auto each = static_cast<std::uint32_t>(kernels::amp::round_up(ceil_div(rows, parts), 2));
  const std::uint64_t begin = std::min<std::uint64_t>(rows, std::uint64_t{each} * part);
  const std::uint64_t end = std::min<std::uint64_t>(rows, begin + each);
  return RowRange{static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end)};
}

bool unpacks_output(const GemmPlan& plan) { return plan.problem.family != GemmFamily::kF32; }

std::uint64_t unpacked_block_bytes(const GemmPlan& plan) {
  const std::uint64_t rows = plan.choice.k_split > 1 ? reduction_slot_rows(plan) : plan.call_rows;
  return kernels::amp::round_up(
      mul(mul(rows, plan.choice.block_columns), kernels::gemm_format(plan.problem.family).output_bytes), 8);
}

std::uint32_t reduction_slot_rows(const GemmPlan& plan) {
  return reduction_rows(plan.choice.block_rows, plan.choice.k_split, 0).size();
}

std::uint64_t reduction_slot_bytes(const GemmPlan& plan) {
  const GemmChoice& c = plan.choice;
  const std::uint64_t columns = kernels::amp::padded_columns(c.block_columns);
  const std::uint64_t rows = reduction_slot_rows(plan);
  return kernels::amp::round_up(mul(mul(rows, columns), kernels::gemm_format(plan.problem.family).output_bytes), 8);
}

bool a_block_has_home(const GemmPlan& plan, std::size_t tasks_in_wave, std::uint32_t extent) {
  const std::uint32_t pass = kernels::gemm_format(plan.problem.family).pass;
  return plan.choice.a_homes && tasks_in_wave >= 2 && extent > 0 && extent % pass == 0;
}

GemmPlan plan_gemm(const GemmProblem& p) {
  require_valid(p);
  const kernels::GemmFormat f = kernels::gemm_format(p.family);
  std::optional<GemmPlan> best;
  // The asked-for A gather first, then cheapest, fewer waves, fewer tiles,
  // wider blocks, fewer parts.
  const auto key = [&p](const GemmPlan& plan) {
    return std::make_tuple(p.a_homes.has_value() && *p.a_homes != plan.choice.a_homes, plan.cycles, plan.waves, plan.tiles_used, -std::int64_t{plan.choice.block_columns},
                           plan.choice.k_split, -std::int64_t{plan.choice.block_rows}, plan.choice.a_homes);
  };
  const std::uint32_t padded_inner = static_cast<std::uint32_t>(kernels::amp::padded_inner(p.inner, f.pass));
  const std::uint32_t max_split = p.allow_k_split ? std::min<std::uint32_t>(16, padded_inner / f.pass) : 1;
  for (const std::uint32_t columns : {32u, 64u, 128u}) {
    if (!kernels::gemm_columns_supported(p.family, columns)) continue;
    for (std::uint32_t split = 1; split <= max_split; ++split) {
      std::uint32_t previous = 0;
      for (std::uint32_t blocks = 1; blocks <= p.rows; ++blocks) {
        const auto rows = static_cast<std::uint32_t>(ceil_div(p.rows, blocks));
        if (rows == previous) continue;  // only the distinct balanced block sizes
        previous = rows;
        const std::uint32_t call_rows = std::max(rows, kernels::kGemmMinimumRows);
        // The deepest K block whose A block still fits one transfer.
        const std::uint64_t deepest = kTransferBytes / (std::uint64_t{call_rows} * f.left_bytes) / f.pass * f.pass;
        if (deepest == 0) continue;
        // Deeper K blocks mean fewer phases and calls, shallower ones more
        // weight blocks to spread the packing over: try the block counts
        // from the fewest the transfer limit allows, up to 64 more.
        const std::uint32_t part = static_cast<std::uint32_t>(
            kernels::amp::round_up(ceil_div(padded_inner, split), f.pass));
        const std::uint64_t fewest = ceil_div(part, std::min<std::uint64_t>(deepest, part));
        const std::uint64_t most = std::min<std::uint64_t>(part / f.pass, fewest + 64);
        // The native F143 GEMM's K blocks are 32 or 64 (evaluate_gemm).
        std::vector<std::uint32_t> inners;
        if (p.family == GemmFamily::kF143) {
          for (const std::uint32_t inner : {32u, 64u}) {
            if (inner <= deepest) inners.push_back(inner);
          }
        } else {
          for (std::uint64_t blocks_k = fewest; blocks_k <= most; ++blocks_k) {
            inners.push_back(static_cast<std::uint32_t>(kernels::amp::round_up(ceil_div(part, blocks_k), f.pass)));
          }
        }
        for (const std::uint32_t inner : inners) {
          for (const bool homes : {false, true}) {
            const auto plan = evaluate_gemm(p, GemmChoice{rows, columns, inner, split, homes});
            if (plan && (!best || key(*plan) < key(*best))) best = plan;
          }
        }
      }
    }
  }
  if (!best) {
    throw UsageError(fmt::format("GEMM plan: no blocking of {}×{}·{}×{} (batch {}) fits a tile",
                                 p.rows, p.inner, p.inner, p.columns, p.batch));
  }
  return *best;
}

GemmPlan plan_gemm_prior_art(const GemmProblem& problem) {
  require_valid(problem);
  GemmProblem p = problem;
  p.allow_k_split = false;
  p.pack_weights = false;
  constexpr std::uint32_t kBlock = 64;  // AMP_INNER_BLOCK and the column block (§1.2)
  const std::uint64_t k_blocks = ceil_div(p.inner, kBlock);
  const std::uint64_t column_blocks = ceil_div(p.columns, kBlock);
  std::optional<GemmPlan> best;
  std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> best_score{};
  std::uint32_t previous = 0;
  for (std::uint32_t blocks = 1; blocks <= p.rows; ++blocks) {
    const auto rows = static_cast<std::uint32_t>(ceil_div(p.rows, blocks));
    if (rows == previous) continue;
    previous = rows;
    if (rows < kernels::kGemmMinimumRows && blocks > 1) break;  // OLD: ≥ 12 rows per block
    // Its left operand was multicast to the column blocks, which the homes
    // model best.
    const auto plan = evaluate_gemm(p, GemmChoice{rows, kBlock, kBlock, 1, column_blocks > 1});
    if (!plan) continue;
    const std::uint64_t outputs = mul(mul(p.batch, plan->row_blocks), column_blocks);
    const std::uint64_t waves = ceil_div(outputs, p.tiles);
    const std::uint64_t idle = mul(waves, p.tiles) - outputs;
    // OLD's rule: waves·max_rows + ⌈output_blocks·(K/64)·4/5 ÷ tiles⌉, then
    // fewer waves, then fewer idle tiles.
    const std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> score{
        mul(waves, plan->call_rows) + ceil_div(mul(mul(outputs, k_blocks), 4), mul(5, p.tiles)), waves, idle};
    if (!best || score < best_score) {
      best = plan;
      best_score = score;
    }
  }
  if (!best) throw UsageError("GEMM plan: the prior art's blocking does not fit");
  return *best;
}

std::string format_gemm_plan(const GemmPlan& plan) {
  const GemmProblem& p = plan.problem;
  const kernels::GemmFormat f = kernels::gemm_format(p.family);
  return fmt::format(
      "{} GEMM {}×{}·{}×{} (batch {}): {} row blocks of {} (call rows {}) × {} column blocks of {}, "
      "K {} in {} blocks of {}, split {}, A {} — {} tasks on {} tiles in {} waves; modelled {} cycles "
      "(weight packing {}, compute {}, exchange {}, reduction {}, output {}) vs FLOP bound {} (×{:.2f})",
      f.name, p.rows, p.inner, p.inner, p.columns, p.batch, plan.row_blocks, plan.choice.block_rows,
      plan.call_rows, plan.column_blocks, plan.choice.block_columns, p.inner, plan.inner_blocks,
      plan.choice.block_inner, plan.choice.k_split, plan.choice.a_homes ? "via homes" : "gathered directly", plan.tasks, plan.tiles_used, plan.waves, plan.cycles,
      plan.packing_cycles, plan.compute_cycles, plan.exchange_cycles, plan.reduction_cycles, plan.output_cycles,
      plan.flop_bound_cycles,
      plan.flop_bound_cycles == 0 ? 0.0
                                  : static_cast<double>(plan.cycles) / static_cast<double>(plan.flop_bound_cycles));
}

}  // namespace tessera::compiler::plan
