#pragma once
// The attention kernels' two numeric primitives, each defined once here:
// e^x in f32 (the softmax's f16v2exp and the merge's rescaling factors) and
// the rounding of an f32 result to f16 (every f16 the attention kernels
// produce goes through AttentionRounding::to_f16).
//
// attention_exp_f32 is built from IEEE f32 +, −, × only (each correctly
// rounded on every IEEE host; the kernels library is compiled with
// -ffp-contract=off, so nothing is fused), in a fixed order, so it gives the
// same bits on every host — host libm's expf does not. Cody–Waite reduction
// x = k·ln2 + r with k = nearest(x·log2 e) and ln2 split into a 24-bit-exact
// head (0x3F317200, nine trailing zero bits: k·head is exact for |k| < 512)
// and a tail; e^r by its Taylor series to r^7 (|r| ≤ 0.35: truncation below
// 0.1 ulp); then ·2^k in at most two steps of which only the last rounds (so
// a subnormal result rounds once). Bound against FP64 e^x: ≤ 2 ulp of the
// f32 result (an ulp of a subnormal result being 2^−149) wherever e^x is
// below FLT_MAX — measured 1.17 ulp over [−104, 89] at 2^−12 steps, 2·10^6
// random points and every non-positive f16
// (tests/kernels/attention_numerics_test.cpp). Exact points: e^0 = e^−0 = 1, so the block with the
// running maximum is rescaled by exactly 1. e^NaN is the canonical quiet NaN, e^+Inf = +Inf, e^x =
// +Inf for x > 89 (past ln FLT_MAX the product overflows), e^−Inf = +0 and e^x = +0 for x < −104
// (below half the smallest f32 subnormal).
//
// The device's f16v2exp and f32 exp accuracy is not documented [INF]: the f16
// exponential of an f16 t is defined here as attention_exp_f32(t) rounded
// once to f16. The kernels/rowwise work defines a GeLU/tanh/exp set of its
// own (kernels/activation_math.hpp on its branch); the two are to be unified
// into one owner when both have landed.
//
// Rounding. Round to nearest, ties to even (half.hpp) is the default and the
// only bit-exact mode. Stochastic rounding — which the device's
// attention_f32_to_f16 sets (§2) — plugs in at AttentionRounding::to_f16,
// which receives the worker that owns the element; until the per-(tile,
// worker) generator (kernels/rounding.hpp) lands, Rounding::kStochastic rounds
// to nearest even as well. The softmax does not set SR on the device (it
// inherits $FP_ICTL, presumably with ESR clear, §2) [INF]: it always rounds to
// nearest even. Any NaN becomes the canonical quiet NaN 0x7E00 (the IPU's NaN
// payloads are unknown [INF], as for the GEMM and the float kernels).

#include <array>
#include <cstdint>
#include <span>

#include "kernels/half.hpp"
#include "kernels/kernel_abi.hpp"

namespace tessera::kernels {

// e^x in f32 (the definition above; kernels/attention_numerics.cpp, built
// with the kernels library's -ffp-contract=off).
float attention_exp_f32(float x) noexcept;

// The softmax's f16 exponential: attention_exp_f32 of the f16 t, rounded
// once to f16 by AttentionRounding under round to nearest even (any NaN →
// 0x7E00). Read from a table of all 65536 inputs built once with exactly
// that computation, so the bits are the same.
std::uint16_t attention_exp_f16(std::uint16_t t) noexcept;
// The table itself, entry t = attention_exp_f16(t), for loops that look up
// many values.
const std::array<std::uint16_t, 65536>& attention_exp_f16_table() noexcept;

// The one f32 → f16 rounding of the attention kernels.
class AttentionRounding {
 public:
  AttentionRounding(Rounding mode, std::uint32_t tile) noexcept : mode_(mode), tile_(tile) {}

  // The f16 that `value` becomes, rounded on behalf of worker `worker`
  // (0..5) of the tile (the stochastic generator's stream).
  std::uint16_t to_f16(float value, unsigned worker) const noexcept {
    (void)worker;
    const std::uint16_t h = f32_to_f16(value);
    return f16_is_nan(h) ? kF16QuietNan : h;
  }

  // values[i] → out[i] for every i (the sizes must match), in order, all on
  // behalf of `worker`: the same bits as to_f16 one value at a time. Under
  // round to nearest even it uses the host's F16C conversion when the host
  // has one (chosen at run time; its result equals half.hpp's for every
  // non-NaN f32, and NaNs are made canonical either way); a stochastic call
  // rounds one value at a time.
  void to_f16(std::span<const float> values, std::span<std::uint16_t> out,
              unsigned worker) const noexcept;

  Rounding mode() const noexcept { return mode_; }
  std::uint32_t tile() const noexcept { return tile_; }

 private:
  Rounding mode_;
  std::uint32_t tile_;
};

}  // namespace tessera::kernels
