// The attention kernels' numeric primitives (kernels/attention_numerics.hpp)
// against FP64: attention_exp_f32's error bound in ulps over its whole range,
// its exact and special points, the f16 exponential table against the
// computation it stands for, and the rounding's NaN rule.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "kernels/attention_numerics.hpp"
#include "kernels/half.hpp"

namespace tessera::kernels {
namespace {

// |f − e| in units of the last place of the f32 nearest e; below the normal
// range an ulp is the subnormal step 2^−149.
double ulps(float f, double e) {
  int exponent = 0;
  std::frexp(e, &exponent);  // e = m·2^exponent, 0.5 ≤ m < 1
  const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
  return std::abs(static_cast<double>(f) - e) / ulp;
}

TEST(AttentionExp, WithinTwoUlpsOfFp64OverItsWholeRange) {
  double worst = 0.0;
  float worst_x = 0.0F;
  const auto check = [&](float x) {
    const float f = attention_exp_f32(x);
    const double e = std::exp(static_cast<double>(x));
    // Past FLT_MAX plus half its ulp, round to nearest gives +Inf.
    if (e >= std::ldexp(2.0 - std::ldexp(1.0, -24), 127)) {
      EXPECT_EQ(f, INFINITY) << x;
      return;
    }
    const double error = ulps(f, e);
    if (error > worst) {
      worst = error;
      worst_x = x;
    }
  };
  // Every 2^-12 step over [−104, 89], and a million random points.
  for (double x = -104.0; x <= 89.0; x += 1.0 / 4096) check(static_cast<float>(x));
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> anywhere(-104.0F, 89.0F), small(-1.0F, 1.0F);
  for (int i = 0; i < 1'000'000; ++i) {
    check(anywhere(rng));
    check(small(rng));
  }
  // The softmax's inputs: every non-positive f16 value.
  for (std::uint32_t h = 0x8000; h <= 0xFBFF; ++h) check(f16_to_f32(static_cast<std::uint16_t>(h)));
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
  std::printf("attention_exp_f32: worst error %.3f ulp at x = %.9g\n", worst,
              static_cast<double>(worst_x));
}

TEST(AttentionExp, ExactAndSpecialPoints) {
  EXPECT_EQ(attention_exp_f32(0.0F), 1.0F);
  EXPECT_EQ(attention_exp_f32(-0.0F), 1.0F);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(attention_exp_f32(NAN)), 0x7FC00000u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(attention_exp_f32(-NAN)), 0x7FC00000u);
  EXPECT_EQ(attention_exp_f32(INFINITY), INFINITY);
  EXPECT_EQ(attention_exp_f32(89.5F), INFINITY);
  EXPECT_EQ(attention_exp_f32(88.75F), INFINITY);  // past ln FLT_MAX = 88.7228
  EXPECT_TRUE(std::isfinite(attention_exp_f32(88.72F)));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(attention_exp_f32(-INFINITY)), 0u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(attention_exp_f32(-104.5F)), 0u);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(attention_exp_f32(-65504.0F)), 0u);
  // The subnormal tail rounds once: e^−103.5 ≈ 1.06·2^−150·… is the
  // smallest subnormal or zero, never garbage.
  EXPECT_LE(attention_exp_f32(-103.5F), std::ldexp(1.0F, -148));
  EXPECT_GT(attention_exp_f32(-100.0F), 0.0F);
  // Monotone where the softmax and the merge use it.
  float previous = 0.0F;
  for (float x = -20.0F; x <= 0.0F; x += 1.0F / 1024) {
    const float f = attention_exp_f32(x);
    EXPECT_GE(f, previous) << x;
    previous = f;
  }
}

// The table holds exactly the computation it stands for, and that
// computation is within one f16 ulp (its double rounding) of FP64 e^t
// rounded to f16 for every finite t ≤ 0 — the softmax's inputs.
TEST(AttentionExp, TheF16ExponentialIsTheF32OneRoundedOnce) {
  const AttentionRounding nearest(Rounding::kNearestEven, 0);
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto t = static_cast<std::uint16_t>(h);
    const std::uint16_t expected = nearest.to_f16(attention_exp_f32(f16_to_f32(t)), 0);
    ASSERT_EQ(attention_exp_f16(t), expected) << std::hex << h;
    if (h >= 0x8000 && h <= 0xFBFF) {
      const std::uint16_t exact = f32_to_f16(static_cast<float>(std::exp(f16_to_f32(t))));
      ASSERT_LE(std::abs(int{expected} - int{exact}), 1) << std::hex << h;
    }
  }
  EXPECT_EQ(attention_exp_f16(0x0000), 0x3C00);  // e^0 = 1
  EXPECT_EQ(attention_exp_f16(0x8000), 0x3C00);  // e^−0 = 1
  EXPECT_EQ(attention_exp_f16(0xFBFF), 0x0000);  // e^−65504: a masked column's weight
  EXPECT_EQ(attention_exp_f16(0xFC00), 0x0000);  // e^−Inf
  EXPECT_EQ(attention_exp_f16(0x7E01), kF16QuietNan);
}

TEST(AttentionRounding, NearestEvenWithCanonicalNans) {
  const AttentionRounding nearest(Rounding::kNearestEven, 3);
  std::mt19937 rng(5);
  for (int i = 0; i < 100000; ++i) {
    const auto bits = static_cast<std::uint32_t>(rng());
    const float value = std::bit_cast<float>(bits);
    const std::uint16_t h = nearest.to_f16(value, static_cast<unsigned>(i % 6));
    if (value != value) {
      EXPECT_EQ(h, kF16QuietNan);
    } else {
      EXPECT_EQ(h, f32_bits_to_f16(bits));
    }
  }
  EXPECT_EQ(nearest.to_f16(65520.0F, 0), kF16Infinity);  // rounds past 65504
  EXPECT_EQ(nearest.to_f16(65519.0F, 0), kF16MaxFinite);
}

// The batch rounding (F16C on hosts that have it) gives the bits of the
// one-at-a-time rounding on every pattern class: normals, f32 and f16
// subnormals, ties, overflow, infinities, NaNs; at every length (the vector
// loop's tail).
TEST(AttentionRounding, TheBatchRoundingIsTheScalarOneBitForBit) {
  const AttentionRounding nearest(Rounding::kNearestEven, 0);
  std::mt19937 rng(11);
  std::vector<float> values;
  for (int i = 0; i < 200000; ++i)
    values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  std::uniform_real_distribution<float> f16_range(-70000.0F, 70000.0F), tiny(-1e-4F, 1e-4F);
  for (int i = 0; i < 100000; ++i) {
    values.push_back(f16_range(rng));
    values.push_back(tiny(rng));
  }
  // Every f16 value and the midpoints next to it.
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    const float v = f16_to_f32(static_cast<std::uint16_t>(h));
    values.push_back(v);
    values.push_back(std::nextafter(v, INFINITY));
    values.push_back(-std::nextafter(v, 0.0F));
  }
  for (const std::uint32_t bits : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFF800001u, 0x00000001u,
                                   0x477FF000u, 0x477FEFFFu, 0x33000000u, 0x33000001u}) {
    values.push_back(std::bit_cast<float>(bits));
  }
  for (const std::size_t length : {values.size(), std::size_t{7}, std::size_t{9}, std::size_t{0}}) {
    const std::span<const float> in(values.data(), length);
    std::vector<std::uint16_t> batch(length);
    nearest.to_f16(in, batch, 0);
    for (std::size_t i = 0; i < length; ++i) {
      ASSERT_EQ(batch[i], nearest.to_f16(values[i], 0))
          << std::hex << std::bit_cast<std::uint32_t>(values[i]);
    }
  }
}

}  // namespace
}  // namespace tessera::kernels
