// tessera_attention_softmax_f16 (kernels/attention.hpp): the block softmax of
// the prior art's flash attention (§1.4, §2 "Online softmax"), one query row
// at a time, rows strided over the six workers.
//
// For row r of the QK GEMM's C16 scores s (R × C, σ-permuted) and the key
// block's k real key rows:
//   m    = max over n < k of s(r, n)          exact (f16 values); NaN if any is
//   t(n) = f16((s(r, n) − m)·scale)           f32 subtract, f32 multiply, one
//                                             rounding to f16
//   P(n) = exp_f16(t(n)) for n < k, +0 past k  (activation_math.hpp's, to
//                                             nearest; the device gives masked
//                                             columns −65504, whose f16 exp
//                                             is +0: the same)
//   l    = Σ over n < k of P(n)               f32, in key order from n = 0
//   state: max[r] = m·scale (f32), sum[r] = l
// P goes to the block weights in A16 (logical key order, σ undone): the PV
// GEMM's left operand with K = C. The state follows P. Since t(n) ≤ 0 and
// t = 0 at the maximum, 0 ≤ P ≤ 1 and l ≥ 1 for every finite row.
//
// The reference states the shift both as (s − max)·scale and as
// s·scale − max·scale; this is the first [INF]. Which way the device rounds a
// NaN max (f16v2max) is not documented [INF]: a NaN score makes its row NaN.
// Softmax rounds to nearest even whatever the call's mode (the device kernel
// leaves $FP_ICTL alone, §2) [INF]. Any NaN result is canonical.
#include <bit>
#include <cmath>
#include <span>
#include <vector>

#include "kernels/activation_math.hpp"
#include "kernels/amp_layout.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/attention_numerics.hpp"
#include "kernels/f16_vector.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half.hpp"

namespace tessera::kernels {
namespace {

constexpr std::uint32_t kF32QuietNan = 0x7FC00000;

float canonical(float value) { return value != value ? std::bit_cast<float>(kF32QuietNan) : value; }

void softmax(KernelCall& call) {
  const Registers& r = call.registers;
  const std::uint32_t rows = r[kSoftmaxRows], key_rows = r[kSoftmaxKeyRows];
  const std::uint32_t columns = attention_key_columns(key_rows);
  const float scale = std::bit_cast<float>(r[kSoftmaxScale]);
  call.cycles = attention_softmax_cycles(rows, columns);
  if (rows == 0) return;  // zero work touches nothing (review-findings #3)

  const std::uint64_t elements = amp::output_elements(rows, columns);
  const auto scores = call.memory.read<std::uint16_t>(kSoftmaxScores, r[kSoftmaxScores], elements);
  const auto weights = call.memory.write<std::uint16_t>(kSoftmaxOut, r[kSoftmaxOut], elements);
  const auto state = call.memory.write<float>(
      kSoftmaxOut, r[kSoftmaxOut] + attention_block_state_offset(rows, key_rows),
      2 * std::uint64_t{rows});

  const AttentionRounding nearest(call.tile);
  const auto& exp_f16 = exp_f16_nearest_table();
  constexpr unsigned kPanel = amp::kPanelColumns;
  // The scores in f32 (C16 order), then one row at a time in logical key
  // order, its shifted and scaled scores, and their f16 roundings.
  thread_local std::vector<float> widened_buffer, row_buffer, shifted_buffer;
  thread_local std::vector<std::uint16_t> rounded_buffer;
  widened_buffer.resize(elements);
  row_buffer.resize(columns);
  shifted_buffer.resize(key_rows);
  rounded_buffer.resize(key_rows);
  const std::span<float> widened(widened_buffer), row_scores(row_buffer), shifted(shifted_buffer);
  const std::span<std::uint16_t> rounded(rounded_buffer);
  widen_f16(scores.data(), widened.data(), widened.size());
  for (std::uint32_t row = 0; row < rows; ++row) {
    const unsigned worker = row % kWorkerCount;
    for (std::uint32_t group = 0; group < columns / kPanel; ++group) {
      // The panel row starts at physical column 0, which holds logical σ(0).
      const auto panel = widened.subspan(
          amp::output_offset(row, group * kPanel + amp::logical_column(0), rows), kPanel);
      for (unsigned c = 0; c < kPanel; ++c) {
        row_scores[group * kPanel + amp::kLogicalColumnOfPhysical[c]] = panel[c];
      }
    }
    float maximum = -INFINITY;
    bool nan = false;
    for (std::uint32_t n = 0; n < key_rows; ++n) {
      const float s = row_scores[n];
      if (s != s) nan = true;
      if (s > maximum) maximum = s;
    }
    if (nan) maximum = std::bit_cast<float>(kF32QuietNan);
    for (std::uint32_t n = 0; n < key_rows; ++n) shifted[n] = (row_scores[n] - maximum) * scale;
    nearest.to_f16(shifted, rounded, worker);
    // P (the rounded shifts become their f16 exponentials in place), then
    // the sum of P in f32, in key order.
    for (std::uint32_t n = 0; n < key_rows; ++n) rounded[n] = exp_f16[rounded[n]];
    widen_f16(rounded.data(), shifted.data(), key_rows);
    float sum = 0.0F;
    for (std::uint32_t n = 0; n < key_rows; ++n) sum = sum + shifted[n];
    for (std::uint32_t group = 0; group < columns / kPanel; ++group) {
      // Row `row` of P's A16 panel `group`: 16 contiguous logical columns.
      const auto out = weights.subspan(amp::left_offset(row, group * kPanel, rows, kPanel), kPanel);
      for (unsigned c = 0; c < kPanel; ++c) {
        const std::uint32_t n = group * kPanel + c;
        out[c] = n < key_rows ? rounded[n] : std::uint16_t{0};
      }
    }
    state[row] = canonical(maximum * scale);
    state[rows + row] = canonical(sum);
  }
}

}  // namespace

void attention_detail::add_softmax_kernel(KernelRegistry& registry) {
  registry.add(KernelSpec{
      std::string(kAttentionSoftmax),
      KernelKind::kKernel,
      {OperandSpec{kSoftmaxOut, Access::kWrite, "block weights",
                   [](const Registers& r) -> std::uint64_t {
                     if (r[kSoftmaxRows] == 0) return 0;
                     return attention_block_weights_bytes(r[kSoftmaxRows], r[kSoftmaxKeyRows]);
                   }},
       OperandSpec{kSoftmaxScores, Access::kRead, "scores",
                   [](const Registers& r) {
                     return gemm_output_bytes(GemmFamily::kF16, r[kSoftmaxRows],
                                              attention_key_columns(r[kSoftmaxKeyRows]));
                   }}},
      attention_softmax_violation,
      softmax});
}

}  // namespace tessera::kernels
