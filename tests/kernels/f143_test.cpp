// The F143 codec and its block scales against the reference's vectors and an
// independent brute-force oracle (the nearest of the 255 finite codes).
#include "kernels/f143.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace tessera::kernels::f143 {
namespace {

// The value of a code at scale 0 from its bit fields, in double (the oracle's
// own decoding, not the codec's).
double value_of(unsigned code) {
  const double sign = (code & 0x80) != 0 ? -1.0 : 1.0;
  const unsigned e = (code >> 3) & 0xF, m = code & 7;
  return sign * (e == 0 ? m * std::ldexp(1.0, -10) : (1.0 + m / 8.0) * std::ldexp(1.0, int(e) - 8));
}

// Nearest finite code to x·2^−scale; ties to the even code (mantissa LSB 0).
std::uint8_t nearest_code(float x, int scale) {
  if (std::isnan(x)) return 0x80;
  const double y = static_cast<double>(x) * std::ldexp(1.0, -scale);
  // Past the largest code the nearest is the largest code (said here so that
  // huge distances, which double cannot tell apart, do not decide).
  if (std::fabs(y) >= 240.0) return std::signbit(x) ? 0xFF : 0x7F;
  unsigned best = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (unsigned code = 0; code < 256; ++code) {
    if (code == 0x80) continue;
    const double distance = std::fabs(value_of(code) - y);
    if (distance < best_distance || (distance == best_distance && (code & 1) == 0)) {
      best = code;
      best_distance = distance;
    }
  }
  return static_cast<std::uint8_t>(best);
}

// kernels-siglip-f143.md §3, scale 0.
TEST(F143, ReferenceVectors) {
  const std::pair<float, std::uint8_t> vectors[] = {{7.0F, 0x56}, {7.25F, 0x56}, {7.5F, 0x57},
                                                     {7.75F, 0x58}, {8.0F, 0x58}, {8.5F, 0x58},
                                                     {9.0F, 0x59}, {9.5F, 0x5A}};
  for (const auto& [x, code] : vectors) EXPECT_EQ(encode(x, 0), code) << x;
}

TEST(F143, SpecialValues) {
  EXPECT_EQ(encode(std::numeric_limits<float>::quiet_NaN(), 0), kNan);
  EXPECT_EQ(encode(0.0F, 5), 0x00);
  EXPECT_EQ(encode(-0.0F, 5), 0x00) << "negative zero is +0, never the NaN code";
  EXPECT_EQ(encode(-1e-9F, 0), 0x00) << "negative underflow is +0";
  EXPECT_EQ(encode(240.0F, 0), 0x7F);
  EXPECT_EQ(encode(1e30F, 0), 0x7F);
  EXPECT_EQ(encode(-std::numeric_limits<float>::infinity(), 0), 0xFF);
  EXPECT_EQ(encode(0.0078125F, 0), 0x08) << "2^-7, the smallest normal";
  EXPECT_EQ(encode(7.5F / 1024, 0), 0x08) << "the subnormal carry into the normals";
  EXPECT_EQ(encode(232.0F, 0), 0x7E) << "a tie below 240 goes to the even code";
  EXPECT_TRUE(std::isnan(decode(kNan, 0)));
  EXPECT_EQ(decode(0x7F, 0), 240.0F);
  EXPECT_EQ(decode(0x01, 0), std::ldexp(1.0F, -10));
  EXPECT_EQ(decode(0x7F, 31), 240.0F * std::ldexp(1.0F, 31));
  EXPECT_EQ(decode(0x01, -32), std::ldexp(1.0F, -42));
}

TEST(F143, EveryFiniteCodeRoundTripsAtEveryScale) {
  for (int scale = kMinScale; scale <= kMaxScale; ++scale) {
    for (unsigned code = 0; code < 256; ++code) {
      if (code == kNan) continue;
      const float value = decode(static_cast<std::uint8_t>(code), scale);
      EXPECT_EQ(value, static_cast<float>(value_of(code) * std::ldexp(1.0, scale))) << code;
      EXPECT_EQ(encode(value, scale), code) << "code " << code << " at scale " << scale;
    }
  }
}

TEST(F143, ScalesOutsideTheFieldAreRefused) {
  EXPECT_THROW((void)encode(1.0F, 32), std::invalid_argument);
  EXPECT_THROW((void)decode(1, -33), std::invalid_argument);
}

RC_GTEST_PROP(F143, EncodeIsTheNearestCode, ()) {
  const int scale = *rc::gen::inRange(kMinScale, kMaxScale + 1);
  // Values spread over the whole range at this scale, and plain arbitrary floats.
  const float x = *rc::gen::oneOf(
      rc::gen::map(rc::gen::pair(rc::gen::inRange(-20, 10), rc::gen::arbitrary<std::int32_t>()),
                   [scale](std::pair<int, std::int32_t> p) {
                     const double unit = std::ldexp(1.0, p.first + scale);
                     return static_cast<float>(unit * (static_cast<double>(p.second) / 2147483648.0));
                   }),
      rc::gen::arbitrary<float>());
  RC_ASSERT(encode(x, scale) == nearest_code(x, scale));
}

TEST(F143, ChosenScaleBringsTheLargestValueInto120To240) {
  for (const float largest : {1e-30F, 3.0e-12F, 0.001F, 0.5F, 1.0F, 119.9F, 120.0F, 120.5F, 240.0F,
                              240.1F, 1e6F, 4.9e11F, 1e20F}) {
    const std::vector<float> values = {0.0F, -largest / 2, largest, -largest};
    const int scale = choose_scale(values);
    const double scaled = static_cast<double>(largest) * std::ldexp(1.0, -scale);
    if (scale > kMinScale && scale < kMaxScale) {
      EXPECT_GT(scaled, 120.0) << largest;
      EXPECT_LE(scaled, 240.0) << largest;
    } else if (scale == kMaxScale) {
      EXPECT_GT(scaled, 120.0) << largest;
    } else {
      EXPECT_LE(scaled, 240.0) << largest;
    }
  }
  EXPECT_EQ(choose_scale(std::vector<float>{0.0F, -0.0F}), 0);
  EXPECT_EQ(choose_scale(std::vector<float>{}), 0);
  EXPECT_EQ(choose_scale(std::vector<float>{1.0F, std::numeric_limits<float>::infinity()}),
            kMaxScale);
  EXPECT_EQ(choose_scale(std::vector<float>{std::numeric_limits<float>::quiet_NaN(), 240.0F}), 0);
}

TEST(F143, BlockScalesCoverA64By64GridWithPartialEdges) {
  // 130 × 70: 3 × 2 blocks; block (i, j) holds values of magnitude 2^(i + 2j).
  const std::uint32_t inner = 130, columns = 70;
  std::vector<float> weight(std::size_t{inner} * columns);
  for (std::uint32_t k = 0; k < inner; ++k) {
    for (std::uint32_t n = 0; n < columns; ++n) {
      weight[std::size_t{k} * columns + n] = std::ldexp(1.0F, int(k / 64 + 2 * (n / 64)));
    }
  }
  const BlockScales scales = BlockScales::choose(weight, inner, columns);
  EXPECT_EQ(scales.block_rows(), 3u);
  EXPECT_EQ(scales.block_columns(), 2u);
  for (std::uint32_t i = 0; i < 3; ++i) {
    for (std::uint32_t j = 0; j < 2; ++j) {
      const float largest = std::ldexp(1.0F, int(i + 2 * j));
      EXPECT_EQ(scales.block_scale(i, j), choose_scale(std::vector<float>{largest}));
    }
  }
  EXPECT_EQ(scales.scale_at(129, 69), scales.block_scale(2, 1));
  const auto codes = encode(weight, scales);
  EXPECT_EQ(decode(codes, scales), weight) << "powers of two are exact";
  EXPECT_THROW(BlockScales(inner, columns, std::vector<std::int8_t>(5)), std::invalid_argument);
  EXPECT_THROW(BlockScales(64, 64, std::vector<std::int8_t>{32}), std::invalid_argument);
}

}  // namespace
}  // namespace tessera::kernels::f143
