#pragma once
// One linear's weight onto the F143 grid, at the block scales the compiler
// will use (chosen from the weight before quantizing, f143_grid.hpp):
//
//   nearest  every weight rounded to its nearest grid value.
//   gptq     block-diagonal GPTQ (Frantar et al. 2022), as the prior art's
//            tools/quantize_siglip_f143.py does it: within each 64-wide
//            slice of input columns, with that slice's H = Σ x xᵀ from
//            calibration inputs, damped by max(ε, damp · mean diag H) on the
//            diagonal; U the upper Cholesky factor of H⁻¹; columns quantized
//            in order, each one's error (w − q) / U_ii pushed into the
//            slice's later columns through U's row. When a factorization
//            fails the slice falls back to rsqrt of H's diagonal (no error
//            feedback: nearest) and the fallback is counted.
//
// Both report the calibration error proxy GPTQ minimises, Σ_slices eᵀ H e
// over every output row (e = w − ŵ), divided by the number of tokens; the
// factorizations and updates are in double, the values quantized in f32,
// and every F143 rule is kernels/f143.hpp's.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/f143.hpp"
#include "models/siglip/quantizer/statistics.hpp"

namespace tessera::models::siglip::quantizer {

enum class Algorithm : std::uint8_t { kNearest, kGptq };

std::string_view algorithm_name(Algorithm algorithm) noexcept;

// The prior art's default damping.
inline constexpr double kDefaultDamp = 0.01;

struct QuantizedLinear {
  kernels::f143::BlockScales scales;
  std::vector<float> weight;  // [out, in], every value on the grid at its block's scale
  // The error proxy of nearest and of the result (equal for nearest); 0
  // without statistics.
  double error_nearest = 0.0;
  double error = 0.0;
  std::uint32_t cholesky_fallbacks = 0;
};

// `statistics` may be null for nearest (no error is then reported); GPTQ
// needs it (UsageError otherwise).
QuantizedLinear quantize_linear(std::span<const float> weight, std::uint32_t out,
                                std::uint32_t in, Algorithm algorithm,
                                const InputStatistics* statistics, double damp = kDefaultDamp);

// Σ_slices eᵀ H e / tokens for e = weight − quantized, over every row.
double reconstruction_error(std::span<const float> weight, std::span<const float> quantized,
                            std::uint32_t out, const InputStatistics& statistics);

// U, upper triangular with H⁻¹ = Uᵀ U, of H (n × n, row-major) damped; false
// when H + damping is not positive definite in double.
bool inverse_upper_cholesky(std::span<const double> h, std::uint32_t n, double damp,
                            std::vector<double>& u);

}  // namespace tessera::models::siglip::quantizer
