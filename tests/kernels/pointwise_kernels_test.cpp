// The element-wise and activation kernels called through the simulator:
// products, conversions, the C16 bias add and the GeLUs against CPU
// references written here (tests/kernels/layout_reference.hpp), on random
// data with NaN, ±Inf, subnormal and ±65504 inputs and the worker-partition
// edge shapes; zero work touches nothing; each operand one element short is
// a KernelOverrun naming it; preconditions fail with their reasons.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "kernels/half.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/rounding.hpp"
#include "tests/kernels/f16_generators.hpp"
#include "tests/kernels/kernel_case.hpp"
#include "tests/kernels/layout_reference.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;
namespace ref = testing::reference;

// Rows (and counts) that hit every worker-partition edge: 0, one, a worker's
// worth, one over, around the GEMM's 12, and 6k + 1.
constexpr std::uint32_t kEdgeRows[] = {0, 1, 6, 7, 11, 12, 13, 61};
constexpr std::uint32_t kEdgeColumns[] = {1, 15, 16, 17, 40, 64};

std::vector<std::uint16_t> any_f16(std::size_t n) {
  return *rc::gen::container<std::vector<std::uint16_t>>(n, f16_pattern());
}
std::vector<std::uint32_t> any_f32_bits(std::size_t n) {
  return *rc::gen::container<std::vector<std::uint32_t>>(n, f32_pattern());
}
std::uint32_t any_count() {
  return *rc::gen::weightedOneOf<std::uint32_t>(
      {{2,
        rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kEdgeRows), std::end(kEdgeRows)))},
       {1, rc::gen::inRange(0u, 3000u)}});
}

std::uint32_t f32_reference_product(std::uint32_t a, std::uint32_t b) {
  // The double product of two floats is exact; rounding it to float is the
  // correctly rounded f32 product.
  const double product =
      static_cast<double>(std::bit_cast<float>(a)) * static_cast<double>(std::bit_cast<float>(b));
  return std::isnan(product) ? 0x7FC00000u
                             : std::bit_cast<std::uint32_t>(static_cast<float>(product));
}

// ---- mul

KernelCase mul_case(bool f16, const std::vector<std::uint32_t>& a,
                    const std::vector<std::uint32_t>& b, bool in_place) {
  const unsigned s = f16 ? 2 : 4;
  KernelCase c{f16 ? kMulF16 : kMulF32, {}, {{5, static_cast<std::uint32_t>(a.size())}}};
  c.operands.push_back(input(3, "a", s, to_bytes(a, s)));
  c.operands.push_back(input(4, "b", s, to_bytes(b, s)));
  if (in_place) {
    c.operands.push_back(alias(2, "out", s, 3));
  } else {
    c.operands.push_back(output(2, "out", s, static_cast<std::uint32_t>(a.size() * s)));
  }
  return c;
}

RC_GTEST_PROP(PointwiseKernels, MulMatchesTheReference, ()) {
  const bool f16 = *rc::gen::arbitrary<bool>();
  const std::uint32_t count = any_count();
  std::vector<std::uint32_t> a, b;
  if (f16) {
    const auto x = any_f16(count), y = any_f16(count);
    a.assign(x.begin(), x.end());
    b.assign(y.begin(), y.end());
  } else {
    a = any_f32_bits(count);
    b = any_f32_bits(count);
  }
  const bool in_place = *rc::gen::arbitrary<bool>();
  const CaseResult result = run_case(mul_case(f16, a, b, in_place));
  RC_ASSERT(result.halted);
  const auto out = from_bytes(result.operands.at(in_place ? 3 : 2), f16 ? 2 : 4);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t expected =
        f16 ? ref::f16_mul(static_cast<std::uint16_t>(a[i]), static_cast<std::uint16_t>(b[i]))
            : f32_reference_product(a[i], b[i]);
    RC_ASSERT(out[i] == expected);
  }
  RC_ASSERT(result.kernel_cycles == mul_cycles(count, f16 ? 2 : 4));
}

TEST(PointwiseKernels, MulSpecialValues) {
  // 65504·2 overflows; 2^−14·2^−10 is the smallest subnormal; NaN·x and
  // 0·Inf are the canonical NaN.
  const std::vector<std::uint32_t> a = {0x7BFF, 0x0400, 0x7C01, 0x0000, 0xFBFF, 0x0001};
  const std::vector<std::uint32_t> b = {0x4000, 0x1400, 0x3C00, 0x7C00, 0x3C00, 0x3800};
  const CaseResult result = run_case(mul_case(true, a, b, false));
  ASSERT_TRUE(result.halted) << result.fault;
  EXPECT_EQ(from_bytes(result.operands.at(2), 2),
            (std::vector<std::uint32_t>{0x7C00, 0x0001, 0x7E00, 0x7E00, 0xFBFF, 0x0000}));
}

// ---- convert

// half.hpp's NaN rule, restated: sign, Inf exponent, the top 10 payload bits,
// or the quiet bit when they are all zero.
std::uint16_t reference_narrow(std::uint32_t f) {
  const float x = std::bit_cast<float>(f);
  if (std::isnan(x)) {
    const auto payload = static_cast<std::uint16_t>((f >> 13) & 0x3FF);
    return static_cast<std::uint16_t>(((f >> 16) & 0x8000) | 0x7C00 |
                                      (payload != 0 ? payload : 0x200));
  }
  return f16_nearest(static_cast<double>(x));
}

std::uint32_t reference_widen(std::uint16_t h) {
  if (f16_pattern_is_nan(h))
    return (std::uint32_t{h & 0x8000u} << 16) | 0x7F800000u | (std::uint32_t{h & 0x3FFu} << 13);
  return std::bit_cast<std::uint32_t>(static_cast<float>(f16_value(h)));
}

KernelCase convert_case(bool to_f16, const std::vector<std::uint8_t>& in, std::uint32_t count) {
  KernelCase c{to_f16 ? kConvertF32ToF16 : kConvertF16ToF32, {}, {{4, count}}};
  c.operands.push_back(input(3, "in", to_f16 ? 4u : 2u, in));
  c.operands.push_back(output(2, "out", to_f16 ? 2u : 4u, count * (to_f16 ? 2u : 4u)));
  return c;
}

RC_GTEST_PROP(PointwiseKernels, ConvertMatchesTheReference, ()) {
  const std::uint32_t count = any_count();
  const auto f32 = any_f32_bits(count);
  const CaseResult narrowed = run_case(convert_case(true, to_bytes(f32, 4), count));
  RC_ASSERT(narrowed.halted);
  const auto halves = from_bytes(narrowed.operands.at(2), 2);
  for (std::size_t i = 0; i < count; ++i) RC_ASSERT(halves[i] == reference_narrow(f32[i]));

  const auto f16 = any_f16(count);
  const CaseResult widened = run_case(convert_case(false, bytes_of(f16), count));
  RC_ASSERT(widened.halted);
  const auto words = from_bytes(widened.operands.at(2), 4);
  for (std::size_t i = 0; i < count; ++i) RC_ASSERT(words[i] == reference_widen(f16[i]));
  RC_ASSERT(widened.kernel_cycles == convert_cycles(count));
}

TEST(PointwiseKernels, EveryF16WidensAndNarrowsBack) {
  std::vector<std::uint16_t> all(0x8000);  // half of the patterns per call fits the test SRAM
  for (const std::uint32_t half : {0u, 0x8000u}) {
    for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(half + i);
    const CaseResult widened = run_case(convert_case(false, bytes_of(all), 0x8000));
    ASSERT_TRUE(widened.halted) << widened.fault;
    const CaseResult back = run_case(convert_case(true, widened.operands.at(2), 0x8000));
    ASSERT_TRUE(back.halted) << back.fault;
    EXPECT_EQ(back.values<std::uint16_t>(2), all);
  }
}

// Stochastic conversion: worker w rounds elements [w·q + min(w, r), …) in
// order, one draw each from its stream; a fresh tile reproduces a run.
TEST(PointwiseKernels, StochasticConvertDrawsPerWorkerInElementOrder) {
  const std::uint32_t count = 1001;
  std::vector<float> values(count);
  for (std::uint32_t i = 0; i < count; ++i) values[i] = 1.0F + static_cast<float>(i) * 1e-5F;
  sim::SimOptions options;
  options.rounding = Rounding::kStochastic;
  const KernelCase c = convert_case(true, bytes_of(values), count);
  const CaseResult first = run_case(c, options);
  ASSERT_TRUE(first.halted) << first.fault;
  const CaseResult again = run_case(c, options);
  EXPECT_EQ(again.operands.at(2), first.operands.at(2));  // deterministic

  // The reference: the device's partition and the tile's own streams.
  TilePrng prng(target::c600_physical(target::LogicalTile(0)).value);
  std::vector<std::uint16_t> expected(count);
  const std::uint32_t q = count / 6, r = count % 6;
  for (unsigned w = 0; w < 6; ++w) {
    const std::uint32_t begin = w * q + std::min(w, r), n = q + (w < r ? 1 : 0);
    for (std::uint32_t i = begin; i < begin + n; ++i) {
      expected[i] =
          round_f16_stochastic(std::bit_cast<std::uint32_t>(values[i]), prng.worker(w).next());
    }
  }
  EXPECT_EQ(first.values<std::uint16_t>(2), expected);
  // Not all to nearest: the draws matter (these values are not f16 values).
  const CaseResult nearest = run_case(c);
  EXPECT_NE(nearest.operands.at(2), first.operands.at(2));
}

// ---- bias add on C16

struct BiasCall {
  bool f16;
  std::uint32_t rows, columns;
  std::vector<std::uint32_t> matrix;  // logical rows × columns, row-major
  std::vector<std::uint32_t> bias;    // logical columns
  bool in_place;

  std::size_t padded() const { return ref::round_up(columns, 16); }
  KernelCase kernel_case() const {
    const unsigned s = f16 ? 2 : 4;
    // Padding holds junk (NaN included): the kernel must write +0 there.
    std::vector<std::uint32_t> c16(rows * padded(), f16 ? 0x7E00u : 0x7FC00000u);
    std::vector<std::uint32_t> packed_bias(padded(), f16 ? 0x7C00u : 0x7F800000u);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t n = 0; n < columns; ++n)
        c16[ref::output_index(r, n, rows)] = matrix[r * columns + n];
    }
    for (std::size_t n = 0; n < columns; ++n) packed_bias[ref::output_index(0, n, 1)] = bias[n];
    KernelCase c{f16 ? kAddBiasC16F16 : kAddBiasC16F32, {}, {{5, rows}, {6, columns}}};
    c.operands.push_back(input(3, "in", s, to_bytes(c16, s)));
    c.operands.push_back(input(4, "bias", s, to_bytes(packed_bias, s)));
    if (in_place) {
      c.operands.push_back(alias(2, "out", s, 3));
    } else {
      c.operands.push_back(output(2, "out", s, static_cast<std::uint32_t>(c16.size() * s)));
    }
    return c;
  }
  std::vector<std::uint32_t> expected() const {
    std::vector<std::uint32_t> out(rows * padded(), 0);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t n = 0; n < columns; ++n) {
        const std::uint32_t a = matrix[r * columns + n], b = bias[n];
        out[ref::output_index(r, n, rows)] =
            f16 ? ref::f16_add(static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b)) : [&] {
              const double sum = static_cast<double>(std::bit_cast<float>(a)) +
                                 static_cast<double>(std::bit_cast<float>(b));
              // Rounding the exact double sum once is the f32 sum
              // (float_arith_test shows it for every case that matters).
              return std::isnan(sum) ? 0x7FC00000u
                                     : std::bit_cast<std::uint32_t>(static_cast<float>(sum));
            }();
      }
    }
    return out;
  }
};

BiasCall any_bias_call(bool f16, std::uint32_t rows, std::uint32_t columns) {
  BiasCall call{f16, rows, columns, {}, {}, *rc::gen::arbitrary<bool>()};
  if (f16) {
    const auto m = any_f16(std::size_t{rows} * columns), b = any_f16(columns);
    call.matrix.assign(m.begin(), m.end());
    call.bias.assign(b.begin(), b.end());
  } else {
    call.matrix = any_f32_bits(std::size_t{rows} * columns);
    call.bias = any_f32_bits(columns);
  }
  return call;
}

RC_GTEST_PROP(PointwiseKernels, BiasAddOnC16MatchesTheReference, ()) {
  const bool f16 = *rc::gen::arbitrary<bool>();
  const std::uint32_t rows =
      *rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kEdgeRows), std::end(kEdgeRows)));
  const std::uint32_t columns = *rc::gen::weightedOneOf<std::uint32_t>(
      {{3, rc::gen::elementOf(
               std::vector<std::uint32_t>(std::begin(kEdgeColumns), std::end(kEdgeColumns)))},
       {1, rc::gen::inRange(1u, 130u)}});
  const BiasCall call = any_bias_call(f16, rows, columns);
  const CaseResult result = run_case(call.kernel_case());
  RC_ASSERT(result.halted);
  if (rows == 0) return;
  RC_ASSERT(from_bytes(result.operands.at(call.in_place ? 3 : 2), f16 ? 2 : 4) == call.expected());
  RC_ASSERT(result.kernel_cycles == bias_add_cycles(rows, columns, f16 ? 2 : 4));
}

// ---- GeLU

// The f16 definition restated step by step with the reference's own f16
// arithmetic; its tanh step is FP64 tanh rounded to f16, where the model's
// is its own f32 tanh rounded to f16.
std::uint16_t reference_gelu_f16(std::uint16_t x, bool* tanh_near_midpoint) {
  const std::uint16_t c0 = 0x3A62, c1 = 0x29B9;
  const std::uint16_t x2 = ref::f16_mul(x, x), x3 = ref::f16_mul(x2, x);
  const std::uint16_t u = ref::f16_add(x, ref::f16_mul(c1, x3));
  const std::uint16_t v = ref::f16_mul(c0, u);
  const double tanh_v = std::tanh(ref::f16(v));
  const std::uint16_t t = ref::f16_round(tanh_v);
  // Whether tanh(v) lies within 2^−20 (relative) of the midpoint between two
  // f16 values: there a 3-ulp f32 tanh may round the other way.
  if (tanh_near_midpoint != nullptr && std::isfinite(tanh_v)) {
    const std::uint16_t up = ref::f16_round(tanh_v * (1 + std::ldexp(1.0, -20)));
    const std::uint16_t down = ref::f16_round(tanh_v * (1 - std::ldexp(1.0, -20)));
    *tanh_near_midpoint = up != down;
  }
  const std::uint16_t s = ref::f16_add(0x3C00, t);
  return ref::f16_mul(ref::f16_mul(0x3800, x), s);
}

KernelCase gelu_case(std::string_view kernel, unsigned s, const std::vector<std::uint8_t>& in,
                     std::uint32_t count, bool in_place = false) {
  KernelCase c{kernel, {}, {{4, count}}};
  c.operands.push_back(input(3, "in", s, in));
  if (in_place) {
    c.operands.push_back(alias(2, "out", s, 3));
  } else {
    c.operands.push_back(output(2, "out", s, static_cast<std::uint32_t>(in.size())));
  }
  return c;
}

TEST(PointwiseKernels, GeluF16OfEveryInputIsTheStepByStepDefinition) {
  std::size_t disagreements = 0;
  for (const std::uint32_t half : {0u, 0x8000u}) {
    std::vector<std::uint16_t> in(0x8000);
    for (std::uint32_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint16_t>(half + i);
    const CaseResult result = run_case(gelu_case(kGeluF16, 2, bytes_of(in), 0x8000));
    ASSERT_TRUE(result.halted) << result.fault;
    const auto out = result.values<std::uint16_t>(2);
    for (std::size_t i = 0; i < in.size(); ++i) {
      bool near_midpoint = false;
      const std::uint16_t expected = reference_gelu_f16(in[i], &near_midpoint);
      if (out[i] == expected) continue;
      // Only where FP64 tanh sits on an f16 rounding edge, and then by the
      // one f16 step of t (at most 2^−11·|x|/2·2 after the last steps).
      ++disagreements;
      ASSERT_TRUE(near_midpoint) << std::hex << in[i] << ": " << out[i] << " vs " << expected;
      ASSERT_LE(std::fabs(ref::f16(out[i]) - ref::f16(expected)),
                std::ldexp(std::fabs(ref::f16(in[i])), -10) + 1e-7);
    }
  }
  EXPECT_LE(disagreements, 64u);
}

TEST(PointwiseKernels, GeluF32IsWithinItsBoundOfFp64) {
  std::vector<float> in;
  for (float x = -12.0F; x <= 12.0F; x += 0.0137F) in.push_back(x);
  for (const float x :
       {0.0F, -0.0F, 1e-40F, -1e-40F, 65504.0F, -65504.0F, 3e38F, -3e38F,
        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::quiet_NaN()}) {
    in.push_back(x);
  }
  const auto count = static_cast<std::uint32_t>(in.size());
  const CaseResult result = run_case(gelu_case(kGeluF32, 4, bytes_of(in), count, true));
  ASSERT_TRUE(result.halted) << result.fault;
  const auto out = result.values<float>(3);
  const double c0 = 0.7978846, c1 = 0.044715;  // the reference's constants
  for (std::size_t i = 0; i < in.size(); ++i) {
    const double x = in[i];
    const double expected = 0.5 * x * (1.0 + std::tanh(c0 * (x + c1 * x * x * x)));
    if (std::isnan(expected)) {  // NaN and −Inf (−Inf·0)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(out[i]), 0x7FC00000u) << x;
      continue;
    }
    if (std::isinf(expected)) {
      EXPECT_EQ(static_cast<double>(out[i]), expected);
      continue;
    }
    // The stated bound 2^−22·|x| + 2^−149, plus the constants' own rounding
    // to f32 (< 2^−25 relative).
    EXPECT_LE(std::fabs(static_cast<double>(out[i]) - expected),
              std::ldexp(std::fabs(x), -21) + std::ldexp(1.0, -149))
        << x;
  }
}

// The relayout variant: the flat kernel's values, moved from C16 (σ) to A16.
RC_GTEST_PROP(PointwiseKernels, GeluRelayoutIsTheFlatGeluInTheA16Layout, ()) {
  const std::uint32_t rows =
      *rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kEdgeRows), std::end(kEdgeRows)));
  const std::uint32_t columns = *rc::gen::elementOf(
      std::vector<std::uint32_t>(std::begin(kEdgeColumns), std::end(kEdgeColumns)));
  const std::size_t padded = ref::round_up(columns, 16);
  const auto values = any_f16(rows * padded);  // C16, padding included
  const CaseResult flat =
      run_case(gelu_case(kGeluF16, 2, bytes_of(values), static_cast<std::uint32_t>(values.size())));
  RC_ASSERT(flat.halted);
  const auto gelu = flat.values<std::uint16_t>(2);
  KernelCase c{kGeluC16ToA16F16, {}, {{4, rows}, {5, columns}}};
  c.operands.push_back(input(3, "in", 2, bytes_of(values)));
  c.operands.push_back(output(2, "out", 2, static_cast<std::uint32_t>(values.size() * 2)));
  const CaseResult relayout = run_case(c);
  RC_ASSERT(relayout.halted);
  const auto out = relayout.values<std::uint16_t>(2);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t n = 0; n < padded; ++n) {
      const std::uint16_t expected = n < columns ? gelu[ref::output_index(r, n, rows)] : 0;
      RC_ASSERT(out[ref::left_index(r, n, rows)] == expected);
    }
  }
  RC_ASSERT(relayout.kernel_cycles == gelu_relayout_cycles(rows, columns));
}

TEST(PointwiseKernels, StochasticGeluIsDeterministicAndNearTheNearestOne) {
  std::vector<std::uint16_t> in;
  for (std::uint32_t h = 0; h < 0x7C00; h += 5) in.push_back(static_cast<std::uint16_t>(h));
  const auto count = static_cast<std::uint32_t>(in.size());
  sim::SimOptions stochastic;
  stochastic.rounding = Rounding::kStochastic;
  const KernelCase c = gelu_case(kGeluF16, 2, bytes_of(in), count);
  const CaseResult a = run_case(c, stochastic), b = run_case(c, stochastic), nearest = run_case(c);
  ASSERT_TRUE(a.halted && b.halted && nearest.halted) << a.fault;
  EXPECT_EQ(a.operands.at(2), b.operands.at(2));
  EXPECT_NE(a.operands.at(2), nearest.operands.at(2));
  const auto sr = a.values<std::uint16_t>(2), rn = nearest.values<std::uint16_t>(2);
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_LE(std::fabs(ref::f16(sr[i]) - ref::f16(rn[i])), std::ldexp(ref::f16(in[i]), -8) + 1e-6)
        << in[i];
  }
}

// ---- Zero work, overruns, preconditions

TEST(PointwiseKernels, ZeroWorkTouchesNothingAndCostsTheLaunch) {
  for (const std::string_view kernel :
       {kMulF32, kMulF16, kConvertF32ToF16, kConvertF16ToF32, kGeluF16, kGeluF32}) {
    Registers r{};
    r[2] = kBufferBase;
    r[3] = kBufferBase + 0x100;
    // $m4 is the second input of a product, the count (0) of the others.
    r[4] = kernel == kMulF32 || kernel == kMulF16 ? kBufferBase + 0x200 : 0;
    KernelRun run(kernel, r, {});  // no allocations: any access would fault
    ASSERT_TRUE(run.halted()) << kernel << ": " << run.fault_text();
    EXPECT_EQ(run.total_cycles(),
              run.supervisor_cycles() + kKernelLaunchCycles + kWorkerBarrierCycles)
        << kernel;
  }
  for (const auto& [rows, columns] :
       {std::pair{0u, 64u}, std::pair{13u, 0u}, std::pair{0xFFFFFFFFu, 0u}}) {
    for (const std::string_view kernel : {kAddBiasC16F16, kAddBiasC16F32}) {
      Registers r{};
      r[2] = kBufferBase;
      r[3] = kBufferBase + 0x100;
      r[4] = kBufferBase + 0x200;
      r[5] = rows;
      r[6] = columns;
      KernelRun run(kernel, r, {});
      ASSERT_TRUE(run.halted()) << kernel << ": " << run.fault_text();
    }
    Registers r{};
    r[2] = kBufferBase;
    r[3] = kBufferBase + 0x100;
    r[4] = rows;
    r[5] = columns;
    KernelRun run(kGeluC16ToA16F16, r, {});
    ASSERT_TRUE(run.halted()) << run.fault_text();
  }
}

TEST(PointwiseKernels, AnOperandOneElementShortIsAnOverrunNamingIt) {
  const std::vector<std::uint32_t> seven(7, 0x3C00);
  expect_each_short_operand_overruns(mul_case(true, seven, seven, false));
  expect_each_short_operand_overruns(mul_case(false, seven, seven, false));
  expect_each_short_operand_overruns(convert_case(true, to_bytes(seven, 4), 7));
  expect_each_short_operand_overruns(convert_case(false, to_bytes(seven, 2), 7));
  expect_each_short_operand_overruns(gelu_case(kGeluF16, 2, to_bytes(seven, 2), 7));
  expect_each_short_operand_overruns(gelu_case(kGeluF32, 4, to_bytes(seven, 4), 7));
  for (const bool f16 : {true, false}) {
    const BiasCall bias{f16,
                        7,
                        20,
                        std::vector<std::uint32_t>(140, 0x3C00),
                        std::vector<std::uint32_t>(20, 0x3C00),
                        false};
    expect_each_short_operand_overruns(bias.kernel_case());
  }
  KernelCase relayout{kGeluC16ToA16F16, {}, {{4, 7}, {5, 20}}};
  relayout.operands.push_back(input(3, "in", 2, std::vector<std::uint8_t>(7 * 32 * 2)));
  relayout.operands.push_back(output(2, "out", 2, 7 * 32 * 2));
  expect_each_short_operand_overruns(relayout);
}

Registers regs(std::initializer_list<std::pair<unsigned, std::uint32_t>> values) {
  Registers r{};
  for (const auto& [reg, value] : values) r[reg] = value;
  return r;
}

TEST(PointwiseKernels, PreconditionViolationsAreFaultsWithTheReason) {
  constexpr std::uint32_t a = kBufferBase, b = kBufferBase + 0x1000, out = kBufferBase + 0x2000;
  expect_precondition_failure(kMulF16, regs({{2, out + 2}, {3, a}, {4, b}, {5, 4}}),
                              "$m2 = 0x62002 is not word-aligned");
  expect_precondition_failure(kMulF32, regs({{2, a + 4}, {3, a}, {4, b}, {5, 4}}),
                              "$m2 (product) [0x60004, 0x60014) partially overlaps $m3 (left)");
  expect_precondition_failure(kConvertF32ToF16, regs({{2, a}, {3, a}, {4, 8}}),
                              "$m2 (converted) [0x60000, 0x60010) overlaps $m3 (source) [0x60000, "
                              "0x60020): the element sizes differ");
  expect_precondition_failure(
      kConvertF16ToF32, regs({{2, out}, {3, 0xFFFFFFF0}, {4, 16}}),
      "$m3 (source) [0xfffffff0, 0x100000010) reaches past the 32-bit address space");
  expect_precondition_failure(kAddBiasC16F16, regs({{2, out}, {3, a + 4}, {4, b}, {5, 1}, {6, 16}}),
                              "$m3 = 0x60004 is not 8-byte aligned");
  expect_precondition_failure(kAddBiasC16F16, regs({{2, b}, {3, a}, {4, b + 16}, {5, 2}, {6, 16}}),
                              "$m2 (sum) [0x61000, 0x61040) overlaps $m4 (bias)");
  expect_precondition_failure(kAddBiasC16F32,
                              regs({{2, out}, {3, a}, {4, b}, {5, 0x10000}, {6, 0x10000}}),
                              "reaches past the 32-bit address space");
  expect_precondition_failure(kGeluC16ToA16F16, regs({{2, a}, {3, a}, {4, 1}, {5, 16}}),
                              "the layouts differ, so no alias is element-wise");
  expect_precondition_failure(kGeluF16, regs({{2, a + 4}, {3, a}, {4, 8}}), "partially overlaps");
}

}  // namespace
}  // namespace tessera::kernels
