// The F143 kernels through the simulator: quantisation against f143.hpp's
// codec and a brute-force nearest-code oracle, the A16 → A32 layout against
// the reference's formula, expansion of every code at every scale, round
// trips, the quantizer → package layout → kernel → dequantized weights chain
// with 64 × 64 block scales (review-findings #19, reference H6), stochastic
// quantisation, zero work, overruns and preconditions.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <random>

#include "kernels/amp_layout.hpp"
#include "kernels/f143.hpp"
#include "kernels/f143_kernels.hpp"
#include "kernels/half.hpp"
#include "kernels/pointwise_costs.hpp"
#include "tests/kernels/f16_generators.hpp"
#include "tests/kernels/kernel_case.hpp"
#include "tests/kernels/layout_reference.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;
namespace ref = testing::reference;

// The value of a code at scale 0 from its fields (not the codec's decoding).
double code_value(unsigned code) {
  const unsigned e = (code >> 3) & 0xF, m = code & 7;
  const double magnitude =
      e == 0 ? m * std::ldexp(1.0, -10) : (1.0 + m / 8.0) * std::ldexp(1.0, int(e) - 8);
  return (code & 0x80) != 0 ? -magnitude : magnitude;
}

// The nearest code to y = x·2^−scale (ties to the even mantissa), saturating;
// NaN → 0x80; zero and underflow → +0.
std::uint8_t oracle_code(double x, int scale) {
  if (std::isnan(x)) return 0x80;
  const double y = x * std::ldexp(1.0, -scale);
  if (std::fabs(y) >= 240.0) return std::signbit(y) ? 0xFF : 0x7F;
  unsigned best = 0;
  double best_distance = INFINITY;
  for (unsigned code = 0; code < 256; ++code) {
    if (code == 0x80) continue;
    const double distance = std::fabs(code_value(code) - y);
    if (distance < best_distance || (distance == best_distance && (code & 1) == 0)) {
      best = code;
      best_distance = distance;
    }
  }
  return code_value(best) == 0.0 ? std::uint8_t{0} : static_cast<std::uint8_t>(best);
}

KernelCase quantize_case(const std::vector<std::uint16_t>& in, int scale) {
  const auto count = static_cast<std::uint32_t>(in.size());
  KernelCase c{kQuantizeF16ToF143, {}, {{4, count}, {5, static_cast<std::uint32_t>(scale)}}};
  c.operands.push_back(input(3, "in", 2, bytes_of(in)));
  c.operands.push_back(output(2, "codes", 1, count));
  return c;
}

KernelCase expand_case(const std::vector<std::uint8_t>& codes, int scale) {
  const auto count = static_cast<std::uint32_t>(codes.size());
  KernelCase c{kExpandF143ToF16, {}, {{4, count}, {5, static_cast<std::uint32_t>(scale)}}};
  c.operands.push_back(input(3, "codes", 1, codes));
  c.operands.push_back(output(2, "out", 2, count * 2));
  return c;
}

rc::Gen<int> any_scale() {
  return rc::gen::weightedOneOf<int>({{1, rc::gen::element(-32, -14, 0, 8, 31)},
                                      {3, rc::gen::inRange(f143::kMinScale, f143::kMaxScale + 1)}});
}

RC_GTEST_PROP(F143Kernels, QuantizeIsTheCodecAndTheNearestCode, ()) {
  const std::uint32_t count =
      4 * *rc::gen::weightedOneOf<std::uint32_t>(
              {{1, rc::gen::element<std::uint32_t>(0, 1, 6, 7, 11, 12, 13, 61)},
               {1, rc::gen::inRange(0u, 700u)}});
  const int scale = *any_scale();
  const auto in = *rc::gen::container<std::vector<std::uint16_t>>(count, f16_pattern());
  const CaseResult result = run_case(quantize_case(in, scale));
  RC_ASSERT(result.halted);
  const auto codes = result.values<std::uint8_t>(2);
  for (std::size_t i = 0; i < count; ++i) {
    RC_ASSERT(codes[i] == f143::encode(f16_to_f32(in[i]), scale));
    RC_ASSERT(codes[i] == oracle_code(ref::f16(in[i]), scale));
  }
  RC_ASSERT(result.kernel_cycles == f143_convert_cycles(count));
}

TEST(F143Kernels, ExpandOfEveryCodeAtEveryScale) {
  std::vector<std::uint8_t> codes(256);
  for (unsigned i = 0; i < 256; ++i) codes[i] = static_cast<std::uint8_t>(i);
  for (int scale = f143::kMinScale; scale <= f143::kMaxScale; ++scale) {
    const CaseResult result = run_case(expand_case(codes, scale));
    ASSERT_TRUE(result.halted) << result.fault;
    const auto out = result.values<std::uint16_t>(2);
    for (unsigned code = 0; code < 256; ++code) {
      const std::uint16_t expected = code == 0x80
                                         ? std::uint16_t{0x7E00}
                                         : f16_nearest(code_value(code) * std::ldexp(1.0, scale));
      ASSERT_EQ(out[code], expected) << code << " at " << scale;
    }
  }
}

// Where every code is an f16 value (scales −14 … 8) quantize ∘ expand is the
// identity on codes; everywhere expand ∘ quantize is the codec's projection.
TEST(F143Kernels, RoundTripsAgreeWithTheCodec) {
  std::vector<std::uint8_t> codes(256);
  for (unsigned i = 0; i < 256; ++i) codes[i] = static_cast<std::uint8_t>(i);
  for (int scale = -14; scale <= 8; ++scale) {
    const CaseResult expanded = run_case(expand_case(codes, scale));
    ASSERT_TRUE(expanded.halted) << expanded.fault;
    const CaseResult back = run_case(quantize_case(expanded.values<std::uint16_t>(2), scale));
    ASSERT_TRUE(back.halted) << back.fault;
    auto expected = codes;
    expected[0x80] = 0x80;  // the NaN code stays NaN
    EXPECT_EQ(back.values<std::uint8_t>(2), expected) << scale;
  }
  std::mt19937 rng(5);
  std::vector<std::uint16_t> values(4096);
  for (auto& v : values) v = static_cast<std::uint16_t>(rng());
  for (const int scale : {-32, -9, 0, 3, 31}) {
    const CaseResult quantized = run_case(quantize_case(values, scale));
    const CaseResult expanded = run_case(expand_case(quantized.values<std::uint8_t>(2), scale));
    ASSERT_TRUE(expanded.halted) << expanded.fault;
    const auto out = expanded.values<std::uint16_t>(2);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float projected = f143::decode(f143::encode(f16_to_f32(values[i]), scale), scale);
      EXPECT_EQ(out[i], std::isnan(projected) ? kF16QuietNan : f32_to_f16(projected)) << values[i];
    }
  }
}

// ---- A16 → A32

RC_GTEST_PROP(F143Kernels, QuantizeA16ToA32IsTheCodecInTheA32Layout, ()) {
  const std::uint32_t rows = *rc::gen::element<std::uint32_t>(0, 1, 6, 7, 11, 12, 13, 61);
  const std::uint32_t columns = *rc::gen::element<std::uint32_t>(1, 15, 16, 17, 32, 40, 64, 72);
  const int scale = *any_scale();
  const std::size_t a16 = rows * ref::round_up(columns, 16),
                    a32 = rows * ref::round_up(columns, 32);
  const auto in = *rc::gen::container<std::vector<std::uint16_t>>(a16, f16_pattern());
  KernelCase c{
      kQuantizeA16ToA32F143, {}, {{4, rows}, {5, columns}, {6, static_cast<std::uint32_t>(scale)}}};
  c.operands.push_back(input(3, "a16", 2, bytes_of(in)));
  c.operands.push_back(
      input(2, "a32", 1, std::vector<std::uint8_t>(a32, 0x80)));  // junk in padding
  const CaseResult result = run_case(c);
  RC_ASSERT(result.halted);
  const auto out = result.values<std::uint8_t>(2);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t k = 0; k < ref::round_up(columns, 32); ++k) {
      const std::uint8_t expected =
          k < columns ? oracle_code(ref::f16(in[ref::left_index(r, k, rows, 16)]), scale) : 0;
      RC_ASSERT(out[ref::left_index(r, k, rows, 32)] == expected);
    }
  }
  RC_ASSERT(result.kernel_cycles == quantize_a16_to_a32_cycles(rows, columns));
}

// ---- review #19: quantizer → package layout → kernel → dequantized weights

TEST(F143Kernels, BlockScaledWeightsExpandPerScaleBlockToTheDequantizedWeights) {
  // A 128 × 128 weight whose 64 × 64 blocks have very different magnitudes,
  // so every block gets its own scale and a wrong scale shows.
  constexpr std::uint32_t kInner = 128, kColumns = 128;
  std::mt19937 rng(19);
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::vector<float> weight(kInner * kColumns);
  for (std::uint32_t k = 0; k < kInner; ++k) {
    for (std::uint32_t n = 0; n < kColumns; ++n) {
      const int magnitude = static_cast<int>(k / 64 * 2 + n / 64) * 5 - 8;  // 2^−8 … 2^7
      weight[k * kColumns + n] = std::ldexp(normal(rng), magnitude);
    }
  }
  // The quantizer: block scales and codes (row-major [K, N]).
  const auto scales = f143::BlockScales::choose(weight, kInner, kColumns);
  const auto codes = f143::encode(weight, scales);
  const auto dequantized = f143::decode(codes, scales);
  ASSERT_NE(scales.block_scale(0, 0), scales.block_scale(1, 1));
  // The packer: one B16×16 block per 64-row K block, as the GEMM reads it.
  for (std::uint32_t i = 0; i < kInner / 64; ++i) {
    std::vector<std::uint8_t> packed(64 * kColumns);
    for (std::uint32_t k = 0; k < 64; ++k) {
      for (std::uint32_t n = 0; n < kColumns; ++n) {
        packed[amp::weight_offset(k, n, 64, 16)] = codes[(i * 64 + k) * kColumns + n];
      }
    }
    // The kernel: one expand per scale block, over that block's span.
    std::vector<std::uint16_t> expanded(packed.size(), 0xFFFF);
    for (std::uint32_t j = 0; j < kColumns / 64; ++j) {
      const ExpandSpan span = expand_span(64, kColumns, j);
      ASSERT_EQ(span.count, 64u * 64u);
      const std::vector<std::uint8_t> block(
          packed.begin() + static_cast<std::ptrdiff_t>(span.offset),
          packed.begin() + static_cast<std::ptrdiff_t>(span.offset + span.count));
      const CaseResult result = run_case(expand_case(block, scales.block_scale(i, j)));
      ASSERT_TRUE(result.halted) << result.fault;
      const auto out = result.values<std::uint16_t>(2);
      std::copy(out.begin(), out.end(),
                expanded.begin() + static_cast<std::ptrdiff_t>(span.offset));
    }
    // The dequantized weights, element for element (exact in f16 at these scales).
    for (std::uint32_t k = 0; k < 64; ++k) {
      for (std::uint32_t n = 0; n < kColumns; ++n) {
        ASSERT_EQ(expanded[amp::weight_offset(k, n, 64, 16)],
                  f32_to_f16(dequantized[(i * 64 + k) * kColumns + n]))
            << k << ", " << n;
      }
    }
  }
}

TEST(F143Kernels, ExpandSpansCoverTheBlockOnceAndStayInsideOneScaleBlock) {
  for (const std::uint32_t inner : {16u, 48u, 64u}) {
    for (const std::uint32_t columns : {32u, 64u, 128u, 80u}) {
      std::vector<int> owner(std::size_t{inner} * columns, -1);
      for (std::uint32_t j = 0; j * 64 < columns; ++j) {
        const ExpandSpan span = expand_span(inner, columns, j);
        EXPECT_LE(span.count, kExpandMaxElements);
        for (std::uint64_t e = span.offset; e < span.offset + span.count; ++e) {
          ASSERT_EQ(owner[e], -1);
          owner[e] = static_cast<int>(j);
        }
      }
      // Every element's span is its column's scale block.
      for (std::uint32_t k = 0; k < inner; ++k) {
        for (std::uint32_t n = 0; n < columns; ++n) {
          ASSERT_EQ(owner[ref::weight_index(k, n, inner)], static_cast<int>(n / 64))
              << k << " " << n;
        }
      }
    }
  }
  EXPECT_THROW(expand_span(128, 64, 0), std::invalid_argument);
  EXPECT_THROW(expand_span(64, 64, 1), std::invalid_argument);
  EXPECT_THROW(expand_span(20, 64, 0), std::invalid_argument);
}

// ---- stochastic quantisation

TEST(F143Kernels, StochasticQuantizeIsDeterministicAndUnbiased) {
  // 4096 copies of one value a third of the way between two codes.
  const std::uint16_t x = f32_to_f16(7.0F + 0.25F / 3);  // codes 0x56 (7.0) and 0x57 (7.5)
  const std::vector<std::uint16_t> in(4096, x);
  sim::SimOptions stochastic;
  stochastic.rounding = Rounding::kStochastic;
  const CaseResult a = run_case(quantize_case(in, 0), stochastic);
  const CaseResult b = run_case(quantize_case(in, 0), stochastic);
  ASSERT_TRUE(a.halted) << a.fault;
  EXPECT_EQ(a.operands.at(2), b.operands.at(2));
  double sum = 0;
  for (const std::uint8_t code : a.values<std::uint8_t>(2)) {
    ASSERT_TRUE(code == 0x56 || code == 0x57) << int{code};
    sum += code_value(code);
  }
  // p = (x − 7)/0.5; σ of the mean = 0.5·√(p(1−p)/4096); within 4σ.
  const double value = ref::f16(x), p = (value - 7.0) / 0.5;
  EXPECT_NEAR(sum / 4096, value, 4 * 0.5 * std::sqrt(p * (1 - p) / 4096));
}

// ---- zero work, overruns, preconditions

TEST(F143Kernels, ZeroWorkTouchesNothing) {
  for (const std::string_view kernel : {kQuantizeF16ToF143, kExpandF143ToF16}) {
    Registers r{};
    r[2] = kBufferBase;
    r[3] = kBufferBase + 0x100;
    r[5] = static_cast<std::uint32_t>(-3);
    KernelRun run(kernel, r, {});
    ASSERT_TRUE(run.halted()) << kernel << ": " << run.fault_text();
  }
  for (const auto& [rows, columns] : {std::pair{0u, 64u}, std::pair{13u, 0u}}) {
    Registers r{};
    r[2] = kBufferBase;
    r[3] = kBufferBase + 0x100;
    r[4] = rows;
    r[5] = columns;
    KernelRun run(kQuantizeA16ToA32F143, r, {});
    ASSERT_TRUE(run.halted()) << run.fault_text();
  }
}

TEST(F143Kernels, AnOperandOneElementShortIsAnOverrunNamingIt) {
  expect_each_short_operand_overruns(quantize_case(std::vector<std::uint16_t>(28, 0x3C00), 0));
  expect_each_short_operand_overruns(expand_case(std::vector<std::uint8_t>(28, 0x38), 0));
  KernelCase c{kQuantizeA16ToA32F143, {}, {{4, 7}, {5, 40}, {6, 0}}};
  c.operands.push_back(input(3, "a16", 2, std::vector<std::uint8_t>(7 * 48 * 2)));
  c.operands.push_back(output(2, "a32", 1, 7 * 64));
  expect_each_short_operand_overruns(c);
}

Registers regs(std::initializer_list<std::pair<unsigned, std::uint32_t>> values) {
  Registers r{};
  for (const auto& [reg, value] : values) r[reg] = value;
  return r;
}

TEST(F143Kernels, PreconditionViolationsAreFaultsWithTheReason) {
  constexpr std::uint32_t a = kBufferBase, b = kBufferBase + 0x4000;
  expect_precondition_failure(
      kQuantizeF16ToF143, regs({{2, b}, {3, a}, {4, 8}, {5, 32}}),
      "$m5 (scale) = 32 is outside [-32, 31], the range of the hardware's 6-bit scale field");
  expect_precondition_failure(kExpandF143ToF16,
                              regs({{2, b}, {3, a}, {4, 8}, {5, static_cast<std::uint32_t>(-33)}}),
                              "$m5 (scale) = -33 is outside [-32, 31]");
  expect_precondition_failure(kQuantizeA16ToA32F143,
                              regs({{2, b}, {3, a}, {4, 1}, {5, 16}, {6, 40}}),
                              "$m6 (scale) = 40 is outside [-32, 31]");
  expect_precondition_failure(
      kExpandF143ToF16, regs({{2, b}, {3, a}, {4, 6}, {5, 0}}),
      "$m4 (count) = 6 is not a multiple of 4: the device converts four codes");
  expect_precondition_failure(
      kExpandF143ToF16, regs({{2, b}, {3, a}, {4, 4100}, {5, 0}}),
      "$m4 (count) = 4100 is more than one 64 x 64 scale block (4096 elements)");
  expect_precondition_failure(kQuantizeF16ToF143, regs({{2, a + 4}, {3, a}, {4, 8}, {5, 0}}),
                              "overlaps $m3 (source) [0x60000, 0x60010): the element sizes differ");
  expect_precondition_failure(kQuantizeA16ToA32F143,
                              regs({{2, b + 4}, {3, a}, {4, 1}, {5, 16}, {6, 0}}),
                              "$m2 = 0x64004 is not 8-byte aligned");
}

}  // namespace
}  // namespace tessera::kernels
