// kernels/half.hpp against the definition of binary16, exhaustively where the
// space allows and against a brute-force rounding oracle elsewhere.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>

#include "kernels/half.hpp"
#include "tests/kernels/f16_oracle.hpp"

namespace tessera::kernels {
namespace {

using testing::f16_nearest;
using testing::f16_pattern_is_nan;
using testing::f16_value;

TEST(Half, EveryPatternWidensExactlyAndRoundTrips) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const std::uint32_t wide = f16_to_f32_bits(bits);
    ASSERT_EQ(f32_bits_to_f16(wide), bits) << std::hex << h;
    if (f16_pattern_is_nan(bits)) {
      // Sign kept, payload moved to the top of the f32 payload.
      ASSERT_TRUE(std::isnan(std::bit_cast<float>(wide))) << std::hex << h;
      ASSERT_EQ(wide, (std::uint32_t{h & 0x8000u} << 16) | 0x7F800000u | ((h & 0x3FFu) << 13));
    } else {
      ASSERT_EQ(static_cast<double>(std::bit_cast<float>(wide)), f16_value(bits)) << std::hex << h;
      ASSERT_EQ(std::signbit(std::bit_cast<float>(wide)), (h & 0x8000) != 0) << std::hex << h;
    }
  }
}

// The cases rounding gets wrong: each midpoint between adjacent f16 values
// (and the overflow threshold 65520), and the f32 values either side of it.
TEST(Half, MidpointsAndTheirNeighboursRoundLikeTheOracle) {
  for (std::uint32_t h = 0; h < 0x7C00; ++h) {
    const double low = f16_value(static_cast<std::uint16_t>(h));
    const double high = h + 1 < 0x7C00 ? f16_value(static_cast<std::uint16_t>(h + 1)) : 65536.0;
    const float mid = static_cast<float>((low + high) / 2);  // exact: 12 significant bits
    ASSERT_EQ(static_cast<double>(mid), (low + high) / 2);
    for (const float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      for (const float signed_x : {x, -x}) {
        ASSERT_EQ(f32_to_f16(signed_x), f16_nearest(signed_x)) << signed_x;
      }
    }
  }
}

TEST(Half, SpecialValues) {
  // Vectors from the binary16 definition.
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00) << "the tie above 65504 rounds to even: Inf";
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7C00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001) << "smallest subnormal";
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000) << "half of it ties to even zero";
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400) << "largest subnormal carries to normal";
  EXPECT_EQ(f32_to_f16(std::bit_cast<float>(0x00000001u)), 0x0000) << "f32 subnormal";
  EXPECT_EQ(f32_bits_to_f16(0x7FC00000u), kF16QuietNan);
  EXPECT_EQ(f32_bits_to_f16(0xFFC00000u), 0xFE00);
  EXPECT_EQ(f32_bits_to_f16(0x7F800001u), kF16QuietNan) << "a low-payload NaN stays a NaN";
  EXPECT_EQ(f32_bits_to_f16(0x7F802000u), 0x7C01) << "signalling payload kept";
  EXPECT_EQ(f16_to_f32_bits(0x0001), std::bit_cast<std::uint32_t>(std::ldexp(1.0f, -24)));
}

RC_GTEST_PROP(Half, AnyF32RoundsLikeTheOracle, (std::uint32_t bits)) {
  const float x = std::bit_cast<float>(bits);
  const std::uint16_t h = f32_bits_to_f16(bits);
  if (std::isnan(x)) {
    RC_ASSERT(f16_pattern_is_nan(h));
    RC_ASSERT((h & 0x8000) == ((bits >> 16) & 0x8000));
  } else {
    RC_ASSERT(h == f16_nearest(x));
  }
}

RC_GTEST_PROP(Half, F32InF16RangeRoundsLikeTheOracle, (std::uint16_t neighbour, std::uint16_t low_bits)) {
  // Random f32 values near random f16 values: the interesting region.
  const std::uint32_t bits = (f16_to_f32_bits(neighbour) & ~0x1FFFu) | (low_bits & 0x1FFFu);
  const float x = std::bit_cast<float>(bits);
  RC_PRE(!std::isnan(x));
  RC_ASSERT(f32_bits_to_f16(bits) == f16_nearest(x));
}

}  // namespace
}  // namespace tessera::kernels
