#include "models/siglip/quantizer/gptq.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/parallel.hpp"
#include "models/siglip/quantizer/f143_grid.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip::quantizer {
namespace {

// The damping floor when H's diagonal is (near) zero: a slice no calibration
// input ever reached.
constexpr double kDampFloor = 1e-8;

// L, lower triangular with a = L Lᵀ, in place; false unless a is positive
// definite.
bool cholesky_lower(std::vector<double>& a, std::uint32_t n) {
  for (std::uint32_t j = 0; j < n; ++j) {
    double diagonal = a[std::size_t{j} * n + j];
    for (std::uint32_t k = 0; k < j; ++k) diagonal -= a[std::size_t{j} * n + k] * a[std::size_t{j} * n + k];
    if (!(diagonal > 0.0) || !std::isfinite(diagonal)) return false;
    const double root = std::sqrt(diagonal);
    a[std::size_t{j} * n + j] = root;
    for (std::uint32_t i = j + 1; i < n; ++i) {
      double value = a[std::size_t{i} * n + j];
      for (std::uint32_t k = 0; k < j; ++k) value -= a[std::size_t{i} * n + k] * a[std::size_t{j} * n + k];
      a[std::size_t{i} * n + j] = value / root;
    }
    for (std::uint32_t i = 0; i < j; ++i) a[std::size_t{i} * n + j] = 0.0;
  }
  return true;
}

}  // namespace

std::string_view algorithm_name(Algorithm algorithm) noexcept {
  return algorithm == Algorithm::kGptq ? "gptq" : "nearest";
}

bool inverse_upper_cholesky(std::span<const double> h, std::uint32_t n, double damp,
                            std::vector<double>& u) {
  std::vector<double> a(h.begin(), h.end());
  double mean_diagonal = 0.0;
  for (std::uint32_t i = 0; i < n; ++i) mean_diagonal += a[std::size_t{i} * n + i];
  mean_diagonal /= n;
  const double added = std::max(kDampFloor, damp * mean_diagonal);
  for (std::uint32_t i = 0; i < n; ++i) a[std::size_t{i} * n + i] += added;
  if (!cholesky_lower(a, n)) return false;
  // L⁻¹ by forward substitution, column by column.
  std::vector<double> inverse(std::size_t{n} * n, 0.0);
  for (std::uint32_t c = 0; c < n; ++c) {
    for (std::uint32_t i = c; i < n; ++i) {
      double value = i == c ? 1.0 : 0.0;
      for (std::uint32_t k = c; k < i; ++k) value -= a[std::size_t{i} * n + k] * inverse[std::size_t{k} * n + c];
      inverse[std::size_t{i} * n + c] = value / a[std::size_t{i} * n + i];
    }
  }
  // H⁻¹ = L⁻ᵀ L⁻¹.
  std::vector<double> h_inverse(std::size_t{n} * n, 0.0);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      double value = 0.0;
      for (std::uint32_t k = std::max(i, j); k < n; ++k) {
        value += inverse[std::size_t{k} * n + i] * inverse[std::size_t{k} * n + j];
      }
      h_inverse[std::size_t{i} * n + j] = value;
    }
  }
  if (!cholesky_lower(h_inverse, n)) return false;
  u.assign(std::size_t{n} * n, 0.0);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = i; j < n; ++j) u[std::size_t{i} * n + j] = h_inverse[std::size_t{j} * n + i];
  }
  return true;
}

double reconstruction_error(std::span<const float> weight, std::span<const float> quantized,
                            std::uint32_t out, const InputStatistics& statistics) {
  const std::uint32_t in = statistics.columns;
  if (weight.size() != std::size_t{out} * in || quantized.size() != weight.size()) {
    throw UsageError("reconstruction_error: weights of the wrong size");
  }
  if (statistics.tokens == 0) return 0.0;
  std::vector<double> per_row(out, 0.0);
  parallel_for(out, 16, [&](std::size_t begin, std::size_t end) {
    std::vector<double> e;
    for (std::size_t o = begin; o < end; ++o) {
      double total = 0.0;
      for (std::uint32_t b = 0; b < statistics.slice_count(); ++b) {
        const std::uint32_t c0 = statistics.slice_begin(b), w = statistics.slice_width(b);
        const std::vector<double>& h = statistics.hessian_blocks[b];
        e.resize(w);
        for (std::uint32_t j = 0; j < w; ++j) {
          e[j] = double{weight[o * in + c0 + j]} - double{quantized[o * in + c0 + j]};
        }
        for (std::uint32_t i = 0; i < w; ++i) {
          if (e[i] == 0.0) continue;
          double row = 0.0;
          for (std::uint32_t j = 0; j < w; ++j) row += h[std::size_t{i} * w + j] * e[j];
          total += e[i] * row;
        }
      }
      per_row[o] = total;
    }
  });
  double total = 0.0;
  for (const double value : per_row) total += value;  // in row order: deterministic
  return total / static_cast<double>(statistics.tokens);
}

QuantizedLinear quantize_linear(std::span<const float> weight, std::uint32_t out,
                                std::uint32_t in, Algorithm algorithm,
                                const InputStatistics* statistics, double damp) {
  if (weight.size() != std::size_t{out} * in) {
    throw UsageError("quantize_linear: the weight is not [out, in]");
  }
  if (statistics != nullptr && statistics->columns != in) {
    throw UsageError("quantize_linear: the statistics are not of this weight's input");
  }
  if (algorithm == Algorithm::kGptq && (statistics == nullptr || statistics->tokens == 0)) {
    throw UsageError("GPTQ needs calibration inputs");
  }
  QuantizedLinear result;
  result.scales = weight_block_scales(weight, out, in);
  std::vector<float> nearest = project_nearest(weight, result.scales);
  if (statistics != nullptr) {
    result.error_nearest = reconstruction_error(weight, nearest, out, *statistics);
  }
  if (algorithm == Algorithm::kNearest) {
    result.weight = std::move(nearest);
    result.error = result.error_nearest;
    return result;
  }

  const InputStatistics& s = *statistics;
  std::vector<std::vector<double>> factors(s.slice_count());
  for (std::uint32_t b = 0; b < s.slice_count(); ++b) {
    const std::uint32_t w = s.slice_width(b);
    if (!inverse_upper_cholesky(s.hessian_blocks[b], w, damp, factors[b])) {
      // rsqrt of the damped diagonal: U_ii scales nothing that matters, and
      // with no off-diagonal terms no error is fed forward.
      ++result.cholesky_fallbacks;
      factors[b].assign(std::size_t{w} * w, 0.0);
      for (std::uint32_t i = 0; i < w; ++i) {
        const double d = s.hessian_blocks[b][std::size_t{i} * w + i];
        factors[b][std::size_t{i} * w + i] = d > 0.0 ? 1.0 / std::sqrt(d) : 1.0;
      }
    }
  }
  result.weight.assign(weight.size(), 0.0F);
  // Rows are independent: each is its own sequence of column updates.
  parallel_for(out, 8, [&](std::size_t begin, std::size_t end) {
    std::vector<double> row;
    for (auto o = static_cast<std::uint32_t>(begin); o < end; ++o) {
      for (std::uint32_t b = 0; b < s.slice_count(); ++b) {
        const std::uint32_t c0 = s.slice_begin(b), w = s.slice_width(b);
        const std::vector<double>& u = factors[b];
        row.assign(weight.begin() + std::size_t{o} * in + c0,
                   weight.begin() + std::size_t{o} * in + c0 + w);
        for (std::uint32_t i = 0; i < w; ++i) {
          const float q = project(static_cast<float>(row[i]), result.scales, o, c0 + i);
          result.weight[std::size_t{o} * in + c0 + i] = q;
          const double error = (row[i] - double{q}) / u[std::size_t{i} * w + i];
          for (std::uint32_t j = i + 1; j < w; ++j) row[j] -= error * u[std::size_t{i} * w + j];
        }
      }
    }
  });
  result.error = reconstruction_error(weight, result.weight, out, s);
  return result;
}

}  // namespace tessera::models::siglip::quantizer
