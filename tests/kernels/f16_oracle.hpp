#pragma once
// A brute-force binary16 oracle, written without kernels/half.hpp: decode by
// the format's definition and round a double by searching the sorted table of
// all finite f16 magnitudes for the nearest (ties to the even pattern).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tessera::kernels::testing {

// The value of a non-NaN f16 pattern, from the definition.
inline double f16_value(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  const double sign = (h & 0x8000) != 0 ? -1.0 : 1.0;
  if (exponent == 31) return sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// Rounds a non-NaN double to the nearest f16 pattern, ties to even; beyond
// 65504 the next "value" is 2^16, which is the pattern of +Inf (IEEE overflow).
inline std::uint16_t f16_nearest(double x) {
  static const auto magnitudes = [] {
    std::array<double, 0x7C01> table{};
    for (std::uint32_t h = 0; h < 0x7C00; ++h) table[h] = f16_value(static_cast<std::uint16_t>(h));
    table[0x7C00] = 65536.0;
    return table;
  }();
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= 65536.0) return sign | 0x7C00;
  // The last magnitude ≤ a, and the next one.
  const auto above = std::upper_bound(magnitudes.begin(), magnitudes.end(), a);
  const auto low = static_cast<std::uint16_t>(above - magnitudes.begin() - 1);
  if (magnitudes[low] == a) return sign | low;
  const double below_gap = a - magnitudes[low];
  const double above_gap = magnitudes[low + 1] - a;
  if (below_gap < above_gap) return sign | low;
  if (above_gap < below_gap) return static_cast<std::uint16_t>(sign | (low + 1));
  return static_cast<std::uint16_t>(sign | ((low & 1) == 0 ? low : low + 1));
}

inline bool f16_pattern_is_nan(std::uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

}  // namespace tessera::kernels::testing
