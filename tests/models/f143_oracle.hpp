#pragma once
// An F143 encoding written from kernels-siglip-f143.md §3 for the tests to
// check kernels/f143.cpp and its users against: a table of every code's
// value and a search for the nearest — nothing shared with kernels/f143.cpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tessera::models::siglip::testing {

// Code c's magnitude at scale 0, for c in 0x00..0x7F: s|eeee|mmm, bias 8,
// e = 0 subnormal m·2^−10.
inline double code_value(int c) {
  const int e = (c >> 3) & 0xF, m = c & 7;
  return e == 0 ? m * std::ldexp(1.0, -10) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 8);
}

// The nearest code to x at `scale`, by search: ties go to the even code
// (round-half-even of the mantissa, the carry into the next exponent
// included); |x| ≥ 240 saturates; a magnitude that rounds to 0 is +0.
inline std::uint8_t naive_encode(float x, int scale) {
  if (std::isnan(x)) return 0x80;
  const double y = std::fabs(double{x}) / std::ldexp(1.0, scale);
  int best = 0;
  if (y >= 240.0) {
    best = 0x7F;
  } else {
    for (int c = 1; c <= 0x7F; ++c) {
      const double d = std::fabs(code_value(c) - y), d_best = std::fabs(code_value(best) - y);
      if (d < d_best || (d == d_best && c % 2 == 0)) best = c;
    }
  }
  if (best == 0) return 0x00;
  return static_cast<std::uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

inline float naive_decode(std::uint8_t code, int scale) {
  const double v = code_value(code & 0x7F) * std::ldexp(1.0, scale);
  return static_cast<float>((code & 0x80) ? -v : v);
}

// The smallest scale in [−32, 31] with max|x| ≤ 240·2^s; 0 for all zeros.
inline int naive_scale(const std::vector<float>& block) {
  double largest = 0.0;
  for (const float v : block) largest = std::max(largest, std::fabs(double{v}));
  if (largest == 0.0) return 0;
  for (int s = -32; s < 31; ++s) {
    if (largest <= 240.0 * std::ldexp(1.0, s)) return s;
  }
  return 31;
}

}  // namespace tessera::models::siglip::testing
