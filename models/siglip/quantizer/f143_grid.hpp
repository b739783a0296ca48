#pragma once
// A torch linear weight on the F143 grid the compiler uses (review #19): the
// GEMM multiplies by weightᵀ, a [K = in, N = out] matrix, and F143 blocks
// are 64 K × 64 N of it (kernels/f143.hpp's BlockScales). So the block of
// element weight[o][i] is (i / 64, o / 64), and a weight's scales are
// BlockScales over (inner = in, columns = out). Every F143 rule — the scale
// choice, rounding, saturation — is kernels/f143.hpp's; nothing here
// re-derives one.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/f143.hpp"

namespace tessera::models::siglip::quantizer {

// The scales the compiler would choose for a torch [out, in] weight.
kernels::f143::BlockScales weight_block_scales(std::span<const float> weight, std::uint32_t out,
                                               std::uint32_t in);

// weight[o][i] projected onto the grid at its block's scale: decode(encode).
inline float project(float value, const kernels::f143::BlockScales& scales, std::uint32_t o,
                     std::uint32_t i) {
  const int scale = scales.scale_at(i, o);
  return kernels::f143::decode(kernels::f143::encode(value, scale), scale);
}

// The whole weight projected (round to nearest): the "nearest" algorithm.
std::vector<float> project_nearest(std::span<const float> weight,
                                   const kernels::f143::BlockScales& scales);

}  // namespace tessera::models::siglip::quantizer
