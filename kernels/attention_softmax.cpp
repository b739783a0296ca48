// tessera_attention_softmax_f16 (kernels/attention.hpp): the block softmax of
// the prior art's flash attention (§1.4, §2 "Online softmax"), one query row
// at a time, rows strided over the six workers.
//
// For row r of the QK GEMM's C16 scores s (R × C, σ-permuted) and the key
// block's k real key rows:
//   m    = max over n < k of s(r, n)          exact (f16 values); NaN if any is
//   t(n) = f16((s(r, n) − m)·scale)           f32 subtract, f32 multiply, one
//                                             rounding to f16
//   P(n) = exp_f16(t(n)) for n < k, +0 past k  (attention_exp_f16; the device
//                                             gives masked columns −65504,
//                                             whose f16 exp is +0: the same)
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

#include "kernels/amp_layout.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/attention_numerics.hpp"
#include "kernels/gemm.hpp"

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

  const AttentionRounding nearest(Rounding::kNearestEven, call.tile);
  for (std::uint32_t row = 0; row < rows; ++row) {
    const unsigned worker = row % kWorkerCount;
    const auto score = [&](std::uint32_t n) {
      return f16_to_f32(scores[amp::output_offset(row, n, rows)]);
    };
    float maximum = -INFINITY;
    bool nan = false;
    for (std::uint32_t n = 0; n < key_rows; ++n) {
      const float s = score(n);
      if (s != s) nan = true;
      if (s > maximum) maximum = s;
    }
    if (nan) maximum = std::bit_cast<float>(kF32QuietNan);
    float sum = 0.0F;
    for (std::uint32_t n = 0; n < columns; ++n) {
      std::uint16_t p = 0;
      if (n < key_rows) {
        const std::uint16_t t = nearest.to_f16((score(n) - maximum) * scale, worker);
        p = attention_exp_f16(t);
        sum = sum + f16_to_f32(p);
      }
      weights[amp::left_offset(row, n, rows, amp::kPanelColumns)] = p;
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
