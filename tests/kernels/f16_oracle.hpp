#pragma once
// A brute-force binary16 oracle, written without kernels/half.hpp: decode by
// the format's definition and round a double by searching the sorted table of
// all finite f16 magnitudes for the nearest (ties to the even pattern).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

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

// The f16 magnitudes 0 … 65504 in pattern order and, past them, 2^16 at the
// place of the Inf pattern 0x7C00.
inline const std::array<double, 0x7C01>& f16_magnitudes() {
  static const auto magnitudes = [] {
    std::array<double, 0x7C01> table{};
    for (std::uint32_t h = 0; h < 0x7C00; ++h) table[h] = f16_value(static_cast<std::uint16_t>(h));
    table[0x7C00] = 65536.0;
    return table;
  }();
  return magnitudes;
}

// Rounds a non-NaN double to the nearest f16 pattern, ties to even; beyond
// 65504 the next "value" is 2^16, which is the pattern of +Inf (IEEE overflow).
inline std::uint16_t f16_nearest(double x) {
  const auto& magnitudes = f16_magnitudes();
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

// The patterns just toward zero and just away from zero from a finite x
// (equal when x is an f16 value; magnitudes from 2^16 are Inf): the two
// results stochastic rounding may give.
inline std::pair<std::uint16_t, std::uint16_t> f16_neighbours(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= 65536.0) return {sign | 0x7C00, sign | 0x7C00};
  const auto& m = f16_magnitudes();
  const auto above = std::upper_bound(m.begin(), m.end(), a);
  const auto low = static_cast<std::uint16_t>(above - m.begin() - 1);
  if (m[low] == a) return {sign | low, sign | low};
  return {sign | low, static_cast<std::uint16_t>(sign | (low + 1))};
}

// How far the mean of N stochastic roundings of a finite x (each one of its
// neighbours: the caller checks) lies from x, in standard deviations of that
// mean: each sample is hi with probability p = (x − lo)/(hi − lo), so the
// mean's deviation is |hi − lo|·√(p(1 − p)/N), Inf counting as ±2^16. An x
// that is an f16 value (p = 0) gives 0 when every sample is x, +Inf else.
inline double f16_mean_error_in_sigmas(double x, const std::vector<std::uint16_t>& samples) {
  const auto [toward, away] = f16_neighbours(x);
  const auto value = [&](std::uint16_t h) {
    return (h & 0x7FFF) == 0x7C00 ? std::copysign(65536.0, x) : f16_value(h);
  };
  const double lo = value(toward), hi = value(away);
  double sum = 0;
  for (const std::uint16_t h : samples) sum += value(h);
  const double error = std::fabs(sum / static_cast<double>(samples.size()) - x);
  if (toward == away) return error == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  const double p = (x - lo) / (hi - lo);
  return error /
         (std::fabs(hi - lo) * std::sqrt(p * (1 - p) / static_cast<double>(samples.size())));
}

inline bool f16_pattern_is_nan(std::uint16_t h) {
  return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
}

}  // namespace tessera::kernels::testing
