#pragma once
// The device sources' elementary functions in f32: e^x, tanh, 1/√x. The
// models define theirs in kernels/activation_math.hpp (a Taylor e^r); these
// are written independently — e^x in the rational form of the classic
// fdlibm/FreeBSD expf (e^r = 1 + r + r·c/(2 − c), c = r − r²·(P1 + r²·P2)),
// tanh from sinh's series and e^x — and are held to the bound docs/GRAPH_FORMAT.md assumes of
// every device elementary function: within 2 ulp (tests/kernels/
// device_kernels_test.cpp checks them against FP64 and each kernel against
// its model within the documented bound).
//
// Built from f32 +, −, ×, ÷ and √ only, never contracted, so the portable
// build gives the same bits on every host. The f16 kernels' fast paths use
// the IPU's f16v2exp / f16v2tanh instead (ipu_f16_functions.hpp, which says
// why); the f32 kernels call these on silicon too, since no f32 instruction
// is documented to meet their 2-ulp semantics [INF].

#include <cmath>
#include <cstdint>

#include "kernels/device/device_float.hpp"

namespace tessera::device {

// 2^k for k in f32's normal exponents [−126, 127].
inline float exact_power_of_two(int k) {
  return f32_from_bits(static_cast<std::uint32_t>(k + 127) << 23);
}

inline float exp_f32(float x) {
  if (x != x) return x;
  if (x > 88.7228394f) return f32_from_bits(0x7F800000u);  // past ln FLT_MAX
  if (x < -103.972084f) return 0.0f;                       // below half the least subnormal
  constexpr float kInvLn2 = 1.4426950216e+00f;
  constexpr float kLn2Hi = 6.9314575195e-01f;  // 0x3F317200: k·hi is exact for |k| < 2^8
  constexpr float kLn2Lo = 1.4286067653e-06f;  // 0x35BFBE8E
  constexpr float kP1 = 1.6666625440e-01f;
  constexpr float kP2 = -2.7667332906e-03f;
  // k = nearest integer to x/ln2 (|x/ln2| < 2^8, so the float → int is exact).
  const float t = x * kInvLn2;
  const int k = static_cast<int>(t < 0.0f ? t - 0.5f : t + 0.5f);
  const float kf = static_cast<float>(k);
  const float hi = x - kf * kLn2Hi;
  const float lo = kf * kLn2Lo;
  const float r = hi - lo;
  const float r2 = r * r;
  const float c = r - r2 * (kP1 + r2 * kP2);
  const float y = 1.0f - ((lo - (r * c) / (2.0f - c)) - hi);  // e^r, in [0.7, 1.5]
  // y·2^k in at most two exact steps and one rounding (subnormal results).
  if (k > 127) return y * exact_power_of_two(127) * exact_power_of_two(k - 127);
  if (k < -125) return y * exact_power_of_two(k + 100) * exact_power_of_two(-100);
  return y * exact_power_of_two(k);
}

// sinh(h) for 0 ≤ h ≤ 0.625 by its odd series (eight terms reach 2^−27).
inline float sinh_small(float h) {
  const float h2 = h * h;
  float s = 1.0f / 1307674368000.0f;  // 1/15!
  s = s * h2 + 1.0f / 6227020800.0f;  // 1/13!
  s = s * h2 + 1.0f / 39916800.0f;    // 1/11!
  s = s * h2 + 1.0f / 362880.0f;      // 1/9!
  s = s * h2 + 1.0f / 5040.0f;
  s = s * h2 + 1.0f / 120.0f;
  s = s * h2 + 1.0f / 6.0f;
  return s * h2 * h + h;
}

// cosh(h) for 0 ≤ h ≤ 0.625 by its even series (to h^14).
inline float cosh_small(float h) {
  const float h2 = h * h;
  float c = 1.0f / 87178291200.0f;   // 1/14!
  c = c * h2 + 1.0f / 479001600.0f;  // 1/12!
  c = c * h2 + 1.0f / 3628800.0f;    // 1/10!
  c = c * h2 + 1.0f / 40320.0f;
  c = c * h2 + 1.0f / 720.0f;
  c = c * h2 + 1.0f / 24.0f;
  c = c * h2 + 0.5f;
  return c * h2 + 1.0f;
}

// Odd (tanh(−0) = −0). Near 0, sinh/cosh by their series (no
// cancellation); above, 1 − 2/(e^(2a) + 1).
inline float tanh_f32(float x) {
  if (x != x) return x;
  const float a = f32_from_bits(f32_bits(x) & 0x7FFFFFFFu);
  float t;
  if (a < 0.625f) {
    const float s = sinh_small(a);
    t = s / cosh_small(a);
  } else if (a > 9.1f) {
    t = 1.0f;  // 1 − 2/(e^(2a) + 1) is within half an ulp of 1
  } else {
    t = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
  }
  return (f32_bits(x) & 0x80000000u) != 0 ? -t : t;
}

// 1/√x, an f32 square root and division (each correctly rounded).
inline float rsqrt_f32(float x) { return 1.0f / std::sqrt(x); }

}  // namespace tessera::device
