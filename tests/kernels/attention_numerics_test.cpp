// The attention kernels' one f32 → f16 rounding (kernels/attention_numerics.hpp):
// to nearest even with canonical NaNs, its batch form against the scalar one
// bit for bit, and under stochastic rounding the call's tile streams, one
// draw per value from the owning worker's. Their exponential is
// activation_math.hpp's exp_f32, tested in activation_math_test.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "kernels/attention_numerics.hpp"
#include "kernels/half.hpp"
#include "kernels/rounding.hpp"
#include "tests/kernels/footprint_check.hpp"

namespace tessera::kernels {
namespace {

TEST(AttentionRounding, NearestEvenWithCanonicalNans) {
  testing::RecordingMemory memory(0, {});  // AttentionRounding touches none
  KernelCall call{{}, memory, 0, 0, 3};
  for (const AttentionRounding& nearest : {AttentionRounding(3), AttentionRounding(call)}) {
    EXPECT_EQ(nearest.mode(), Rounding::kNearestEven);
    EXPECT_EQ(nearest.tile(), 3u);
    std::mt19937 rng(5);
    for (int i = 0; i < 100000; ++i) {
      const auto bits = static_cast<std::uint32_t>(rng());
      const float value = std::bit_cast<float>(bits);
      const std::uint16_t h = nearest.to_f16(value, static_cast<unsigned>(i % 6));
      if (value != value) {
        ASSERT_EQ(h, kF16QuietNan);
      } else {
        ASSERT_EQ(h, f32_bits_to_f16(bits));
      }
    }
    EXPECT_EQ(nearest.to_f16(65520.0F, 0), kF16Infinity);  // rounds past 65504
    EXPECT_EQ(nearest.to_f16(65519.0F, 0), kF16MaxFinite);
  }
}

// The batch rounding (f16_vector.hpp's narrow_f16: F16C on hosts that have
// it) gives the bits of the one-at-a-time rounding on every pattern class:
// normals, f32 and f16 subnormals, ties, overflow, infinities, NaNs; at every
// length (the vector loop's tail).
TEST(AttentionRounding, TheBatchRoundingIsTheScalarOneBitForBit) {
  const AttentionRounding nearest(0);
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

// Under stochastic rounding every value takes one draw of the owning
// worker's stream of the call's tile — NaNs too, which stay canonical — and
// the batch form draws in index order: the same bits as rounding.hpp's
// round_f16_stochastic on a copy of the streams.
TEST(AttentionRounding, StochasticDrawsOncePerValueFromTheWorkersStream) {
  testing::RecordingMemory memory(0, {});  // AttentionRounding touches none
  constexpr std::uint32_t kTile = 5;
  TilePrng prng(kTile), expected(kTile);
  KernelCall call{{}, memory, 0, 0, kTile, Rounding::kStochastic, &prng};
  const AttentionRounding rounding(call);
  EXPECT_EQ(rounding.mode(), Rounding::kStochastic);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-70000.0F, 70000.0F);
  std::vector<float> values;
  for (int i = 0; i < 3000; ++i) values.push_back(value(rng));
  values.push_back(NAN);
  values.push_back(std::bit_cast<float>(0xFF800001u));
  bool moved = false;  // some value rounds away from its nearest f16
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto worker = static_cast<unsigned>(i % 6);
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(values[i]);
    const std::uint64_t draw = expected.worker(worker).next();
    const std::uint16_t want =
        values[i] != values[i] ? kF16QuietNan : round_f16_stochastic(bits, draw);
    const std::uint16_t got = rounding.to_f16(values[i], worker);
    ASSERT_EQ(got, want) << i;
    moved = moved || got != f32_bits_to_f16(bits);
  }
  EXPECT_TRUE(moved);
  EXPECT_EQ(prng, expected);  // exactly one draw per value, no more
  std::vector<std::uint16_t> batch(values.size());
  rounding.to_f16(values, batch, 4);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint64_t draw = expected.worker(4).next();
    const std::uint16_t want =
        values[i] != values[i]
            ? kF16QuietNan
            : round_f16_stochastic(std::bit_cast<std::uint32_t>(values[i]), draw);
    ASSERT_EQ(batch[i], want) << i;
  }
  EXPECT_EQ(prng, expected);
}

TEST(AttentionRounding, AStochasticCallWithoutTheTileStreamsIsAHarnessBug) {
  testing::RecordingMemory memory(0, {});  // AttentionRounding touches none
  KernelCall call{{}, memory, 0, 0, 2, Rounding::kStochastic};
  const AttentionRounding rounding(call);
  EXPECT_THROW((void)rounding.to_f16(1.0F, 0), std::logic_error);
}

}  // namespace
}  // namespace tessera::kernels
