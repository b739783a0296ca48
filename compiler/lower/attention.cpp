// The lowering of attention (operations.hpp): the plan of
// compiler/plan/attention_plan.hpp turned into buffers and steps.
//
//   gather    one exchange phase: each task's q rows into row-major staging
//             on its tile, each key block's raw k and v rows onto its packer
//             task's tile (element moves: whole-word rows become transfers);
//   pack      rearrange_left (Q, A16), and on packer tiles
//             rearrange_transposed_right (K_b) and rearrange_block_major (V_b):
//             the rearranges write the zero padding the AMP needs (H8);
//   per step s (block s of every key part; without a key split, per block)
//             an exchange phase multicasting each part's packed K_b and V_b
//             from its packer to the part's other tasks in the head (the
//             packer reads its own blocks in place), then on every task tile
//             QK GEMM, softmax, PV GEMM and the merge stage (single | initial,
//             middle…, final; a key part's walk ends unnormalised in a middle);
//             (streamed plans instead bring block b's raw rows to every task
//             of the group in that phase and each task packs them itself);
//   parts     with a key split, one exchange phase scattering the combine:
//             part p's rows (plan combine_rows) of every part's accumulator
//             into slot p' of p's combine buffer (its own by a local copy),
//             then p folds the slots into slot 0 in part order
//             (tessera_attention_combine_middle_f32 …, combine_final_f32);
//   finish    attention_f32_to_f16 after the last merge (or combine), then
//             the output rows (each part's, with a key split) moved into the
//             result (default layout).
//
// More tasks than tiles run in waves (attention_plan.hpp), each wave all of
// the above; buffers are one per role, one task's worth per tile, reused by
// every wave. The scores scratch — both
// GEMM outputs, kernels' attention_scores_bytes — takes whole 32 KiB
// interleaved elements: the GEMMs' A operands (Q, P) must not share a memory
// element with it (kernels/README.md, GEMM precondition 10).
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <optional>

#include "compiler/lower/head_views.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/lower/operations.hpp"
#include "compiler/plan/attention_plan.hpp"
#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layout_kernels.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

// The rearrange kernels' registers (kernels/README.md, layout kernels table;
// kernels/rearrange.cpp).
constexpr unsigned kRearrangeOut = 2, kRearrangeIn = 3, kRearrangeRows = 4, kRearrangeColumns = 5,
                   kRearrangePaddedRows = 6, kRearrangePaddedColumns = 7, kRearrangeRowBlock = 8;

std::uint32_t u32(std::uint64_t value, const char* what) { return checked_cast<std::uint32_t>(value, what); }
std::uint64_t align8(std::uint64_t bytes) { return (bytes + 7) / 8 * 8; }
LogicalTile tile_of(const plan::AttentionTask& task) {
  return LogicalTile{checked_cast<std::uint16_t>(task.tile, "attention tile")};
}

// A [B, H, rows, d] operand or result as the attention addresses it: its own
// storage, or through a head view (head_views.hpp) the [B, S, W] value it
// splits from or merges into, element (b, h, s, c) at (b, s, c0 + h·d + c).
struct HeadsHeld {
  const Storage* storage = nullptr;
  std::optional<HeadView> view;

  // The element at `index` (b, h, s, c) and how many follow it along c
  // (the view keeps c the last axis, so a run of the storage is one of c).
  Storage::Run run(const Index& index) const {
    if (!view) return storage->run(index);
    const Index at{index[0], index[2], view->column0 + index[1] * view->head_dim + index[3]};
    return storage->run(at);
  }
};

// One role's buffer: `entries` entries of `bytes` on every tile that runs
// tasks (every wave reuses them).
class RoleBuffer {
 public:
  RoleBuffer(Program& program, const plan::AttentionPlan& plan, std::string name, std::uint64_t bytes,
             std::uint32_t entries, std::uint32_t provenance, bool whole_elements = false)
      : stride_(align8(bytes)) {
    Buffer buffer;
    buffer.name = std::move(name);
    buffer.kind = schema::AllocationKind::kScratch;
    buffer.alignment = 8;
    buffer.provenance = provenance;
    buffer.whole_elements = whole_elements;
    for (const plan::AttentionTask& task : plan.tasks) {
      buffer.bytes[tile_of(task)] = u32(stride_ * entries, "attention buffer bytes");
    }
    id_ = program.add_buffer(std::move(buffer));
  }
  BufferId id() const { return id_; }
  std::uint32_t offset(std::uint32_t entry = 0) const {
    return u32(stride_ * entry, "attention buffer offset");
  }
  PointerOperand at(unsigned reg, std::uint32_t entry = 0) const { return {reg, id_, offset(entry)}; }
  Location location(LogicalTile tile, std::uint32_t entry = 0) const { return {tile, id_, offset(entry)}; }

 private:
  std::uint64_t stride_;
  BufferId id_ = 0;
};

kernels::AttentionMergeStage stage_of(std::size_t block, std::size_t blocks) {
  if (blocks == 1) return kernels::AttentionMergeStage::kSingle;
  if (block == 0) return kernels::AttentionMergeStage::kInitial;
  if (block + 1 == blocks) return kernels::AttentionMergeStage::kFinal;
  return kernels::AttentionMergeStage::kMiddle;
}

std::string_view merge_kernel(kernels::AttentionMergeStage stage) {
  switch (stage) {
    case kernels::AttentionMergeStage::kInitial: return kernels::kAttentionMergeInitial;
    case kernels::AttentionMergeStage::kMiddle: return kernels::kAttentionMergeMiddle;
    case kernels::AttentionMergeStage::kFinal: return kernels::kAttentionMergeFinal;
    case kernels::AttentionMergeStage::kSingle: return kernels::kAttentionMergeSingle;
  }
  return {};
}

}  // namespace

void lower_attention(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  Program& program = context.program();
  const Operation& op = graph.operation(id);
  const ValueId result = op.results[0];
  const TensorType& type = graph.type(result);
  const double scale = std::get<AttentionAttributes>(op.attributes).scale;
  if (type.dtype() == DType::kF32) {
    // The kernels are f16; converting to f16 around them would not meet the
    // f32 bound of tests/testing/graph_bounds.hpp (f32 roundings throughout).
    throw LoweringError(fmt::format("{}: f32 attention is not lowered yet", described));
  }
  if (type.dtype() != DType::kF16) {
    throw LoweringError(fmt::format("{}: attention takes f16 (or f32, not lowered yet)", described));
  }
  const float scale_f32 = static_cast<float>(scale);
  if (!(scale_f32 > 0) || !std::isfinite(scale_f32)) {
    throw LoweringError(fmt::format(
        "{}: scale {} is not lowered: the softmax kernel takes a positive finite f32 scale", described, scale));
  }
  const Shape& q_shape = graph.type(op.inputs[0]).shape;
  const Shape& k_shape = graph.type(op.inputs[1]).shape;
  plan::AttentionShape shape{q_shape[0], q_shape[1], q_shape[2], k_shape[2], q_shape[3]};
  plan::AttentionPlan plan;
  try {
    plan = plan::plan_attention(shape, context.layouts().tiles(), context.attention_options());
  } catch (const plan::AttentionPlanError& error) {
    throw LoweringError(fmt::format("{}: {}", described, error.message()));
  }

  program.plans.push_back(fmt::format("op {} (attention): {}", id.index, plan::describe(plan)));
  const std::uint32_t provenance = program.add_provenance(described);
  // q, k and v read, and the result written, through head views where the
  // graph splits and merges the heads around the attention (head_views.hpp):
  // the [B, S, heads·d] values are addressed directly.
  const auto held_input = [&](std::size_t i) {
    const std::optional<HeadView> view = split_heads_view(graph, op.inputs[i]);
    return HeadsHeld{&context.storage(view ? view->value : op.inputs[i]), view};
  };
  const HeadsHeld q_held = held_input(0), k_held = held_input(1), v_held = held_input(2);
  const std::optional<HeadView> merged = merged_heads_view(graph, id);
  const ValueId written = merged ? merged->value : result;
  const HeadsHeld out{&context.allocate(written, graph.type(written), format_value(written), provenance), merged};
  const std::uint32_t d = shape.head_dim;
  const std::uint32_t padded_head = plan.padded_head;
  // Streamed: one block of raw rows per task, packed into the received
  // buffers; otherwise each packer's raw rows and packed blocks.
  const std::uint32_t packs = plan.streamed ? 1 : plan.packs_per_task;
  const plan::AttentionBuffers& sizes = plan.buffers;
  const std::string label = fmt::format("op {}", id.index);
  const auto name = [&](const char* role) { return fmt::format("attention {} ({})", role, label); };

  const RoleBuffer q_rows(program, plan, name("q rows"), sizes.query_rows, 1, provenance);
  const RoleBuffer q_block(program, plan, name("Q"), sizes.query_block, 1, provenance);
  const RoleBuffer k_rows(program, plan, name("k rows"), sizes.key_rows, packs, provenance);
  const RoleBuffer v_rows(program, plan, name("v rows"), sizes.key_rows, packs, provenance);
  std::optional<RoleBuffer> k_packed, v_packed;
  if (!plan.streamed) {
    k_packed.emplace(program, plan, name("K blocks"), sizes.packed_block, packs, provenance);
    v_packed.emplace(program, plan, name("V blocks"), sizes.packed_block, packs, provenance);
  }
  const RoleBuffer k_received(program, plan, name("K block"), sizes.packed_block, 1, provenance);
  const RoleBuffer v_received(program, plan, name("V block"), sizes.packed_block, 1, provenance);
  const RoleBuffer scores(program, plan, name("scores"), sizes.scores, 1, provenance, true);
  const RoleBuffer weights(program, plan, name("weights"), sizes.weights, 1, provenance);
  const RoleBuffer accumulator(program, plan, name("accumulator"), sizes.accumulator, 1, provenance);
  const std::uint32_t key_parts = plan.key_parts();
  // With key parts, each part's combine slots: every part's accumulator of its rows.
  std::optional<RoleBuffer> parts;
  if (key_parts > 1) {
    parts.emplace(program, plan, name("key parts"),
                  plan::combine_slot_bytes(plan.query_blocks.front().rows, key_parts, d), key_parts, provenance);
  }
  const RoleBuffer out_rows(program, plan, name("output rows"), sizes.output_rows, 1, provenance);

  // The groups (one head's tasks in one wave) of every wave.
  std::vector<std::vector<std::uint32_t>> wave_groups(plan.waves);
  for (std::uint32_t g = 0; g < plan.groups.size(); ++g) {
    wave_groups.at(plan.tasks[plan.groups[g].front()].wave).push_back(g);
  }
  // Calls f(location, staging byte offset, bytes) for each run of (batch,
  // head)'s rows of a [B, H, rows, d] value in `held`, columns 0 … d − 1,
  // with where the run's first element sits in a row-major rows × d f16
  // staging block: the one walk behind the gathers into staging and the
  // output's scatter out of it.
  const auto for_each_row_run = [&](const HeadsHeld& held, const plan::AttentionTask& task,
                                    plan::RowBlock rows, const auto& f) {
    Index index{task.batch, task.head, 0, 0};
    for (std::uint32_t r = 0; r < rows.rows; ++r) {
      index[2] = rows.start + r;
      for (std::uint32_t c = 0; c < d;) {
        index[3] = c;
        const Storage::Run run = held.run(index);
        const auto elements = static_cast<std::uint32_t>(std::min<std::uint64_t>(run.elements, d - c));
        f(run.location, (r * d + c) * 2, elements * 2);
        c += elements;
      }
    }
  };
  // Rows of (batch, head) of a [B, H, rows, d] value, columns 0 … d − 1,
  // into row-major staging at `to`.
  const auto gather = [&](MoveLowering& moves, const HeadsHeld& from, const plan::AttentionTask& task,
                          plan::RowBlock rows, const Location& to) {
    for_each_row_run(from, task, rows, [&](const Location& in, std::uint32_t offset, std::uint32_t bytes) {
      moves.move_run(Location{to.tile, to.buffer, to.offset + offset}, in, bytes);
    });
  };
  const auto pack_block = [&](std::vector<KernelRun>& runs, plan::RowBlock kb, PointerOperand k_out,
                              PointerOperand k_in, PointerOperand v_out, PointerOperand v_in) {
    const std::uint32_t columns = kernels::attention_key_columns(kb.rows);
    const std::vector<std::pair<unsigned, std::uint32_t>> extents{{kRearrangeRows, kb.rows},
                                                                  {kRearrangeColumns, d},
                                                                  {kRearrangePaddedRows, columns},
                                                                  {kRearrangePaddedColumns, padded_head}};
    k_out.reg = v_out.reg = kRearrangeOut;
    k_in.reg = v_in.reg = kRearrangeIn;
    runs.push_back(KernelRun{std::string(kernels::kRearrangeTransposedRightF16), {k_out, k_in}, extents, provenance});
    auto block_major = extents;
    block_major.emplace_back(kRearrangeRowBlock, columns);
    runs.push_back(KernelRun{std::string(kernels::kRearrangeBlockMajorF16), {v_out, v_in}, std::move(block_major),
                             provenance});
  };
  const std::uint32_t scale_bits = std::bit_cast<std::uint32_t>(scale_f32);
  const auto key_blocks = static_cast<std::uint32_t>(plan.key_blocks.size());
  // Where the finished rows end up f16: f32_to_f16 into the output rows —
  // a whole task's from its accumulator, a key part's from slot 0 of its
  // combine buffer.
  const auto finish = [&](std::vector<KernelRun>& runs, PointerOperand from, std::uint32_t rows) {
    from.reg = kernels::kConvertIn;
    runs.push_back(KernelRun{std::string(kernels::kAttentionF32ToF16),
                             {out_rows.at(kernels::kConvertOut), from},
                             {{kernels::kConvertCount, rows * d}},
                             provenance});
  };
  for (const std::vector<std::uint32_t>& groups : wave_groups) {
    // ---- gather and pack
    {
      MoveLowering moves(program, label, provenance, 2);
      std::map<LogicalTile, std::vector<KernelRun>> compute;
      const auto gather_rows = [&](const HeadsHeld& from, const plan::AttentionTask& task, plan::RowBlock rows,
                                   const Location& to) { gather(moves, from, task, rows, to); };
      for (const std::uint32_t g : groups) {
        for (const std::size_t t : plan.groups[g]) {
          const plan::AttentionTask& task = plan.tasks[t];
          const LogicalTile tile = tile_of(task);
          const plan::RowBlock qb = plan.query_blocks[task.query_block];
          gather_rows(q_held, task, qb, q_rows.location(tile));
          compute[tile].push_back(KernelRun{std::string(kernels::kRearrangeLeftF16),
                                            {q_block.at(kRearrangeOut), q_rows.at(kRearrangeIn)},
                                            {{kRearrangeRows, qb.rows},
                                             {kRearrangeColumns, d},
                                             {kRearrangePaddedRows, kernels::attention_query_rows(qb.rows)},
                                             {kRearrangePaddedColumns, padded_head}},
                                            provenance});
        }
        // Each key block onto the task of its part that packs it.
        for (std::uint32_t j = 0; !plan.streamed && j < key_blocks; ++j) {
          const plan::AttentionTask& task = plan.tasks[plan.packer(g, j)];
          const LogicalTile tile = tile_of(task);
          const plan::RowBlock kb = plan.key_blocks[j];
          const std::uint32_t entry = plan.pack_entry(g, j);
          gather_rows(k_held, task, kb, k_rows.location(tile, entry));
          gather_rows(v_held, task, kb, v_rows.location(tile, entry));
          pack_block(compute[tile], kb, k_packed->at(kRearrangeOut, entry), k_rows.at(kRearrangeIn, entry),
                     v_packed->at(kRearrangeOut, entry), v_rows.at(kRearrangeIn, entry));
        }
      }
      context.finish_steps(moves, std::move(compute), provenance);
    }

    // ---- the key blocks: step s runs block s of every key part
    for (std::uint32_t step = 0; step < plan.steps(); ++step) {
      std::vector<Transfer> transfers;
      std::map<LogicalTile, std::vector<KernelRun>> compute;
      MoveLowering raw_moves(program, label, provenance, 2);  // streamed: block j's raw rows
      for (const std::uint32_t g : groups) {
        for (const plan::RowBlock& part : plan.parts) {
          if (step >= part.rows) continue;
          const std::uint32_t j = part.start + step;
          const plan::RowBlock kb = plan.key_blocks[j];
          const std::uint32_t columns = kernels::attention_key_columns(kb.rows);
          const std::uint32_t block_words = u32(std::uint64_t{columns} * padded_head * 2 / 4, "key block words");
          const std::uint32_t entry = plan.streamed ? 0 : plan.pack_entry(g, j);
          const LogicalTile packer_tile = tile_of(plan.tasks[plan.packer(g, j)]);
          Transfer k_send{{}, block_words, {}, provenance};
          Transfer v_send{{}, block_words, {}, provenance};
          if (!plan.streamed) {
            k_send.source = k_packed->location(packer_tile, entry);
            v_send.source = v_packed->location(packer_tile, entry);
          }
          for (const std::size_t t : plan.consumers(g, j)) {
            const plan::AttentionTask& task = plan.tasks[t];
            const LogicalTile tile = tile_of(task);
            // Streamed, every task packs the block itself; otherwise the packer
            // reads its own blocks in place and multicasts them to the others.
            const bool local = !plan.streamed && tile == packer_tile;
            if (plan.streamed) {
              gather(raw_moves, k_held, task, kb, k_rows.location(tile));
              gather(raw_moves, v_held, task, kb, v_rows.location(tile));
              pack_block(compute[tile], kb, k_received.at(kRearrangeOut), k_rows.at(kRearrangeIn),
                         v_received.at(kRearrangeOut), v_rows.at(kRearrangeIn));
            } else if (!local) {
              k_send.destinations.push_back(k_received.location(tile));
              v_send.destinations.push_back(v_received.location(tile));
            }
            const PointerOperand k_operand = local ? k_packed->at(kernels::kGemmWeightRegister, entry)
                                                   : k_received.at(kernels::kGemmWeightRegister);
            const PointerOperand v_operand = local ? v_packed->at(kernels::kGemmWeightRegister, entry)
                                                   : v_received.at(kernels::kGemmWeightRegister);
            const std::uint32_t rows = kernels::attention_query_rows(plan.query_blocks[task.query_block].rows);
            auto& runs = compute[tile];
            runs.push_back(KernelRun{std::string(kernels::kGemmF16Init),
                                     {scores.at(kernels::kGemmOutputRegister), q_block.at(kernels::kGemmLeftRegister),
                                      k_operand},
                                     {{kernels::kGemmRowsRegister, rows},
                                      {kernels::kGemmInnerRegister, padded_head},
                                      {kernels::kGemmColumnsRegister, columns}},
                                     provenance});
            runs.push_back(KernelRun{std::string(kernels::kAttentionSoftmax),
                                     {weights.at(kernels::kSoftmaxOut), scores.at(kernels::kSoftmaxScores)},
                                     {{kernels::kSoftmaxRows, rows},
                                      {kernels::kSoftmaxKeyRows, kb.rows},
                                      {kernels::kSoftmaxScale, scale_bits}},
                                     provenance});
            runs.push_back(KernelRun{std::string(kernels::kGemmF16Init),
                                     {scores.at(kernels::kGemmOutputRegister), weights.at(kernels::kGemmLeftRegister),
                                      v_operand},
                                     {{kernels::kGemmRowsRegister, rows},
                                      {kernels::kGemmInnerRegister, columns},
                                      {kernels::kGemmColumnsRegister, padded_head}},
                                     provenance});
            // A whole walk ends in the final (or single) stage; a key part's
            // walk stays unnormalised for part 0 to combine.
            const kernels::AttentionMergeStage stage =
                key_parts == 1 ? stage_of(step, key_blocks)
                               : (step == 0 ? kernels::AttentionMergeStage::kInitial
                                            : kernels::AttentionMergeStage::kMiddle);
            runs.push_back(KernelRun{std::string(merge_kernel(stage)),
                                     {accumulator.at(kernels::kMergeAccumulator), scores.at(kernels::kMergeValues),
                                      weights.at(kernels::kMergeWeights)},
                                     {{kernels::kMergeRows, rows},
                                      {kernels::kMergeKeyRows, kb.rows},
                                      {kernels::kMergeHeadDim, d}},
                                     provenance});
            if (key_parts == 1 && step + 1 == key_blocks) {
              finish(runs, accumulator.at(kernels::kConvertIn), plan.query_blocks[task.query_block].rows);
            }
          }
          if (!k_send.destinations.empty()) {
            transfers.push_back(std::move(k_send));
            transfers.push_back(std::move(v_send));
          }
        }
      }
      if (plan.streamed) {
        // The raw rows' transfers and local moves, then the packs and the block's kernels.
        std::map<LogicalTile, std::vector<KernelRun>> runs;
        transfers = raw_moves.finish(runs);
        for (auto& [tile, list] : compute) {
          auto& all = runs[tile];
          all.insert(all.end(), list.begin(), list.end());
        }
        compute = std::move(runs);
      }
      if (!transfers.empty()) {
        program.steps.push_back(Step{StepKind::kExchange, 0, std::move(transfers), {}, provenance});
      }
      program.steps.push_back(Step{StepKind::kCompute, 0, {}, std::move(compute), provenance});
    }

    // ---- key parts: each part's rows of every part's accumulator into its
    // slots (by part), folded into slot 0 in part order, converted to f16
    if (key_parts > 1) {
      MoveLowering moves(program, label, provenance, 4);
      std::map<LogicalTile, std::vector<KernelRun>> compute;
      for (const std::uint32_t g : groups) {
        for (const std::size_t t : plan.groups[g]) {
          const plan::AttentionTask& task = plan.tasks[t];
          const LogicalTile tile = tile_of(task);
          // The task's accumulator has the merges' R rows; a slot, the rows
          // of its range: O, m and l of those rows go each to its place.
          const kernels::AttentionAccumulatorLayout whole = kernels::attention_accumulator_layout(
              kernels::attention_query_rows(plan.query_blocks[task.query_block].rows), d);
          const Location from = accumulator.location(tile);
          for (std::uint32_t p = 0; p < key_parts; ++p) {
            const plan::RowRange range = plan.combine_rows(task.query_block, p);
            if (range.size() == 0) continue;
            const kernels::AttentionAccumulatorLayout slice = kernels::attention_accumulator_layout(range.size(), d);
            const LogicalTile owner = tile_of(plan.tasks[plan.task_index(task.batch, task.head, task.query_block, p)]);
            const Location slot = parts->location(owner, task.part);
            const auto word = [](std::uint64_t element) { return u32(element * 4, "accumulator offset"); };
            const auto run = [&](std::uint64_t to, std::uint64_t at, std::uint64_t elements) {
              moves.move_run(Location{owner, slot.buffer, slot.offset + word(to)},
                             Location{tile, from.buffer, from.offset + word(at)}, word(elements));
            };
            run(0, std::uint64_t{range.begin} * d, slice.maxima);
            run(slice.maxima, whole.maxima + range.begin, range.size());
            run(slice.sums, whole.sums + range.begin, range.size());
          }
          const plan::RowRange own = plan.combine_rows(task.query_block, task.part);
          if (own.size() == 0) continue;
          auto& runs = compute[tile];
          for (std::uint32_t p = 1; p < key_parts; ++p) {
            runs.push_back(KernelRun{std::string(p + 1 == key_parts ? kernels::kAttentionCombineFinal
                                                                    : kernels::kAttentionCombineMiddle),
                                     {parts->at(kernels::kCombineAccumulator, 0),
                                      parts->at(kernels::kCombinePart, p)},
                                     {{kernels::kCombineRows, own.size()}, {kernels::kCombineHeadDim, d}},
                                     provenance});
          }
          finish(runs, parts->at(kernels::kConvertIn, 0), own.size());
        }
      }
      context.finish_steps(moves, std::move(compute), provenance);
    }

    // ---- the output rows into the result
    MoveLowering moves(program, label, provenance, 2);
    for (const std::uint32_t g : groups) {
      for (const std::size_t t : plan.groups[g]) {
        const plan::AttentionTask& task = plan.tasks[t];
        // A whole task's rows, or the rows its part combined.
        plan::RowBlock qb = plan.query_blocks[task.query_block];
        if (key_parts > 1) {
          const plan::RowRange own = plan.combine_rows(task.query_block, task.part);
          qb = plan::RowBlock{qb.start + own.begin, own.size()};
        }
        const Location from = out_rows.location(tile_of(task));
        for_each_row_run(out, task, qb,
                         [&](const Location& to, std::uint32_t offset, std::uint32_t bytes) {
                           moves.move_run(to, Location{from.tile, from.buffer, from.offset + offset}, bytes);
                         });
      }
    }
    context.finish_steps(moves, {}, provenance);
  }
}

}  // namespace tessera::compiler::lower
