// The kernels' element arithmetic against an exact oracle: an f16 sum is
// exact in double (at most 40 significant bits), then rounded by the
// brute-force oracle; NaNs are the canonical quiet NaN.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>

#include "kernels/float_arith.hpp"
#include "tests/kernels/f16_generators.hpp"
#include "tests/kernels/f16_oracle.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;

std::uint16_t oracle_add(std::uint16_t a, std::uint16_t b) {
  if (f16_pattern_is_nan(a) || f16_pattern_is_nan(b)) return kF16QuietNan;
  const double sum = f16_value(a) + f16_value(b);
  return std::isnan(sum) ? kF16QuietNan : f16_nearest(sum);
}

TEST(FloatArith, F16AddOfEveryPatternWithSpecialAddendsIsCorrectlyRounded) {
  const std::uint16_t addends[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00,
                                   0x3C01, 0x1400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01};
  for (std::uint32_t a = 0; a <= 0xFFFF; ++a) {
    for (const std::uint16_t b : addends) {
      const auto left = static_cast<std::uint16_t>(a);
      ASSERT_EQ(add_f16_bits(left, b), oracle_add(left, b)) << std::hex << a << " + " << b;
    }
  }
}

RC_GTEST_PROP(FloatArith, F16AddIsCorrectlyRounded, ()) {
  const std::uint16_t a = *f16_pattern();
  const std::uint16_t b = *f16_pattern();
  RC_ASSERT(add_f16_bits(a, b) == oracle_add(a, b));
}

TEST(FloatArith, SignedZerosAndInfinities) {
  EXPECT_EQ(add_f16_bits(0x8000, 0x8000), 0x8000);  // -0 + -0 = -0
  EXPECT_EQ(add_f16_bits(0x8000, 0x0000), 0x0000);  // -0 + +0 = +0
  EXPECT_EQ(add_f16_bits(0x3C00, 0xBC00), 0x0000);  // 1 + -1 = +0
  EXPECT_EQ(add_f16_bits(0x7BFF, 0x7BFF), 0x7C00);  // overflow to +Inf
  EXPECT_EQ(add_f16_bits(0x7C00, 0xFC00), kF16QuietNan);
  EXPECT_EQ(add_f16_bits(0xFC01, 0x3C00), kF16QuietNan) << "NaN payloads are not propagated";
  EXPECT_EQ(add_f32_bits(0x7F800000u, 0xFF800000u), kF32QuietNan);
  EXPECT_EQ(add_f32_bits(0xFFC01234u, 0x3F800000u), kF32QuietNan);
  EXPECT_EQ(add_f32_bits(0x00000001u, 0x00000001u), 0x00000002u) << "f32 subnormals are kept";
}

RC_GTEST_PROP(FloatArith, F32AddIsTheHostIeeeAddWithCanonicalNans, ()) {
  const std::uint32_t a = *f32_pattern();
  const std::uint32_t b = *f32_pattern();
  const double exact = static_cast<double>(std::bit_cast<float>(a)) + static_cast<double>(std::bit_cast<float>(b));
  const std::uint32_t sum = add_f32_bits(a, b);
  if (std::isnan(exact)) {
    RC_ASSERT(sum == kF32QuietNan);
  } else {
    // Rounding the double sum to float is the correctly rounded f32 sum
    // (53 ≥ 2·24 + 2).
    RC_ASSERT(sum == std::bit_cast<std::uint32_t>(static_cast<float>(exact)));
  }
}

}  // namespace
}  // namespace tessera::kernels
