#include "models/siglip/quantizer/f143_grid.hpp"

#include <stdexcept>

#include "models/parallel.hpp"

namespace tessera::models::siglip::quantizer {

namespace f143 = kernels::f143;

f143::BlockScales weight_block_scales(std::span<const float> weight, std::uint32_t out,
                                      std::uint32_t in) {
  if (weight.size() != std::size_t{out} * in) {
    throw std::invalid_argument("weight_block_scales: the weight is not [out, in]");
  }
  // BlockScales reads a row-major [K, N] = weightᵀ.
  std::vector<float> transposed(weight.size());
  for (std::size_t o = 0; o < out; ++o) {
    for (std::size_t i = 0; i < in; ++i) transposed[i * out + o] = weight[o * in + i];
  }
  return f143::BlockScales::choose(transposed, in, out);
}

std::vector<float> project_nearest(std::span<const float> weight, const f143::BlockScales& scales) {
  const std::uint32_t out = scales.columns(), in = scales.inner();
  if (weight.size() != std::size_t{out} * in) {
    throw std::invalid_argument("project_nearest: the weight does not match its block scales");
  }
  std::vector<float> projected(weight.size());
  parallel_for(out, 16, [&](std::size_t begin, std::size_t end) {
    for (auto o = static_cast<std::uint32_t>(begin); o < end; ++o) {
      for (std::uint32_t i = 0; i < in; ++i) {
        const std::size_t at = std::size_t{o} * in + i;
        projected[at] = project(weight[at], scales, o, i);
      }
    }
  });
  return projected;
}

}  // namespace tessera::models::siglip::quantizer
