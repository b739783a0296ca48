#include "models/siglip/quantizer/equalize.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/parallel.hpp"
#include "models/siglip/quantizer/f143_grid.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip::quantizer {
namespace {

constexpr std::array kAlphas = {0.0, 0.25, 0.5, 0.75, 1.0};

double objective(std::span<const Linear* const> consumers, const InputStatistics& input,
                 const std::vector<float>& factors) {
  const std::uint32_t columns = input.columns;
  double total = 0.0;
  for (const Linear* linear : consumers) {
    const auto out = static_cast<std::uint32_t>(linear->weight.shape[0]);
    std::vector<float> scaled(linear->weight.values.size());
    for (std::size_t o = 0; o < out; ++o) {
      for (std::uint32_t c = 0; c < columns; ++c) {
        scaled[o * columns + c] = linear->weight.values[o * columns + c] * factors[c];
      }
    }
    const auto projected = project_nearest(scaled, weight_block_scales(scaled, out, columns));
    std::vector<double> per_row(out, 0.0);
    parallel_for(out, 16, [&](std::size_t begin, std::size_t end) {
      for (std::size_t o = begin; o < end; ++o) {
        double sum = 0.0;
        for (std::uint32_t c = 0; c < columns; ++c) {
          const double e = double{scaled[o * columns + c]} - double{projected[o * columns + c]};
          const double s = factors[c];
          sum += e * e * input.mean_square(c) / (s * s);
        }
        per_row[o] = sum;
      }
    });
    for (const double value : per_row) total += value;
  }
  return total;
}

}  // namespace

Equalization choose_equalization(std::span<const Linear* const> consumers,
                                 const InputStatistics& input) {
  const std::uint32_t columns = input.columns;
  for (const Linear* linear : consumers) {
    if (linear->weight.shape.size() != 2 || linear->weight.shape[1] != columns) {
      throw UsageError("choose_equalization: a consumer's input width is not the LayerNorm's");
    }
  }
  std::vector<double> rms_activation(columns), rms_weight(columns, 0.0);
  std::uint64_t rows = 0;
  for (const Linear* linear : consumers) {
    const std::uint64_t out = linear->weight.shape[0];
    rows += out;
    for (std::size_t o = 0; o < out; ++o) {
      for (std::uint32_t c = 0; c < columns; ++c) {
        const double w = linear->weight.values[o * columns + c];
        rms_weight[c] += w * w;
      }
    }
  }
  for (std::uint32_t c = 0; c < columns; ++c) {
    rms_weight[c] = std::sqrt(rms_weight[c] / static_cast<double>(std::max<std::uint64_t>(rows, 1)));
    rms_activation[c] = std::sqrt(input.mean_square(c));
  }

  Equalization best;
  best.factors.assign(columns, 1.0F);
  best.identity_objective = best.objective = objective(consumers, input, best.factors);
  for (const double alpha : kAlphas) {
    std::vector<double> raw(columns, 1.0);
    double low = INFINITY, high = 0.0;
    for (std::uint32_t c = 0; c < columns; ++c) {
      if (!(rms_activation[c] > 0.0) || !(rms_weight[c] > 0.0)) continue;
      raw[c] = std::pow(rms_activation[c], alpha) / std::pow(rms_weight[c], 1.0 - alpha);
      if (!std::isfinite(raw[c]) || !(raw[c] > 0.0)) raw[c] = 1.0;
      low = std::min(low, raw[c]);
      high = std::max(high, raw[c]);
    }
    if (!(high > 0.0)) continue;  // nothing to equalize
    const double centre = std::sqrt(low * high);
    std::vector<float> factors(columns, 1.0F);
    for (std::uint32_t c = 0; c < columns; ++c) {
      const bool live = rms_activation[c] > 0.0 && rms_weight[c] > 0.0;
      factors[c] = live ? std::clamp(static_cast<float>(raw[c] / centre), kMinEqualization,
                                     kMaxEqualization)
                        : 1.0F;
    }
    const double value = objective(consumers, input, factors);
    if (value < best.objective) {
      best.objective = value;
      best.alpha = alpha;
      best.factors = std::move(factors);
    }
  }
  return best;
}

void apply_equalization(const std::vector<float>& factors, LayerNorm& norm,
                        std::span<Linear* const> consumers, InputStatistics& input) {
  const std::uint32_t columns = input.columns;
  if (factors.size() != columns || norm.weight.values.size() != columns) {
    throw UsageError("apply_equalization: the factors do not match the LayerNorm");
  }
  for (std::uint32_t c = 0; c < columns; ++c) {
    norm.weight.values[c] /= factors[c];
    norm.bias.values[c] /= factors[c];
  }
  for (Linear* linear : consumers) {
    const std::uint64_t out = linear->weight.shape[0];
    for (std::size_t o = 0; o < out; ++o) {
      for (std::uint32_t c = 0; c < columns; ++c) linear->weight.values[o * columns + c] *= factors[c];
    }
  }
  // The LayerNorm's output x becomes x / s.
  for (std::uint32_t c = 0; c < columns; ++c) {
    const double s = factors[c];
    input.sum[c] /= s;
    input.sum_squares[c] /= s * s;
    input.max_abs[c] /= factors[c];
  }
  for (std::uint32_t b = 0; b < input.slice_count(); ++b) {
    const std::uint32_t c0 = input.slice_begin(b), w = input.slice_width(b);
    for (std::uint32_t i = 0; i < w; ++i) {
      for (std::uint32_t j = 0; j < w; ++j) {
        input.hessian_blocks[b][std::size_t{i} * w + j] /=
            double{factors[c0 + i]} * double{factors[c0 + j]};
      }
    }
  }
}

}  // namespace tessera::models::siglip::quantizer
