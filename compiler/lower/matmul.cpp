// The lowering of matmul (operations.hpp) on the plan of compiler/plan/
// gemm_plan.hpp. Per task (one product of the batch, one row block, one
// column block, one K part) on its tile:
//
//   before the waves, every distinct weight block (b's product, K block,
//     column block) packed once into B_m×16 on its home (round robin over
//     the tiles used): f32 elements straight into B8×16
//     (weight_offset), f16 row-major into a staging slot that
//     tessera_rearrange_block_major_f16 packs with zero padding; block-scaled
//     F143 codes row-major into a zero-padded slot, expanded with their
//     scale blocks' scales (words brought to the home, loaded into $m5)
//     into that f16 staging, then rearranged the same way (pack_weights);
//     F143 codes the host packed in weight panels have no homes: each task
//     receives its block's panels in its K-block phase and expands them
//     there, or for the native FP8 GEMM reads them as its B32×16 block, with
//     the scale words its blocks meet brought to its tile in one phase
//     (prepare_task_codes, gather_panels);
//   per wave, when the plan chose homes and several column blocks share a
//     row block's A blocks (plan::a_block_has_home), one phase gathering each of its K blocks
//     of whole panels once from the operand's row-major shards into the A_m
//     layout (kernels/amp_layout.hpp left_offset: one panel row of m
//     elements — 8 words — is one run) on a home tile (assign_homes);
//   for each K block j (one exchange phase + one compute step per wave and
//   block, all tasks of the wave together):
//     the A block from its home, one multicast run per panel (one for the
//     block when its rows fill it), or else rows × K block gathered
//     straight from the shards into the task's A_m block as above; the
//     packed weight block read in place at home or copied whole
//     into the task's slot; then tessera_gemm_*_init (j = 0) or _accumulate
//     into the task's C16 block;
//   without a K split, f16 C16 blocks unpacked row-major on their tiles;
//   K-split partials reduced scattered, in C16: each part owns a range of
//     the block's rows (plan::reduction_rows), receives the other parts'
//     rows (a run per 16-column panel) into its partials slots (its own by
//     a local copy), sums them in part order (tessera_sum_*, one call per
//     panel) and, for f16, unpacks the rows it reduced;
//   the block's (or the part's rows') logical elements into the result's
//     layout — after every wave, so each tile keeps one C block.
//
// Zero padding (the AMP multiplies padding too: it must be finite,
// reference H8): every matmul shares one A staging buffer, a constant of
// zeros; a call of whole K panels has no K padding, and a call
// with a partial last panel has its block zeroed (tessera_fill_words) in a
// compute step just before its gather, since other calls write those
// columns. The F143 code staging (and the native FP8 GEMM's weight slots,
// which take the codes as they are) is zeroed when the op starts; f32 packed
// weights are a constant of zeros, one slot per weight block. Row and
// column padding may hold any earlier data: it only reaches C rows and
// columns no one reads. The A buffer takes whole memory elements: the AMP
// reads A and the C partials in one cycle from two different elements
// (kernels/gemm.hpp).
#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>
#include <span>

#include "compiler/lower/gemm_epilogue.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/lower/operations.hpp"
#include "compiler/plan/gemm_plan.hpp"
#include "kernels/amp_layout.hpp"
#include "kernels/f143_kernels.hpp"
#include "kernels/gemm.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/registry.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

using kernels::GemmFamily;
using kernels::GemmVariant;

std::string_view gemm_kernel(GemmFamily family, bool init) {
  if (family == GemmFamily::kF32) return init ? kernels::kGemmF32Init : kernels::kGemmF32Accumulate;
  if (family == GemmFamily::kF16ExpandedF143) {
    return init ? kernels::kGemmF16ExpandedF143Init : kernels::kGemmF16ExpandedF143Accumulate;
  }
  if (family == GemmFamily::kF143) return init ? kernels::kGemmF143Init : kernels::kGemmF143Accumulate;
  return init ? kernels::kGemmF16Init : kernels::kGemmF16Accumulate;
}

// The side of an F143 scale block (docs/GRAPH_FORMAT.md, "Numerics").
constexpr std::uint32_t kScaleBlock = 64;
// $m4 of the expanded GEMM is 16-byte aligned (kernels/README.md).
constexpr std::uint32_t kExpandedWeightAlignment = 16;

std::uint32_t u32(std::uint64_t value, const char* what) { return checked_cast<std::uint32_t>(value, what); }

// One task of the plan and where it runs.
struct Task {
  std::uint64_t product = 0;  // index into the batch (row-major over the leading axes)
  std::uint32_t row_begin = 0, rows = 0;
  std::uint32_t column_begin = 0, columns = 0;
  std::uint32_t part = 0, k_begin = 0, k_end = 0;
  LogicalTile tile{0};
  std::uint32_t wave = 0;
};

class GemmLowering {
 public:
  GemmLowering(LoweringContext& context, OpId id, const std::string& described)
      : context_(context), graph_(context.graph()), program_(context.program()), id_(id),
        described_(described) {}

  void run() {
    const Operation& op = graph_.operation(id_);
    const TensorType& a = graph_.type(op.inputs[0]);
    const TensorType& b = graph_.type(op.inputs[1]);
    const ValueId result = op.results[0];
    const TensorType& type = graph_.type(result);
    if (a.dtype() == DType::kF32 && b.dtype() == DType::kF32) {
      family_ = GemmFamily::kF32;
    } else if (a.dtype() == DType::kF16 && b.dtype() == DType::kF16) {
      family_ = GemmFamily::kF16;
    } else if (a.dtype() == DType::kF16 && b.element == kBlockScaledF8) {
      family_ = GemmFamily::kF16ExpandedF143;
    } else if (a.dtype() == DType::kF8F143 && !a.element.block_scaled() && b.element == kBlockScaledF8) {
      // The native FP8 GEMM: each call's product scale is the activations'
      // tensor-wide scale plus its weight block's (loaded into $m8).
      family_ = GemmFamily::kF143;
      activation_scale_ = a.element.scale;
    } else {
      throw LoweringError(fmt::format(
          "{}: only f32·f32, f16·f16, f16·block-scaled f8f143 and f8f143·block-scaled f8f143 "
          "matmuls are lowered (not {}·{})",
          described_, format_element_type(a.element), format_element_type(b.element)));
    }
    format_ = kernels::gemm_format(family_);
    element_ = format_.left_bytes;
    out_element_ = format_.output_bytes;
    a_shape_ = a.shape;
    b_shape_ = b.shape;
    const std::size_t rank = type.shape.size();
    lead_shape_.assign(type.shape.begin(), type.shape.end() - 2);
    const std::uint64_t batch = element_count(lead_shape_);
    m_ = a.shape[a.shape.size() - 2];
    k_ = a.shape.back();
    n_ = type.shape[rank - 1];
    // b's own leading extents: the distinct weights among the products.
    const std::uint64_t weight_batch =
        element_count(std::span<const std::uint32_t>(b_shape_).first(b_shape_.size() - 2));

    plan::GemmProblem problem;
    problem.family = family_;
    problem.batch = batch;
    problem.weight_batch = weight_batch;
    problem.rows = m_;
    problem.inner = k_;
    problem.columns = n_;
    problem.tiles = context_.layouts().tiles();
    problem.a_homes = context_.gemm_a_homes();
    // A bias add (and GeLU) the result alone feeds, applied on the GEMM's
    // tiles when the bias is already held (it is defined before the matmul).
    epilogue_ = gemm_epilogue(graph_, id_);
    if (epilogue_ && !context_.has_storage(epilogue_->bias)) epilogue_.reset();
    problem.bias = epilogue_.has_value();
    problem.gelu = epilogue_ && epilogue_->gelu.has_value();
    if (block_scaled()) {
      const LoweringContext::BlockScaled* held = context_.block_scaled(op.inputs[1]);
      problem.panel_weights = held != nullptr && held->panels != 0;
    }
    try {
      plan_ = plan::plan_gemm(problem);
    } catch (const UsageError& e) {
      throw LoweringError(fmt::format("{}: {}", described_, e.what()));
    }
    program_.plans.push_back(fmt::format("op {} (matmul): {}", id_.index, plan::format_gemm_plan(plan_)));
    provenance_ = program_.add_provenance(described_);
    // With an epilogue the GEMM writes its last value; the product and the
    // sum before it get no storage, their operations no steps of their own.
    const ValueId written = epilogue_ ? epilogue_->result : result;
    out_ = &context_.allocate(written, type, format_value(written), provenance_);
    if (epilogue_) {
      bias_ = &context_.storage(epilogue_->bias);
      add_provenance_ = program_.add_provenance(graph_.describe(epilogue_->add));
      context_.lowered_with(epilogue_->add);
      if (epilogue_->gelu) {
        gelu_provenance_ = program_.add_provenance(graph_.describe(*epilogue_->gelu));
        context_.lowered_with(*epilogue_->gelu);
      }
    }
    a_ = &context_.storage(op.inputs[0]);
    if (block_scaled()) {
      // The weights are the codes and scales a block_scale joined, or a
      // repeat's entries of them (LoweringContext::block_scaled).
      const LoweringContext::BlockScaled* held = context_.block_scaled(op.inputs[1]);
      if (held == nullptr) {
        throw LoweringError(fmt::format(
            "{}: block-scaled weights {} that are neither a block_scale's result nor a repeat's "
            "sequence entry of one (a loop's invariant or carried value) are not lowered yet",
            described_, format_value(op.inputs[1])));
      }
      codes_ = held->codes;
      scales_ = held->scales;
      panels_ = held->panels;
      if (panels_ != 0 && panels_ != format_.pass) {
        throw LoweringError(fmt::format(
            "{}: weights {} come in panels of {} inner values, but the {} GEMM reads panels of {}",
            described_, format_value(op.inputs[1]), panels_, format_.name, format_.pass));
      }
      if (family_ == GemmFamily::kF143 && panels_ == 0) {
        // Its B32×16 blocks are runs of whole panels of the codes; row-major
        // codes would take a byte move per weight.
        throw LoweringError(fmt::format(
            "{}: the native FP8 GEMM takes its weights {} as codes in 32-deep weight panels "
            "(block_scale with panels 32), not row-major",
            described_, format_value(op.inputs[1])));
      }
    } else {
      b_ = &context_.storage(op.inputs[1]);
    }

    make_tasks();
    make_buffers();
    assign_homes();
    pack_weights();
    // Each wave ends by moving its C blocks out, so the next reuses them.
    for (std::uint32_t wave = 0; wave < plan_.waves; ++wave) {
      gather_homes(wave);
      for (std::uint32_t block = 0; block < plan_.inner_blocks; ++block) lower_block(wave, block);
      if (plan::unpacks_output(plan_) && plan_.choice.k_split == 1) unpack_blocks(wave);
      if (plan_.choice.k_split > 1) reduce_parts(wave);
      move_out(wave);
    }
  }

 private:
  // An A block gathered once on a home tile per wave (assign_homes): the
  // tasks of one product, row block and K part, and one of its K blocks.
  struct HomeKey {
    std::uint32_t wave = 0;
    std::uint64_t product = 0;
    std::uint32_t row_begin = 0, part = 0, block = 0;
    friend auto operator<=>(const HomeKey&, const HomeKey&) = default;
  };
  struct Home {
    LogicalTile tile{0};
    std::uint32_t offset = 0;  // in homes_buffer_
    std::uint32_t rows = 0, extent = 0;
  };

  std::uint32_t call_inner(std::uint32_t extent) const {
    return u32(kernels::amp::padded_inner(extent, format_.pass), "GEMM K");
  }
  std::uint32_t c_bytes() const {
    return u32(kernels::amp::round_up(
                   kernels::gemm_output_bytes(family_, plan_.call_rows, plan_.choice.block_columns), 8),
               "GEMM output block");
  }

  void make_tasks() {
    const std::uint32_t split = plan_.choice.k_split;
    for (std::uint64_t t = 0; t < plan_.tasks; ++t) {
      Task task;
      std::uint64_t rest = t;
      task.part = static_cast<std::uint32_t>(rest % split);
      rest /= split;
      const auto column_block = static_cast<std::uint32_t>(rest % plan_.column_blocks);
      rest /= plan_.column_blocks;
      const auto row_block = static_cast<std::uint32_t>(rest % plan_.row_blocks);
      task.product = rest / plan_.row_blocks;
      task.row_begin = row_block * plan_.choice.block_rows;
      task.rows = std::min(plan_.choice.block_rows, m_ - task.row_begin);
      task.column_begin = column_block * plan_.choice.block_columns;
      task.columns = std::min(plan_.choice.block_columns, n_ - task.column_begin);
      task.k_begin = task.part * plan_.part_inner;
      task.k_end = std::min(k_, task.k_begin + plan_.part_inner);
      task.tile = LogicalTile(static_cast<std::uint16_t>(t % plan_.tiles_used));
      task.wave = static_cast<std::uint32_t>(t / plan_.tiles_used);
      tasks_.push_back(task);
    }
  }

  // The logical K extent of task's block j, 0 when the part has no block j.
  std::uint32_t block_extent(const Task& task, std::uint32_t block) const {
    const std::uint64_t begin = task.k_begin + std::uint64_t{block} * plan_.choice.block_inner;
    if (begin >= task.k_end) return 0;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(plan_.choice.block_inner, task.k_end - begin));
  }

  BufferId add_buffer(std::string name, std::uint32_t bytes, bool zeros, bool whole_elements) {
    Buffer buffer;
    buffer.name = fmt::format("{} (op {})", name, id_.index);
    buffer.kind = schema::AllocationKind::kScratch;
    buffer.provenance = provenance_;
    buffer.whole_elements = whole_elements;
    for (std::uint32_t t = 0; t < plan_.tiles_used; ++t) {
      buffer.bytes[LogicalTile(static_cast<std::uint16_t>(t))] = bytes;
      if (zeros) buffer.contents[LogicalTile(static_cast<std::uint16_t>(t))] = std::vector<std::uint8_t>(bytes, 0);
    }
    return program_.add_buffer(std::move(buffer));
  }

  BufferId add_buffer_on(std::string name, const std::map<LogicalTile, std::uint32_t>& bytes, bool zeros) {
    Buffer buffer;
    buffer.name = fmt::format("{} (op {})", name, id_.index);
    buffer.kind = schema::AllocationKind::kScratch;
    buffer.provenance = provenance_;
    buffer.bytes = bytes;
    if (zeros) {
      for (const auto& [tile, size] : bytes) buffer.contents[tile] = std::vector<std::uint8_t>(size, 0);
    }
    return program_.add_buffer(std::move(buffer));
  }

  void make_buffers() {
    const std::uint32_t columns = plan_.choice.block_columns;
    for (const Task& task : tasks_) {
      for (std::uint32_t j = 0; j < plan_.inner_blocks; ++j) {
        const std::uint32_t extent = block_extent(task, j);
        if (extent == 0 || left_.contains(extent)) continue;
        const std::uint32_t inner = call_inner(extent);
        // One A block shared by every matmul of every family (a constant
        // of zeros, whole elements: the AMP reads A and the C partials in
        // one cycle from two different elements). Its layout (amp_layout.hpp
        // left_offset) depends on the rows and the panel width, not on K,
        // and a panel row is 32 bytes in every family (8 f32, 16 f16, 32
        // F143), so a call of whole panels writes all the bytes it reads,
        // whichever family wrote them before (row padding only reaches C
        // rows no one reads). A call with a partial last panel reads that
        // panel's padding columns, which other calls write: lower_block
        // zeroes the call's block first. One buffer, not one per family: at
        // f8 the F143 projections and the f16 patch embedding and head would
        // otherwise hold two, whole 32 KiB elements on every tile.
        static_assert(kernels::gemm_format(GemmFamily::kF32).pass * kernels::gemm_format(GemmFamily::kF32).left_bytes ==
                          kernels::gemm_format(GemmFamily::kF16).pass * kernels::gemm_format(GemmFamily::kF16).left_bytes &&
                      kernels::gemm_format(GemmFamily::kF16).pass * kernels::gemm_format(GemmFamily::kF16).left_bytes ==
                          kernels::gemm_format(GemmFamily::kF143).pass * kernels::gemm_format(GemmFamily::kF143).left_bytes);
        left_[extent] = context_.shared_zeros(
            "GEMM A block",
            u32(kernels::gemm_left_bytes(family_, plan_.call_rows, inner), "A block"), plan_.tiles_used, true,
            provenance_);
        // The staging slot a packed block is copied into (its home tile
        // reads it in place).
        weights_[extent] = add_buffer(
            fmt::format("B{}x16 K {}", m_pass(), extent),
            u32(kernels::gemm_weight_bytes(family_, plan_.call_rows, inner, columns), "B block"), false, false);
        // The expanded GEMM reads its weights with ld128putcs.
        if (expanded()) program_.buffers[weights_[extent]].alignment = kExpandedWeightAlignment;
      }
    }
    output_ = add_buffer("C16 block", c_bytes(), false, false);
    if (plan::unpacks_output(plan_)) {
      rows_ = add_buffer("C row-major", u32(plan::unpacked_block_bytes(plan_), "C row-major bytes"), false, false);
    }
    if (epilogue_) {
      bias_row_ = add_buffer("bias", u32(kernels::amp::round_up(std::uint64_t{plan_.choice.block_columns} * out_element_, 8),
                                         "bias bytes"),
                             false, false);
    }
    if (plan_.choice.k_split > 1) {
      partials_ = add_buffer("K-split partials",
                             u32(checked_mul<std::uint64_t>(plan::reduction_slot_bytes(plan_), plan_.choice.k_split, "partials"),
                                 "partials"),
                             false, false);
    }
  }

  // The full index of a leading-axes product's element (row, column) of
  // operand `shape` (its leading axes broadcast against the result's).
  Index operand_index(std::span<const std::uint32_t> shape, std::uint64_t product, std::uint64_t row,
                      std::uint64_t column) const {
    Index lead(lead_shape_.size(), 0);
    for (std::size_t a = lead_shape_.size(); a-- > 0;) {
      lead[a] = product % lead_shape_[a];
      product /= lead_shape_[a];
    }
    Index index = broadcast_source(shape.first(shape.size() - 2), lead);
    index.push_back(row);
    index.push_back(column);
    return index;
  }

  unsigned m_pass() const { return format_.pass; }
  bool expanded() const { return family_ == GemmFamily::kF16ExpandedF143; }
  // Block-scaled F143 weights: expanded on the tile, or the native GEMM's.
  bool block_scaled() const { return expanded() || family_ == GemmFamily::kF143; }
  // Rows of the row-major staging of a weight block: its padded columns
  // for F143 codes (so an expand call's rows are whole words and the
  // padding codes, zeros, expand to zeros), its logical ones for f16.
  std::uint32_t staging_stride(std::uint32_t columns) const {
    return expanded() ? plan_.choice.block_columns : columns;
  }

  // b's leading index for a product of the result (b broadcasts too).
  Index weight_lead(std::uint64_t product) const {
    Index index = operand_index(b_shape_, product, 0, 0);
    index.resize(index.size() - 2);
    return index;
  }

  // Every distinct weight block (b's product, K block, column block) packed
  // once into B_m×16 on its home — round robin over the tiles used, in the
  // order the tasks first read them, so the memory is spread — before the
  // waves: the tasks then receive whole packed blocks (or read them in place
  // at home) instead of packing per call.
  //
  // Block-scaled F143 weights: the block's codes arrive row-major (rows of
  // the padded columns, in a constant of zeros: padding codes are 0 and
  // expand to 0) with the i32 scale of every 64 × 64 scale block the weight
  // block meets (one word each on the home); tessera_expand_f143_to_f16
  // decodes them into the f16 row-major staging, one call per run of rows in
  // one scale block (per row and 64-column half for 128 columns) with that
  // block's scale loaded from its word ($m5, KernelRun::loaded), and the f16
  // block is then rearranged as f16 weights are.
  void pack_weights() {
    const std::uint32_t columns = plan_.choice.block_columns;
    const std::uint32_t m = format_.pass;
    packed_slot_ = u32(kernels::amp::round_up(
                           kernels::gemm_weight_bytes(family_, plan_.call_rows, plan_.choice.block_inner, columns),
                           expanded() ? kExpandedWeightAlignment : 8),
                       "packed B slot");
    staging_slot_ = u32(kernels::amp::round_up(std::uint64_t{plan_.choice.block_inner} * columns * 2, 8),
                        "B staging slot");
    codes_slot_ = u32(kernels::amp::round_up(std::uint64_t{plan_.choice.block_inner} * columns, 8), "codes slot");
    if (panels_ != 0) return prepare_task_codes();
    std::map<LogicalTile, std::uint32_t> slots;
    std::vector<const WeightKey*> order;
    for (const Task& task : tasks_) {
      for (std::uint32_t j = 0; j < plan_.inner_blocks; ++j) {
        const std::uint32_t extent = block_extent(task, j);
        if (extent == 0) continue;
        WeightKey key{weight_lead(task.product), task.k_begin + j * plan_.choice.block_inner, task.column_begin};
        if (packed_.contains(key)) continue;
        const LogicalTile home(static_cast<std::uint16_t>(order.size() % plan_.tiles_used));
        const auto [it, inserted] = packed_.emplace(key, WeightBlock{home, slots[home]++, extent, task.columns});
        order.push_back(&it->first);
      }
    }
    std::map<LogicalTile, std::uint32_t> packed_bytes, staging_bytes, codes_bytes;
    for (const auto& [tile, count] : slots) {
      packed_bytes[tile] = checked_mul(count, packed_slot_, "packed weights");
      staging_bytes[tile] = checked_mul(count, staging_slot_, "weight staging");
      codes_bytes[tile] = checked_mul(count, codes_slot_, "weight codes");
    }
    // f32 blocks are written element by element: their padding stays the
    // constant's zeros. f16 blocks are written whole by the rearrange.
    packed_buffer_ = add_buffer_on("packed B", packed_bytes, family_ == GemmFamily::kF32);
    if (expanded()) program_.buffers[packed_buffer_].alignment = kExpandedWeightAlignment;
    if (family_ != GemmFamily::kF32) staging_buffer_ = add_buffer_on("B row-major", staging_bytes, false);
    if (expanded()) {
      codes_buffer_ = add_buffer_on("B codes row-major (zero padded)", codes_bytes, false);
    }
    // One word per scale block a home's weight blocks meet (sized below).
    if (expanded()) scales_buffer_ = add_buffer_on("B scales", {}, false);

    MoveLowering moves(program_, fmt::format("op {} weights", id_.index), provenance_, expanded() ? 1 : element_);
    MoveLowering scale_moves(program_, fmt::format("op {} weight scales", id_.index), provenance_, 4);
    std::map<LogicalTile, std::map<Index, std::uint32_t>> scale_words;  // per home: (lead, K block, N block) → word
    std::map<LogicalTile, std::vector<KernelRun>> compute;
    for (const WeightKey* key : order) {
      const WeightBlock& block = packed_.at(*key);
      const std::uint32_t inner = call_inner(block.extent);
      const std::uint32_t stride = staging_stride(block.columns);
      Index index = key->lead;
      index.resize(key->lead.size() + 2);
      for (std::uint32_t k = 0; k < block.extent; ++k) {
        for (std::uint32_t n = 0; n < block.columns;) {
          index[key->lead.size()] = key->k0 + k;
          index[key->lead.size() + 1] = key->column_begin + n;
          const std::uint64_t row_major = std::uint64_t{k} * stride + n;
          if (family_ == GemmFamily::kF32) {
            // B8×16 scatters a row's columns m elements apart: element moves.
            moves.move(Location{block.home, packed_buffer_,
                                u32(block.slot * std::uint64_t{packed_slot_} +
                                        kernels::amp::weight_offset(k, n, inner, m) * element_,
                                    "B offset")},
                       b_->location(index));
            ++n;
            continue;
          }
          // Row-major staging: a run per stretch of the row contiguous in
          // the weight's shard.
          const Storage::Run in = (expanded() ? codes_ : b_)->run(index);
          const auto elements = static_cast<std::uint32_t>(std::min<std::uint64_t>(in.elements, block.columns - n));
          const Location destination =
              expanded() ? Location{block.home, codes_buffer_,
                                    u32(block.slot * std::uint64_t{codes_slot_} + row_major, "codes offset")}
                         : Location{block.home, staging_buffer_,
                                    u32(block.slot * std::uint64_t{staging_slot_} + row_major * 2, "B offset")};
          moves.move_run(destination, in.location, elements * (expanded() ? 1 : element_));
          n += elements;
        }
      }
      if (expanded()) {
        // The word on the home holding scale block (K block, N block) of this
        // product's weights, brought there once.
        const auto scale_word = [&](std::uint64_t k_block, std::uint64_t n_block) {
          Index at = key->lead;
          at.push_back(k_block);
          at.push_back(n_block);
          auto& words = scale_words[block.home];
          const auto [found, added] = words.emplace(at, static_cast<std::uint32_t>(words.size()));
          if (added) scale_moves.move(Location{block.home, scales_buffer_, u32(found->second * std::uint64_t{4}, "scale offset")}, scales_->location(at));
          return u32(found->second * std::uint64_t{4}, "scale offset");
        };
        const std::uint64_t last_n_block = (std::uint64_t{key->column_begin} + block.columns - 1) / kScaleBlock;
        auto& runs = compute[block.home];
        const auto expand = [&](std::uint64_t element, std::uint64_t count, std::uint32_t scale_offset) {
          runs.push_back(KernelRun{
              std::string(kernels::kExpandF143ToF16),
              {{2, staging_buffer_, u32(block.slot * std::uint64_t{staging_slot_} + element * 2, "expand offset")},
               {3, codes_buffer_, u32(block.slot * std::uint64_t{codes_slot_} + element, "codes offset")}},
              {{4, u32(count, "expand count")}},
              provenance_,
              {{5, scales_buffer_, scale_offset}}});
        };
        for (std::uint32_t r0 = 0; r0 < block.extent;) {
          const std::uint64_t k = std::uint64_t{key->k0} + r0;
          const auto r1 = static_cast<std::uint32_t>(
              std::min<std::uint64_t>(block.extent, (k / kScaleBlock + 1) * kScaleBlock - key->k0));
          if (stride <= kScaleBlock) {
            // The block lies in one scale-block column: rows r0 … r1 are one run.
            expand(std::uint64_t{r0} * stride, std::uint64_t{r1 - r0} * stride,
                   scale_word(k / kScaleBlock, key->column_begin / kScaleBlock));
          } else {
            for (std::uint32_t r = r0; r < r1; ++r) {
              for (std::uint32_t half = 0; half < stride; half += kScaleBlock) {
                // A half of padding only (no scale block of its own) expands
                // zero codes: any scale of the block gives zeros.
                const std::uint64_t n_block = std::min<std::uint64_t>((std::uint64_t{key->column_begin} + half) / kScaleBlock, last_n_block);
                expand(std::uint64_t{r} * stride + half, kScaleBlock, scale_word(k / kScaleBlock, n_block));
              }
            }
          }
          r0 = r1;
        }
      }
      if (family_ != GemmFamily::kF32) {
        compute[block.home].push_back(
            KernelRun{std::string(kernels::kRearrangeBlockMajorF16),
                      {{2, packed_buffer_, block.slot * packed_slot_}, {3, staging_buffer_, block.slot * staging_slot_}},
                      {{4, block.extent}, {5, expanded() ? stride : block.columns}, {6, inner}, {7, columns}, {8, inner}},
                      provenance_});
      }
    }
    if (expanded()) zero_codes_staging({{codes_buffer_, codes_bytes}});
    if (expanded()) {
      for (const auto& [tile, words] : scale_words) {
        program_.buffers[scales_buffer_].bytes[tile] = u32(words.size() * std::uint64_t{4}, "scale words");
      }
      context_.finish_steps(moves, {}, provenance_);
      context_.finish_steps(scale_moves, std::move(compute), provenance_);
    } else {
      context_.finish_steps(moves, std::move(compute), provenance_);
    }
  }

  void lower_block(std::uint32_t wave, std::uint32_t block) {
    // Calls with a partial last K panel: their A block zeroed first (one
    // compute step), so its padding columns read zero whatever wrote there.
    std::map<LogicalTile, std::vector<KernelRun>> zeroes;
    for (const Task& task : tasks_) {
      const std::uint32_t extent = block_extent(task, block);
      if (task.wave != wave || extent == 0 || call_inner(extent) == extent) continue;
      const auto bytes = u32(kernels::gemm_left_bytes(family_, plan_.call_rows, call_inner(extent)), "A block");
      zeroes[task.tile].push_back(zero_run(left_.at(extent), bytes));
    }
    if (!zeroes.empty()) {
      MoveLowering none(program_, fmt::format("op {} A padding", id_.index), provenance_, element_);
      context_.finish_steps(none, std::move(zeroes), provenance_);
    }
    MoveLowering moves(program_, fmt::format("op {}", id_.index), provenance_, element_);
    std::map<LogicalTile, std::vector<KernelRun>> compute;
    const std::uint32_t m = format_.pass;
    const std::uint32_t columns = plan_.choice.block_columns;
    for (const Task& task : tasks_) {
      if (task.wave != wave) continue;
      const std::uint32_t extent = block_extent(task, block);
      if (extent == 0) continue;
      const std::uint32_t inner = call_inner(extent);
      const std::uint32_t k0 = task.k_begin + block * plan_.choice.block_inner;
      const BufferId left = left_.at(extent);
      const auto home = homes_.find(home_key(task, block));
      if (home != homes_.end()) {
        // The block from its home: each panel's rows are contiguous there
        // and here, and with no row padding the whole block is one run.
        const Home& at = home->second;
        const std::uint32_t panels = inner / m;
        const std::uint32_t panel_bytes = u32(std::uint64_t{task.rows} * m * element_, "A panel");
        const std::uint32_t stride = u32(std::uint64_t{plan_.call_rows} * m * element_, "A panel stride");
        for (std::uint32_t p = 0; p < panels; ++p) {
          moves.move_run(Location{task.tile, left, p * stride},
                         Location{at.tile, homes_buffer_, at.offset + p * stride}, panel_bytes);
        }
      } else {
        gather_rows(moves, task, k0, extent, Location{task.tile, left, 0});
      }
      auto& runs = compute[task.tile];
      PointerOperand weights{kernels::kGemmWeightRegister, weights_.at(extent), 0};
      if (panels_ != 0 && !expanded()) {
        // The native GEMM: the panel codes straight from the weights' shards
        // into this extent's slot are its B32×16 block as they are.
        const WeightKey key{weight_lead(task.product), k0, task.column_begin};
        gather_panels(moves, key, inner, task.columns, Location{task.tile, weights_.at(extent), 0});
      } else if (panels_ != 0) {
        // Panel codes straight from the weights' shards (a multicast to the
        // row blocks that share them), expanded here.
        const WeightKey key{weight_lead(task.product), k0, task.column_begin};
        gather_panels(moves, key, inner, task.columns, Location{task.tile, codes_buffer_, 0});
        expand_panels(key, inner, task.columns, codes_buffer_, 0, weights_.at(extent), 0,
                      [&](std::uint64_t k_block, std::uint64_t n_block) {
                        return task_scale_words_.at(task.tile).at(scale_index(key.lead, k_block, n_block));
                      },
                      runs);
      } else {
      // The packed weight block: read in place at home, else copied whole
      // (one multicast per block and phase) into this extent's slot.
      const WeightBlock& packed = packed_.at(WeightKey{weight_lead(task.product), k0, task.column_begin});
      weights = PointerOperand{kernels::kGemmWeightRegister, packed_buffer_, packed.slot * packed_slot_};
      if (packed.home != task.tile) {
        const auto bytes = u32(kernels::gemm_weight_bytes(family_, plan_.call_rows, inner, columns), "B block");
        if (bytes > 0) {
          moves.move_run(Location{task.tile, weights_.at(extent), 0},
                         Location{packed.home, packed_buffer_, packed.slot * packed_slot_}, bytes);
        }
        weights = PointerOperand{kernels::kGemmWeightRegister, weights_.at(extent), 0};
      }
      }
      const bool init = block == 0;
      runs.push_back(KernelRun{std::string(gemm_kernel(family_, init)),
                               {{kernels::kGemmOutputRegister, output_, 0},
                                {kernels::kGemmLeftRegister, left, 0},
                                weights},
                               {{kernels::kGemmRowsRegister, plan_.call_rows},
                                {kernels::kGemmInnerRegister, inner},
                                {kernels::kGemmColumnsRegister, columns}},
                               provenance_});
      if (family_ == GemmFamily::kF143) {
        // ISCL: the weight block's scale, from its word on this tile (the
        // call lies in one scale block: prepare_task_codes), plus the
        // activations' scale.
        runs.back().loaded.push_back(LoadedScalar{
            kernels::kGemmScaleRegister, scales_buffer_,
            task_scale_words_.at(task.tile).at(
                scale_index(weight_lead(task.product), k0 / kScaleBlock, task.column_begin / kScaleBlock)),
            activation_scale_});
      }
    }
    context_.finish_steps(moves, std::move(compute), provenance_);
  }

  // A task's rows × K block [k0, k0 + extent) from a's row-major shards
  // into the A_m block at `block` (row padding call_rows): a run per stretch
  // of a row that is contiguous in a's shard and inside one m-wide panel of
  // A_m (left_offset is contiguous in k there) — one message per source row
  // and panel.
  void gather_rows(MoveLowering& moves, const Task& task, std::uint32_t k0, std::uint32_t extent,
                   const Location& block) {
    const std::uint32_t m = format_.pass;
    for (std::uint32_t r = 0; r < task.rows; ++r) {
      for (std::uint32_t k = 0; k < extent;) {
        const auto offset = kernels::amp::left_offset(r, k, plan_.call_rows, m) * element_;
        const Storage::Run in = a_->run(operand_index(a_shape_, task.product, task.row_begin + r, k0 + k));
        const auto elements = static_cast<std::uint32_t>(std::min<std::uint64_t>({in.elements, m - k % m, extent - k}));
        moves.move_run(Location{block.tile, block.buffer, u32(block.offset + offset, "A offset")}, in.location,
                       elements * element_);
        k += elements;
      }
    }
  }

  HomeKey home_key(const Task& task, std::uint32_t block) const {
    return HomeKey{task.wave, task.product, task.row_begin, task.part, block};
  }

  // Homes for A blocks (assign_homes → gather_homes → lower_block).
  //
  // Gathered straight from a's row shards, an A block arrives as one message
  // per source row and m-wide panel (a [729, 1152] activation lies one row
  // per tile): every task tile receives rows × K / m messages per matmul,
  // and each receive is ~3 instructions of the tile's exchange row, which
  // stays in executable memory for the whole program. The column blocks of
  // one product, row block and K part read the same A blocks, so each K
  // block with whole panels is gathered once per wave onto a home tile (one
  // exchange phase for the wave), and every K block's phase then brings it to
  // the tasks as one multicast run per panel row range — one message where
  // the rows fill the block. Homes go round robin from the middle of the
  // tiles used, skipping the block's own tasks where they can (a home that
  // is one moves it locally). A block with a partial last panel keeps the
  // direct gather: its K padding must stay the staging buffer's zeros.
  // A group of a single task gains nothing from a home and keeps it too.
  // Which blocks have homes is the plan's rule (plan::a_block_has_home); the
  // planner chose homes only where its model says the gather phase pays.
  void assign_homes() {
    if (!plan_.choice.a_homes) return;
    struct Group {
      const Task* first = nullptr;
      std::set<LogicalTile> tiles;
    };
    std::map<HomeKey, Group> groups;  // keyed with block 0
    for (const Task& task : tasks_) {
      Group& group = groups[home_key(task, 0)];
      if (group.first == nullptr) group.first = &task;
      group.tiles.insert(task.tile);
    }
    const std::uint32_t slot =
        u32(kernels::amp::round_up(kernels::amp::left_elements(plan_.call_rows, plan_.choice.block_inner) * element_, 8),
            "A home slot");
    std::map<LogicalTile, std::uint32_t> bytes;
    for (std::uint32_t wave = 0; wave < plan_.waves; ++wave) {
      std::map<LogicalTile, std::uint32_t> slots;
      std::uint32_t cursor = plan_.tiles_used / 2;
      for (const auto& [group, members] : groups) {
        if (group.wave != wave) continue;
        const Task* task = members.first;
        const std::set<LogicalTile>& tiles = members.tiles;
        for (std::uint32_t block = 0; block < plan_.inner_blocks; ++block) {
          const std::uint32_t extent = block_extent(*task, block);
          if (!plan::a_block_has_home(plan_, tiles.size(), extent)) continue;
          LogicalTile tile(static_cast<std::uint16_t>(cursor % plan_.tiles_used));
          for (std::uint32_t tries = 0; tries < plan_.tiles_used && tiles.contains(tile); ++tries) {
            cursor = (cursor + 1) % plan_.tiles_used;
            tile = LogicalTile(static_cast<std::uint16_t>(cursor));
          }
          cursor = (cursor + 1) % plan_.tiles_used;
          HomeKey key = group;
          key.block = block;
          homes_.emplace(key, Home{tile, checked_mul(slots[tile]++, slot, "A home offset"), task->rows, extent});
          bytes[tile] = std::max(bytes[tile], checked_mul(slots[tile], slot, "A home bytes"));
        }
      }
    }
    if (!homes_.empty()) homes_buffer_ = add_buffer_on("A blocks at home", bytes, false);
  }

  // The wave's home A blocks gathered from a's row shards: one phase.
  void gather_homes(std::uint32_t wave) {
    MoveLowering moves(program_, fmt::format("op {} A homes", id_.index), provenance_, element_);
    bool any = false;
    for (const auto& [key, home] : homes_) {
      if (key.wave != wave) continue;
      any = true;
      Task rows;
      rows.product = key.product;
      rows.row_begin = key.row_begin;
      rows.rows = home.rows;
      gather_rows(moves, rows, key_k0(key), home.extent, Location{home.tile, homes_buffer_, home.offset});
    }
    if (any) context_.finish_steps(moves, {}, provenance_);
  }

  std::uint32_t key_k0(const HomeKey& key) const {
    return key.part * plan_.part_inner + key.block * plan_.choice.block_inner;
  }

  // The padded columns of F143 code staging (and of the native GEMM's
  // B32×16 slots, which the codes land in as they are) must read as zero,
  // or at least as finite codes: one compute step of tessera_fill_words
  // before anything is written into them. Later the op writes only codes
  // there (padding column groups may keep an earlier block's, which reach
  // only C columns no one reads), so once per op (per iteration inside a
  // repeat) is enough; a constant of zeros would live the whole program.
  KernelRun zero_run(BufferId buffer, std::uint32_t bytes) const {
    return KernelRun{std::string(kernels::kFillWords),
                     {{kernels::kOutputRegister, buffer, 0}},
                     {{3, 0}, {4, bytes / 4}},
                     provenance_};
  }

  // Each (buffer, bytes per tile) zeroed in one compute step.
  void zero_codes_staging(const std::vector<std::pair<BufferId, std::map<LogicalTile, std::uint32_t>>>& slots) {
    std::map<LogicalTile, std::vector<KernelRun>> fills;
    for (const auto& [buffer, per_tile] : slots) {
      for (const auto& [tile, bytes] : per_tile) {
        if (bytes > 0) fills[tile].push_back(zero_run(buffer, bytes));
      }
    }
    if (fills.empty()) return;
    MoveLowering none(program_, fmt::format("op {} zero padding", id_.index), provenance_, element_);
    context_.finish_steps(none, std::move(fills), provenance_);
  }

  // The C blocks of `wave` unpacked row-major on their tiles (f16 results,
  // plan::unpacks_output, without a K split): each row of a block is then
  // one run of its columns — read from C16, whose columns are permuted
  // inside each 16-column panel (amp_layout.hpp physical_column), every
  // element pair would be a one-word message of its own (a [729, 1152]
  // result: 419,904 messages, not 26,244). With a K split each part unpacks
  // the rows it reduced instead (reduce_parts).
  void unpack_blocks(std::uint32_t wave) {
    MoveLowering moves(program_, fmt::format("op {} unpack", id_.index), provenance_, out_element_);
    std::map<LogicalTile, std::vector<KernelRun>> unpacks;
    for (const Task& task : tasks_) {
      if (task.wave != wave) continue;
      if (epilogue_) gather_bias(moves, task);
      unpacks[task.tile].push_back(KernelRun{
          std::string(kernels::kUnpackOutputF16),
          {{2, *rows_, 0}, {3, output_, 0}},
          {{4, task.rows},
           {5, task.columns},
           {6, plan_.call_rows},
           {7, u32(kernels::amp::padded_columns(plan_.choice.block_columns), "padded columns")}},
          provenance_});
      apply_epilogue(unpacks[task.tile], task, task.rows);
    }
    context_.finish_steps(moves, std::move(unpacks), provenance_);
  }

  // Task's slice of the bias (its block's columns) into its bias row.
  void gather_bias(MoveLowering& moves, const Task& task) {
    for (std::uint32_t c = 0; c < task.columns;) {
      const Storage::Run run = bias_->run(Index{task.column_begin + c});
      const auto elements = static_cast<std::uint32_t>(std::min<std::uint64_t>(run.elements, task.columns - c));
      moves.move_run(Location{task.tile, *bias_row_, c * out_element_}, run.location, elements * out_element_);
      c += elements;
    }
  }

  // The epilogue (gemm_epilogue.hpp) on `rows` row-major rows of task's
  // block in the C row-major buffer, in place: the bias row added, then the
  // GeLU — each kernel named after the operation it stands for.
  void apply_epilogue(std::vector<KernelRun>& calls, const Task& task, std::uint32_t rows) const {
    if (!epilogue_ || rows == 0) return;
    calls.push_back(KernelRun{std::string(kernels::kAddRowBroadcastF16),
                              {{2, *rows_, 0}, {3, *rows_, 0}, {4, *bias_row_, 0}},
                              {{5, rows}, {6, task.columns}},
                              add_provenance_});
    if (epilogue_->gelu) {
      calls.push_back(KernelRun{std::string(kernels::kGeluF16),
                                {{2, *rows_, 0}, {3, *rows_, 0}},
                                {{4, u32(std::uint64_t{rows} * task.columns, "epilogue elements")}},
                                gelu_provenance_});
    }
  }

  // A stretch of a C block's elements on its tile: buffer, element offset,
  // elements.
  struct Stretch {
    BufferId buffer = 0;
    std::uint64_t offset = 0, elements = 0;
  };
  // Rows `range` of task's own C block as runs, one per 16-column panel of
  // C16 — in the order a partials slot holds them (slot_offset).
  std::vector<Stretch> block_rows(plan::RowRange range) const {
    std::vector<Stretch> runs;
    for (std::uint64_t panel = 0; panel * kernels::amp::kPanelColumns < plan_.choice.block_columns; ++panel) {
      runs.push_back(Stretch{output_, kernels::amp::output_panel_offset(range.begin, panel, plan_.call_rows),
                             std::uint64_t{range.size()} * kernels::amp::kPanelColumns});
    }
    return runs;
  }
  // Whether a part's own rows reach its slot in one reblock call (f16: C16
  // panel rows are the 32-byte rows tessera_reblock_a16_to_a16_f16 copies)
  // rather than a local copy per panel, each paying the copy call.
  bool reblocks_own_rows() const { return out_element_ == 2; }

  // Byte offset of panel `run` in part `part`'s slot of the partials buffer
  // of an owner that reduces `owned` rows: the slot holds them as C16 of
  // exactly `owned` rows (so the sums and the unpack read only what arrived).
  std::uint32_t slot_offset(std::uint32_t part, std::size_t run, std::uint32_t owned) const {
    const std::uint64_t in_slot = kernels::amp::output_panel_offset(0, run, owned) * out_element_;
    return u32(part * plan::reduction_slot_bytes(plan_) + in_slot, "partials offset");
  }

  // The K-split partials reduced scattered: part q of a block owns rows
  // plan::reduction_rows(rows, split, q); every part's partials of those
  // rows come into slot p of q's partials buffer — by exchange from the
  // other parts, its own by one reblock (f16) or a local copy per panel
  // (f32) — and one tessera_sum per panel
  // adds the slots in part order into slot 0, which then holds the rows'
  // result; an f16 one is unpacked row-major (move_out reads either). One
  // sum, not split − 1 adds: each part's calls do not grow with the split.
  void reduce_parts(std::uint32_t wave) {
    const std::uint32_t split = plan_.choice.k_split;
    MoveLowering moves(program_, fmt::format("op {} partials", id_.index), provenance_, out_element_);
    std::map<LogicalTile, std::vector<KernelRun>> compute;
    const std::string sum(family_ == GemmFamily::kF32 ? kernels::kSumF32 : kernels::kSumF16);
    const std::uint32_t stride = u32(plan::reduction_slot_bytes(plan_), "partials slot");
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
      const Task& task = tasks_[t];
      if (task.wave != wave) continue;
      const std::size_t first = t - task.part;  // the block's part-0 task
      for (std::uint32_t q = 0; q < split; ++q) {
        const plan::RowRange range = plan::reduction_rows(task.rows, split, q);
        if (range.size() == 0) continue;
        if (q == task.part && reblocks_own_rows()) continue;  // one call below
        const Task& owner = tasks_[first + q];
        const std::vector<Stretch> runs = block_rows(range);
        for (std::size_t i = 0; i < runs.size(); ++i) {
          moves.move_run(Location{owner.tile, partials_, slot_offset(task.part, i, range.size())},
                         Location{task.tile, runs[i].buffer, u32(runs[i].offset * out_element_, "C offset")},
                         u32(runs[i].elements * out_element_, "C run"));
        }
      }
      const plan::RowRange own = plan::reduction_rows(task.rows, split, task.part);
      if (own.size() == 0) continue;
      const std::vector<Stretch> runs = block_rows(own);
      auto& calls = compute[task.tile];
      if (reblocks_own_rows()) {
        // The part's own rows into its slot: C16 panel rows of call_rows
        // rows to panel rows of own.size() rows, one call for every panel.
        calls.push_back(KernelRun{
            std::string(kernels::kReblockA16ToA16F16),
            {{2, partials_, slot_offset(task.part, 0, own.size())}, {3, output_, 0}},
            {{4, plan_.call_rows},
             {5, own.size()},
             {6, own.begin},
             {7, 0},
             {8, own.size()},
             {9, u32(kernels::amp::padded_columns(plan_.choice.block_columns), "padded columns")}},
            provenance_});
      }
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const std::uint32_t slot0 = slot_offset(0, i, own.size());
        calls.push_back(KernelRun{sum,
                                  {{2, partials_, slot0}, {3, partials_, slot0}},
                                  {{4, u32(runs[i].elements, "C run")}, {5, split}, {6, stride}},
                                  provenance_});
      }
      if (plan::unpacks_output(plan_)) {
        calls.push_back(KernelRun{
            std::string(kernels::kUnpackOutputF16),
            {{2, *rows_, 0}, {3, partials_, slot_offset(0, 0, own.size())}},
            {{4, own.size()},
             {5, task.columns},
             {6, own.size()},
             {7, u32(kernels::amp::padded_columns(plan_.choice.block_columns), "padded columns")}},
            provenance_});
        if (epilogue_) gather_bias(moves, task);
        apply_epilogue(calls, task, own.size());
      }
    }
    context_.finish_steps(moves, std::move(compute), provenance_);
  }

  // The reduced C blocks of `wave` into the result: without a K split each
  // task's whole block, with one each part's rows (reduce_parts) — from
  // their row-major unpacking (f16), else from C16 (f32: the C block, or
  // slot 0 of the partials).
  void move_out(std::uint32_t wave) {
    const bool unpacked = plan::unpacks_output(plan_);
    const std::uint32_t split = plan_.choice.k_split;
    MoveLowering moves(program_, fmt::format("op {} out", id_.index), provenance_, out_element_);
    Index lead(lead_shape_.size(), 0);
    for (const Task& task : tasks_) {
      if (task.wave != wave) continue;
      const plan::RowRange range = split > 1 ? plan::reduction_rows(task.rows, split, task.part)
                                             : plan::RowRange{0, task.rows};
      if (range.size() == 0) continue;
      std::uint64_t product = task.product;
      for (std::size_t a = lead_shape_.size(); a-- > 0;) {
        lead[a] = product % lead_shape_[a];
        product /= lead_shape_[a];
      }
      Index index = lead;
      index.resize(lead.size() + 2);
      // Where the block's element (r, n) and the ones after it in its row
      // lie: row-major rows when unpacked, else C16 (contiguous for a
      // logical column pair: the panel permutes pairs) — the whole block,
      // or the part's slot of its rows.
      const BufferId source = unpacked ? *rows_ : split > 1 ? partials_ : output_;
      const std::uint64_t c16_rows = split > 1 ? range.size() : plan_.call_rows;
      for (std::uint32_t r = range.begin; r < range.end; ++r) {
        // A run per stretch contiguous in the result's shard and the source.
        for (std::uint32_t n = 0; n < task.columns;) {
          index[lead.size()] = task.row_begin + r;
          index[lead.size() + 1] = task.column_begin + n;
          const auto source_offset = [&](std::uint32_t column) -> std::uint64_t {
            return unpacked ? std::uint64_t{r - range.begin} * task.columns + column
                            : kernels::amp::output_offset(r - range.begin, column, c16_rows);
          };
          const std::uint64_t offset = source_offset(n);
          const Storage::Run to = out_->run(index);
          const std::uint64_t most = std::min<std::uint64_t>(to.elements, task.columns - n);
          std::uint32_t elements = 1;
          while (elements < most && source_offset(n + elements) == offset + elements) ++elements;
          moves.move_run(to.location, Location{task.tile, source, u32(offset * out_element_, "C offset")},
                         elements * out_element_);
          n += elements;
        }
      }
    }
    context_.finish_steps(moves, {}, provenance_);
  }

  LoweringContext& context_;
  const Graph& graph_;
  Program& program_;
  OpId id_;
  const std::string& described_;
  GemmFamily family_ = GemmFamily::kF16;
  kernels::GemmFormat format_{};
  std::uint32_t element_ = 2;      // bytes of an A element (the operand's)
  std::uint32_t out_element_ = 2;  // bytes of a C element (the result's)
  Shape a_shape_, b_shape_;
  std::vector<std::uint32_t> lead_shape_;
  std::uint32_t m_ = 0, k_ = 0, n_ = 0;
  plan::GemmPlan plan_;
  std::uint32_t provenance_ = 0;
  const Storage* out_ = nullptr;
  const Storage* a_ = nullptr;
  const Storage* b_ = nullptr;
  std::vector<Task> tasks_;
  std::map<std::uint32_t, BufferId> left_, weights_;  // by logical K extent
  std::map<HomeKey, Home> homes_;
  BufferId homes_buffer_ = 0;
  std::optional<BufferId> rows_;  // f16 C blocks unpacked row-major (unpack_blocks)
  std::optional<GemmEpilogue> epilogue_;
  const Storage* bias_ = nullptr;       // the epilogue's bias
  std::optional<BufferId> bias_row_;    // each tile's slice of it
  std::uint32_t add_provenance_ = 0, gelu_provenance_ = 0;
  struct WeightKey {
    Index lead;  // b's leading index
    std::uint32_t k0 = 0, column_begin = 0;
    friend auto operator<=>(const WeightKey&, const WeightKey&) = default;
  };
  struct WeightBlock {
    LogicalTile home;
    std::uint32_t slot = 0, extent = 0, columns = 0;
  };
  std::map<WeightKey, WeightBlock> packed_;

  // Weights whose codes the host packed in weight panels
  // (BlockScaleAttributes::panels = m = the family's pass): panel (column
  // group G, inner group P) of the product's matrix is 16·m contiguous codes
  // at [lead…, G, P, 0, 0], and a weight block's B_m×16 order is its column
  // groups one after another, each its K panels in order — so the block is
  // one run of panels per column group (fewer where a shard ends), and since
  // an expansion keeps the order, expanding the codes in place gives the
  // packed f16 block: no rearrange. Each task receives its blocks' codes in
  // its K-block phases (a byte per weight: half an f16 block's words) and
  // expands them itself (lower_block); no home packs anything. Only the
  // block scales the expand calls load come first, one phase per op.
  // Column groups past N and the panels' K padding are the zeros the codes
  // slot is filled with at the op's start and the codes hold. The native
  // FP8 GEMM's B32×16 block is the same runs of 32-deep panels: they land
  // in the task's weight slot and are read as they are (no expand calls),
  // each call's weight scale one of the same scale words.

  // Block (key, inner, columns)'s codes from the weights into B_m×16 order at `to`.
  void gather_panels(MoveLowering& moves, const WeightKey& key, std::uint32_t inner, std::uint32_t columns,
                     const Location& to) const {
    const std::uint32_t m = panels_;
    const std::uint32_t panel = kernels::amp::kPanelColumns * m;  // codes per panel
    const std::uint64_t bytes = std::uint64_t{inner / m} * panel;     // one column group's panels
    const std::uint32_t groups = (columns + kernels::amp::kPanelColumns - 1) / kernels::amp::kPanelColumns;
    Index index = key.lead;
    index.resize(key.lead.size() + 4);
    for (std::uint32_t g = 0; g < groups; ++g) {
      index[key.lead.size()] = key.column_begin / kernels::amp::kPanelColumns + g;
      // A run per stretch inside one shard (small matrices may cut a panel
      // itself over tiles).
      for (std::uint64_t at = 0; at < bytes;) {
        index[key.lead.size() + 1] = key.k0 / m + at / panel;
        index[key.lead.size() + 2] = at % panel / m;
        index[key.lead.size() + 3] = at % m;
        const Storage::Run in = codes_->run(index);
        const std::uint64_t run = std::min<std::uint64_t>(in.elements, bytes - at);
        moves.move_run(Location{to.tile, to.buffer, u32(to.offset + g * bytes + at, "codes offset")}, in.location,
                       u32(run, "codes run"));
        at += run;
      }
    }
  }

  // The expand calls of block (key, inner) from its codes at `codes` into its
  // f16 B16×16 block at `packed`: one per column group of the block (padding
  // groups included: their zero codes expand to zeros under any scale) and
  // 64-deep scale block, each loading its scale from the word `scale_at`
  // names on the tile.
  template <typename ScaleAt>
  void expand_panels(const WeightKey& key, std::uint32_t inner, std::uint32_t columns, BufferId codes,
                     std::uint64_t codes_offset, BufferId packed, std::uint64_t packed_offset,
                     const ScaleAt& scale_at, std::vector<KernelRun>& runs) const {
    const std::uint32_t m = panels_;
    const std::uint32_t panel = kernels::amp::kPanelColumns * m;
    const std::uint32_t inner_panels = inner / m;
    const std::uint32_t groups = plan_.choice.block_columns / kernels::amp::kPanelColumns;
    const std::uint64_t last_n_block = (std::uint64_t{key.column_begin} + columns - 1) / kScaleBlock;
    for (std::uint32_t g = 0; g < groups; ++g) {
      const std::uint64_t n_block =
          std::min<std::uint64_t>((std::uint64_t{key.column_begin} + g * kernels::amp::kPanelColumns) / kScaleBlock,
                                  last_n_block);
      for (std::uint32_t p = 0; p < inner_panels;) {
        const std::uint64_t k = std::uint64_t{key.k0} + std::uint64_t{p} * m;
        const auto end = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(inner_panels, ((k / kScaleBlock + 1) * kScaleBlock - key.k0) / m));
        const std::uint64_t element = (std::uint64_t{g} * inner_panels + p) * panel;
        runs.push_back(KernelRun{
            std::string(kernels::kExpandF143ToF16),
            {{2, packed, u32(packed_offset + element * 2, "expand offset")},
             {3, codes, u32(codes_offset + element, "codes offset")}},
            {{4, u32(std::uint64_t{end - p} * panel, "expand count")}},
            provenance_,
            {{5, scales_buffer_, scale_at(k / kScaleBlock, n_block)}}});
        p = end;
      }
    }
  }

  // Scale block (k_block, n_block) of the product whose weights' leading
  // index is `lead`, as a key of the scale words.
  static Index scale_index(const Index& lead, std::uint64_t k_block, std::uint64_t n_block) {
    Index at = lead;
    at.push_back(k_block);
    at.push_back(n_block);
    return at;
  }

  // Panel codes: every task tile gets a slot the codes land in, zeroed at
  // the op's start (the expanded GEMM's codes slot; the native GEMM's
  // B32×16 slots, one per K extent, which take the codes as they are) and,
  // in one phase, a word for each scale block its blocks meet: the expand
  // calls' scales, or the native calls' weight scales (one per call).
  void prepare_task_codes() {
    std::vector<std::pair<BufferId, std::map<LogicalTile, std::uint32_t>>> slots;
    const auto on_every_tile = [&](BufferId buffer, std::uint32_t bytes) {
      auto& per_tile = slots.emplace_back(buffer, std::map<LogicalTile, std::uint32_t>{}).second;
      for (std::uint32_t t = 0; t < plan_.tiles_used; ++t) per_tile[LogicalTile(static_cast<std::uint16_t>(t))] = bytes;
    };
    if (expanded()) {
      codes_buffer_ = add_buffer("B codes in panels (zero padded)", codes_slot_, false, false);
      on_every_tile(codes_buffer_, codes_slot_);
    } else {
      for (const auto& [extent, buffer] : weights_) {
        on_every_tile(buffer, u32(kernels::gemm_weight_bytes(family_, plan_.call_rows, call_inner(extent),
                                                             plan_.choice.block_columns),
                                  "B block"));
      }
    }
    zero_codes_staging(slots);
    scales_buffer_ = add_buffer_on("B scales", {}, false);
    MoveLowering scale_moves(program_, fmt::format("op {} weight scales", id_.index), provenance_, 4);
    for (const Task& task : tasks_) {
      auto& words = task_scale_words_[task.tile];
      const Index lead = weight_lead(task.product);
      for (std::uint32_t j = 0; j < plan_.inner_blocks; ++j) {
        const std::uint32_t extent = block_extent(task, j);
        if (extent == 0) continue;
        const std::uint64_t k0 = task.k_begin + std::uint64_t{j} * plan_.choice.block_inner;
        // The native GEMM applies one weight scale per call: the plan keeps
        // every call inside one 64 x 64 scale block (plan::evaluate_gemm).
        // The sum with the activation scale depends on the weight scales,
        // bound at run time: the kernel's ABI check refuses an ISCL outside
        // [−32, 31] (kernels::gemm_violation), a fault naming the call.
        if (family_ == GemmFamily::kF143 &&
            (k0 % kScaleBlock + call_inner(extent) > kScaleBlock ||
             task.column_begin % kScaleBlock + plan_.choice.block_columns > kScaleBlock)) {
          throw LoweringError(fmt::format(
              "internal: {}: an F143 GEMM call at K {} and column {} leaves its 64 x 64 scale block",
              described_, k0, task.column_begin));
        }
        const std::uint64_t last_n_block = (std::uint64_t{task.column_begin} + task.columns - 1) / kScaleBlock;
        for (std::uint64_t kb = k0 / kScaleBlock; kb * kScaleBlock < k0 + extent; ++kb) {
          for (std::uint64_t nb = task.column_begin / kScaleBlock; nb <= last_n_block; ++nb) {
            const Index at = scale_index(lead, kb, nb);
            const auto offset = u32(words.size() * std::uint64_t{4}, "scale offset");
            if (words.emplace(at, offset).second) {
              scale_moves.move(Location{task.tile, scales_buffer_, offset}, scales_->location(at));
            }
          }
        }
      }
    }
    for (const auto& [tile, words] : task_scale_words_) {
      program_.buffers[scales_buffer_].bytes[tile] = u32(words.size() * std::uint64_t{4}, "scale words");
    }
    context_.finish_steps(scale_moves, {}, provenance_);
  }

  BufferId packed_buffer_ = 0, staging_buffer_ = 0, codes_buffer_ = 0, scales_buffer_ = 0;
  std::uint32_t packed_slot_ = 0, staging_slot_ = 0, codes_slot_ = 0;
  const Storage* codes_ = nullptr;
  const Storage* scales_ = nullptr;
  BufferId output_ = 0, partials_ = 0;
  // The weights' codes in panels of this many inner values (0: row-major).
  std::uint32_t panels_ = 0;
  // Panel codes: per task tile, the scale word of each scale block its
  // weight blocks meet → its offset in scales_buffer_ (the expand calls'
  // scales, or the native GEMM calls' weight scales).
  std::map<LogicalTile, std::map<Index, std::uint32_t>> task_scale_words_;
  // The native GEMM: the activations' tensor-wide F143 scale, added to each
  // call's weight scale word for its ISCL.
  int activation_scale_ = 0;
};

}  // namespace

// A block_scale has no storage of its own: the matmuls that take its result
// as their weights read its codes and scales (GemmLowering::pack_weights).
// Any other use is refused here, before anything is lowered for it.
void lower_matmul(LoweringContext& context, OpId id, const std::string& described) {
  const Graph& graph = context.graph();
  if (graph.operation(id).kind == OpKind::kBlockScale) {
    const ValueId scaled = graph.operation(id).results[0];
    for (std::uint32_t i = 0; i < graph.operation_count(); ++i) {
      const Operation& user = graph.operation(OpId{i});
      for (std::size_t j = 0; j < user.inputs.size(); ++j) {
        if (user.inputs[j] != scaled) continue;
        if (user.kind == OpKind::kMatmul && j == 1) continue;
        if (user.kind == OpKind::kRepeat) {
          const auto& attributes = std::get<RepeatAttributes>(user.attributes);
          if (j >= attributes.carried && j < attributes.carried + attributes.sequence) continue;
        }
        throw LoweringError(fmt::format(
            "{}: its result {} is input {} of {}: block-scaled values are lowered only as a matmul's "
            "weights (its second input) or a repeat's sequence yet, not as any other operand",
            described, format_value(scaled), j, graph.describe(OpId{i})));
      }
    }
    context.bind_block_scaled(scaled, {&context.storage(graph.operation(id).inputs[0]),
                                       &context.storage(graph.operation(id).inputs[1]),
                                       std::get<BlockScaleAttributes>(graph.operation(id).attributes).panels});
    return;
  }
  GemmLowering(context, id, described).run();
}

}  // namespace tessera::compiler::lower
