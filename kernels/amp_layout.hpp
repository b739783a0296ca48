#pragma once
// The AMP data layouts (kernels-siglip-f143.md §0.1, ARCHITECTURE.md decision
// 12): the one definition of where element (row, column) of a block lives in
// the left (A), weight (B) and output (C) layouts of the IPU21's matrix unit,
// and of the column-pair permutation that ties B and C together. Every host
// model, packer, unpacker, footprint and CPU reference asks here
// (review-findings.md #16: the prior art wrote the permutation twice).
//
// The permutation. Inside a 16-column panel, AMP load channel c computes the
// dot product with physical output column c; the weight packing routes
// logical column σ(c) to channel c, where σ(c) = 2·L(c / 2) + c % 2 and L is
// the column-pair order [0, 4, 1, 5, 2, 6, 3, 7] (L(p) = 4·(p % 2) + p / 2).
// B and C share σ, so the logical product is A·B.
//
// The layouts, for a block of R rows:
// - A_m (left operand; m = 8 for f32, 16 for f16, 32 for F143): K is cut
//   into m-wide panels, each stored row-major: (r, k) at (k/m)·R·m + r·m + k%m.
//   A16 is also the activation layout between operators ("row shard").
// - B_m×16 (weights, K × N): 512-byte panels of m inner values × 16 columns,
//   column-group-major then inner-group-minor (the order $CCCSLOAD streams
//   them); inside a panel, channel c holds the m inner values of logical
//   column σ(c): (k, n) at ((n/16)·(K/m) + k/m)·16·m + c·m + k%m with
//   σ(c) = n % 16.
// - C16 (output, f32 or f16): (r, n) at (n/16)·R·16 + r·16 + c, σ(c) = n % 16.
//
// Offsets are in elements; K and N are padded to whole panels by the caller
// (padded extents: padded_inner, padded_columns), and padding must hold finite
// values (the AMP multiplies padding too, and NaN·0 is NaN: reference H8).

#include <array>
#include <cstdint>

namespace tessera::kernels::amp {

inline constexpr unsigned kPanelColumns = 16;   // columns of a B or C panel
inline constexpr unsigned kPanelBytes = 512;    // bytes of one B panel, at every precision

// L: the logical column pair that physical pair p holds, and its inverse.
constexpr unsigned logical_pair(unsigned physical_pair) noexcept {
  return 4 * (physical_pair % 2) + physical_pair / 2;
}
constexpr unsigned physical_pair(unsigned logical_pair) noexcept {
  return 2 * (logical_pair % 4) + logical_pair / 4;
}

// σ: the logical column (0..15) that physical column (load channel) c holds
// inside a panel, and its inverse.
constexpr unsigned logical_column(unsigned physical_column) noexcept {
  return 2 * logical_pair(physical_column / 2) + physical_column % 2;
}
constexpr unsigned physical_column(unsigned logical_column) noexcept {
  return 2 * physical_pair(logical_column / 2) + logical_column % 2;
}

// The whole table, for code that permutes a panel at a time.
inline constexpr std::array<std::uint8_t, kPanelColumns> kLogicalColumnOfPhysical = [] {
  std::array<std::uint8_t, kPanelColumns> table{};
  for (unsigned c = 0; c < kPanelColumns; ++c) table[c] = static_cast<std::uint8_t>(logical_column(c));
  return table;
}();
inline constexpr std::array<std::uint8_t, kPanelColumns> kPhysicalColumnOfLogical = [] {
  std::array<std::uint8_t, kPanelColumns> table{};
  for (unsigned n = 0; n < kPanelColumns; ++n) table[n] = static_cast<std::uint8_t>(physical_column(n));
  return table;
}();

// Inner (K) panel width of the A and B layouts for an element size in bytes:
// 8 for f32, 16 for f16, 32 for F143.
constexpr unsigned inner_panel(unsigned element_bytes) noexcept { return 32 / element_bytes; }

constexpr std::uint64_t round_up(std::uint64_t value, std::uint64_t unit) noexcept {
  return (value + unit - 1) / unit * unit;
}
// K padded to whole m-wide panels; N padded to whole 16-column panels.
constexpr std::uint64_t padded_inner(std::uint64_t k, unsigned m) noexcept { return round_up(k, m); }
constexpr std::uint64_t padded_columns(std::uint64_t n) noexcept { return round_up(n, kPanelColumns); }

// Element offset of (r, k) in an A_m block of `rows` rows.
constexpr std::uint64_t left_offset(std::uint64_t r, std::uint64_t k, std::uint64_t rows,
                                    unsigned m) noexcept {
  return (k / m) * rows * m + r * m + k % m;
}

// Element offset of (k, n) in a B_m×16 block whose padded inner extent is
// `inner` (a multiple of m).
constexpr std::uint64_t weight_offset(std::uint64_t k, std::uint64_t n, std::uint64_t inner,
                                      unsigned m) noexcept {
  const std::uint64_t panel = (n / kPanelColumns) * (inner / m) + k / m;
  return panel * kPanelColumns * m + physical_column(static_cast<unsigned>(n % kPanelColumns)) * m +
         k % m;
}

// Element offset of row r of column panel `panel` in a C16 block of `rows`
// rows: a panel's rows lie contiguous, 16 elements each, so rows [r0, r1)
// of one panel are one range.
constexpr std::uint64_t output_panel_offset(std::uint64_t r, std::uint64_t panel, std::uint64_t rows) noexcept {
  return panel * rows * kPanelColumns + r * kPanelColumns;
}

// Element offset of (r, n) in a C16 block of `rows` rows.
constexpr std::uint64_t output_offset(std::uint64_t r, std::uint64_t n, std::uint64_t rows) noexcept {
  return output_panel_offset(r, n / kPanelColumns, rows) + physical_column(static_cast<unsigned>(n % kPanelColumns));
}

// Elements of each layout's block (its footprint before any access tail).
constexpr std::uint64_t left_elements(std::uint64_t rows, std::uint64_t inner) noexcept {
  return rows * inner;
}
constexpr std::uint64_t weight_elements(std::uint64_t inner, std::uint64_t columns) noexcept {
  return inner * columns;
}
constexpr std::uint64_t output_elements(std::uint64_t rows, std::uint64_t columns) noexcept {
  return rows * columns;
}

}  // namespace tessera::kernels::amp
