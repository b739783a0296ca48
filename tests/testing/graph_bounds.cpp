#include "tests/testing/graph_bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace tessera::testing::bounds {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU32 = 0x1p-24;
// The reference's f64 arithmetic inside these formulas rounds too; every
// bound is widened by this factor so those roundings (≪ 2^-40 relative) never
// make a bound smaller than its exact value.
constexpr double kSlack = 1.0 + 0x1p-40;

// Rounding to nearest gives |fl(x) − x| ≤ u|x| + eta: the largest error of
// one rounding of a value of magnitude up to `magnitude`.
double rounding(const Precision& p, double magnitude) { return p.u * magnitude + p.eta; }

}  // namespace

Precision precision_of(schema::DType dtype) {
  switch (dtype) {
    case schema::DType::kF16:
      return {0x1p-11, 0x1p-25, 65504.0};
    case schema::DType::kF32:
      return {0x1p-24, 0x1p-150, static_cast<double>(std::numeric_limits<float>::max())};
    default:
      throw std::invalid_argument("error bounds are defined for f16 and f32 only");
  }
}

double function_error(const Precision& p) { return 4 * p.u; }

double gamma(double u, double n) { return std::expm1(n * std::log1p(u)) * kSlack; }

std::uint64_t f16_gemm_roundings(std::uint64_t k) { return (k + 15) / 16; }

double matmul_error_bound(schema::DType result, std::uint64_t k, double magnitude) {
  const Precision p = precision_of(result);
  double relative = 0;
  double absolute = 0;
  if (result == schema::DType::kF32) {
    relative = gamma(kU32, static_cast<double>(k));
    absolute = 2.0 * static_cast<double>(k) * p.eta * (1 + relative);
  } else {
    const auto passes = static_cast<double>(f16_gemm_roundings(k));
    relative = std::expm1(16 * std::log1p(kU32) + passes * std::log1p(p.u)) * kSlack;
    absolute = 2.0 * passes * p.eta * (1 + gamma(p.u, passes));
  }
  const double bound = relative * magnitude + absolute;
  if (!std::isfinite(magnitude) || magnitude + bound > p.max_finite) return kInf;
  return bound * kSlack;
}

double gelu_error_bound(schema::DType dtype, double x) {
  const Precision p = precision_of(dtype);
  const double ef = function_error(p);
  const double z = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  const double t = std::tanh(z);
  const double dz = 8 * p.u * std::fabs(z);
  // The largest sech² on [z − dz, z + dz]: at the smallest |ξ| (sech² falls
  // with |ξ|; cosh overflowing makes it 0).
  const double nearest = std::max(0.0, std::fabs(z) - dz);
  const double sech2 = 1 / (std::cosh(nearest) * std::cosh(nearest));
  const double dt = sech2 * dz + ef * (std::fabs(t) + sech2 * dz);
  const double half_x = 0.5 * std::fabs(x);
  const double three = gamma(p.u, 3);
  const double bound =
      half_x * dt * (1 + three) + three * half_x * (std::fabs(1 + t) + dt) + 4 * p.eta;
  return std::isfinite(bound) ? bound * kSlack : kInf;
}

void softmax_error_bounds(schema::DType dtype, std::span<const double> x,
                          std::span<const double> input_error, std::span<double> out) {
  const Precision p = precision_of(dtype);
  const double ef = function_error(p);
  const std::size_t n = x.size();
  const auto error = [&](std::size_t j) { return input_error.empty() ? 0.0 : input_error[j]; };
  const double m = *std::max_element(x.begin(), x.end());
  double largest_error = 0;
  for (std::size_t j = 0; j < n; ++j) largest_error = std::max(largest_error, error(j));
  // The exact softmax P.
  std::vector<double> weight(n);
  double sum = 0;
  for (std::size_t j = 0; j < n; ++j) sum += weight[j] = std::exp(x[j] - m);
  // Perturbed inputs x' = x + Δx with |Δx_j| ≤ error(j) give
  // P'_j / P_j ∈ [e^(−Δ_j) / Σ_k P_k e^(Δ_k), e^(Δ_j) / Σ_k P_k e^(−Δ_k)].
  double grow = 0, shrink = 0;
  for (std::size_t j = 0; j < n; ++j) {
    grow += weight[j] / sum * std::exp(error(j));
    shrink += weight[j] / sum * std::exp(-error(j));
  }
  // d'_j = x'_j − max x' is rounded with relative error ud, so exp(d'_j) is
  // off by a factor within exp(ud·|d'_j|)·(1 ± e_f).
  const double ud = std::expm1(std::log1p(p.u) + 2 * std::log1p(kU32));
  std::vector<double> a(n), high_ratio(n), low_ratio(n);
  double carried = 0;  // Σ_j P'_j a_j, bounded with P'_j ≤ P_j·high_ratio_j
  for (std::size_t j = 0; j < n; ++j) {
    const double d = std::fabs(x[j] - m) + error(j) + largest_error;
    a[j] = std::exp(ud * d) * (1 + ef) - 1;
    high_ratio[j] = std::exp(error(j)) / shrink;
    low_ratio[j] = std::exp(-error(j)) / grow;
    carried += weight[j] / sum * high_ratio[j] * a[j];
  }
  // The f32 sum of the n computed exponentials (each ≥ 0; the max one is
  // exp(0) = 1, so the exact sum is ≥ 1 and eta per term is relative to ≥ 1).
  const double g = gamma(kU32, static_cast<double>(n > 0 ? n - 1 : 0));
  const double b = (carried + static_cast<double>(n) * p.eta) * (1 + g) + g;
  for (std::size_t j = 0; j < n; ++j) {
    if (!(b < 1)) {
      out[j] = kInf;
      continue;
    }
    const double exact = weight[j] / sum;
    const double high =
        (exact * high_ratio[j] * (1 + a[j]) + p.eta) * (1 + ef) * (1 + p.u) / (1 - b) + p.eta;
    const double low =
        (exact * low_ratio[j] * (1 - a[j]) - p.eta) * (1 - ef) * (1 - p.u) / (1 + b) - p.eta;
    out[j] = std::max(high - exact, exact - low) * kSlack;
  }
}

void layer_norm_error_bounds(schema::DType dtype, std::span<const double> x,
                             std::span<const double> gamma_values,
                             std::span<const double> beta_values, double epsilon,
                             std::span<double> out) {
  const Precision p = precision_of(dtype);
  const double ef = function_error(p);
  const auto c = static_cast<double>(x.size());
  double mean = 0, mean_abs = 0, mean_square = 0;
  for (const double v : x) {
    mean += v;
    mean_abs += std::fabs(v);
    mean_square += v * v;
  }
  mean /= c;
  mean_abs /= c;
  mean_square /= c;
  double variance = 0;
  for (const double v : x) variance += (v - mean) * (v - mean);
  variance /= c;
  // The f32 mean (C − 1 adds and a division) and mean of squares (one more
  // rounding per square).
  const double dmean = gamma(kU32, c) * mean_abs;
  const double g2 = gamma(kU32, c + 1);
  const double square_of_mean = (std::fabs(mean) + dmean) * (std::fabs(mean) + dmean);
  // var = E[x²] − mean² in f32: the error of E[x²], of mean², and the two
  // roundings of the square and the difference.
  const double dvariance = g2 * mean_square + (2 * std::fabs(mean) + dmean) * dmean +
                           2 * kU32 * (mean_square * (1 + g2) + square_of_mean);
  const double depsilon = 0x1p-31 + kU32 * epsilon;
  const double w = variance + epsilon;
  const double dw = dvariance + depsilon + kU32 * (w + dvariance + depsilon);
  const double rstd = 1 / std::sqrt(w);
  // The computed rstd / rstd − 1, within ±rho.
  // The f32 sums Σx and Σx² (their partials at most the whole sums, grown
  // by their roundings) must not overflow f32, or nothing is bounded.
  constexpr double kF32Max = 0x1.fffffep127;
  const bool sums_overflow = c * mean_abs * (1 + gamma(kU32, c)) > kF32Max ||
                             c * mean_square * (1 + g2) > kF32Max;
  const double rho = dw < w && !sums_overflow
                         ? (1 / std::sqrt(1 - dw / w)) * (1 + ef) * (1 + p.u) - 1
                         : kInf;
  // The mean as the dtype holds it.
  const double dmean_dtype = dmean + rounding(p, std::fabs(mean) + dmean);
  const double two = gamma(p.u, 2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - mean;
    const double dd = dmean_dtype + rounding(p, std::fabs(d) + dmean_dtype);
    // (x − mean)·rstd·gamma with two roundings, then + beta with one.
    const double scaled = std::fabs(gamma_values[i]) * rstd;
    const double dp =
        scaled * ((std::fabs(d) + dd) * (1 + rho) * (1 + two) - std::fabs(d)) + 2 * p.eta;
    const double y = d * rstd * gamma_values[i] + beta_values[i];
    const double bound = dp + rounding(p, std::fabs(y) + dp);
    // Each intermediate in the dtype — x − mean, its product with rstd, that
    // times gamma — must not overflow either, even when y is small (an f16
    // 65504 − (−30) is +Inf, whatever beta then adds).
    const double centred = std::fabs(d) + dd;
    const double normalised = centred * rstd * (1 + rho) * (1 + p.u);
    const double product = normalised * std::fabs(gamma_values[i]) * (1 + p.u);
    const bool overflows = centred > p.max_finite || normalised > p.max_finite ||
                           product > p.max_finite;
    out[i] = std::isfinite(bound) && !overflows && std::fabs(y) + bound <= p.max_finite
                 ? bound * kSlack
                 : kInf;
  }
}

void attention_error_bounds(schema::DType dtype, std::span<const double> q,
                            std::span<const double> k, std::span<const double> v,
                            std::uint32_t keys, double scale, std::span<double> out) {
  const Precision p = precision_of(dtype);
  const std::size_t depth = q.size();
  // Scores and their device errors (a GEMM of depth D, then the scale).
  std::vector<double> scores(keys), score_error(keys);
  for (std::uint32_t j = 0; j < keys; ++j) {
    double dot = 0, magnitude = 0;
    for (std::size_t d = 0; d < depth; ++d) {
      dot += q[d] * k[j * depth + d];
      magnitude += std::fabs(q[d] * k[j * depth + d]);
    }
    scores[j] = scale * dot;
    score_error[j] = scale * matmul_error_bound(dtype, depth, magnitude) * (1 + kU32);
  }
  std::vector<double> probability_error(keys);
  softmax_error_bounds(dtype, scores, score_error, probability_error);
  const double m = *std::max_element(scores.begin(), scores.end());
  std::vector<double> probability(keys);
  double sum = 0;
  for (std::uint32_t j = 0; j < keys; ++j) sum += probability[j] = std::exp(scores[j] - m);
  for (double& value : probability) value /= sum;
  const double merges = gamma(kU32, 2.0 * keys);
  const double pv_absolute = matmul_error_bound(dtype, keys, 0);
  for (std::size_t d = 0; d < depth; ++d) {
    double exact = 0, magnitude = 0, propagated = 0, value_sum = 0;
    for (std::uint32_t j = 0; j < keys; ++j) {
      const double value = std::fabs(v[j * depth + d]);
      value_sum += value;
      exact += probability[j] * v[j * depth + d];
      magnitude += (probability[j] + probability_error[j]) * value;
      propagated += probability_error[j] * value;
    }
    // P·V may run on the unnormalised exponentials ê_j = exp(d̂_j) ≤ 1 + e_f
    // + eta (d̂_j ≤ 0) and divide by their computed sum l̂ at the end; l̂ ≥ 1/2,
    // as it holds exp(0) of the max score within e_f and its f32 sum loses
    // at most γ(u32, T − 1). So the relative part of the GEMM's bound carries
    // over, its absolute part at most doubles, and its partials, at most
    // 2·Σ_j |v_jd|, must not overflow.
    const double unnormalised = matmul_error_bound(dtype, keys, 2 * value_sum);
    const double pv = matmul_error_bound(dtype, keys, magnitude) - pv_absolute + 2 * pv_absolute;
    const double inner = propagated + pv + merges * magnitude;
    const double bound = inner + rounding(p, std::fabs(exact) + inner);
    out[d] = std::isfinite(unnormalised) && std::isfinite(bound) ? bound * kSlack : kInf;
  }
}

}  // namespace tessera::testing::bounds
