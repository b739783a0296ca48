// The online-softmax merge and the f32 → f16 conversion of the attention
// accumulator (kernels/attention.hpp; §1.4, §2 "Online softmax").
//
// The accumulator holds, for each of the task's R rows, O (head_dim f32, the
// rows row-major), then the running maximum m[R] and the running sum l[R]
// (f32: the device keeps the online state in FP32, §2). A merge folds one key
// block in: its values V_b (the PV GEMM's C16 output, columns past head_dim
// ignored) and its state m_b, l_b (the softmax's, behind P in the block
// weights). Per row, in f32:
//   initial  O = V_b;  m = m_b;  l = l_b
//   middle   m' = max(m, m_b);  α = e^(m − m');  β = e^(m_b − m')
//            l = l·α + l_b·β;  O = O·α + V_b·β;  m = m'
//   final    middle, then O = O·(1/l)
//   single   (the task's only block) O = V_b·(1/l_b);  m = m_b;  l = l_b
// with e^x = exp_f32 (kernels/activation_math.hpp), each product and sum
// rounded in that order (never fused). The block holding the running maximum
// is rescaled by e^0 = 1 exactly. max is NaN when either operand is [INF:
// f32max's NaN rule is not documented]; any NaN result (a NaN α or β
// included, whatever exp_f32's payload) is the canonical quiet NaN, made so
// where it is written. Rows are strided over the workers; no f16 rounding
// happens here.
//
// tessera_attention_combine_{middle,final}_f32 fold another part's
// accumulator (a key split: the same rows over other key blocks) into this
// one with the middle/final update above, the part's O, m_p and l_p in
// place of V_b, m_b and l_b — the same f32 operations in the same order.
//
// tessera_attention_f32_to_f16 rounds `count` f32 values to f16 through
// AttentionRounding under the call's mode (the device sets stochastic
// rounding for this kernel, §2), pairs of elements strided over the workers:
// worker w rounds pairs w, w + 6, … in order, low element first, one draw of
// its stream (the tile's, KernelCall::prng) per element when stochastic.
#include <algorithm>
#include <bit>

#include "kernels/activation_math.hpp"
#include "kernels/amp_layout.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/attention_numerics.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half.hpp"

namespace tessera::kernels {
namespace {

constexpr std::uint32_t kF32QuietNan = 0x7FC00000;

float canonical(float value) { return value != value ? std::bit_cast<float>(kF32QuietNan) : value; }

float nan_max(float a, float b) {
  if (a != a || b != b) return std::bit_cast<float>(kF32QuietNan);
  return a >= b ? a : b;
}

constexpr MergeInstructions instructions(AttentionMergeStage stage) {
  switch (stage) {
    case AttentionMergeStage::kInitial:
      return kMergeInitialInstructions;
    case AttentionMergeStage::kMiddle:
      return kMergeMiddleInstructions;
    case AttentionMergeStage::kFinal:
      return kMergeFinalInstructions;
    case AttentionMergeStage::kSingle:
      return kMergeSingleInstructions;
  }
  return {};
}

constexpr bool writes_only(AttentionMergeStage stage) {
  return stage == AttentionMergeStage::kInitial || stage == AttentionMergeStage::kSingle;
}

template <AttentionMergeStage S>
void merge(KernelCall& call) {
  const Registers& r = call.registers;
  const std::uint32_t rows = r[kMergeRows], key_rows = r[kMergeKeyRows],
                      head_dim = r[kMergeHeadDim];
  call.cycles = attention_merge_cycles(rows, head_dim, instructions(S));
  if (rows == 0) return;  // zero work touches nothing (review-findings #3)

  const std::uint32_t padded_head = attention_padded_head_dim(head_dim);
  const auto values = call.memory.read<std::uint16_t>(kMergeValues, r[kMergeValues],
                                                      amp::output_elements(rows, padded_head));
  const auto block = call.memory.read<float>(
      kMergeWeights, r[kMergeWeights] + attention_block_state_offset(rows, key_rows),
      2 * std::uint64_t{rows});
  const AttentionAccumulatorLayout layout = attention_accumulator_layout(rows, head_dim);
  const auto accumulator =
      writes_only(S)
          ? call.memory.write<float>(kMergeAccumulator, r[kMergeAccumulator], layout.elements)
          : call.memory.read_write<float>(kMergeAccumulator, r[kMergeAccumulator], layout.elements);
  const auto output = accumulator.first(layout.maxima);
  const std::size_t maxima = layout.maxima, sums = layout.sums;

  for (std::uint32_t row = 0; row < rows; ++row) {
    const auto o = output.subspan(std::size_t{row} * head_dim, head_dim);
    const auto value = [&](std::uint32_t column) {
      return f16_to_f32(values[amp::output_offset(row, column, rows)]);
    };
    const float block_max = block[row], block_sum = block[rows + row];
    if constexpr (S == AttentionMergeStage::kInitial || S == AttentionMergeStage::kSingle) {
      const float scale = S == AttentionMergeStage::kSingle ? 1.0F / block_sum : 1.0F;
      for (std::uint32_t c = 0; c < head_dim; ++c) {
        o[c] = canonical(S == AttentionMergeStage::kSingle ? value(c) * scale : value(c));
      }
      accumulator[maxima + row] = canonical(block_max);
      accumulator[sums + row] = canonical(block_sum);
    } else {
      const float m = accumulator[maxima + row], l = accumulator[sums + row];
      const float merged = nan_max(m, block_max);
      const float alpha = exp_f32(m - merged);
      const float beta = exp_f32(block_max - merged);
      const float sum = l * alpha + block_sum * beta;
      const float scale = S == AttentionMergeStage::kFinal ? 1.0F / sum : 1.0F;
      for (std::uint32_t c = 0; c < head_dim; ++c) {
        const float updated = o[c] * alpha + value(c) * beta;
        o[c] = canonical(S == AttentionMergeStage::kFinal ? updated * scale : updated);
      }
      accumulator[maxima + row] = canonical(merged);
      accumulator[sums + row] = canonical(sum);
    }
  }
}

template <bool Final>
void combine(KernelCall& call) {
  const Registers& r = call.registers;
  const std::uint32_t rows = r[kCombineRows], head_dim = r[kCombineHeadDim];
  call.cycles = attention_merge_cycles(rows, head_dim,
                                       Final ? kMergeFinalInstructions : kMergeMiddleInstructions);
  if (rows == 0) return;
  const AttentionAccumulatorLayout layout = attention_accumulator_layout(rows, head_dim);
  const auto part = call.memory.read<float>(kCombinePart, r[kCombinePart], layout.elements);
  const auto accumulator =
      call.memory.read_write<float>(kCombineAccumulator, r[kCombineAccumulator], layout.elements);
  const std::size_t maxima = layout.maxima, sums = layout.sums;
  for (std::uint32_t row = 0; row < rows; ++row) {
    const float m = accumulator[maxima + row], l = accumulator[sums + row];
    const float part_max = part[maxima + row], part_sum = part[sums + row];
    const float merged = nan_max(m, part_max);
    const float alpha = exp_f32(m - merged);
    const float beta = exp_f32(part_max - merged);
    const float sum = l * alpha + part_sum * beta;
    const float scale = Final ? 1.0F / sum : 1.0F;
    for (std::uint32_t c = 0; c < head_dim; ++c) {
      const std::size_t at = std::size_t{row} * head_dim + c;
      const float updated = accumulator[at] * alpha + part[at] * beta;
      accumulator[at] = canonical(Final ? updated * scale : updated);
    }
    accumulator[maxima + row] = canonical(merged);
    accumulator[sums + row] = canonical(sum);
  }
}

template <bool Final>
KernelSpec combine_spec(std::string_view name) {
  const auto bytes = [](const Registers& r) -> std::uint64_t {
    if (r[kCombineRows] == 0) return 0;
    return attention_accumulator_bytes(r[kCombineRows], r[kCombineHeadDim]);
  };
  return KernelSpec{std::string(name),
                    KernelKind::kKernel,
                    {OperandSpec{kCombineAccumulator, Access::kReadWrite, "accumulator", bytes},
                     OperandSpec{kCombinePart, Access::kRead, "part", bytes}},
                    attention_combine_violation,
                    [](KernelCall& call) { combine<Final>(call); }};
}

void convert_to_f16(KernelCall& call) {
  const Registers& r = call.registers;
  const std::uint32_t count = r[kConvertCount];
  call.cycles = attention_f32_to_f16_cycles(count);
  if (count == 0) return;
  const auto in = call.memory.read<float>(kConvertIn, r[kConvertIn], count);
  const auto out = call.memory.write<std::uint16_t>(kConvertOut, r[kConvertOut], count);
  const AttentionRounding rounding(call);
  if (rounding.mode() == Rounding::kNearestEven) {
    // No draws: which worker rounds an element does not change its bits.
    rounding.to_f16(in.std_span(), out.std_span(), 0);
    return;
  }
  // Each worker's pairs in order, low element first: its stream's draw order.
  const std::uint32_t pairs = (count + 1) / 2;
  for (unsigned worker = 0; worker < kWorkerCount; ++worker) {
    for (std::uint32_t pair = worker; pair < pairs; pair += kWorkerCount) {
      const std::uint32_t end = std::min(2 * pair + 2, count);
      for (std::uint32_t i = 2 * pair; i < end; ++i) out[i] = rounding.to_f16(in[i], worker);
    }
  }
}

template <AttentionMergeStage S>
KernelSpec merge_spec(std::string_view name) {
  return KernelSpec{
      std::string(name),
      KernelKind::kKernel,
      {OperandSpec{kMergeAccumulator, writes_only(S) ? Access::kWrite : Access::kReadWrite,
                   "accumulator",
                   [](const Registers& r) {
                     return attention_accumulator_bytes(r[kMergeRows], r[kMergeHeadDim]);
                   }},
       OperandSpec{kMergeValues, Access::kRead, "block values",
                   [](const Registers& r) {
                     return gemm_output_bytes(GemmFamily::kF16, r[kMergeRows],
                                              attention_padded_head_dim(r[kMergeHeadDim]));
                   }},
       OperandSpec{kMergeWeights, Access::kRead, "block weights",
                   [](const Registers& r) -> std::uint64_t {
                     if (r[kMergeRows] == 0) return 0;
                     return attention_block_weights_bytes(r[kMergeRows], r[kMergeKeyRows]);
                   }}},
      attention_merge_violation,
      [](KernelCall& call) { merge<S>(call); }};
}

}  // namespace

void attention_detail::add_merge_kernels(KernelRegistry& registry) {
  registry.add(merge_spec<AttentionMergeStage::kInitial>(kAttentionMergeInitial));
  registry.add(merge_spec<AttentionMergeStage::kMiddle>(kAttentionMergeMiddle));
  registry.add(merge_spec<AttentionMergeStage::kFinal>(kAttentionMergeFinal));
  registry.add(merge_spec<AttentionMergeStage::kSingle>(kAttentionMergeSingle));
  registry.add(combine_spec<false>(kAttentionCombineMiddle));
  registry.add(combine_spec<true>(kAttentionCombineFinal));
  registry.add(KernelSpec{
      std::string(kAttentionF32ToF16),
      KernelKind::kKernel,
      {OperandSpec{kConvertOut, Access::kWrite, "output",
                   [](const Registers& r) { return std::uint64_t{r[kConvertCount]} * 2; }},
       OperandSpec{kConvertIn, Access::kRead, "input",
                   [](const Registers& r) { return std::uint64_t{r[kConvertCount]} * 4; }}},
      attention_convert_violation,
      convert_to_f16});
}

}  // namespace tessera::kernels
