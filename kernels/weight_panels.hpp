#pragma once
// A whole [K, N] weight matrix in the AMP's weight panels B_m×16
// (kernels/amp_layout.hpp weight_offset with inner = K padded to m): the
// order a host packs F143 weight codes in for block_scale with panels
// (compiler/ir/operation.hpp BlockScaleAttributes), so the compiler moves a
// weight block as a few runs of whole panels and the device never rearranges
// it. The panels are [⌈N/16⌉ column groups][⌈K/m⌉ inner groups][16 load
// channels][m inner values]; padding (k ≥ K or n ≥ N) is `padding`.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/amp_layout.hpp"

namespace tessera::kernels::amp {

// Elements of the panels of a [k, n] matrix at inner panel m.
constexpr std::uint64_t weight_panels_elements(std::uint64_t k, std::uint64_t n, unsigned m) noexcept {
  return padded_columns(n) * padded_inner(k, m);
}

template <typename T>
std::vector<T> to_weight_panels(std::span<const T> matrix, std::uint64_t k, std::uint64_t n, unsigned m,
                                T padding = T{}) {
  std::vector<T> panels(weight_panels_elements(k, n, m), padding);
  const std::uint64_t inner = padded_inner(k, m);
  for (std::uint64_t r = 0; r < k; ++r) {
    for (std::uint64_t c = 0; c < n; ++c) panels[weight_offset(r, c, inner, m)] = matrix[r * n + c];
  }
  return panels;
}

}  // namespace tessera::kernels::amp
