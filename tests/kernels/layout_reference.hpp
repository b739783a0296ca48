#pragma once
// The AMP layouts and f16 arithmetic as a CPU reference, written from the
// reference's text (kernels-siglip-f143.md §0.1) without kernels/amp_layout.hpp
// or the models' helpers, so that a test comparing a model against these
// compares two independent derivations.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "tests/kernels/f16_oracle.hpp"

namespace tessera::kernels::testing::reference {

// §0.1: L = [0,4,1,5,2,6,3,7], σ(c) = 2·L(c/2) + c%2: the logical column that
// physical column c of a panel holds.
inline constexpr unsigned kLogicalOfPhysical[16] = {0, 1, 8,  9,  2, 3, 10, 11,
                                                    4, 5, 12, 13, 6, 7, 14, 15};

inline unsigned physical_of(unsigned logical) {
  for (unsigned c = 0; c < 16; ++c) {
    if (kLogicalOfPhysical[c] == logical) return c;
  }
  return 99;
}

inline std::size_t round_up(std::size_t n, std::size_t unit) {
  return (n + unit - 1) / unit * unit;
}

// A_m: (r, k) at (k/m)·R·m + r·m + k%m.
inline std::size_t left_index(std::size_t r, std::size_t k, std::size_t rows, std::size_t m = 16) {
  return (k / m) * rows * m + r * m + k % m;
}
// C16: (r, n) at (n/16)·R·16 + r·16 + c with σ(c) = n%16.
inline std::size_t output_index(std::size_t r, std::size_t n, std::size_t rows) {
  return (n / 16) * rows * 16 + r * 16 + physical_of(static_cast<unsigned>(n % 16));
}
// B16×16 of padded inner extent K: 256-element panels, column group major,
// inner group minor; channel c holds the 16 inner values of column σ(c).
inline std::size_t weight_index(std::size_t k, std::size_t n, std::size_t inner) {
  return ((n / 16) * (inner / 16) + k / 16) * 256 +
         physical_of(static_cast<unsigned>(n % 16)) * 16 + k % 16;
}

// f16 arithmetic: the exact result in double (every sum and product of two
// f16 values is exact there), rounded to nearest even by the brute-force
// oracle; any NaN result is the canonical 0x7E00.
inline std::uint16_t f16_round(double exact) {
  return std::isnan(exact) ? std::uint16_t{0x7E00} : f16_nearest(exact);
}
inline double f16(std::uint16_t h) {
  return f16_pattern_is_nan(h) ? std::numeric_limits<double>::quiet_NaN() : f16_value(h);
}
inline std::uint16_t f16_add(std::uint16_t a, std::uint16_t b) {
  return f16_round(f16(a) + f16(b));
}
inline std::uint16_t f16_sub(std::uint16_t a, std::uint16_t b) {
  return f16_round(f16(a) - f16(b));
}
inline std::uint16_t f16_mul(std::uint16_t a, std::uint16_t b) {
  return f16_round(f16(a) * f16(b));
}

}  // namespace tessera::kernels::testing::reference
