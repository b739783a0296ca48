// The transcendental definitions (kernels/activation_math.hpp) against FP64
// within their stated bounds, their exact and special values, and the f16
// GeLU's and exp's nearest tables against their definitions for every input.
#include "kernels/activation_math.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>

#include "kernels/half.hpp"

namespace tessera::kernels {
namespace {

// The f32 ulp at |v| (the subnormal step below 2^−126).
double f32_ulp(double v) {
  const double a = std::fabs(v);
  if (a < std::ldexp(1.0, -126)) return std::ldexp(1.0, -149);
  int e = 0;
  std::frexp(a, &e);
  return std::ldexp(1.0, e - 24);
}

// Every 2^−12 step of [lo, hi] and 10^6 uniform points.
template <typename Check>
void sweep(double lo, double hi, Check check) {
  for (double x = lo; x <= hi; x += 1.0 / 4096) check(static_cast<float>(x));
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> uniform(static_cast<float>(lo), static_cast<float>(hi));
  for (int i = 0; i < 1000000; ++i) check(uniform(rng));
  // Small magnitudes down to the subnormals.
  for (float x = std::numeric_limits<float>::denorm_min(); x < 1.0F; x = x * 1.01F + 1e-45F) {
    check(x);
    check(-x);
  }
}

// The one e^x (GeLU's tanh, the attention softmax and merge): within 2 ulp
// of FP64 wherever e^x is below FLT_MAX, +Inf past it.
TEST(ActivationMath, ExpIsWithinTwoUlpOfFp64OverItsWholeRange) {
  double worst = 0;
  float worst_x = 0;
  const auto check = [&](float x) {
    const float f = exp_f32(x);
    const double expected = std::exp(static_cast<double>(x));
    // Past FLT_MAX plus half its ulp, round to nearest gives +Inf.
    if (expected >= std::ldexp(2.0 - std::ldexp(1.0, -24), 127)) {
      EXPECT_EQ(f, std::numeric_limits<float>::infinity()) << x;
      return;
    }
    const double error = std::fabs(static_cast<double>(f) - expected) / f32_ulp(expected);
    if (error > worst) {
      worst = error;
      worst_x = x;
    }
  };
  sweep(-104.0, 89.0, check);
  // The attention softmax's inputs: every non-positive f16 value.
  for (std::uint32_t h = 0x8000; h <= 0xFBFF; ++h) check(f16_to_f32(static_cast<std::uint16_t>(h)));
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
  std::printf("exp_f32: worst error %.3f ulp at x = %.9g\n", worst, static_cast<double>(worst_x));
}

TEST(ActivationMath, ExpExactAndSpecialPoints) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  // e^0 = e^−0 = 1 exactly: the merge rescales the block holding the running
  // maximum by exactly 1 (kernels/attention_merge.cpp).
  EXPECT_EQ(std::bit_cast<std::uint32_t>(exp_f32(0.0F)), 0x3F800000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(exp_f32(-0.0F)), 0x3F800000u);
  EXPECT_EQ(exp_f32(kInf), kInf);
  EXPECT_EQ(exp_f32(89.0F), kInf);
  EXPECT_EQ(exp_f32(88.75F), kInf);  // past ln FLT_MAX = 88.7228
  EXPECT_TRUE(std::isfinite(exp_f32(88.72F)));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(exp_f32(-kInf)), 0u);  // +0
  EXPECT_EQ(std::bit_cast<std::uint32_t>(exp_f32(-104.5F)), 0u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(exp_f32(-200.0F)), 0u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(exp_f32(-65504.0F)), 0u);  // a masked score's shift
  // The subnormal tail rounds once: e^−103.5 is the smallest subnormal or
  // zero, never garbage.
  EXPECT_LE(exp_f32(-103.5F), std::ldexp(1.0F, -148));
  EXPECT_GT(exp_f32(-100.0F), 0.0F);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(exp_f32(-std::numeric_limits<float>::quiet_NaN())));
  // Monotone where the softmax and the merge use it.
  float previous = 0.0F;
  for (float x = -20.0F; x <= 0.0F; x += 1.0F / 1024) {
    const float f = exp_f32(x);
    ASSERT_GE(f, previous) << x;
    previous = f;
  }
}

TEST(ActivationMath, TanhIsWithinThreeUlpOfFp64AndOdd) {
  double worst = 0;
  sweep(-12.0, 12.0, [&](float x) {
    const double expected = std::tanh(static_cast<double>(x));
    worst =
        std::max(worst, std::fabs(static_cast<double>(tanh_f32(x)) - expected) / f32_ulp(expected));
    ASSERT_EQ(std::bit_cast<std::uint32_t>(tanh_f32(-x)),
              std::bit_cast<std::uint32_t>(-tanh_f32(x)));
  });
  EXPECT_LE(worst, 3.0);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(tanh_f32(-0.0F)), 0x80000000u);
  EXPECT_EQ(tanh_f32(100.0F), 1.0F);
  EXPECT_EQ(tanh_f32(-std::numeric_limits<float>::infinity()), -1.0F);
  EXPECT_TRUE(std::isnan(tanh_f32(std::numeric_limits<float>::quiet_NaN())));
}

// The tanh GeLU formula in FP64 with the given constants.
double gelu64(double x, double c0, double c1) {
  return 0.5 * x * (1.0 + std::tanh(c0 * (x + c1 * x * x * x)));
}

TEST(ActivationMath, GeluF32IsWithinItsBoundOfFp64) {
  const double c0 = std::bit_cast<float>(kGeluF32C0);
  const double c1 = std::bit_cast<float>(kGeluF32C1);
  double worst = 0;
  const auto check = [&](float x) {
    const double expected = gelu64(x, c0, c1);
    const double error = std::fabs(static_cast<double>(gelu_f32(x)) - expected);
    const double bound = std::ldexp(std::fabs(static_cast<double>(x)), -22) + std::ldexp(1.0, -149);
    ASSERT_LE(error, bound) << x;
    worst = std::max(worst, error / bound);
  };
  sweep(-20.0, 20.0, check);
  for (float x = 20.0F; x < 1e38F; x *= 1.5F) {
    check(x);
    check(-x);
  }
  EXPECT_GT(worst, 0.0);
  EXPECT_EQ(gelu_f32(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(gelu_f32(-std::numeric_limits<float>::infinity())));  // −Inf·0
  EXPECT_EQ(gelu_f32(-1e30F), 0.0F);
}

// The AVX2 GeLU is the scalar one, bit for bit, on every f16 value, sweeps,
// specials and random f32 patterns; NaNs canonical.
TEST(ActivationMath, VectorGeluF32IsTheScalarBitForBit) {
  std::vector<float> in;
  for (std::uint32_t h = 0; h < 0x10000; ++h)
    in.push_back(f16_to_f32(static_cast<std::uint16_t>(h)));
  for (double x = -30; x <= 30; x += 1.0 / 1024) in.push_back(static_cast<float>(x));
  std::mt19937 rng(23);
  for (int i = 0; i < 300000; ++i)
    in.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  for (const float special :
       {0.0F, -0.0F, 0.625F, -0.625F, 0.62499994F, 44.36F, 88.0F, 1e-45F,
        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    in.push_back(special);
  }
  std::vector<float> scalar(in.size()), dispatched(in.size());
  activation_detail::gelu_f32_many_scalar(in.data(), scalar.data(), in.size());
  gelu_f32_many(in.data(), dispatched.data(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float y = gelu_f32(in[i]);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(scalar[i]),
              y != y ? 0x7FC00000u : std::bit_cast<std::uint32_t>(y));
    ASSERT_EQ(std::bit_cast<std::uint32_t>(dispatched[i]), std::bit_cast<std::uint32_t>(scalar[i]))
        << in[i] << " (" << std::hex << std::bit_cast<std::uint32_t>(in[i]) << ")";
  }
}

// The reference's constants (kernels-siglip-f143.md §2).
TEST(ActivationMath, GeluConstantsAreTheReferences) {
  EXPECT_NEAR(std::bit_cast<float>(kGeluF32C0), 0.7978846, 1e-7);
  EXPECT_NEAR(std::bit_cast<float>(kGeluF32C1), 0.044715, 1e-8);
  EXPECT_NEAR(f16_to_f32(kGeluF16C0), 0.7978846, 2e-4);
  EXPECT_NEAR(f16_to_f32(kGeluF16C1), 0.044715, 2e-5);
}

TEST(ActivationMath, GeluF16IsWithinItsBoundOfFp64ForEveryInput) {
  const double c0 = f16_to_f32(kGeluF16C0), c1 = f16_to_f32(kGeluF16C1);
  F16Rounding nearest(Rounding::kNearestEven, nullptr);
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto x16 = static_cast<std::uint16_t>(h);
    const std::uint16_t y = gelu_f16(x16, nearest);
    const double x = f16_to_f32(x16);
    if (std::isnan(x) || x == -std::numeric_limits<double>::infinity()) {
      ASSERT_EQ(y, kF16QuietNan) << std::hex << h;
      continue;
    }
    if (x == std::numeric_limits<double>::infinity()) {
      ASSERT_EQ(y, 0x7C00);
      continue;
    }
    const double bound = std::ldexp(std::fabs(x), -10) + std::ldexp(1.0, -24);
    ASSERT_LE(std::fabs(static_cast<double>(f16_to_f32(y)) - gelu64(x, c0, c1)), bound) << x;
    // x³ overflows from 40.3 on: the formula gives x, and −0 below −40.3.
    if (x >= 40.3) {
      ASSERT_EQ(y, x16);
    }
    if (x <= -40.3) {
      ASSERT_EQ(y, 0x8000);
    }
  }
}

TEST(ActivationMath, TheNearestTableIsTheDefinition) {
  const auto& table = gelu_f16_nearest_table();
  F16Rounding nearest(Rounding::kNearestEven, nullptr);
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    ASSERT_EQ(table[h], gelu_f16(static_cast<std::uint16_t>(h), nearest)) << h;
  }
}

// The softmax's f16 exponential: the table holds exp_f16 to nearest for
// every pattern, and that is within one f16 ulp (its double rounding) of
// FP64 e^t rounded to f16 for every finite t ≤ 0 — the softmax's inputs.
TEST(ActivationMath, TheExpTableIsTheF16ExpToNearest) {
  const auto& table = exp_f16_nearest_table();
  F16Rounding nearest(Rounding::kNearestEven, nullptr);
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto t = static_cast<std::uint16_t>(h);
    ASSERT_EQ(table[h], exp_f16(t, nearest)) << std::hex << h;
    if (h >= 0x8000 && h <= 0xFBFF) {
      const std::uint16_t exact = f32_to_f16(static_cast<float>(std::exp(f16_to_f32(t))));
      ASSERT_LE(std::abs(int{table[h]} - int{exact}), 1) << std::hex << h;
    }
  }
  EXPECT_EQ(table[0x0000], 0x3C00);  // e^0 = 1: the row maximum's weight
  EXPECT_EQ(table[0x8000], 0x3C00);  // e^−0 = 1
  EXPECT_EQ(table[0xFBFF], 0x0000);  // e^−65504: a masked column's weight
  EXPECT_EQ(table[0xFC00], 0x0000);  // e^−Inf
  EXPECT_EQ(table[0x7C00], 0x7C00);  // e^+Inf
  EXPECT_EQ(table[0x7E01], kF16QuietNan);
  EXPECT_EQ(table[0xFE00], kF16QuietNan);
}

TEST(ActivationMath, F16FormsRoundTheF32FunctionsOnce) {
  F16Rounding nearest(Rounding::kNearestEven, nullptr);
  for (const std::uint16_t x :
       std::initializer_list<std::uint16_t>{0x0000, 0x3C00, 0xC200, 0x4900, 0x0001, 0x7BFF}) {
    EXPECT_EQ(exp_f16(x, nearest), f32_to_f16(exp_f32(f16_to_f32(x))));
    EXPECT_EQ(tanh_f16(x, nearest), f32_to_f16(tanh_f32(f16_to_f32(x))));
  }
  EXPECT_EQ(exp_f16(0x7E00, nearest), kF16QuietNan);
}

TEST(ActivationMath, StochasticGeluTakesNineDrawsAndStaysNearTheNearestOne) {
  RandomStream stream(8), expected(8);
  F16Rounding stochastic(Rounding::kStochastic, &stream);
  const auto& table = gelu_f16_nearest_table();
  for (std::uint32_t h = 0; h < 0x7C00; h += 7) {
    const auto x16 = static_cast<std::uint16_t>(h);
    const double y = static_cast<double>(f16_to_f32(gelu_f16(x16, stochastic)));
    const double x = f16_to_f32(x16);
    // Each of the nine steps moves by less than one f16 step instead of half.
    ASSERT_LE(std::fabs(y - static_cast<double>(f16_to_f32(table[h]))),
              std::ldexp(x, -8) + std::ldexp(1.0, -22))
        << x;
  }
  expected.skip(kGeluF16RoundingSteps * ((0x7C00 + 6) / 7));
  EXPECT_EQ(stream, expected);
}

}  // namespace
}  // namespace tessera::kernels
