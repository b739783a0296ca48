#pragma once
// The one definition of each transcendental function the kernels use — exp,
// tanh and the tanh-approximated GeLU, in f32 and f16 — so that every kernel
// (the GeLUs, the attention softmax and merge) and every host gives the same
// bits.
//
// Host libm functions are not used: their results differ between libraries
// and versions. These are built from IEEE f32 +, −, ×, ÷ only (each correctly
// rounded on every IEEE host, never contracted into a fused multiply-add:
// kernels/f16_vector.hpp), in a fixed order, so they are deterministic.
//
// - exp_f32: the one e^x of every kernel (GeLU's tanh, the attention
//   softmax's f16 exponential and the online-softmax merge's rescaling
//   factors). Cody–Waite reduction x = k·ln2 + r, |r| ≤ ln2/2 (ln2 split in a
//   15-bit head, so k·head is exact, and a tail), e^r by its Taylor series to
//   r^7 (truncation < 0.15 ulp), scaled by 2^k in at most two exact steps and
//   one final rounding (so subnormal results round once). Against FP64:
//   ≤ 2 ulp of the f32 result wherever e^x is below FLT_MAX, an ulp of a
//   subnormal result being 2^−149 (measured 1.17 ulp over [−104, 89] at
//   2^−12 steps, 10^6 random points, small magnitudes down to the subnormals
//   and every non-positive f16; tests/kernels/activation_math_test.cpp).
//   Exact points: e^0 = e^−0 = 1 (so the merge rescales the block holding the
//   running maximum by exactly 1). e^x = +Inf past ln FLT_MAX ≈ 88.72 (and
//   for +Inf), +0 below −104 (less than half the smallest subnormal; and for
//   −Inf). exp(NaN) is a NaN (its payload is not specified): the kernels that
//   publish a result make any NaN canonical where they write it.
// - tanh_f32: odd; for |x| < 0.625, m/(m + 2) with m = expm1(2|x|) by its
//   Taylor series to degree 12 (no cancellation near 0); above, 1 − 2/(e + 1)
//   with e = exp_f32(2|x|) (exactly 1 once e overflows or 2/(e + 1) is below
//   half an ulp). ≤ 3 ulp against FP64 (measured 2.48).
// - gelu_f32(x) = (0.5·x)·(1 + tanh_f32(c0·(x + c1·((x·x)·x)))) evaluated in
//   that order in f32, with the reference's f32 constants c0 = 0x3F4C422A
//   (0.7978846) and c1 = 0x3D372713 (0.044715) (kernels-siglip-f143.md §2;
//   HF SigLIP's gelu_pytorch_tanh). Against the same formula in FP64 with the
//   same constants: |error| ≤ 2^−22·|x| + 2^−149 (measured 0.46·2^−22·|x|).
//   gelu(−Inf) is NaN (−Inf·0), as the formula gives; gelu(+Inf) = +Inf.
// - The f16 forms follow the device, which evaluates every GeLU step in f16
//   with f16v2tanh (§2): each step below is one f16 operation, rounded under
//   the call's mode (kernels/rounding.hpp), nine roundings in all:
//     x2 = x·x, x3 = x2·x, a = c1·x3, u = x + a, v = c0·u,
//     t = tanh(v), s = 1 + t, h = 0.5·x, y = h·s
//   with the reference's f16 constants c0 = 0x3A62, c1 = 0x29B9. The step
//   order and f16v2tanh's accuracy are not documented [INF]: tanh and exp of
//   an f16 are defined as tanh_f32 / exp_f32 of its value, rounded once to
//   f16. Under round to nearest, for every finite f16 x, |gelu_f16(x) −
//   gelu(x)| ≤ 2^−10·|x| + 2^−24 against the FP64 formula with the f16
//   constants (measured over all 65536 inputs: 0.82·2^−10·|x| for normal x,
//   0.53·2^−24 for subnormal x). Large |x| overflows x³ to ±Inf, which the
//   formula absorbs: gelu_f16(x) = x for x ≥ 40.3 and −0 for x ≤ −40.3.

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/rounding.hpp"

namespace tessera::kernels {

namespace activation_detail {

inline float power_of_two(int k) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
}

// expm1(y) for 0 ≤ y ≤ 1.25: y·(1 + y/2·(1 + y/3·(…))) written as the
// Horner form of Σ y^n / n!, n = 1..12.
inline float expm1_small(float y) noexcept {
  constexpr float c[] = {1.0F / 479001600.0F,
                         1.0F / 39916800.0F,
                         1.0F / 3628800.0F,
                         1.0F / 362880.0F,
                         1.0F / 40320.0F,
                         1.0F / 5040.0F,
                         1.0F / 720.0F,
                         1.0F / 120.0F,
                         1.0F / 24.0F,
                         1.0F / 6.0F,
                         0.5F,
                         1.0F};
  float p = c[0];
  for (std::size_t i = 1; i < std::size(c); ++i) p = p * y + c[i];
  return p * y;
}

}  // namespace activation_detail

inline float exp_f32(float x) noexcept {
  using namespace activation_detail;
  if (x != x) return x;
  // Past these e^x is +Inf or +0 anyway; clamping keeps k in [−150, 129].
  x = x > 89.0F ? 89.0F : (x < -104.0F ? -104.0F : x);
  constexpr float kLog2e = 1.44269502162933349609375F;           // 0x3FB8AA3B
  constexpr float kLn2Head = 0.693145751953125F;                 // 0x3F317200, 15 bits
  constexpr float kLn2Tail = 1.428606765330187045037746429e-6F;  // 0x35BFBE8E
  const float kf = std::floor(x * kLog2e + 0.5F);
  const float r = (x - kf * kLn2Head) - kf * kLn2Tail;
  float p = 1.0F / 5040.0F;
  p = p * r + 1.0F / 720.0F;
  p = p * r + 1.0F / 120.0F;
  p = p * r + 1.0F / 24.0F;
  p = p * r + 1.0F / 6.0F;
  p = p * r + 0.5F;
  p = p * r + 1.0F;
  p = p * r + 1.0F;
  const int k = static_cast<int>(kf);
  if (k > 127) return p * power_of_two(127) * power_of_two(k - 127);
  if (k < -126) return p * power_of_two(k + 64) * power_of_two(-64);
  return p * power_of_two(k);
}

inline float tanh_f32(float x) noexcept {
  using namespace activation_detail;
  if (x != x) return x;
  const float a = std::fabs(x);
  float t = 0.0F;
  if (a < 0.625F) {
    const float m = expm1_small(2.0F * a);
    t = m / (m + 2.0F);
  } else {
    t = 1.0F - 2.0F / (exp_f32(2.0F * a) + 1.0F);
  }
  return std::copysign(t, x);
}

inline constexpr std::uint32_t kGeluF32C0 = 0x3F4C422A;  // 0.7978846 ≈ √(2/π)
inline constexpr std::uint32_t kGeluF32C1 = 0x3D372713;  // 0.044715
inline constexpr std::uint16_t kGeluF16C0 = 0x3A62;
inline constexpr std::uint16_t kGeluF16C1 = 0x29B9;

inline float gelu_f32(float x) noexcept {
  const float c0 = std::bit_cast<float>(kGeluF32C0);
  const float c1 = std::bit_cast<float>(kGeluF32C1);
  const float x3 = (x * x) * x;
  const float t = tanh_f32(c0 * (x + c1 * x3));
  return (0.5F * x) * (1.0F + t);
}

// out[i] = gelu_f32(in[i]), any NaN as the canonical 0x7FC00000: eight lanes
// at a time with AVX2 when the host has it (the same operations in the same
// order, so the same bits), gelu_f32 otherwise.
void gelu_f32_many(const float* in, float* out, std::size_t count) noexcept;
namespace activation_detail {
void gelu_f32_many_scalar(const float* in, float* out, std::size_t count) noexcept;
void gelu_f32_many_avx2(const float* in, float* out,
                        std::size_t count) noexcept;  // AVX2 hosts only
}  // namespace activation_detail

// f16 forms; one rounding (one draw when stochastic) per step.
std::uint16_t exp_f16(std::uint16_t x, F16Rounding& rounding) noexcept;
std::uint16_t tanh_f16(std::uint16_t x, F16Rounding& rounding) noexcept;
std::uint16_t gelu_f16(std::uint16_t x, F16Rounding& rounding) noexcept;
inline constexpr unsigned kGeluF16RoundingSteps = 9;

// gelu_f16 under round to nearest for every input pattern (built once, on
// first use; thread-safe): what the GeLU kernels look up.
const std::array<std::uint16_t, 65536>& gelu_f16_nearest_table();
// exp_f16 under round to nearest for every input pattern (any NaN → 0x7E00;
// built once, on first use; thread-safe): the attention softmax's f16
// exponential (kernels/attention_softmax.cpp), which the device computes with
// f16v2exp and never rounds stochastically.
const std::array<std::uint16_t, 65536>& exp_f16_nearest_table();

}  // namespace tessera::kernels
