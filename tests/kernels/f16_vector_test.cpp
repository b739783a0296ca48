// Bulk f16 <-> f32 conversion (kernels/f16_vector.hpp): the F16C path and the
// scalar path give half.hpp's bits for every f16 pattern and for f32 inputs
// covering every rounding case, NaN payloads included.
#include "kernels/f16_vector.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>
#include <vector>

#include "kernels/float_arith.hpp"
#include "kernels/half.hpp"

namespace tessera::kernels {
namespace {

using namespace f16_vector_detail;

// f32 inputs: every f16 value, every midpoint between neighbours (and one
// f32 step either side), the overflow edge, NaNs of every kind, random bits.
std::vector<float> narrowing_inputs() {
  std::vector<std::uint32_t> bits;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const std::uint32_t f = f16_to_f32_bits(static_cast<std::uint16_t>(h));
    bits.push_back(f);
    if ((h & 0x7FFF) < 0x7C00) {
      // The midpoint towards the next magnitude: the f16 value plus half a step.
      const std::uint32_t next = f16_to_f32_bits(static_cast<std::uint16_t>(h + 1));
      const float mid = (std::bit_cast<float>(f) + std::bit_cast<float>(next)) / 2;
      const std::uint32_t m = std::bit_cast<std::uint32_t>(mid);
      bits.insert(bits.end(), {m, m - 1, m + 1});
    }
  }
  for (const std::uint32_t special :
       {0x477FF000u, 0x477FEFFFu, 0x477FF001u, 0x7F800001u, 0xFF800001u, 0x7FC00000u, 0x7F802000u,
        0xFFFFFFFFu, 0x7FBFFFFFu, 0x00000001u, 0x80000001u, 0x33000000u, 0x33000001u,
        0xB3000000u}) {
    bits.push_back(special);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) bits.push_back(static_cast<std::uint32_t>(rng()));
  std::vector<float> values;
  for (const std::uint32_t b : bits) values.push_back(std::bit_cast<float>(b));
  return values;
}

std::vector<std::uint16_t> every_f16() {
  std::vector<std::uint16_t> all(0x10000);
  for (std::uint32_t h = 0; h < all.size(); ++h) all[h] = static_cast<std::uint16_t>(h);
  return all;
}

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits;
  for (const float v : values) bits.push_back(std::bit_cast<std::uint32_t>(v));
  return bits;
}

TEST(F16Vector, WideningIsHalfHppForEveryPattern) {
  const auto in = every_f16();
  std::vector<float> scalar(in.size()), vector(in.size()), dispatched(in.size());
  widen_scalar(in.data(), scalar.data(), in.size());
  widen_f16(in.data(), dispatched.data(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(scalar[i]), f16_to_f32_bits(in[i])) << i;
  }
  EXPECT_EQ(bits_of(dispatched), bits_of(scalar));
  if (!host_has_f16c()) GTEST_SKIP() << "the host has no F16C: only the scalar path runs";
  // Odd lengths and offsets exercise the scalar tails.
  for (const std::size_t offset : {0u, 3u}) {
    const std::size_t n = in.size() - offset - 5;
    std::vector<float> part(n);
    widen_f16c(in.data() + offset, part.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(part[i]), f16_to_f32_bits(in[offset + i])) << i;
    }
  }
}

TEST(F16Vector, NarrowingIsHalfHppForEveryRoundingCase) {
  const auto in = narrowing_inputs();
  std::vector<std::uint16_t> scalar(in.size()), dispatched(in.size());
  narrow_scalar(in.data(), scalar.data(), in.size());
  narrow_f16(in.data(), dispatched.data(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) ASSERT_EQ(scalar[i], f32_to_f16(in[i])) << i;
  EXPECT_EQ(dispatched, scalar);
  if (!host_has_f16c()) GTEST_SKIP() << "the host has no F16C: only the scalar path runs";
  std::vector<std::uint16_t> vector(in.size() - 3);
  narrow_f16c(in.data() + 3, vector.data(), vector.size());
  for (std::size_t i = 0; i < vector.size(); ++i) ASSERT_EQ(vector[i], scalar[i + 3]) << i;
}

TEST(F16Vector, RoundingToTheGridIsNarrowThenWiden) {
  const auto in = narrowing_inputs();
  std::vector<float> scalar = in, dispatched = in, vector = in;
  round_scalar(scalar.data(), scalar.size());
  round_to_f16_grid(dispatched.data(), dispatched.size());
  if (host_has_f16c()) round_f16c(vector.data(), vector.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != in[i]) {  // a NaN stays a NaN
      ASSERT_NE(dispatched[i], dispatched[i]);
      ASSERT_NE(vector[i], vector[i]);
      continue;
    }
    const std::uint32_t expected = f16_to_f32_bits(f32_to_f16(in[i]));
    ASSERT_EQ(std::bit_cast<std::uint32_t>(scalar[i]), expected) << i;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(dispatched[i]), expected) << i;
    if (host_has_f16c()) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(vector[i]), expected) << i;
    }
  }
}

TEST(F16Vector, CanonicalNaNsNarrowToTheQuietNaN) {
  std::vector<float> values = {std::bit_cast<float>(0x7F800001u), std::bit_cast<float>(0xFFC01234u),
                               1.5F, -0.0F};
  canonicalize_nans(values.data(), values.size());
  std::vector<std::uint16_t> out(values.size());
  narrow_f16(values.data(), out.data(), values.size());
  EXPECT_EQ(out, (std::vector<std::uint16_t>{0x7E00, 0x7E00, 0x3E00, 0x8000}));
}

// LayerNorm's affine step: the F16C path and the scalar path give the same
// bits, and the scalar path is four f16 operations, each rounded once.
TEST(F16Vector, NormaliseAffineIsFourRoundedF16OperationsOnEveryPath) {
  const auto inputs = narrowing_inputs();
  std::vector<float> x, g, b;
  std::mt19937 rng(11);
  for (std::size_t i = 0; i + 2 < inputs.size(); i += 3) {
    // f16 values (as LayerNorm holds them), specials included.
    x.push_back(f16_to_f32(f32_to_f16(inputs[i])));
    g.push_back(f16_to_f32(f32_to_f16(inputs[i + 1])));
    b.push_back(f16_to_f32(static_cast<std::uint16_t>(rng())));
  }
  for (const auto& [m, s] :
       {std::pair{0.5F, 2.0F}, std::pair{-3.25F, 1000.0F}, std::pair{0.0F, 0.0F}}) {
    std::vector<std::uint16_t> scalar(x.size()), dispatched(x.size());
    normalise_affine_scalar(x.data(), m, s, g.data(), b.data(), scalar.data(), x.size());
    normalise_affine_f16(x.data(), m, s, g.data(), b.data(), dispatched.data(), x.size());
    EXPECT_EQ(dispatched, scalar);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto round = [](float v) { return f16_to_f32(f32_to_f16(v)); };
      const float y = round(round(round(x[i] - m) * s) * g[i]) + b[i];
      ASSERT_EQ(scalar[i], y != y ? 0x7E00 : f32_to_f16(y)) << i;
    }
    if (host_has_f16c()) {
      std::vector<std::uint16_t> vector(x.size() - 5);
      normalise_affine_f16c(x.data() + 5, m, s, g.data() + 5, b.data() + 5, vector.data(),
                            vector.size());
      EXPECT_TRUE(std::equal(vector.begin(), vector.end(), scalar.begin() + 5));
    }
  }
}

// The f16 add: every f16 pattern against shuffled patterns (NaNs of every
// kind, infinities, subnormals, ties, overflow), on the F16C path and the
// dispatched one, exactly float_arith.hpp's add_f16_bits; in place too.
TEST(F16Vector, AddIsFloatArithsF16AddForEveryPattern) {
  const auto a = every_f16();
  std::vector<std::uint16_t> b = a;
  std::mt19937 rng(5);
  std::vector<std::uint16_t> expected(a.size());
  for (int round = 0; round < 4; ++round) {
    std::shuffle(b.begin(), b.end(), rng);
    for (std::size_t i = 0; i < a.size(); ++i) expected[i] = add_f16_bits(a[i], b[i]);
    std::vector<std::uint16_t> dispatched(a.size()), scalar(a.size());
    add_f16(a.data(), b.data(), dispatched.data(), a.size());
    add_scalar(a.data(), b.data(), scalar.data(), a.size());
    ASSERT_EQ(dispatched, expected);
    ASSERT_EQ(scalar, expected);
    std::vector<std::uint16_t> in_place = a;
    add_f16(in_place.data(), b.data(), in_place.data(), a.size());
    ASSERT_EQ(in_place, expected);
    if (host_has_f16c()) {
      // An odd offset and length exercise the scalar tail.
      std::vector<std::uint16_t> vector(a.size() - 8);
      add_f16c(a.data() + 3, b.data() + 3, vector.data(), vector.size());
      ASSERT_TRUE(std::equal(vector.begin(), vector.end(), expected.begin() + 3));
    }
  }
}

}  // namespace
}  // namespace tessera::kernels
