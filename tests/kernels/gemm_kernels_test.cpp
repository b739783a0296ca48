// The GEMM kernels called through the simulator, against a CPU reference
// written here from kernels/README.md's semantics (independent of the
// models: it uses amp_layout.hpp only to pack and unpack, half.hpp and the
// F143 codec only to convert): bit for bit on random data and edge shapes,
// special values, padded K, the per-pass f16 rounding, the hiho error bound
// against an FP64 product, and the two F143 paths with their block scales.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "kernels/amp_layout.hpp"
#include "kernels/f143.hpp"
#include "kernels/half.hpp"
#include "support/error.hpp"
#include "tests/kernels/gemm_testing.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;

constexpr GemmFamily kFamilies[] = {GemmFamily::kF32, GemmFamily::kF16,
                                    GemmFamily::kF16ExpandedF143, GemmFamily::kF143};
constexpr GemmVariant kVariants[] = {GemmVariant::kInit, GemmVariant::kAccumulate};

// ---- The CPU reference: gemm_testing.hpp's gemm_reference (the semantics
// above, written from kernels/README.md "GEMM").

// ---- Data

// Finite values of moderate size, and with probability `special` one of the
// family's special values (NaN, ±Inf, subnormals, the largest finite ones).
class Values {
 public:
  Values(std::uint64_t seed, double special) : rng_(seed), special_(special) {}

  std::uint32_t next(GemmFamily family) {
    std::bernoulli_distribution is_special(special_);
    switch (family) {
      case GemmFamily::kF32: {
        if (is_special(rng_)) {
          return pick({0x7FC00000u, 0x7F800000u, 0xFF800000u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu,
                       0xFF7FFFFFu, 0x80000000u});
        }
        return std::bit_cast<std::uint32_t>(std::uniform_real_distribution<float>(-4, 4)(rng_));
      }
      case GemmFamily::kF16:
      case GemmFamily::kF16ExpandedF143: {
        if (is_special(rng_)) {
          return pick(
              {0x7E00u, 0xFE01u, 0x7C00u, 0xFC00u, 0x0001u, 0x83FFu, 0x7BFFu, 0xFBFFu, 0x8000u});
        }
        // sign | exponent 10..17 (2^-5 .. 2^2) | mantissa
        const std::uint32_t sign = std::uniform_int_distribution<std::uint32_t>(0, 1)(rng_);
        const std::uint32_t exponent = std::uniform_int_distribution<std::uint32_t>(10, 17)(rng_);
        const std::uint32_t mantissa = std::uniform_int_distribution<std::uint32_t>(0, 0x3FF)(rng_);
        return sign << 15 | exponent << 10 | mantissa;
      }
      case GemmFamily::kF143: {
        if (is_special(rng_)) return pick({0x80u, 0x7Fu, 0xFFu, 0x01u, 0x81u});
        const auto code = std::uniform_int_distribution<std::uint32_t>(0, 255)(rng_);
        return code == 0x80 ? 0 : code;
      }
    }
    return 0;
  }
  std::vector<std::uint32_t> many(GemmFamily family, std::size_t n) {
    std::vector<std::uint32_t> values(n);
    for (auto& v : values) v = next(family);
    return values;
  }
  // Partials: f32 values for f32, f16 otherwise.
  std::vector<std::uint32_t> partials(GemmFamily family, std::size_t n) {
    return many(family == GemmFamily::kF32 ? GemmFamily::kF32 : GemmFamily::kF16, n);
  }

 private:
  std::uint32_t pick(std::initializer_list<std::uint32_t> choices) {
    const auto i = std::uniform_int_distribution<std::size_t>(0, choices.size() - 1)(rng_);
    return *(choices.begin() + static_cast<std::ptrdiff_t>(i));
  }
  std::mt19937_64 rng_;
  double special_;
};

GemmOperands random_gemm(GemmFamily family, GemmVariant variant, std::uint32_t rows,
                         std::uint32_t inner, std::uint32_t columns, std::uint64_t seed,
                         double special = 0.0) {
  Values values(seed, special);
  GemmOperands call;
  call.family = family;
  call.variant = variant;
  call.rows = rows;
  call.inner = inner;
  call.columns = columns;
  // F143 products reach 240² = 57600: scale them into the f16 range.
  call.scale = family == GemmFamily::kF143 ? -12 - static_cast<std::int32_t>(seed % 8) : 0;
  call.left = values.many(family, std::size_t{rows} * inner);
  call.weights = values.many(family, std::size_t{inner} * columns);
  if (variant == GemmVariant::kAccumulate) {
    call.partials = values.partials(family, std::size_t{rows} * columns);
  }
  return call;
}

std::string describe(const GemmOperands& c) {
  return std::string(c.kernel()) + " rows " + std::to_string(c.rows) + " K " +
         std::to_string(c.inner) + " N " + std::to_string(c.columns);
}

// ---- Results, bit for bit

RC_GTEST_PROP(GemmKernels, EveryFamilyMatchesTheReferenceBitForBit, ()) {
  const GemmFamily family =
      *rc::gen::elementOf(std::vector<GemmFamily>(std::begin(kFamilies), std::end(kFamilies)));
  const GemmVariant variant = *rc::gen::element(GemmVariant::kInit, GemmVariant::kAccumulate);
  const GemmFormat f = gemm_format(family);
  const std::uint32_t columns =
      family == GemmFamily::kF32 ? 64u : *rc::gen::element(32u, 64u, 128u);
  const std::uint32_t inner = f.pass * *rc::gen::inRange(1u, 7u);
  const std::uint32_t rows =
      *rc::gen::inRange(kGemmMinimumRows, gemm_maximum_rows(family, inner, columns) + 1);
  const double special = *rc::gen::element(0.0, 0.01, 0.1);
  const auto call = random_gemm(family, variant, rows, inner, columns,
                                *rc::gen::arbitrary<std::uint64_t>(), special);
  RC_ASSERT(run_gemm(call) == gemm_reference(call));
}

// rows 12, 13 and 6k+1 (a worker with one row more than the others), K of
// one pass, several passes and not a multiple of 64, every N.
TEST(GemmKernels, EdgeShapesMatchTheReference) {
  std::uint64_t seed = 1;
  for (const GemmFamily family : kFamilies) {
    const unsigned pass = gemm_format(family).pass;
    for (const std::uint32_t inner : {pass, 3 * pass, 5 * pass}) {
      for (const std::uint32_t columns : {32u, 64u, 128u}) {
        if (!gemm_columns_supported(family, columns)) continue;
        for (const std::uint32_t rows : {12u, 13u, 19u, 43u, 127u}) {
          if (rows > gemm_maximum_rows(family, inner, columns)) continue;
          for (const GemmVariant variant : kVariants) {
            const auto call = random_gemm(family, variant, rows, inner, columns, ++seed);
            ASSERT_EQ(run_gemm(call), gemm_reference(call)) << describe(call);
          }
        }
      }
    }
  }
}

// The f16 family's other widths: attention's QK (N = key block columns: 16
// for one key row, 96 for SigLIP's 92-row blocks) and PV (N = the padded head
// dimension, 80).
TEST(GemmKernels, TheF16GemmComputesEveryMultipleOf16UpTo128) {
  std::uint64_t seed = 50;
  for (std::uint32_t columns = 16; columns <= 128; columns += 16) {
    ASSERT_TRUE(gemm_columns_supported(GemmFamily::kF16, columns));
    for (const std::uint32_t inner : {16u, 80u, 96u}) {
      for (const std::uint32_t rows : {12u, 13u}) {
        for (const GemmVariant variant : kVariants) {
          const auto call =
              random_gemm(GemmFamily::kF16, variant, rows, inner, columns, ++seed, 0.01);
          ASSERT_EQ(run_gemm(call), gemm_reference(call)) << describe(call);
        }
      }
    }
  }
  for (const std::uint32_t columns : {0u, 8u, 40u, 144u}) {
    EXPECT_FALSE(gemm_columns_supported(GemmFamily::kF16, columns)) << columns;
  }
  for (const std::uint32_t columns : {16u, 48u, 80u, 96u}) {
    EXPECT_FALSE(gemm_columns_supported(GemmFamily::kF16ExpandedF143, columns)) << columns;
    EXPECT_FALSE(gemm_columns_supported(GemmFamily::kF143, columns)) << columns;
  }
}

TEST(GemmKernels, TheLargestShardOfEachShapeMatchesTheReference) {
  std::uint64_t seed = 100;
  for (const GemmFamily family : kFamilies) {
    for (const std::uint32_t columns : {32u, 64u, 128u}) {
      if (!gemm_columns_supported(family, columns)) continue;
      const std::uint32_t inner = 64;
      const std::uint32_t rows = gemm_maximum_rows(family, inner, columns);
      const auto call = random_gemm(family, GemmVariant::kAccumulate, rows, inner, columns, ++seed);
      EXPECT_EQ(run_gemm(call), gemm_reference(call)) << describe(call);
    }
  }
  // §1.1: 129 rows for f16 at K = N = 64.
  EXPECT_EQ(gemm_maximum_rows(GemmFamily::kF16, 64, 64), 129u);
  EXPECT_EQ(gemm_maximum_rows(GemmFamily::kF16, 64, 128), 128u);
  EXPECT_EQ(gemm_maximum_rows(GemmFamily::kF32, 64, 64), 64u);
  EXPECT_EQ(gemm_maximum_rows(GemmFamily::kF143, 64, 64), 256u);
}

// Logical K not a multiple of the pass (40, head dim 72, 100): the producer
// pads A's columns and B's rows with zeros to whole passes, which adds exact
// zeros — the result is the reference over the logical K, whose last pass
// is simply shorter.
TEST(GemmKernels, ZeroPaddedKIsTheLogicalProduct) {
  std::uint64_t seed = 200;
  for (const GemmFamily family : kFamilies) {
    const unsigned pass = gemm_format(family).pass;
    for (const std::uint32_t logical : {40u, 72u, 100u}) {
      const auto inner = static_cast<std::uint32_t>(amp::padded_inner(logical, pass));
      const std::uint32_t columns = 64;
      GemmOperands unpadded =
          random_gemm(family, GemmVariant::kAccumulate, 13, logical, columns, ++seed);
      GemmOperands padded = unpadded;
      padded.inner = inner;
      padded.left.assign(std::size_t{padded.rows} * inner, 0);
      for (std::uint32_t r = 0; r < padded.rows; ++r) {
        std::copy_n(unpadded.left.begin() + std::ptrdiff_t{r} * logical, logical,
                    padded.left.begin() + std::ptrdiff_t{r} * inner);
      }
      padded.weights.resize(std::size_t{inner} * columns, 0);
      EXPECT_EQ(run_gemm(padded), gemm_reference(unpadded))
          << describe(padded) << " of " << logical;
    }
  }
}

// ---- The hiho semantics, by hand

TEST(GemmKernels, HihoRoundsThePartialToF16AfterEveryPass) {
  // Row 0, column 0: pass 1 sums 1 + 2^-11 (a tie: rounds to 1), pass 2 adds
  // 2^-11 to that 1 (a tie again: 1). f32 partials would give 1 + 2^-10.
  for (const GemmVariant variant : kVariants) {
    GemmOperands call = zero_gemm(GemmFamily::kF16, variant, 12, 32, 32);
    call.left[0] = 0x3C00;   // A(0, 0) = 1
    call.left[1] = 0x1000;   // A(0, 1) = 2^-11
    call.left[16] = 0x1000;  // A(0, 16) = 2^-11
    for (const std::uint32_t k : {0u, 1u, 16u}) call.weights[std::size_t{k} * 32] = 0x3C00;
    EXPECT_EQ(run_gemm(call)[0], 0x3C00u);
    GemmOperands f32 = zero_gemm(GemmFamily::kF32, variant, 12, 32, 64);
    for (const std::uint32_t k : {0u, 1u, 16u}) {
      f32.left[k] =
          std::bit_cast<std::uint32_t>(f16_to_f32(static_cast<std::uint16_t>(call.left[k])));
      f32.weights[std::size_t{k} * 64] = std::bit_cast<std::uint32_t>(1.0F);
    }
    EXPECT_EQ(std::bit_cast<float>(run_gemm(f32)[0]), 1.0F + std::ldexp(1.0F, -10));
  }
}

TEST(GemmKernels, AnF16PartialThatOverflowsStaysInfinite) {
  // Pass 1: 65504 + 32 = 65536 rounds past 65504 to +Inf; pass 2 subtracts
  // 65504, which f32 partials would bring back to 32.
  GemmOperands call = zero_gemm(GemmFamily::kF16, GemmVariant::kInit, 12, 32, 32);
  call.left[0] = 0x7BFF;   // 65504
  call.left[1] = 0x5000;   // 32
  call.left[16] = 0xFBFF;  // -65504
  for (const std::uint32_t k : {0u, 1u, 16u}) call.weights[std::size_t{k} * 32] = 0x3C00;
  const auto out = run_gemm(call);
  EXPECT_EQ(out[0], 0x7C00u);
  EXPECT_EQ(out[1], 0x0000u);  // +0: the init variant starts from +0
}

TEST(GemmKernels, SpecialValuesPropagateAsTheReferenceSays) {
  constexpr std::uint32_t N = 32;
  GemmOperands call = zero_gemm(GemmFamily::kF16, GemmVariant::kAccumulate, 12, 16, N);
  call.weights[0] = 0x7BFF;           // B(0, 0) = 65504
  call.weights[1] = 0x0001;           // B(0, 1) = 2^-24, the smallest subnormal
  call.weights[2] = 0x3C00;           // B(0, 2) = 1
  call.left[0 * 16] = 0x7C00;         // row 0: A(0, 0) = +Inf
  call.left[1 * 16] = 0x7BFF;         // row 1: A(1, 0) = 65504
  call.left[2 * 16] = 0x0001;         // row 2: A(2, 0) = 2^-24
  call.partials[2 * N + 1] = 0x0003;  //        a subnormal partial
  call.partials[3 * N + 0] = 0xFE01;  // row 3: a NaN partial with a payload
  for (std::uint32_t k = 0; k < 16; ++k) call.left[4 * 16 + k] = 0x8000;  // row 4: A = -0
  call.partials[4 * N + 2] = 0x8000;
  const auto out = run_gemm(call);
  EXPECT_EQ(out, gemm_reference(call));
  EXPECT_EQ(out[0 * N + 0], 0x7C00u);  // Inf·65504
  EXPECT_EQ(out[0 * N + 1], 0x7C00u);  // Inf·2^-24
  EXPECT_EQ(out[0 * N + 3], 0x7E00u);  // Inf·0
  EXPECT_EQ(out[1 * N + 0], 0x7C00u);  // 65504² is finite in f32, not in f16
  EXPECT_EQ(out[1 * N + 2], 0x7BFFu);  // 65504·1
  EXPECT_EQ(out[1 * N + 1], f32_to_f16(65504.0F * std::ldexp(1.0F, -24)));
  EXPECT_EQ(out[2 * N + 1], 0x0003u);  // the subnormal partial survives; 2^-48 does not
  EXPECT_EQ(out[3 * N + 0], 0x7E00u);  // NaN, canonical
  EXPECT_EQ(out[4 * N + 2], 0x8000u);  // -0 + (-0)·… stays -0
  EXPECT_EQ(out[4 * N + 0], 0x0000u);  // +0 + (-0) is +0
}

// ---- f16 (and F143) against an FP64 product: the hiho error bound
// (gemm_testing.hpp's hiho_bound, kernels/README.md).

TEST(GemmKernels, F16ErrorAgainstAnFp64ProductIsWithinTheHihoBound) {
  std::mt19937_64 rng(0x05EEDF16);
  for (const std::uint32_t inner : {16u, 64u, 80u, 256u, 688u}) {
    for (const GemmVariant variant : kVariants) {
      // The prior art's test data: activations σ 0.5, weights σ 1/√K.
      std::normal_distribution<float> activation(0.0F, 0.5F);
      std::normal_distribution<float> weight(0.0F, 1.0F / std::sqrt(static_cast<float>(inner)));
      GemmOperands call = zero_gemm(GemmFamily::kF16, variant, 12, inner, 32);
      for (auto& a : call.left) a = f32_to_f16(activation(rng));
      for (auto& b : call.weights) b = f32_to_f16(weight(rng));
      for (auto& c : call.partials) c = f32_to_f16(activation(rng));
      const auto out = run_gemm(call);
      double worst = 0;
      for (std::uint32_t r = 0; r < call.rows; ++r) {
        for (std::uint32_t n = 0; n < call.columns; ++n) {
          const std::size_t at = std::size_t{r} * call.columns + n;
          double exact = 0, magnitude = 0;
          if (variant == GemmVariant::kAccumulate) {
            exact = static_cast<double>(f16_to_f32(static_cast<std::uint16_t>(call.partials[at])));
            magnitude = std::fabs(exact);
          }
          for (std::uint32_t k = 0; k < inner; ++k) {
            const double p =
                static_cast<double>(
                    f16_to_f32(static_cast<std::uint16_t>(call.left[r * inner + k]))) *
                static_cast<double>(
                    f16_to_f32(static_cast<std::uint16_t>(call.weights[std::size_t{k} * 32 + n])));
            exact += p;  // exact products; the FP64 sum's own error is below
            magnitude += std::fabs(p);
          }
          const double bound =
              hiho_bound(inner, 16, magnitude) + inner * std::ldexp(1.0, -52) * magnitude;
          const double error = std::fabs(
              static_cast<double>(f16_to_f32(static_cast<std::uint16_t>(out[at]))) - exact);
          ASSERT_LE(error, bound) << "K " << inner << " (" << r << ", " << n << ")";
          worst = std::max(worst, error / bound);
        }
      }
      // The bound is not vacuous: the worst error reaches a fair part of it
      // (the bound grows like K, random errors like √K).
      EXPECT_GT(worst, 0.01) << "K " << inner;
    }
  }
}

// ---- F143: expanded weights (f16 GEMM) and native F143, with block scales

// A [K, N] weight with a different F143 scale in each 64 × 64 block.
std::vector<float> block_scaled_weight(std::uint32_t inner, std::uint32_t columns,
                                       std::mt19937_64& rng) {
  std::vector<float> w(std::size_t{inner} * columns);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  for (std::uint32_t k = 0; k < inner; ++k) {
    for (std::uint32_t n = 0; n < columns; ++n) {
      const float block = std::ldexp(1.0F, -static_cast<int>((k / 64 + 2 * (n / 64)) % 5) - 4);
      w[std::size_t{k} * columns + n] = normal(rng) * block;
    }
  }
  return w;
}

// The expanded family's weights are what expand_f143_to_f16 makes of the
// quantized weight packed in B16×16 element order, one call per 64 × 64
// scale block: for a call with K = 64, scale block j of the call's weight
// block is the contiguous element range [j·64·64, (j+1)·64·64) of B16×16,
// so each expand call covers one range at one scale. Here the test expands
// with the codec (decode at the block's scale, round to f16) in place of
// that kernel, then the GEMM's result is the f16 GEMM of the dequantized
// weights.
TEST(GemmKernels, ExpandedF143WeightsComposeWithOneExpandPerScaleBlock) {
  std::mt19937_64 rng(143);
  constexpr std::uint32_t kInner = 64, kColumns = 128, kRows = 24;
  const std::vector<float> w = block_scaled_weight(kInner, kColumns, rng);
  const auto scales = f143::BlockScales::choose(w, kInner, kColumns);
  const std::vector<std::uint8_t> codes = f143::encode(w, scales);
  // Each scale block is one contiguous range of the B16×16 block.
  for (std::uint32_t k = 0; k < kInner; ++k) {
    for (std::uint32_t n = 0; n < kColumns; ++n) {
      const std::uint64_t at = amp::weight_offset(k, n, kInner, 16);
      ASSERT_EQ(at / (64 * 64), n / 64) << k << ", " << n;
    }
  }
  // The codes in B16×16 order, expanded one scale block (range) at a time.
  std::vector<std::uint8_t> packed(codes.size());
  for (std::uint32_t k = 0; k < kInner; ++k) {
    for (std::uint32_t n = 0; n < kColumns; ++n) {
      packed[amp::weight_offset(k, n, kInner, 16)] = codes[std::size_t{k} * kColumns + n];
    }
  }
  std::vector<std::uint16_t> expanded(packed.size());
  for (std::uint32_t j = 0; j < kColumns / 64; ++j) {
    const int scale = scales.block_scale(0, j);
    for (std::size_t i = j * 4096; i < (j + 1) * 4096; ++i) {
      expanded[i] = f32_to_f16(f143::decode(packed[i], scale));
    }
  }
  GemmOperands call =
      random_gemm(GemmFamily::kF16ExpandedF143, GemmVariant::kInit, kRows, kInner, kColumns, 7);
  for (std::uint32_t k = 0; k < kInner; ++k) {
    for (std::uint32_t n = 0; n < kColumns; ++n) {
      call.weights[std::size_t{k} * kColumns + n] = expanded[amp::weight_offset(k, n, kInner, 16)];
    }
  }
  GemmOperands dequantized = call;
  dequantized.family = GemmFamily::kF16;
  for (std::uint32_t k = 0; k < kInner; ++k) {
    for (std::uint32_t n = 0; n < kColumns; ++n) {
      const std::size_t i = std::size_t{k} * kColumns + n;
      dequantized.weights[i] = f32_to_f16(f143::decode(codes[i], scales.scale_at(k, n)));
    }
  }
  EXPECT_EQ(run_gemm(call), gemm_reference(dequantized));
}

// Review-findings #19: quantizer (BlockScales, encode) → packer (B32×16,
// A32) → simulated native F143 kernel with ISCL from the block scales →
// the product of the dequantized operands, bit for bit.
TEST(GemmKernels, NativeF143RoundTripsTheQuantizersBlockScales) {
  std::mt19937_64 rng(19);
  constexpr std::uint32_t kInner = 128, kWeightColumns = 128, kRows = 17, kColumns = 64;
  const std::vector<float> w = block_scaled_weight(kInner, kWeightColumns, rng);
  const auto scales = f143::BlockScales::choose(w, kInner, kWeightColumns);
  const std::vector<std::uint8_t> codes = f143::encode(w, scales);
  std::vector<float> x(std::size_t{kRows} * 64);
  std::normal_distribution<float> normal(0.0F, 0.5F);
  for (auto& v : x) v = normal(rng);
  const int activation_scale = f143::choose_scale(x);
  // One call per (K block of 64, 64-column block), each inside one scale block.
  for (std::uint32_t k0 = 0; k0 < kInner; k0 += 64) {
    for (std::uint32_t n0 = 0; n0 < kWeightColumns; n0 += kColumns) {
      GemmOperands call = zero_gemm(GemmFamily::kF143, GemmVariant::kInit, kRows, 64, kColumns);
      call.scale = gemm_f143_product_scale(activation_scale, scales, k0, n0, 64, kColumns);
      EXPECT_EQ(call.scale, activation_scale + scales.scale_at(k0, n0));
      for (std::size_t i = 0; i < x.size(); ++i) {
        call.left[i] = f143::encode(x[i], activation_scale);
      }
      for (std::uint32_t k = 0; k < 64; ++k) {
        for (std::uint32_t n = 0; n < kColumns; ++n) {
          call.weights[std::size_t{k} * kColumns + n] =
              codes[std::size_t{k0 + k} * kWeightColumns + n0 + n];
        }
      }
      const auto out = run_gemm(call);
      EXPECT_EQ(out, gemm_reference(call));
      // The same numbers from the dequantized operands: hiho in passes of 32
      // over a_f32 · w_f32 (both exact), written out here once more.
      for (std::uint32_t r = 0; r < kRows; ++r) {
        for (std::uint32_t n = 0; n < kColumns; ++n) {
          float acc = 0;
          std::uint16_t partial = 0;
          for (std::uint32_t k = 0; k < 64; ++k) {
            const float a =
                f143::decode(static_cast<std::uint8_t>(call.left[r * 64 + k]), activation_scale);
            const float b = f143::decode(codes[std::size_t{k0 + k} * kWeightColumns + n0 + n],
                                         scales.scale_at(k0 + k, n0 + n));
            acc = acc + a * b;
            if (k % 32 == 31) {
              partial = f32_to_f16(acc);
              acc = f16_to_f32(partial);
            }
          }
          ASSERT_EQ(out[std::size_t{r} * kColumns + n], partial) << r << ", " << n;
        }
      }
    }
  }
}

TEST(GemmKernels, TheProductScaleNeedsOneWeightScalePerCallAndTheSixBitRange) {
  std::vector<float> w(128 * 128, 1.0F);
  w[0] = 1000.0F;  // block (0, 0) needs a larger scale than its neighbours
  const auto scales = f143::BlockScales::choose(w, 128, 128);
  ASSERT_NE(scales.block_scale(0, 0), scales.block_scale(0, 1));
  EXPECT_EQ(gemm_f143_product_scale(-3, scales, 0, 64, 64, 64), -3 + scales.block_scale(0, 1));
  try {
    (void)gemm_f143_product_scale(-3, scales, 0, 0, 64, 128);
    ADD_FAILURE() << "a call spanning two scales";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("spans scale block (0, 0)"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)gemm_f143_product_scale(31, scales, 0, 0, 64, 64), UsageError);    // 31 + 3
  EXPECT_THROW((void)gemm_f143_product_scale(-32, scales, 0, 64, 64, 64), UsageError);  // -32 - 7
  EXPECT_THROW((void)gemm_f143_product_scale(-40, scales, 0, 64, 64, 64), UsageError);
  // Padding past the weight carries no scale of its own.
  EXPECT_EQ(gemm_f143_product_scale(0, scales, 64, 64, 128, 128), scales.block_scale(1, 1));
}

// The expanded family is the f16 GEMM, bit for bit; only its weight loads
// (and so its cycles) differ.
TEST(GemmKernels, TheExpandedFamilyComputesWhatTheF16GemmComputes) {
  for (const GemmVariant variant : kVariants) {
    GemmOperands call = random_gemm(GemmFamily::kF16, variant, 37, 64, 64, 55, 0.01);
    const auto f16 = run_gemm(call);
    call.family = GemmFamily::kF16ExpandedF143;
    EXPECT_EQ(run_gemm(call), f16);
  }
}

// Stochastic rounding (SimOptions::rounding): the tile's generator decides
// each f16 partial, deterministically for a tile and its call sequence; the
// result stays within the hiho bound of the exact product and differs from
// round-to-nearest somewhere.
TEST(GemmKernels, StochasticRoundingIsDeterministicAndStaysNearTheProduct) {
  for (const GemmFamily family : {GemmFamily::kF16, GemmFamily::kF143}) {
    GemmOperands call = zero_gemm(family, GemmVariant::kInit, 13, 128, 64);
    std::mt19937 rng(5);
    std::uniform_int_distribution<std::uint32_t> small(0, 0x1FF);
    // f16: values in ±[2^-1, 2^1); F143: mid-range codes.
    for (auto& a : call.left)
      a = family == GemmFamily::kF16 ? 0x3800 | small(rng) | (rng() & 1) << 15
                                     : 0x30 + rng() % 0x20;
    for (auto& b : call.weights)
      b = family == GemmFamily::kF16 ? 0x3800 | small(rng) | (rng() & 1) << 15
                                     : 0x30 + rng() % 0x20;
    sim::SimOptions stochastic;
    stochastic.rounding = Rounding::kStochastic;
    const auto first = run_gemm(call, stochastic);
    const auto again = run_gemm(call, stochastic);
    const auto nearest = run_gemm(call);
    EXPECT_EQ(first, again) << gemm_format(family).name;
    EXPECT_NE(first, nearest) << gemm_format(family).name
                              << ": stochastic rounding changed nothing";
    std::size_t differing = 0;
    for (std::size_t i = 0; i < first.size(); ++i) {
      const double s = f16_to_f32(static_cast<std::uint16_t>(first[i]));
      const double n = f16_to_f32(static_cast<std::uint16_t>(nearest[i]));
      // Both roundings stay within a few f16 ulps of each other for these
      // magnitudes (|C| < 2^9 with K = 128: ulp ≤ 2^-1).
      EXPECT_LE(std::fabs(s - n), 4.0) << i;
      differing += first[i] != nearest[i];
    }
    EXPECT_GT(differing, first.size() / 10) << gemm_format(family).name;
  }
}

}  // namespace
}  // namespace tessera::kernels
