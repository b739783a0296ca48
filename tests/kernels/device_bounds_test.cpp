// The device sources whose results the models define only within a bound
// (docs/GRAPH_FORMAT.md "Numerics", tests/testing/graph_bounds.hpp — the one
// owner of the formulas): the row softmax, the f32 row LayerNorm and the
// GeLUs. Each element of the device's result must lie within the documented
// bound of the exact (FP64) result, and within the same bound of the model's
// result; where the inputs make the result exact by definition (a NaN row,
// −Inf scores, the f16 GeLU's saturated ends) or the bound is infinite, the
// device's bits must be the model's. Also: the device's exp and tanh against
// FP64 within the 2 ulp the bounds assume of them.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "kernels/device/device_math.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/device_harness.hpp"
#include "tests/testing/graph_bounds.hpp"

namespace tessera::kernels::testing {
namespace {

namespace bounds = tessera::testing::bounds;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

double f32_value(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
double f16_value(std::uint32_t h) {
  const std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double sign = (h & 0x8000) != 0 ? -1 : 1;
  if (e == 0x1F) return m != 0 ? kNan : sign * kInf;
  return sign * (e == 0 ? std::ldexp(m, -24) : std::ldexp(m | 0x400, static_cast<int>(e) - 25));
}
double value_of(std::uint32_t bits, unsigned s) {
  return s == 4 ? f32_value(bits) : f16_value(bits);
}

std::uint32_t element(const std::vector<std::uint8_t>& bytes, std::size_t i, unsigned s) {
  std::uint32_t v = 0;
  std::memcpy(&v, &bytes[i * s], s);
  return v;
}

// |device − exact| ≤ bound and |device − model| ≤ bound, or the same bits
// where the bound is infinite or the exact value not finite.
CloseEnough within(const std::vector<double>& exact, const std::vector<double>& bound, unsigned s) {
  return [&exact, &bound, s](std::uint32_t model, std::uint32_t device, std::size_t i) {
    if (!std::isfinite(bound[i]) || !std::isfinite(exact[i])) return model == device;
    const double d = value_of(device, s), m = value_of(model, s);
    return std::fabs(d - exact[i]) <= bound[i] && std::fabs(d - m) <= bound[i];
  };
}

// ---- The device's elementary functions: within e_f = 4u relative
// (docs/GRAPH_FORMAT.md: "2 ulp" of the result, as a relative error 2^−22),
// and an ulp of 2^−149 in the subnormal range.

double relative_error(double got, double exact) {
  return std::fabs(got - exact) / std::max(std::fabs(exact), 0x1p-126);
}

TEST(DeviceKernels, ExpWithinTheAssumedAccuracy) {
  double worst = 0;
  for (float x = -103.9f; x < 88.7f; x += 0.00390625f * 3.3f) {
    const double exact = std::exp(static_cast<double>(x));
    const double got = tessera::device::exp_f32(x);
    if (exact < 0x1p-126) {
      EXPECT_LE(std::fabs(got - exact), 0x1p-149) << x;
      continue;
    }
    worst = std::max(worst, relative_error(got, exact));
  }
  EXPECT_LE(worst, 0x1p-22);
  EXPECT_EQ(tessera::device::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(tessera::device::exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(tessera::device::exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(tessera::device::exp_f32(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  RecordProperty("exp_worst_relative_in_u32", fmt::format("{:.3f}", worst / 0x1p-24));
}

TEST(DeviceKernels, TanhWithinTheAssumedAccuracy) {
  double worst = 0;
  for (float x = -10.0f; x < 10.0f; x += 0.0007f) {
    const double exact = std::tanh(static_cast<double>(x));
    if (exact != 0) worst = std::max(worst, relative_error(tessera::device::tanh_f32(x), exact));
  }
  for (float x = 1e-30f; x < 1.0f; x *= 1.37f) {
    worst = std::max(
        worst, relative_error(tessera::device::tanh_f32(x), std::tanh(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 0x1p-22);
  EXPECT_TRUE(std::signbit(tessera::device::tanh_f32(-0.0f)));
  RecordProperty("tanh_worst_relative_in_u32", fmt::format("{:.3f}", worst / 0x1p-24));
}

// ---- Row softmax.

void softmax_case(std::string_view kernel, unsigned s, std::uint32_t rows, std::uint32_t columns,
                  Patterns& p, float scale, bool specials) {
  std::vector<std::uint8_t> in;
  for (std::uint32_t i = 0; i < rows * columns; ++i) {
    std::uint32_t v = s == 4 ? p.f32_finite(scale) : p.f16_finite(scale);
    if (specials && p.below(50) == 0) {
      const std::uint32_t kinds[] = {s == 4 ? 0xFF800000u : 0xFC00u, s == 4 ? 0x7F800000u : 0x7C00u,
                                     s == 4 ? 0x7FC00001u : 0x7E01u};
      v = kinds[p.below(3)];
    }
    in.insert(in.end(), reinterpret_cast<std::uint8_t*>(&v),
              reinterpret_cast<std::uint8_t*>(&v) + s);
  }
  // The exact result and its bound, row by row. −Inf scores have weight 0
  // exactly and the rest is the softmax of the finite ones; a row with a NaN
  // or +Inf is NaN throughout: both are compared by bits.
  std::vector<double> exact(rows * columns), bound(rows * columns);
  const auto dtype = s == 4 ? schema::DType::kF32 : schema::DType::kF16;
  for (std::uint32_t r = 0; r < rows; ++r) {
    std::vector<double> x, out;
    bool defined = true;
    for (std::uint32_t c = 0; c < columns; ++c) {
      const double v = value_of(element(in, r * columns + c, s), s);
      if (std::isfinite(v))
        x.push_back(v);
      else if (v == -kInf)
        continue;
      else
        defined = false;
    }
    defined = defined && !x.empty();
    out.resize(x.size());
    if (defined) bounds::softmax_error_bounds(dtype, x, {}, out);
    const double m = defined ? *std::max_element(x.begin(), x.end()) : 0;
    double sum = 0;
    for (double v : x) sum += std::exp(v - m);
    for (std::uint32_t c = 0, k = 0; c < columns; ++c) {
      const double v = value_of(element(in, r * columns + c, s), s);
      const bool finite = std::isfinite(v);
      exact[r * columns + c] = defined && finite ? std::exp(v - m) / sum : kNan;
      bound[r * columns + c] = defined && finite ? out[k] : kInf;
      if (finite) ++k;
    }
  }
  SCOPED_TRACE(fmt::format("{} rows × {} columns, scale {}", rows, columns, scale));
  expect_device_close_to_model(
      KernelCase{kernel,
                 {input(2, "softmax", s, p.bytes(in.size())), input(3, "source", s, in)},
                 {{4, rows}, {5, columns}}},
      2, s, within(exact, bound, s));
}

TEST(DeviceKernels, SoftmaxRows) {
  Patterns p(60);
  for (auto [kernel, s] : {std::pair{std::string_view("tessera_softmax_rows_f32"), 4u},
                           std::pair{std::string_view("tessera_softmax_rows_f16"), 2u}}) {
    for (std::uint32_t rows : {0u, 1u, 5u, 6u, 7u, 13u}) {
      for (std::uint32_t columns : {1u, 2u, 3u, 16u, 77u, 129u}) {
        softmax_case(kernel, s, rows, columns, p, 8.0f, false);
      }
    }
    softmax_case(kernel, s, 61, 100, p, 1.0f, false);
    softmax_case(kernel, s, 61, 100, p, 60000.0f, false);
    softmax_case(kernel, s, 30, 64, p, 10.0f, true);
    // The largest: one 1024-wide row per worker, twice.
    softmax_case(kernel, s, 12, 1024, p, 20.0f, false);
    // In place.
    const std::uint32_t rows = 7, columns = 33;
    std::vector<std::uint8_t> in;
    for (std::uint32_t i = 0; i < rows * columns; ++i) {
      const std::uint32_t v = s == 4 ? p.f32_finite(5) : p.f16_finite(5);
      in.insert(in.end(), reinterpret_cast<const std::uint8_t*>(&v),
                reinterpret_cast<const std::uint8_t*>(&v) + s);
    }
    const KernelCase c{
        kernel, {input(3, "source", s, in), alias(2, "softmax", s, 3)}, {{4, rows}, {5, columns}}};
    std::vector<double> exact(rows * columns), bound(rows * columns);
    for (std::uint32_t r = 0; r < rows; ++r) {
      std::vector<double> x(columns), out(columns);
      for (std::uint32_t j = 0; j < columns; ++j)
        x[j] = value_of(element(in, r * columns + j, s), s);
      bounds::softmax_error_bounds(s == 4 ? schema::DType::kF32 : schema::DType::kF16, x, {}, out);
      const double m = *std::max_element(x.begin(), x.end());
      double sum = 0;
      for (double v : x) sum += std::exp(v - m);
      for (std::uint32_t j = 0; j < columns; ++j) {
        exact[r * columns + j] = std::exp(x[j] - m) / sum;
        bound[r * columns + j] = out[j];
      }
    }
    expect_device_close_to_model(c, 3, s, within(exact, bound, s));
  }
}

// ---- f32 row LayerNorm.

TEST(DeviceKernels, LayerNormRowsF32) {
  Patterns p(61);
  for (std::uint32_t rows : {0u, 1u, 5u, 6u, 7u, 13u}) {
    for (std::uint32_t columns : {1u, 2u, 3u, 5u, 16u, 77u, 129u, 1152u}) {
      if (rows * columns > 20000) continue;
      std::vector<std::uint32_t> x(rows * columns), affine(2 * columns);
      for (auto& v : x) v = p.f32_finite(4.0f);
      for (auto& v : affine) v = p.f32_finite(2.0f);
      for (std::size_t i = 0; i < x.size(); i += 7)
        x[i] = p.f32_finite(1000.0f);  // an offset row mean
      const std::uint32_t q30 = 1074;  // ε = 1e−6 (layer_norm.hpp's encoding)
      std::vector<double> exact(x.size()), bound(x.size());
      for (std::uint32_t r = 0; r < rows; ++r) {
        std::vector<double> xs(columns), g(columns), b(columns), out(columns);
        for (std::uint32_t c = 0; c < columns; ++c) {
          xs[c] = f32_value(x[r * columns + c]);
          g[c] = f32_value(affine[c]);
          b[c] = f32_value(affine[columns + c]);
        }
        const double epsilon = q30 * 0x1p-30;
        bounds::layer_norm_error_bounds(schema::DType::kF32, xs, g, b, epsilon, out);
        double mean = 0, var = 0;
        for (double v : xs) mean += v;
        mean /= columns;
        for (double v : xs) var += (v - mean) * (v - mean);
        var /= columns;
        for (std::uint32_t c = 0; c < columns; ++c) {
          exact[r * columns + c] = (xs[c] - mean) / std::sqrt(var + epsilon) * g[c] + b[c];
          bound[r * columns + c] = out[c];
        }
      }
      SCOPED_TRACE(fmt::format("{} rows × {} columns", rows, columns));
      expect_device_close_to_model(
          KernelCase{"tessera_layer_norm_rows_f32",
                     {input(2, "normalised", 4, p.bytes(4 * x.size())),
                      input(3, "source", 4, bytes_of(x)), input(4, "affine", 4, bytes_of(affine))},
                     {{5, rows}, {6, columns}, {7, q30}}},
          2, 4, within(exact, bound, 4));
    }
  }
}

// ---- GeLU.

std::vector<double> gelu_exact(const std::vector<std::uint8_t>& in, unsigned s) {
  std::vector<double> out(in.size() / s);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double x = value_of(element(in, i, s), s);
    out[i] = 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return out;
}
std::vector<double> gelu_bounds(const std::vector<std::uint8_t>& in, unsigned s) {
  std::vector<double> out(in.size() / s);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double x = value_of(element(in, i, s), s);
    out[i] = std::isfinite(x)
                 ? bounds::gelu_error_bound(s == 4 ? schema::DType::kF32 : schema::DType::kF16, x)
                 : kInf;
  }
  return out;
}

TEST(DeviceKernels, GeluF16OnEveryF16) {
  Patterns p(62);
  std::vector<std::uint16_t> every(65536);
  std::iota(every.begin(), every.end(), std::uint16_t{0});
  const auto in = bytes_of(every);
  const auto exact = gelu_exact(in, 2);
  const auto bound = gelu_bounds(in, 2);
  expect_device_close_to_model(
      KernelCase{"tessera_gelu_f16",
                 {input(2, "activation", 2, p.bytes(in.size())), input(3, "source", 2, in)},
                 {{4, 65536}}},
      2, 2, within(exact, bound, 2));
}

TEST(DeviceKernels, GeluF32) {
  Patterns p(63);
  for (std::uint32_t n : {0u, 1u, 5u, 6u, 7u, 13u, 1001u, 40000u}) {
    std::vector<std::uint32_t> x(n);
    for (std::size_t i = 0; i < n; ++i)
      x[i] = i % 5 == 0 ? p.f32() : p.f32_finite(i % 3 == 0 ? 50.0f : 4.0f);
    const auto in = bytes_of(x);
    const auto exact = gelu_exact(in, 4);
    const auto bound = gelu_bounds(in, 4);
    SCOPED_TRACE(fmt::format("{} elements", n));
    expect_device_close_to_model(
        KernelCase{"tessera_gelu_f32",
                   {input(2, "activation", 4, p.bytes(in.size())), input(3, "source", 4, in)},
                   {{4, n}}},
        2, 4, within(exact, bound, 4));
  }
}

TEST(DeviceKernels, GeluC16ToA16F16) {
  Patterns p(64);
  for (std::uint32_t rows : {0u, 1u, 5u, 6u, 7u, 13u, 61u}) {
    for (std::uint32_t columns : {1u, 15u, 16u, 17u, 72u, 100u}) {
      const std::uint32_t w = (columns + 15) / 16 * 16;
      std::vector<std::uint16_t> x(rows * w);
      for (auto& v : x) v = p.f16();
      const auto in = bytes_of(x);
      // Exact values per output position: out (r, n) of panel j is in's
      // physical column σ(n) of the same panel row (amp_layout.hpp's owner is
      // the model's business; here the brute-force σ of the reference, L).
      std::vector<std::uint8_t> gathered(in.size());
      for (std::uint32_t row = 0; row < rows * (w / 16); ++row) {
        for (unsigned n = 0; n < 16; ++n) {
          const unsigned q = n / 2, physical = 2 * (2 * (q % 4) + q / 4) + n % 2;
          std::memcpy(&gathered[2 * (16 * row + n)], &in[2 * (16 * row + physical)], 2);
        }
      }
      auto exact = gelu_exact(gathered, 2);
      auto bound = gelu_bounds(gathered, 2);
      for (std::uint32_t row = 0; row < rows * (w / 16); ++row) {
        for (unsigned n = 0; n < 16; ++n) {
          if ((row / std::max(rows, 1u)) * 16 + n >= columns) {  // padding: +0 exactly
            exact[16 * row + n] = kNan;
            bound[16 * row + n] = kInf;
          }
        }
      }
      SCOPED_TRACE(fmt::format("{} rows × {} columns", rows, columns));
      expect_device_close_to_model(
          KernelCase{"tessera_gelu_c16_to_a16_f16",
                     {input(2, "activation", 2, p.bytes(in.size())), input(3, "source", 2, in)},
                     {{4, rows}, {5, columns}}},
          2, 2, within(exact, bound, 2));
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::testing
