// Rounding under both modes (kernels/rounding.hpp): the generator against
// SplitMix64's published vector and the device's seeding, stochastic f16 and
// F143 rounding against brute-force neighbours (always one of the two values
// bracketing the input, exact values untouched), unbiased in expectation
// (fixed seeds, stated tolerances), and deterministic per (tile, worker).
#include "kernels/rounding.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/f143.hpp"
#include "kernels/half.hpp"
#include "tests/kernels/f16_oracle.hpp"

namespace tessera::kernels {
namespace {

using testing::f16_mean_error_in_sigmas;
using testing::f16_neighbours;
using testing::f16_value;

// ---- The generator

// Vigna's reference splitmix64.c seeded with 0 (prng.di.unimi.it): the first
// three outputs.
TEST(RandomStream, IsSplitMix64) {
  RandomStream stream(0);
  EXPECT_EQ(stream.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(stream.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(stream.next(), 0x06C45D188009454FULL);
}

TEST(RandomStream, SkipIsThatManyDraws) {
  RandomStream skipped(12345), drawn(12345);
  skipped.skip(1000);
  for (int i = 0; i < 1000; ++i) drawn.next();
  EXPECT_EQ(skipped, drawn);
  EXPECT_EQ(skipped.next(), drawn.next());
}

// kernels-siglip-f143.md §1.5: seed ((tile + 1) << 3) | worker, 16 warm-up draws.
TEST(TilePrng, SeedsEachWorkerAsTheDeviceDoes) {
  for (const std::uint32_t tile : {0u, 1u, 1471u, 0x5C7u}) {
    TilePrng prng(tile);
    for (unsigned w = 0; w < kWorkerCount; ++w) {
      RandomStream expected((std::uint64_t{tile} + 1) * 8 + w);
      for (int i = 0; i < 16; ++i) expected.next();
      EXPECT_EQ(prng.worker(w), expected) << tile << " " << w;
    }
  }
  EXPECT_EQ(TilePrng::seed(4, 5), 45u);
}

TEST(TilePrng, StreamsOfDifferentTilesAndWorkersDiffer) {
  std::vector<std::uint64_t> firsts;
  for (std::uint32_t tile = 0; tile < 64; ++tile) {
    TilePrng prng(tile);
    for (unsigned w = 0; w < kWorkerCount; ++w) firsts.push_back(prng.worker(w).next());
  }
  std::sort(firsts.begin(), firsts.end());
  EXPECT_EQ(std::adjacent_find(firsts.begin(), firsts.end()), firsts.end());
}

TEST(WorkerStream, OnlyAStochasticCallNeedsTheTileStreams) {
  struct NoMemory final : KernelMemory {
    std::span<std::uint8_t> acquire(unsigned, std::uint64_t, std::uint64_t, Access, SpanUse,
                                    unsigned) override {
      return {};
    }
    void note_read(unsigned, std::uint64_t, std::uint64_t) override {}
    void note_written(unsigned, std::uint64_t, std::uint64_t) override {}
  } memory;
  KernelCall nearest{{}, memory};
  EXPECT_EQ(worker_stream(nearest, 3), nullptr);
  KernelCall stochastic{{}, memory, 0, 0, 7, Rounding::kStochastic};
  EXPECT_THROW(worker_stream(stochastic, 3), std::logic_error);
  TilePrng prng(7);
  stochastic.prng = &prng;
  EXPECT_EQ(worker_stream(stochastic, 3), &prng.worker(3));
}

// ---- f16: the neighbours of a value, by brute force over the encoding
// (tests/kernels/f16_oracle.hpp's f16_neighbours).

rc::Gen<std::uint32_t> finite_f32_in_f16_range() {
  return rc::gen::map(rc::gen::arbitrary<std::uint32_t>(), [](std::uint32_t bits) {
    // Exponents 2^−40 … 2^16 (f16's range and some), any mantissa and sign.
    const std::uint32_t exponent = 87 + (bits >> 23 & 0xFF) % 57;
    return (bits & 0x807FFFFFu) | exponent << 23;
  });
}

RC_GTEST_PROP(StochasticF16, IsOneOfTheTwoNeighbours, ()) {
  const std::uint32_t bits = *rc::gen::weightedOneOf<std::uint32_t>(
      {{4, finite_f32_in_f16_range()}, {1, rc::gen::arbitrary<std::uint32_t>()}});
  const std::uint64_t random = *rc::gen::arbitrary<std::uint64_t>();
  const float x = std::bit_cast<float>(bits);
  if (!std::isfinite(x)) {
    // No rounding happens: half.hpp's conversion.
    RC_ASSERT(round_f16_stochastic(bits, random) == f32_bits_to_f16(bits));
    return;
  }
  const auto [toward, away] = f16_neighbours(static_cast<double>(x));
  const std::uint16_t result = round_f16_stochastic(bits, random);
  RC_ASSERT(result == toward || result == away);
  // A draw below the threshold rounds away from zero: the largest draw never
  // does, the smallest always does — unless the dropped part is below the
  // draw's resolution (f32 subnormals, magnitudes under 2^−65).
  RC_ASSERT(round_f16_stochastic(bits, ~std::uint64_t{0}) == toward);
  const bool resolvable = std::fabs(x) >= std::ldexp(1.0F, -65);
  if (resolvable) RC_ASSERT(round_f16_stochastic(bits, 0) == away);
}

TEST(StochasticF16, ExactValuesAndSpecialsNeverMove) {
  RandomStream stream(99);
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto pattern = static_cast<std::uint16_t>(h);
    const std::uint32_t bits = f16_to_f32_bits(pattern);
    EXPECT_EQ(round_f16_stochastic(bits, stream.next()), pattern) << std::hex << h;
  }
  // ≥ 2^16 is Inf; f32 subnormals are a signed zero.
  EXPECT_EQ(round_f16_stochastic(std::bit_cast<std::uint32_t>(65536.0F), 0), 0x7C00);
  EXPECT_EQ(round_f16_stochastic(std::bit_cast<std::uint32_t>(-1e30F), 0), 0xFC00);
  EXPECT_EQ(round_f16_stochastic(0x80000001u, ~std::uint64_t{0}), 0x8000);
}

// The mean of many stochastic roundings of v is v: with N draws the mean's
// standard deviation is step·√(p(1−p)/N); the tolerance is 4 of them (a fixed
// seed makes the outcome deterministic; a random seed would fail once in
// ~16000 runs).
void expect_unbiased_f16(float value, std::uint64_t seed) {
  constexpr int kDraws = 200000;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  RandomStream stream(seed);
  std::vector<std::uint16_t> samples;
  for (int i = 0; i < kDraws; ++i) samples.push_back(round_f16_stochastic(bits, stream.next()));
  EXPECT_LE(f16_mean_error_in_sigmas(value, samples), 4.0) << value;
}

TEST(StochasticF16, IsUnbiasedInExpectation) {
  expect_unbiased_f16(1.0F + 0.3F / 1024, 1);            // normal, p = 0.3
  expect_unbiased_f16(-3.1415926F, 2);                   // negative
  expect_unbiased_f16(0.7F * std::ldexp(1.0F, -24), 3);  // subnormal step
  expect_unbiased_f16(2.9F * std::ldexp(1.0F, -24), 4);
  expect_unbiased_f16(65510.0F, 5);  // between 65504 and Inf (16 steps)
  expect_unbiased_f16(1000.01F, 6);  // p near 0
  expect_unbiased_f16(0.09999F, 7);
}

// ---- F143: the two codes bracketing x·2^−scale, by brute force over codes.

double f143_code_value(unsigned code) {
  const unsigned e = (code >> 3) & 0xF, m = code & 7;
  const double magnitude =
      e == 0 ? m * std::ldexp(1.0, -10) : (1.0 + m / 8.0) * std::ldexp(1.0, int(e) - 8);
  return (code & 0x80) != 0 ? -magnitude : magnitude;
}

// Codes toward and away from zero for y = |x|·2^−scale < 240 (sign from x).
std::pair<std::uint8_t, std::uint8_t> f143_neighbours(float x, int scale) {
  const double y = std::fabs(static_cast<double>(x)) * std::ldexp(1.0, -scale);
  unsigned toward = 0;
  for (unsigned code = 0; code < 0x80; ++code) {
    if (f143_code_value(code) <= y) toward = code;
  }
  const unsigned away = f143_code_value(toward) == y ? toward : toward + 1;
  const auto sign = static_cast<std::uint8_t>(std::signbit(x) ? 0x80 : 0);
  const auto with_sign = [&](unsigned code) {
    return code == 0 ? std::uint8_t{0} : static_cast<std::uint8_t>(sign | code);
  };
  return {with_sign(toward), with_sign(away)};
}

RC_GTEST_PROP(StochasticF143, IsOneOfTheTwoNeighbouringCodes, ()) {
  const int scale = *rc::gen::inRange(f143::kMinScale, f143::kMaxScale + 1);
  const auto raw = *rc::gen::arbitrary<std::uint32_t>();
  // y = |x|·2^−scale spread over 2^−14 … 2^9, so both the subnormal codes and
  // the saturation are reached.
  const float y = std::ldexp(1.0F + static_cast<float>(raw & 0xFFFFFF) / 16777216.0F,
                             static_cast<int>((raw >> 24) % 24) - 14);
  const float x = (raw & 1) != 0 ? -y * std::ldexp(1.0F, scale) : y * std::ldexp(1.0F, scale);
  const std::uint64_t random = *rc::gen::arbitrary<std::uint64_t>();
  const std::uint8_t result = round_f143_stochastic(x, scale, random);
  if (y >= 240.0F) {
    RC_ASSERT(result == static_cast<std::uint8_t>(std::signbit(x) ? 0xFF : 0x7F));
    return;
  }
  const auto [toward, away] = f143_neighbours(x, scale);
  RC_ASSERT(result == toward || result == away);
  RC_ASSERT(round_f143_stochastic(x, scale, ~std::uint64_t{0}) == toward);
  RC_ASSERT(round_f143_stochastic(x, scale, 0) == away);
}

TEST(StochasticF143, CodecRulesAndExactCodes) {
  RandomStream stream(5);
  for (const int scale : {-32, -7, 0, 9, 31}) {
    for (unsigned code = 0; code < 256; ++code) {
      if (code == f143::kNan) continue;
      const float x = f143::decode(static_cast<std::uint8_t>(code), scale);
      // −0 encodes as +0 (0x80 is the NaN).
      const unsigned expected = code == 0x80 ? 0 : code;
      EXPECT_EQ(round_f143_stochastic(x, scale, stream.next()), expected) << code << " " << scale;
    }
    EXPECT_EQ(round_f143_stochastic(std::numeric_limits<float>::quiet_NaN(), scale, 1), 0x80);
    EXPECT_EQ(round_f143_stochastic(-std::numeric_limits<float>::infinity(), scale, 1), 0xFF);
    EXPECT_EQ(round_f143_stochastic(-0.0F, scale, ~std::uint64_t{0}), 0x00);
    // Negative underflow is +0, never the NaN code.
    EXPECT_EQ(round_f143_stochastic(-std::ldexp(1.0F, scale - 12), scale, ~std::uint64_t{0}), 0x00);
    EXPECT_EQ(round_f143_stochastic(-std::ldexp(1.0F, scale - 12), scale, 0), 0x81);
  }
  EXPECT_THROW(round_f143_stochastic(1.0F, 32, 0), std::invalid_argument);
}

TEST(StochasticF143, IsUnbiasedInExpectation) {
  constexpr int kDraws = 200000;
  const std::pair<float, int> cases[] = {
      {7.3F, 0}, {-0.0031F, 0}, {100.0F, 3}, {1.0e-4F, -5}, {230.0F, 0}};
  std::uint64_t seed = 11;
  for (const auto& [x, scale] : cases) {
    const auto [toward, away] = f143_neighbours(x, scale);
    const double lo = f143_code_value(toward) * std::ldexp(1.0, scale);
    const double hi = f143_code_value(away) * std::ldexp(1.0, scale);
    const double p = (static_cast<double>(x) - lo) / (hi - lo);
    RandomStream stream(seed++);
    double sum = 0;
    for (int i = 0; i < kDraws; ++i) {
      sum +=
          static_cast<double>(f143::decode(round_f143_stochastic(x, scale, stream.next()), scale));
    }
    const double sigma = std::fabs(hi - lo) * std::sqrt(p * (1 - p) / kDraws);
    EXPECT_LE(std::fabs(sum / kDraws - static_cast<double>(x)), 4 * sigma) << x << " p " << p;
  }
}

// ---- F16Rounding: nearest is half.hpp; arithmetic NaNs are canonical; one
// draw per step when stochastic, none otherwise.

TEST(F16Rounding, NearestIsHalfHppAndNaNsAreCanonical) {
  F16Rounding nearest(Rounding::kNearestEven, nullptr);
  for (const float v : {1.0F, 65519.0F, 65520.0F, 1e-8F, -2.5e-8F, 3.0F}) {
    EXPECT_EQ(nearest.round(std::bit_cast<std::uint32_t>(v)), f32_to_f16(v)) << v;
  }
  EXPECT_EQ(nearest.round(0x7F800001u),
            f32_bits_to_f16(0x7F800001u));               // a conversion keeps NaN bits
  EXPECT_EQ(nearest.add(0x7C00, 0xFC00), kF16QuietNan);  // Inf − Inf
  EXPECT_EQ(nearest.mul(0x7C01, 0x3C00), kF16QuietNan);  // NaN payloads are not propagated
  EXPECT_EQ(nearest.sub(0x3C00, 0x3C00), 0x0000);
  EXPECT_EQ(nearest.mul(0x7BFF, 0x4000), 0x7C00);  // 65504·2 overflows
}

TEST(F16Rounding, StochasticTakesOneDrawPerStep) {
  RandomStream stream(3), expected(3);
  F16Rounding rounding(Rounding::kStochastic, &stream);
  (void)rounding.add(0x3C00, 0x3C00);
  (void)rounding.mul(0x7C01, 0x3C00);  // a NaN still takes its draw
  (void)rounding.round(std::bit_cast<std::uint32_t>(1.0F));
  expected.skip(3);
  EXPECT_EQ(stream, expected);
  // 1 + 2^−12 is a quarter of the way from 1 to the next f16, 1 + 2^−10.
  RandomStream mean_stream(4);
  F16Rounding quarter(Rounding::kStochastic, &mean_stream);
  int ups = 0;
  for (int i = 0; i < 40000; ++i)
    ups += quarter.add(0x3C00, 0x0C00) == 0x3C01 ? 1 : 0;  // 1 + 2^−12
  // p = 1/4, σ = √(0.25·0.75/40000) ≈ 0.0022: within 4σ.
  EXPECT_NEAR(ups / 40000.0, 0.25, 0.0087);
}

}  // namespace
}  // namespace tessera::kernels
