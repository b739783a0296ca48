// The attention kernels' one f32 → f16 rounding (kernels/attention_numerics.hpp):
// to nearest even with canonical NaNs, and its batch form against the scalar
// one bit for bit. Their exponential is activation_math.hpp's exp_f32, tested
// in activation_math_test.cpp.
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
