// The CPU reference on issue 18's operations: hand-computed cases, independent
// oracles written here (exact integer sums, f64 loops, the compiler's own
// _Float16 conversion for the one rounding to f16), and the error bounds of
// graph_bounds.hpp checked against scalar models of device plans — f16 GEMMs
// with f16 partials per 16-deep pass (hiho), f16 GeLU/softmax/LayerNorm step
// by step, a flash-attention plan — including adversarial inputs that come
// close to the bound and a worse plan that breaks it.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/f143.hpp"
#include "kernels/float_arith.hpp"
#include "kernels/half.hpp"
#include "support/error.hpp"
#include "tests/testing/graph_bounds.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::testing {
namespace {

using compiler::DType;
using compiler::Graph;
using compiler::Shape;
using compiler::TensorType;
using compiler::ValueId;
using Kind = ElementBound::Kind;

// ---- Bytes ---------------------------------------------------------------------

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes;
  for (const float value : values) {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
  }
  return bytes;
}

std::vector<float> f32_values(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> values;
  for (std::size_t i = 0; i + 3 < bytes.size(); i += 4) {
    std::uint32_t bits = 0;
    for (std::size_t b = 0; b < 4; ++b) bits |= std::uint32_t{bytes[i + b]} << (8 * b);
    values.push_back(std::bit_cast<float>(bits));
  }
  return values;
}

std::vector<std::uint8_t> f16_bytes(const std::vector<std::uint16_t>& bits) {
  std::vector<std::uint8_t> bytes;
  for (const std::uint16_t h : bits) {
    bytes.push_back(static_cast<std::uint8_t>(h));
    bytes.push_back(static_cast<std::uint8_t>(h >> 8));
  }
  return bytes;
}

std::vector<std::uint16_t> f16_bits(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint16_t> bits;
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    bits.push_back(
        static_cast<std::uint16_t>(std::uint32_t{bytes[i]} | std::uint32_t{bytes[i + 1]} << 8));
  }
  return bits;
}

std::vector<std::uint8_t> i32_bytes(const std::vector<std::int32_t>& values) {
  std::vector<float> as_float;
  for (const std::int32_t v : values) as_float.push_back(std::bit_cast<float>(v));
  return f32_bytes(as_float);
}

// The f16 nearest to x, by the compiler's own conversion (an oracle
// independent of kernels/half.hpp and of the reference's rounding).
std::uint16_t oracle_f16(double x) {
  return std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
}
double f16_value(std::uint16_t h) { return static_cast<double>(kernels::f16_to_f32(h)); }
std::uint16_t f16_of(float x) { return kernels::f32_to_f16(x); }

// Random f16 values with exponents in [low, high] ⊆ [−6, 1] (|x| in
// [2^−6, 4)): every one is an integer multiple of 2^−16, every product of two
// a multiple of 2^−32 below 2^4, so sums of a few thousand are exact in int64
// and in a double.
std::vector<std::uint16_t> random_f16(std::mt19937& random, std::size_t count, int low = -6,
                                      int high = 1) {
  std::uniform_int_distribution<int> exponent(15 + low, 15 + high), mantissa(0, 1023), sign(0, 1);
  std::vector<std::uint16_t> values(count);
  for (auto& h : values) {
    h = static_cast<std::uint16_t>(sign(random) << 15 | exponent(random) << 10 | mantissa(random));
  }
  return values;
}

// Σ a_k·b_k exactly, for random_f16 values: an integer number of 2^−32.
double exact_dot(const std::vector<std::uint16_t>& a, std::size_t a_offset,
                 const std::vector<std::uint16_t>& b, std::size_t b_offset, std::size_t b_stride,
                 std::size_t k) {
  std::int64_t sum = 0;
  for (std::size_t t = 0; t < k; ++t) {
    const auto x = static_cast<std::int64_t>(std::ldexp(f16_value(a[a_offset + t]), 16));
    const auto y = static_cast<std::int64_t>(std::ldexp(f16_value(b[b_offset + t * b_stride]), 16));
    sum += x * y;
  }
  return std::ldexp(static_cast<double>(sum), -32);
}

ReferenceResult run(const Graph& g, const TensorBytes& bindings) {
  return evaluate_graph_with_bounds(g, bindings);
}

// ---- mul, convert, block_scale -------------------------------------------------------

TEST(TransformerReference, MulBroadcastsLikeNumPyAndIsExact) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF32, {2, 3});
  const ValueId b = g.host_input("b", DType::kF32, {3});
  const ValueId c = g.host_input("c", DType::kF32, {2, 1});
  g.host_output("ab", g.mul(a, b));
  g.host_output("ca", g.mul(c, a));
  const auto out = run(g, {{"a", f32_bytes({1, 2, 3, 4, 5, 6})},
                           {"b", f32_bytes({10, 0.5f, -1})},
                           {"c", f32_bytes({2, -0.25f})}});
  EXPECT_EQ(f32_values(out.outputs.at("ab")), (std::vector<float>{10, 1, -3, 40, 2.5f, -6}));
  EXPECT_EQ(f32_values(out.outputs.at("ca")), (std::vector<float>{2, 4, 6, -1, -1.25f, -1.5f}));
  EXPECT_EQ(out.bounds.at("ab"), std::vector<ElementBound>(6));  // all exact

  // f16: (1 + 2^-10)² = 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9; (1 + 2^-10)·(1 + 2^-1) =
  // 1.5 + 1.5·2^-10 is 1.5 + 2^-10 + 2^-11: a tie between 0x3E01 and 0x3E02, to even.
  Graph h;
  const ValueId x = h.host_input("x", DType::kF16, {2});
  const ValueId y = h.host_input("y", DType::kF16, {2});
  h.host_output("xy", h.mul(x, y));
  const auto f16_out =
      run(h, {{"x", f16_bytes({0x3C01, 0x3C01})}, {"y", f16_bytes({0x3C01, 0x3E00})}});
  EXPECT_EQ(f16_bits(f16_out.outputs.at("xy")), (std::vector<std::uint16_t>{0x3C02, 0x3E02}));
}

TEST(TransformerReference, ConvertBetweenF32AndF16RoundsToNearestEven) {
  struct Row {
    float x;
    std::uint16_t h;
  };
  const std::vector<Row> rows{
      {1.0f, 0x3C00},
      {1.0f + 0x1p-11f, 0x3C00},      // a tie: to even
      {1.0f + 3 * 0x1p-11f, 0x3C02},  // a tie: to even (up)
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3C01},
      {65504.0f, 0x7BFF},
      {65519.0f, 0x7BFF},
      {65520.0f, 0x7C00},  // the tie with 65536: overflows
      {0x1p-24f, 0x0001},  // the smallest subnormal
      {0x1p-25f, 0x0000},  // half of it: a tie, to even (zero)
      {0x1.8p-25f, 0x0001},
      {-0.0f, 0x8000},
  };
  std::vector<float> xs;
  for (const Row& row : rows) xs.push_back(row.x);
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {static_cast<std::uint32_t>(rows.size())});
  const ValueId h = g.convert(x, DType::kF16);
  g.host_output("h", h);
  g.host_output("back", g.convert(h, DType::kF32));
  const auto out = run(g, {{"x", f32_bytes(xs)}});
  const auto halves = f16_bits(out.outputs.at("h"));
  const auto back = f32_values(out.outputs.at("back"));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(halves[i], rows[i].h) << "x = " << rows[i].x;
    EXPECT_EQ(halves[i], oracle_f16(static_cast<double>(rows[i].x))) << "x = " << rows[i].x;
    // f16 → f32 is exact.
    if (rows[i].h != 0x7C00) {
      EXPECT_EQ(static_cast<double>(back[i]), f16_value(rows[i].h));
    }
  }
  EXPECT_TRUE(std::isinf(back[6]));
}

TEST(TransformerReference, ConvertToAndFromF143UsesTheCodecsRules) {
  // kernels-siglip-f143.md §3's test vectors at scale 0, and the same values
  // ×4 at scale 2.
  const std::vector<float> x{7.0f, 7.25f, 7.5f, 7.75f, 8.0f, 8.5f, 9.0f, 9.5f, 300.0f, -0.0f};
  const std::vector<std::uint8_t> codes{0x56, 0x56, 0x57, 0x58, 0x58, 0x58, 0x59, 0x5A, 0x7F, 0x00};
  for (const int scale : {0, 2}) {
    std::vector<float> scaled;
    for (const float v : x) scaled.push_back(std::ldexp(v, scale));
    Graph g;
    const ValueId in = g.host_input("x", DType::kF32, {static_cast<std::uint32_t>(x.size())});
    const ValueId f8 = g.convert(in, compiler::ElementType{DType::kF8F143, scale});
    g.host_output("codes", f8);
    g.host_output("values", g.convert(f8, DType::kF32));
    const auto out = run(g, {{"x", f32_bytes(scaled)}});
    EXPECT_EQ(out.outputs.at("codes"), codes) << "scale " << scale;
    // Decoded: 7, 7, 7.5, 8, 8, 8, 9, 10, 240 (saturated), 0 — times 2^scale.
    const std::vector<float> decoded{7, 7, 7.5f, 8, 8, 8, 9, 10, 240, 0};
    std::vector<float> expected;
    for (const float v : decoded) expected.push_back(std::ldexp(v, scale));
    EXPECT_EQ(f32_values(out.outputs.at("values")), expected) << "scale " << scale;
  }
  // Codes to f16: 0x7F·2^9 = 122880 overflows f16; 0x01 = 2^-10, at scale -14
  // the smallest f16 subnormal, at -15 half of it (a tie, to zero); 0x80 is NaN.
  for (const auto& [scale, code, expected] :
       std::vector<std::tuple<int, std::uint8_t, std::uint16_t>>{{9, 0x7F, 0x7C00},
                                                                 {8, 0x7F, 0x7B80},
                                                                 {-14, 0x01, 0x0001},
                                                                 {-15, 0x01, 0x0000},
                                                                 {0, 0x80, 0x7E00},
                                                                 {-3, 0xFF, 0xCF80}}) {
    Graph g;
    const ValueId in = g.host_input("c", TensorType{{DType::kF8F143, scale}, {1}});
    g.host_output("h", g.convert(in, DType::kF16));
    EXPECT_EQ(f16_bits(run(g, {{"c", {code}}}).outputs.at("h")).at(0), expected)
        << "code " << int{code} << " at scale " << scale;
  }
}

// GRAPH_FORMAT.md: for scales in [−14, 8] every F143 code's value is an f16
// exactly, so the f16 expansion of F143 operands loses nothing there.
TEST(TransformerReference, F143ExpandsToF16ExactlyForScalesFromMinus14To8) {
  for (int scale = kernels::f143::kMinScale; scale <= kernels::f143::kMaxScale; ++scale) {
    bool exact = true;
    for (int code = 0; code < 256; ++code) {
      if (code == kernels::f143::kNan) continue;
      const float value = kernels::f143::decode(static_cast<std::uint8_t>(code), scale);
      exact = exact && kernels::f16_to_f32(kernels::f32_to_f16(value)) == value;
    }
    EXPECT_EQ(exact, scale >= -14 && scale <= 8) << "scale " << scale;
  }
}

TEST(TransformerReference, BlockScaleGivesEach64x64BlockItsScale) {
  // Codes [65, 65] all 0x40 (1.0) with scales [[0, 1], [2, -3]].
  Graph g;
  const ValueId codes = g.parameter("codes", DType::kU8, {65, 65});
  const ValueId scales = g.parameter("scales", DType::kI32, {2, 2});
  g.host_output("w", g.convert(g.block_scale(codes, scales), DType::kF32));
  const auto out = run(g, {{"codes", std::vector<std::uint8_t>(65 * 65, 0x40)},
                           {"scales", i32_bytes({0, 1, 2, -3})}});
  const auto w = f32_values(out.outputs.at("w"));
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(w[63], 1.0f);
  EXPECT_EQ(w[64], 2.0f);              // (0, 64)
  EXPECT_EQ(w[63 * 65 + 63], 1.0f);    // (63, 63)
  EXPECT_EQ(w[64 * 65], 4.0f);         // (64, 0)
  EXPECT_EQ(w[64 * 65 + 64], 0.125f);  // (64, 64)

  // A scale outside [−32, 31] is refused when evaluated, naming it.
  try {
    run(g, {{"codes", std::vector<std::uint8_t>(65 * 65, 0x40)},
            {"scales", i32_bytes({0, 1, 40, -3})}});
    ADD_FAILURE() << "no error";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("scales element 2 is 40, outside the F143 scale range "
                        "[-32, 31]"),
              std::string::npos)
        << error.what();
  }
}

// ---- matmul ------------------------------------------------------------------------

TEST(TransformerReference, MatmulF32ByHandAndWithBroadcasting) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF32, {2, 2});
  const ValueId b = g.host_input("b", DType::kF32, {2, 2});
  g.host_output("ab", g.matmul(a, b));
  const auto out = run(g, {{"a", f32_bytes({1, 2, 3, 4})}, {"b", f32_bytes({5, 6, 7, 8})}});
  EXPECT_EQ(f32_values(out.outputs.at("ab")), (std::vector<float>{19, 22, 43, 50}));
  EXPECT_EQ(out.bounds.at("ab")[0].kind, Kind::kWithin);

  // a [1, 2, 1, 2] (broadcast over the 3 of b) · b [3, 1, 2, 1] → [3, 2, 1, 1]:
  // np.matmul(a, b)[i, j] = a[0, j] · b[i, 0].
  Graph h;
  const ValueId x = h.host_input("a", DType::kF32, {1, 2, 1, 2});
  const ValueId y = h.host_input("b", DType::kF32, {3, 1, 2, 1});
  const ValueId xy = h.matmul(x, y);
  EXPECT_EQ(h.type(xy).shape, (Shape{3, 2, 1, 1}));
  h.host_output("xy", xy);
  const auto broadcast =
      run(h, {{"a", f32_bytes({1, 2, 3, 4})}, {"b", f32_bytes({1, 10, 100, 1000, -1, 0})}});
  // a rows [1, 2], [3, 4]; b columns [1, 10], [100, 1000], [-1, 0].
  EXPECT_EQ(f32_values(broadcast.outputs.at("xy")),
            (std::vector<float>{21, 43, 2100, 4300, -1, -3}));
}

// The shapes issue 18 names, as (M, K, N) triples that reach each extent on
// each axis.
const std::vector<std::array<std::uint32_t, 3>> kShapes{{1, 1, 1},     {12, 13, 71},  {13, 72, 80},
                                                        {71, 80, 129}, {72, 129, 12}, {80, 12, 13},
                                                        {129, 71, 72}, {1, 129, 1}};

TEST(TransformerReference, MatmulF16RoundsTheExactSumOnce) {
  // [1, 2^-11, 2^-15]·[1, 1, 2^-15] = 1 + 2^-11 + 2^-30: just above the tie
  // between 1 and 1 + 2^-10, so 0x3C01. Rounded through f32 to nearest first,
  // it would become the tie 1 + 2^-11 and then 1 (0x3C00).
  Graph g;
  g.host_output("y", g.matmul(g.host_input("a", DType::kF16, {1, 3}),
                              g.host_input("b", DType::kF16, {3, 1})));
  const auto out = run(g, {{"a", f16_bytes({0x3C00, 0x1000, 0x0200})},
                           {"b", f16_bytes({0x3C00, 0x3C00, 0x0200})}});
  EXPECT_EQ(f16_bits(out.outputs.at("y")), (std::vector<std::uint16_t>{0x3C01}));
}

TEST(TransformerReference, MatmulF16IsTheCorrectlyRoundedExactResult) {
  std::mt19937 random(18);
  for (const auto& [m, k, n] : kShapes) {
    const auto a = random_f16(random, m * k);
    const auto b = random_f16(random, std::size_t{2} * k * n);  // two batches of b
    Graph g;
    const ValueId x = g.host_input("a", DType::kF16, {m, k});
    const ValueId y = g.host_input("b", DType::kF16, {2, k, n});
    g.host_output("ab", g.matmul(x, y));  // a broadcast over b's batch
    const auto out = run(g, {{"a", f16_bytes(a)}, {"b", f16_bytes(b)}});
    const auto ab = f16_bits(out.outputs.at("ab"));
    ASSERT_EQ(ab.size(), std::size_t{2} * m * n);
    for (std::uint32_t batch = 0; batch < 2; ++batch) {
      for (std::uint32_t i = 0; i < m; ++i) {
        for (std::uint32_t j = 0; j < n; ++j) {
          const double exact = exact_dot(a, i * k, b, batch * k * n + j, n, k);
          ASSERT_EQ(ab[(batch * m + i) * n + j], oracle_f16(exact))
              << m << "x" << k << "x" << n << " batch " << batch << " (" << i << ", " << j << ")";
        }
      }
    }
  }
}

TEST(TransformerReference, MatmulF32AgreesWithAnF64Loop) {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-2, 2);
  for (const auto& [m, k, n] : kShapes) {
    std::vector<float> a(m * k), b(k * n);
    for (auto& v : a) v = uniform(random);
    for (auto& v : b) v = uniform(random);
    Graph g;
    g.host_output("ab", g.matmul(g.host_input("a", DType::kF32, {m, k}),
                                 g.host_input("b", DType::kF32, {k, n})));
    const auto out = run(g, {{"a", f32_bytes(a)}, {"b", f32_bytes(b)}});
    const auto ab = f32_values(out.outputs.at("ab"));
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) {
        long double sum = 0;
        for (std::uint32_t t = 0; t < k; ++t) {
          sum += static_cast<long double>(a[i * k + t]) * static_cast<long double>(b[t * n + j]);
        }
        // Both are the f32 nearest to a sum within 2^-40 relative of exact.
        const float expected = static_cast<float>(sum);
        EXPECT_LE(std::fabs(ab[i * n + j] - expected), std::fabs(expected) * 0x1p-23f + 0x1p-60f)
            << m << "x" << k << "x" << n;
      }
    }
  }
}

TEST(TransformerReference, MatmulOfBlockScaledWeightsIsTheF16MatmulOfTheirExpansion) {
  // By hand: a = [1, 1] (f16), b = codes [0x40, 0x48] (1.0, 2.0) at scale 3 → 8 + 16.
  {
    Graph g;
    const ValueId a = g.host_input("a", DType::kF16, {1, 2});
    const ValueId w = g.block_scale(g.parameter("codes", DType::kU8, {2, 1}),
                                    g.parameter("scales", DType::kI32, {1, 1}));
    g.host_output("y", g.matmul(a, w));
    const auto out = run(
        g,
        {{"a", f16_bytes({0x3C00, 0x3C00})}, {"codes", {0x40, 0x48}}, {"scales", i32_bytes({3})}});
    EXPECT_EQ(f16_bits(out.outputs.at("y")), (std::vector<std::uint16_t>{f16_of(24.0f)}));
  }
  // K = 129, N = 72: three K blocks and two N blocks of different scales,
  // with f16 activations and with F143 activations at a tensor-wide scale.
  std::mt19937 random(143);
  std::uniform_int_distribution<int> code(0, 255), scale(-6, 4);
  const std::uint32_t m = 13, k = 129, n = 72;
  std::vector<std::uint8_t> codes(k * n), activation_codes(m * k);
  for (auto& c : codes) c = static_cast<std::uint8_t>(code(random) & 0xF7);  // never 0x80 (NaN)
  for (auto& c : activation_codes) c = static_cast<std::uint8_t>(code(random) & 0x7F);
  std::vector<std::int32_t> scales(3 * 2);
  for (auto& s : scales) s = scale(random);
  const auto a = random_f16(random, m * k);
  Graph g;
  const ValueId x = g.host_input("a", DType::kF16, {m, k});
  const ValueId x8 = g.host_input("a8", TensorType{{DType::kF8F143, -2}, {m, k}});
  const ValueId w = g.block_scale(g.parameter("codes", DType::kU8, {k, n}),
                                  g.parameter("scales", DType::kI32, {3, 2}));
  const ValueId expanded = g.convert(w, DType::kF16);
  g.host_output("direct", g.matmul(x, w));
  g.host_output("expanded", g.matmul(x, expanded));
  g.host_output("direct8", g.matmul(x8, w));
  g.host_output("expanded8", g.matmul(g.convert(x8, DType::kF16), expanded));
  g.host_output("w", expanded);
  const auto out = run(g, {{"a", f16_bytes(a)},
                           {"a8", activation_codes},
                           {"codes", codes},
                           {"scales", i32_bytes(scales)}});
  EXPECT_EQ(out.outputs.at("direct"), out.outputs.at("expanded"));
  EXPECT_EQ(out.outputs.at("direct8"), out.outputs.at("expanded8"));
  // The expansion itself: element (k, n) is decode(code)·2^scale[k/64][n/64].
  const auto expansion = f16_bits(out.outputs.at("w"));
  for (std::uint32_t r = 0; r < k; ++r) {
    for (std::uint32_t c = 0; c < n; ++c) {
      const float value = kernels::f143::decode(codes[r * n + c], scales[(r / 64) * 2 + c / 64]);
      ASSERT_EQ(expansion[r * n + c], oracle_f16(static_cast<double>(value))) << r << ", " << c;
    }
  }
}

// ---- The matmul bound against scalar models of device GEMMs ---------------------------

// An f16 GEMM element as the AMP's hiho variant computes it: an f16 partial,
// and per 16-deep pass the 16 products (exact in f32) and the partial summed
// in f32, rounded to f16 at the end of the pass.
std::uint16_t hiho_dot(const std::vector<std::uint16_t>& a, std::size_t a_offset,
                       const std::vector<std::uint16_t>& b, std::size_t b_offset,
                       std::size_t b_stride, std::size_t begin, std::size_t end,
                       std::uint16_t partial = 0) {
  for (std::size_t pass = begin; pass < end; pass += 16) {
    float sum = kernels::f16_to_f32(partial);
    for (std::size_t t = pass; t < std::min(pass + 16, end); ++t) {
      sum += kernels::f16_to_f32(a[a_offset + t]) * kernels::f16_to_f32(b[b_offset + t * b_stride]);
    }
    partial = f16_of(sum);
  }
  return partial;
}

// The worst plan this semantics forbids: an f16 rounding after every product.
std::uint16_t per_product_f16_dot(const std::vector<std::uint16_t>& a,
                                  const std::vector<std::uint16_t>& b, std::size_t k) {
  std::uint16_t partial = 0;
  for (std::size_t t = 0; t < k; ++t) {
    partial = f16_of(kernels::f16_to_f32(partial) +
                     kernels::f16_to_f32(a[t]) * kernels::f16_to_f32(b[t]));
  }
  return partial;
}

TEST(MatmulBound, StatesTheF16RoundingsAndTheFormula) {
  EXPECT_EQ(bounds::f16_gemm_roundings(1), 1u);
  EXPECT_EQ(bounds::f16_gemm_roundings(16), 1u);
  EXPECT_EQ(bounds::f16_gemm_roundings(17), 2u);
  EXPECT_EQ(bounds::f16_gemm_roundings(72), 5u);
  EXPECT_EQ(bounds::f16_gemm_roundings(129), 9u);
  EXPECT_EQ(bounds::f16_gemm_roundings(4096), 256u);
  // K = 129, magnitude 1: (1 + 2^-24)^16·(1 + 2^-11)^9 − 1 ≈ 9·2^-11, plus
  // 18 half-subnormals.
  const double expected = std::expm1(16 * std::log1p(0x1p-24) + 9 * std::log1p(0x1p-11)) +
                          18 * 0x1p-25 * std::pow(1 + 0x1p-11, 9);
  EXPECT_NEAR(bounds::matmul_error_bound(DType::kF16, 129, 1.0), expected, expected * 1e-9);
  // f32: K roundings of 2^-24.
  const double f32_expected = std::expm1(1000 * std::log1p(0x1p-24));
  EXPECT_NEAR(bounds::matmul_error_bound(DType::kF32, 1000, 1.0), f32_expected,
              f32_expected * 1e-9);
  // A magnitude whose partials could pass 65504 is not bounded.
  EXPECT_TRUE(std::isinf(bounds::matmul_error_bound(DType::kF16, 16, 65500)));
  EXPECT_TRUE(std::isfinite(bounds::matmul_error_bound(DType::kF16, 16, 60000)));
}

TEST(MatmulBound, HoldsForHihoGemmsAndKSplitsOnRandomShapes) {
  std::mt19937 random(1618);
  for (const auto& [m, k, n] : kShapes) {
    const auto a = random_f16(random, m * k);
    const auto b = random_f16(random, k * n);
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) {
        const double exact = exact_dot(a, i * k, b, j, n, k);
        double magnitude = 0;
        for (std::uint32_t t = 0; t < k; ++t) {
          magnitude += std::fabs(f16_value(a[i * k + t]) * f16_value(b[t * n + j]));
        }
        const double bound = bounds::matmul_error_bound(DType::kF16, k, magnitude);
        // One chain of passes over K blocks of 64.
        const double whole = f16_value(hiho_dot(a, i * k, b, j, n, 0, k));
        ASSERT_LE(std::fabs(whole - exact), bound) << m << "x" << k << "x" << n;
        // A K-split at the middle pass boundary, the two f16 partials added in f16.
        const std::size_t split = (k / 32) * 16;
        const std::uint16_t low = hiho_dot(a, i * k, b, j, n, 0, split);
        const std::uint16_t high = hiho_dot(a, i * k, b, j, n, split, k);
        const double both = f16_value(kernels::add_f16_bits(low, high));
        ASSERT_LE(std::fabs(both - exact), bound) << m << "x" << k << "x" << n << " split";
      }
    }
  }
}

// The native FP8 GEMM (kernels/gemm.hpp, GemmFamily::kF143): per 32-deep pass
// the products of F143 operands (exact in f32: 4-bit significands) and the
// incoming f16 partial summed in f32, rounded to f16 at the end of the pass.
// On F143 values whose f16 expansions are exact (here scale −6: every code a
// multiple of 2^−16 below 4, so exact_dot is exact), it meets the f16 bound
// with fewer roundings than a 16-deep plan (docs/GRAPH_FORMAT.md).
TEST(MatmulBound, HoldsForTheNativeFp8GemmsPassesOf32) {
  std::mt19937 random(8);
  std::uniform_int_distribution<int> code(0, 255);
  const auto random_f143 = [&](std::size_t count) {
    std::vector<std::uint16_t> values(count);
    for (auto& v : values) {
      std::uint8_t c = static_cast<std::uint8_t>(code(random));
      if (c == kernels::f143::kNan) c = 0;
      v = f16_of(kernels::f143::decode(c, -6));
    }
    return values;
  };
  for (const auto& [m, k, n] : kShapes) {
    const auto a = random_f143(std::size_t{m} * k);
    const auto b = random_f143(std::size_t{k} * n);
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) {
        std::uint16_t partial = 0;
        double magnitude = 0;
        for (std::uint32_t pass = 0; pass < k; pass += 32) {
          float sum = kernels::f16_to_f32(partial);
          for (std::uint32_t t = pass; t < std::min(pass + 32, k); ++t) {
            const float product =
                kernels::f16_to_f32(a[i * k + t]) * kernels::f16_to_f32(b[t * n + j]);
            sum += product;
            magnitude += std::fabs(static_cast<double>(product));
          }
          partial = f16_of(sum);
        }
        const double exact = exact_dot(a, i * k, b, j, n, k);
        ASSERT_LE(std::fabs(f16_value(partial) - exact),
                  bounds::matmul_error_bound(DType::kF16, k, magnitude))
            << m << "x" << k << "x" << n;
      }
    }
  }
}

TEST(MatmulBound, AdversarialHihoInputsComeCloseAndAPerProductPlanBreaksIt) {
  // K = 129 (9 passes): b_0 = 1024, every other product 1/32, a = 1. Each pass
  // after the first adds exactly half an ulp of 1024 — a tie, kept at the
  // even 1024 — so the hiho result stays 1024 where the exact sum is 1028.
  const std::size_t k = 129;
  const std::vector<std::uint16_t> ones(k, 0x3C00);
  std::vector<std::uint16_t> b(k, f16_of(1.0f / 32));
  b[0] = f16_of(1024.0f);
  const double exact = 1024 + 128.0 / 32;
  const double bound = bounds::matmul_error_bound(DType::kF16, k, exact);
  const double hiho = f16_value(hiho_dot(ones, 0, b, 0, 1, 0, k));
  EXPECT_EQ(hiho, 1024.0);
  EXPECT_LE(std::fabs(hiho - exact), bound);
  EXPECT_GE(std::fabs(hiho - exact), 0.85 * bound) << "the bound is " << bound;

  // Products just under half an ulp of 1024 (0.49): a per-product f16
  // accumulation drops every one of them (62.7 in all), far past the bound
  // for K = 129; the hiho passes sum 16 of them first and stay inside it.
  std::vector<std::uint16_t> c(k, f16_of(0.49f));
  c[0] = f16_of(1024.0f);
  const double exact_c = 1024 + 128 * f16_value(c[1]);
  const double bound_c = bounds::matmul_error_bound(DType::kF16, k, exact_c);
  EXPECT_GT(std::fabs(f16_value(per_product_f16_dot(ones, c, k)) - exact_c), 10 * bound_c);
  EXPECT_LE(std::fabs(f16_value(hiho_dot(ones, 0, c, 0, 1, 0, k)) - exact_c), bound_c);
}

TEST(MatmulBound, TheReferenceToleranceAdmitsTheHihoResult) {
  // The reference's own tolerance (check_within_bounds) admits the hiho
  // model's result, and refuses it moved by the bound.
  std::mt19937 random(7);
  const std::uint32_t m = 12, k = 80, n = 13;
  const auto a = random_f16(random, m * k), b = random_f16(random, k * n);
  Graph g;
  const ValueId ab =
      g.matmul(g.host_input("a", DType::kF16, {m, k}), g.host_input("b", DType::kF16, {k, n}));
  g.host_output("ab", ab);
  const auto out = run(g, {{"a", f16_bytes(a)}, {"b", f16_bytes(b)}});
  std::vector<std::uint16_t> hiho, pushed;
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) hiho.push_back(hiho_dot(a, i * k, b, j, n, 0, k));
  }
  const auto& bound = out.bounds.at("ab");
  EXPECT_EQ(check_within_bounds(g.type(ab), f16_bytes(hiho), out.outputs.at("ab"), bound),
            std::nullopt);
  pushed = f16_bits(out.outputs.at("ab"));
  pushed[5] = f16_of(static_cast<float>(f16_value(pushed[5]) + 2 * bound[5].max_error + 0.01));
  const auto refused =
      check_within_bounds(g.type(ab), f16_bytes(pushed), out.outputs.at("ab"), bound);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->rfind("element 5:", 0), 0u) << *refused;
}

TEST(MatmulBound, NanAndInfinityInputs) {
  Graph g;
  g.host_output("ab", g.matmul(g.host_input("a", DType::kF32, {2, 2}),
                               g.host_input("b", DType::kF32, {2, 1})));
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  const auto out = run(g, {{"a", f32_bytes({nan, 1, inf, 1})}, {"b", f32_bytes({1, 2})}});
  EXPECT_EQ(out.bounds.at("ab")[0].kind, Kind::kNan);
  EXPECT_EQ(out.bounds.at("ab")[1].kind, Kind::kUnconstrained);
  EXPECT_TRUE(std::isnan(f32_values(out.outputs.at("ab"))[0]));
}

TEST(MatmulBound, HoldsForF32PlansSequentialAndPairwise) {
  // f32 GEMMs keep f32 partials; any summation order meets the bound, here
  // left to right and pairwise, through the reference's own comparison.
  std::mt19937 random(32);
  std::normal_distribution<float> normal(0, 1);
  for (const auto& [m, k, n] : kShapes) {
    std::vector<float> a(m * k), b(k * n);
    for (auto& v : a) v = normal(random);
    for (auto& v : b) v = normal(random);
    Graph g;
    const ValueId ab =
        g.matmul(g.host_input("a", DType::kF32, {m, k}), g.host_input("b", DType::kF32, {k, n}));
    g.host_output("ab", ab);
    const auto out = run(g, {{"a", f32_bytes(a)}, {"b", f32_bytes(b)}});
    std::vector<float> sequential, pairwise;
    for (std::uint32_t i = 0; i < m; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) {
        std::vector<float> products(k);
        float sum = 0;
        for (std::uint32_t t = 0; t < k; ++t) sum += products[t] = a[i * k + t] * b[t * n + j];
        sequential.push_back(sum);
        for (std::size_t width = 1; width < k; width *= 2) {
          for (std::size_t t = 0; t + width < k; t += 2 * width) products[t] += products[t + width];
        }
        pairwise.push_back(products[0]);
      }
    }
    for (const auto* device : {&sequential, &pairwise}) {
      EXPECT_EQ(check_within_bounds(g.type(ab), f32_bytes(*device), out.outputs.at("ab"),
                                    out.bounds.at("ab")),
                std::nullopt)
          << m << "x" << k << "x" << n;
    }
  }
}

// ---- gelu ----------------------------------------------------------------------------

double oracle_gelu(double x) {
  const double inner = 0.7978845608028654 * (x + 0.044715 * std::pow(x, 3));
  return x * (1 + std::tanh(inner)) / 2;
}

TEST(TransformerReference, GeluByHandAndWithinItsBoundForEveryF16) {
  // By hand: gelu(1) = 0.5·(1 + tanh(0.7978845608·1.044715)) = 0.8411919906,
  // gelu(−1) = 1 − 0.8411919906 − 1 = −0.1588080094, gelu(0) = 0.
  Graph g;
  g.host_output("y", g.gelu(g.host_input("x", DType::kF32, {4})));
  const auto out = run(g, {{"x", f32_bytes({1, -1, 0, 3})}});
  const auto y = f32_values(out.outputs.at("y"));
  EXPECT_NEAR(y[0], 0.8411919906f, 1e-7f);
  EXPECT_NEAR(y[1], -0.1588080094f, 1e-7f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], static_cast<float>(oracle_gelu(3)));

  // Every finite f16: the reference is the nearest f16 to the f64 formula,
  // and a plan computing every step in f16 (the prior art's kernel, its
  // rounded constants 0x3A62 and 0x29B9, tanh correctly rounded) is within
  // the bound.
  std::vector<std::uint16_t> all;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) != 0x7C00) all.push_back(static_cast<std::uint16_t>(h));
  }
  Graph f;
  const ValueId x = f.host_input("x", DType::kF16, {static_cast<std::uint32_t>(all.size())});
  f.host_output("y", f.gelu(x));
  const auto f16_out = run(f, {{"x", f16_bytes(all)}});
  const auto got = f16_bits(f16_out.outputs.at("y"));
  const auto& bound = f16_out.bounds.at("y");
  const auto r = [](double v) { return f16_value(oracle_f16(v)); };
  double worst = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const double v = f16_value(all[i]);
    ASSERT_EQ(got[i], oracle_f16(oracle_gelu(v))) << v;
    const double cube = r(r(v * v) * v);
    const double z = r(f16_value(0x3A62) * r(v + r(f16_value(0x29B9) * cube)));
    const double device = r(r(0.5 * v) * r(1 + r(std::tanh(z))));
    const double limit = bounds::gelu_error_bound(DType::kF16, v);
    ASSERT_LE(std::fabs(device - oracle_gelu(v)), limit) << "x = " << v;
    ASSERT_EQ(bound[i].kind, Kind::kWithin);
    ASSERT_LE(std::fabs(device - f16_value(got[i])), bound[i].max_error) << "x = " << v;
    if (limit > 0) worst = std::max(worst, std::fabs(device - oracle_gelu(v)) / limit);
  }
  // Not absurdly loose: some input uses a good part of its bound.
  EXPECT_GT(worst, 0.2);
}

// ---- softmax -------------------------------------------------------------------------

TEST(TransformerReference, SoftmaxByHandAlongTheLastAxis) {
  // Rows [0, 1] (1/(1 + e), e/(1 + e)), [5, 5] (halves), and an f64 loop
  // without the max subtraction for a longer row.
  Graph g;
  g.host_output("y", g.softmax(g.host_input("x", DType::kF32, {2, 2}), 1));
  const auto y = f32_values(run(g, {{"x", f32_bytes({0, 1, 5, 5})}}).outputs.at("y"));
  EXPECT_NEAR(y[0], 0.2689414214f, 1e-8f);
  EXPECT_NEAR(y[1], 0.7310585786f, 1e-8f);
  EXPECT_EQ(y[2], 0.5f);
  EXPECT_EQ(y[3], 0.5f);
}

// softmax of one f16 row as a device computes it: max, (x − max) in f32
// rounded to f16, exp rounded to f16, the sum in f32, one reciprocal rounded
// to f16 and an f16 multiply.
std::vector<double> f16_softmax_model(const std::vector<double>& x) {
  const auto r = [](double v) { return f16_value(oracle_f16(v)); };
  const double m = *std::max_element(x.begin(), x.end());
  std::vector<double> e(x.size());
  float sum = 0;
  for (std::size_t j = 0; j < x.size(); ++j) {
    e[j] = r(std::exp(r(x[j] - m)));
    sum += static_cast<float>(e[j]);
  }
  const double reciprocal = r(1.0 / static_cast<double>(sum));
  for (double& v : e) v = r(v * reciprocal);
  return e;
}

TEST(SoftmaxBound, HoldsForAnF16PlanOnRowsOfTheIssuesLengths) {
  std::mt19937 random(3);
  double worst = 0;  // the largest error / bound seen
  for (const std::uint32_t n : {1u, 12u, 13u, 71u, 72u, 80u, 129u}) {
    for (const double spread : {0.5, 4.0, 12.0}) {
      std::normal_distribution<float> normal(0, static_cast<float>(spread));
      std::vector<std::uint16_t> row(n);
      for (auto& h : row) h = f16_of(normal(random));
      Graph g;
      g.host_output("y", g.softmax(g.host_input("x", DType::kF16, {1, n}), 1));
      const auto out = run(g, {{"x", f16_bytes(row)}});
      std::vector<double> x;
      for (const auto h : row) x.push_back(f16_value(h));
      const auto device = f16_softmax_model(x);
      // The f64 oracle, written without the max subtraction.
      double sum = 0;
      for (const double v : x) sum += std::exp(v);
      std::vector<double> limit(n);
      bounds::softmax_error_bounds(DType::kF16, x, {}, limit);
      const auto got = f16_bits(out.outputs.at("y"));
      for (std::uint32_t j = 0; j < n; ++j) {
        const double exact = std::exp(x[j]) / sum;
        ASSERT_LE(std::fabs(device[j] - exact), limit[j]) << "n " << n << " spread " << spread;
        worst = std::max(worst, std::fabs(device[j] - exact) / limit[j]);
        ASSERT_LE(std::fabs(f16_value(got[j]) - exact), 0x1p-11 * exact + 0x1p-25);
      }
      const TensorType type{{DType::kF16, 0}, {1, n}};
      std::vector<std::uint16_t> device_bits;
      for (const double v : device) device_bits.push_back(oracle_f16(v));
      EXPECT_EQ(check_within_bounds(type, f16_bytes(device_bits), out.outputs.at("y"),
                                    out.bounds.at("y")),
                std::nullopt);
    }
  }
  EXPECT_GT(worst, 0.3);  // not vacuous (0.74 when written)
}

TEST(SoftmaxBound, HoldsForAnF32Plan) {
  std::mt19937 random(4);
  std::normal_distribution<float> normal(0, 6);
  for (const std::uint32_t n : {1u, 13u, 129u}) {
    std::vector<float> x(3 * n);
    for (auto& v : x) v = normal(random);
    Graph g;
    const ValueId y = g.softmax(g.host_input("x", DType::kF32, {3, n}), 1);
    g.host_output("y", y);
    const auto out = run(g, {{"x", f32_bytes(x)}});
    std::vector<float> device;
    for (std::uint32_t row = 0; row < 3; ++row) {
      const float* values = &x[row * n];
      const float m = *std::max_element(values, values + n);
      float sum = 0;
      for (std::uint32_t j = 0; j < n; ++j) sum += std::exp(values[j] - m);
      for (std::uint32_t j = 0; j < n; ++j) device.push_back(std::exp(values[j] - m) / sum);
    }
    EXPECT_EQ(
        check_within_bounds(g.type(y), f32_bytes(device), out.outputs.at("y"), out.bounds.at("y")),
        std::nullopt)
        << "n " << n;
  }
}

// ---- layer_norm ----------------------------------------------------------------------

TEST(TransformerReference, LayerNormByHand) {
  // x = [1, 2, 3, 4]: mean 2.5, population variance 1.25; epsilon 0.3125 makes
  // √(var + ε) = 1.25, so (x − mean)/1.25 = [−1.2, −0.4, 0.4, 1.2]; ·2 + 1.
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {2, 4});
  const ValueId gamma = g.parameter("gamma", DType::kF32, {4});
  const ValueId beta = g.parameter("beta", DType::kF32, {4});
  g.host_output("y", g.layer_norm(x, gamma, beta, 0.3125));
  const auto out = run(g, {{"x", f32_bytes({1, 2, 3, 4, 10, 10, 10, 10})},
                           {"gamma", f32_bytes({2, 2, 2, 2})},
                           {"beta", f32_bytes({1, 1, 1, -1})}});
  const auto y = f32_values(out.outputs.at("y"));
  const std::vector<float> expected{-1.4f, 0.2f, 1.8f, 1.4f, 1, 1, 1, -1};
  for (std::size_t i = 0; i < 8; ++i) EXPECT_NEAR(y[i], expected[i], 1e-6f) << i;
}

// layer_norm of an f16 row as the prior art's kernel computes it: Σx and Σx²
// in f32, var = E[x²] − mean² clamped at 0, mean and rstd rounded to f16,
// then (x − mean)·rstd·gamma + beta in f16.
std::vector<double> f16_layer_norm_model(const std::vector<double>& x,
                                         const std::vector<double>& gamma,
                                         const std::vector<double>& beta, double epsilon) {
  const auto r = [](double v) { return f16_value(oracle_f16(v)); };
  float sum = 0, squares = 0;
  for (const double v : x) {
    sum += static_cast<float>(v);
    squares += static_cast<float>(v) * static_cast<float>(v);
  }
  const float c = static_cast<float>(x.size());
  const float mean = sum / c;
  const float variance = std::max(0.0f, squares / c - mean * mean);
  const double rstd = r(1 / std::sqrt(static_cast<double>(variance + static_cast<float>(epsilon))));
  std::vector<double> y;
  for (std::size_t i = 0; i < x.size(); ++i) {
    y.push_back(r(r(r(r(x[i] - r(mean)) * rstd) * gamma[i]) + beta[i]));
  }
  return y;
}

TEST(LayerNormBound, HoldsForThePriorArtsF16Plan) {
  std::mt19937 random(11);
  double worst = 0;
  for (const std::uint32_t c : {1u, 12u, 13u, 72u, 129u}) {
    for (const float offset : {0.0f, 3.0f, 40.0f}) {
      std::normal_distribution<float> normal(offset, 1.0f);
      std::uniform_real_distribution<float> affine(-2, 2);
      std::vector<std::uint16_t> x(c), gamma(c), beta(c);
      for (auto& h : x) h = f16_of(normal(random));
      for (auto& h : gamma) h = f16_of(affine(random));
      for (auto& h : beta) h = f16_of(affine(random));
      const double epsilon = 1e-6;
      Graph g;
      const ValueId in = g.host_input("x", DType::kF16, {c});
      g.host_output("y", g.layer_norm(in, g.parameter("gamma", DType::kF16, {c}),
                                      g.parameter("beta", DType::kF16, {c}), epsilon));
      const auto out =
          run(g, {{"x", f16_bytes(x)}, {"gamma", f16_bytes(gamma)}, {"beta", f16_bytes(beta)}});
      std::vector<double> xv, gv, bv;
      for (std::uint32_t i = 0; i < c; ++i) {
        xv.push_back(f16_value(x[i]));
        gv.push_back(f16_value(gamma[i]));
        bv.push_back(f16_value(beta[i]));
      }
      // The f64 oracle: mean, then the mean of squared deviations.
      double mean = 0;
      for (const double v : xv) mean += v / c;
      double variance = 0;
      for (const double v : xv) variance += (v - mean) * (v - mean) / c;
      const auto device = f16_layer_norm_model(xv, gv, bv, epsilon);
      std::vector<double> limit(c);
      bounds::layer_norm_error_bounds(DType::kF16, xv, gv, bv, epsilon, limit);
      const auto got = f16_bits(out.outputs.at("y"));
      for (std::uint32_t i = 0; i < c; ++i) {
        const double exact = (xv[i] - mean) / std::sqrt(variance + epsilon) * gv[i] + bv[i];
        ASSERT_LE(std::fabs(device[i] - exact), limit[i]) << "C " << c << " offset " << offset;
        worst = std::max(worst, std::fabs(device[i] - exact) / limit[i]);
        ASSERT_LE(std::fabs(f16_value(got[i]) - exact), 0x1p-11 * std::fabs(exact) + 1e-6)
            << "C " << c << " offset " << offset;
      }
    }
  }
  EXPECT_GT(worst, 0.3);  // not vacuous (0.76 when written)
}

// Found by the compiler's property test: an f16 row whose x − mean overflows
// f16 (65504 − a negative mean) makes the device's element ±Inf even where
// the exact result is small, and an f32 row whose Σx² overflows f32. Neither
// is bounded.
TEST(LayerNormBound, AnIntermediateThatOverflowsTheDtypeIsNotBounded) {
  const std::vector<double> x{65504, -30000, -30000, -30000, -30000, -30000, -30000};
  const std::vector<double> gamma(7, 1e-4), beta(7, 0.5);
  std::vector<double> out(7);
  bounds::layer_norm_error_bounds(DType::kF16, x, gamma, beta, 1e-5, out);
  EXPECT_EQ(out[0], std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isfinite(out[1])) << out[1];  // |x − mean| ≈ 13643 fits
  const std::vector<double> big{3e38, 1, 2, 3};
  std::vector<double> out32(4);
  bounds::layer_norm_error_bounds(DType::kF32, big, std::vector<double>(4, 1.0),
                                  std::vector<double>(4, 0.0), 1e-5, out32);
  for (const double bound : out32) EXPECT_EQ(bound, std::numeric_limits<double>::infinity());
}

TEST(LayerNormBound, HoldsForAnF32SinglePassPlan) {
  std::mt19937 random(12);
  for (const float offset : {0.0f, 100.0f}) {
    std::normal_distribution<float> normal(offset, 2);
    const std::uint32_t c = 129;
    std::vector<float> x(2 * c), gamma(c), beta(c);
    for (auto& v : x) v = normal(random);
    for (auto& v : gamma) v = normal(random) - offset;
    for (auto& v : beta) v = normal(random) - offset;
    Graph g;
    const ValueId y =
        g.layer_norm(g.host_input("x", DType::kF32, {2, c}), g.parameter("gamma", DType::kF32, {c}),
                     g.parameter("beta", DType::kF32, {c}), 1e-5);
    g.host_output("y", y);
    const auto out =
        run(g, {{"x", f32_bytes(x)}, {"gamma", f32_bytes(gamma)}, {"beta", f32_bytes(beta)}});
    std::vector<float> device;
    for (std::uint32_t row = 0; row < 2; ++row) {
      float sum = 0, squares = 0;
      for (std::uint32_t i = 0; i < c; ++i) {
        sum += x[row * c + i];
        squares += x[row * c + i] * x[row * c + i];
      }
      const float mean = sum / static_cast<float>(c);
      const float variance = std::max(0.0f, squares / static_cast<float>(c) - mean * mean);
      const float rstd = 1 / std::sqrt(variance + 1e-5f);
      for (std::uint32_t i = 0; i < c; ++i) {
        device.push_back((x[row * c + i] - mean) * rstd * gamma[i] + beta[i]);
      }
    }
    EXPECT_EQ(
        check_within_bounds(g.type(y), f32_bytes(device), out.outputs.at("y"), out.bounds.at("y")),
        std::nullopt)
        << "offset " << offset;
  }
}

// ---- attention -----------------------------------------------------------------------

TEST(TransformerReference, AttentionByHand) {
  // q = [1, 0]; k = [[1, 0], [0, 1]]; v = [[1, 2], [3, 4]]; scale 1: scores
  // [1, 0], P = [e, 1]/(1 + e) = [0.7310585786, 0.2689414214],
  // O = [0.731 + 3·0.269, 2·0.731 + 4·0.269] = [1.5378828428, 2.5378828428].
  Graph g;
  const ValueId q = g.host_input("q", DType::kF32, {1, 1, 1, 2});
  const ValueId k = g.host_input("k", DType::kF32, {1, 1, 2, 2});
  const ValueId v = g.host_input("v", DType::kF32, {1, 1, 2, 2});
  g.host_output("o", g.attention(q, k, v, 1.0));
  const auto o = f32_values(run(g, {{"q", f32_bytes({1, 0})},
                                    {"k", f32_bytes({1, 0, 0, 1})},
                                    {"v", f32_bytes({1, 2, 3, 4})}})
                                .outputs.at("o"));
  EXPECT_NEAR(o[0], 1.5378828428f, 1e-6f);
  EXPECT_NEAR(o[1], 2.5378828428f, 1e-6f);
}

// An f16 flash-attention plan for one (batch, head): QK by hiho, the scaled
// softmax with an f16 exponential per key block, the unnormalised P·V by
// hiho per block, merged across blocks in f32, divided by the f32 sum and
// rounded to f16.
std::vector<double> f16_attention_model(const std::vector<std::uint16_t>& q,
                                        const std::vector<std::uint16_t>& k,
                                        const std::vector<std::uint16_t>& v, std::size_t row,
                                        std::size_t keys, std::size_t depth, double scale,
                                        std::size_t key_block) {
  const auto r = [](double x) { return f16_value(oracle_f16(x)); };
  std::vector<double> scores(keys);
  for (std::size_t j = 0; j < keys; ++j) {
    // q row · k row j: k's row j as a column of stride 1.
    scores[j] = f16_value(hiho_dot(q, row * depth, k, j * depth, 1, 0, depth));
  }
  float running_max = -std::numeric_limits<float>::infinity(), denominator = 0;
  std::vector<float> accumulator(depth, 0);
  for (std::size_t begin = 0; begin < keys; begin += key_block) {
    const std::size_t end = std::min(begin + key_block, keys);
    const double block_max = *std::max_element(scores.begin() + static_cast<std::ptrdiff_t>(begin),
                                               scores.begin() + static_cast<std::ptrdiff_t>(end));
    const auto scaled_max = static_cast<float>(block_max * scale);
    const float new_max = std::max(running_max, scaled_max);
    std::vector<std::uint16_t> p(end - begin);
    float block_sum = 0;
    for (std::size_t j = begin; j < end; ++j) {
      const double d = r(static_cast<double>(static_cast<float>(scores[j] * scale) - new_max));
      p[j - begin] = oracle_f16(std::exp(d));
      block_sum += kernels::f16_to_f32(p[j - begin]);
    }
    const float alpha = std::exp(running_max - new_max);
    denominator = denominator * alpha + block_sum;
    for (std::size_t d = 0; d < depth; ++d) {
      const std::uint16_t pv = hiho_dot(p, 0, v, begin * depth + d, depth, 0, end - begin);
      accumulator[d] = accumulator[d] * alpha + kernels::f16_to_f32(pv);
    }
    running_max = new_max;
  }
  std::vector<double> out;
  for (const float a : accumulator) out.push_back(r(static_cast<double>(a / denominator)));
  return out;
}

TEST(AttentionBound, HoldsForAFlashAttentionPlanWithHeadsOf72) {
  std::mt19937 random(72);
  const double scale = 1 / std::sqrt(72.0);
  double worst = 0;
  // Normal inputs, and positive ones (every rounding error then pushes the
  // same way, the adversarial case for the bound).
  for (const bool positive : {false, true})
    for (const std::uint32_t keys : {1u, 12u, 71u, 129u}) {
      const std::uint32_t batch = 2, heads = 2, queries = 13, depth = 72;
      std::normal_distribution<float> normal(0, 1);
      const auto draw = [&](std::size_t count) {
        std::vector<std::uint16_t> values(count);
        for (auto& h : values)
          h = f16_of(positive ? 4 * std::fabs(normal(random)) : normal(random));
        return values;
      };
      const auto q = draw(std::size_t{batch} * heads * queries * depth);
      const auto k = draw(std::size_t{batch} * heads * keys * depth);
      const auto v = draw(std::size_t{batch} * heads * keys * depth);
      Graph g;
      const ValueId o =
          g.attention(g.host_input("q", DType::kF16, {batch, heads, queries, depth}),
                      g.host_input("k", DType::kF16, {batch, heads, keys, depth}),
                      g.host_input("v", DType::kF16, {batch, heads, keys, depth}), scale);
      g.host_output("o", o);
      const auto out = run(g, {{"q", f16_bytes(q)}, {"k", f16_bytes(k)}, {"v", f16_bytes(v)}});
      const auto got = f16_bits(out.outputs.at("o"));
      std::vector<std::uint16_t> device_bits;
      for (std::uint32_t h = 0; h < batch * heads; ++h) {
        const std::vector<std::uint16_t> kh(k.begin() + h * keys * depth,
                                            k.begin() + (h + 1) * keys * depth);
        const std::vector<std::uint16_t> vh(v.begin() + h * keys * depth,
                                            v.begin() + (h + 1) * keys * depth);
        for (std::uint32_t i = 0; i < queries; ++i) {
          const std::size_t row = h * queries + i;
          // The f64 oracle: exp(s·q·k) without the max subtraction.
          std::vector<double> weights(keys);
          double sum = 0;
          for (std::uint32_t j = 0; j < keys; ++j) {
            double dot = 0;
            for (std::uint32_t d = 0; d < depth; ++d)
              dot += f16_value(q[row * depth + d]) * f16_value(kh[j * depth + d]);
            sum += weights[j] = std::exp(scale * dot);
          }
          std::vector<double> qi, kv, vv;
          for (std::uint32_t d = 0; d < depth; ++d) qi.push_back(f16_value(q[row * depth + d]));
          for (const auto x : kh) kv.push_back(f16_value(x));
          for (const auto x : vh) vv.push_back(f16_value(x));
          std::vector<double> limit(depth);
          bounds::attention_error_bounds(DType::kF16, qi, kv, vv, keys, scale, limit);
          const std::vector<std::uint16_t> q_row(
              q.begin() + static_cast<std::ptrdiff_t>(row * depth),
              q.begin() + static_cast<std::ptrdiff_t>((row + 1) * depth));
          const auto model = f16_attention_model(q_row, kh, vh, 0, keys, depth, scale, 64);
          for (std::uint32_t d = 0; d < depth; ++d) {
            double exact = 0;
            for (std::uint32_t j = 0; j < keys; ++j)
              exact += weights[j] / sum * f16_value(vh[j * depth + d]);
            ASSERT_LE(std::fabs(model[d] - exact), limit[d])
                << "T " << keys << " row " << row << " d " << d;
            if (positive) worst = std::max(worst, std::fabs(model[d] - exact) / limit[d]);
            ASSERT_LE(std::fabs(f16_value(got[row * depth + d]) - exact),
                      0x1p-11 * std::fabs(exact) + 0x1p-24)
                << "T " << keys;
            device_bits.push_back(oracle_f16(model[d]));
          }
        }
      }
      EXPECT_EQ(check_within_bounds(g.type(o), f16_bytes(device_bits), out.outputs.at("o"),
                                    out.bounds.at("o")),
                std::nullopt);
    }
  // A worst-case bound: its score errors are amplified by the exponential, so
  // random positive inputs reach about a tenth of it (0.11 when written).
  EXPECT_GT(worst, 0.05);
}

TEST(AttentionBound, HoldsForAnF32Plan) {
  std::mt19937 random(80);
  std::normal_distribution<float> normal(0, 1);
  const std::uint32_t heads = 3, queries = 12, keys = 80, depth = 72;
  const auto draw = [&](std::size_t count) {
    std::vector<float> values(count);
    for (auto& v : values) v = normal(random);
    return values;
  };
  const auto q = draw(heads * queries * depth), k = draw(heads * keys * depth),
             v = draw(heads * keys * depth);
  const float scale = 0.125f;
  Graph g;
  const ValueId o = g.attention(g.host_input("q", DType::kF32, {1, heads, queries, depth}),
                                g.host_input("k", DType::kF32, {1, heads, keys, depth}),
                                g.host_input("v", DType::kF32, {1, heads, keys, depth}), scale);
  g.host_output("o", o);
  const auto out = run(g, {{"q", f32_bytes(q)}, {"k", f32_bytes(k)}, {"v", f32_bytes(v)}});
  std::vector<float> device;
  for (std::uint32_t h = 0; h < heads; ++h) {
    for (std::uint32_t i = 0; i < queries; ++i) {
      std::vector<float> p(keys);
      for (std::uint32_t j = 0; j < keys; ++j) {
        float dot = 0;
        for (std::uint32_t d = 0; d < depth; ++d) {
          dot += q[(h * queries + i) * depth + d] * k[(h * keys + j) * depth + d];
        }
        p[j] = dot * scale;
      }
      const float m = *std::max_element(p.begin(), p.end());
      float sum = 0;
      for (float& x : p) sum += x = std::exp(x - m);
      for (std::uint32_t d = 0; d < depth; ++d) {
        float acc = 0;
        for (std::uint32_t j = 0; j < keys; ++j) acc += p[j] * v[(h * keys + j) * depth + d];
        device.push_back(acc / sum);
      }
    }
  }
  EXPECT_EQ(
      check_within_bounds(g.type(o), f32_bytes(device), out.outputs.at("o"), out.bounds.at("o")),
      std::nullopt);
}

// ---- repeat with sequence ----------------------------------------------------------------

TEST(TransformerReference, RepeatWithSequenceEqualsTheUnrolledGraph) {
  // Three layers: h ← gelu(h·w[i] + b[i]) · block-scaled v[i] (K = 72 → two
  // K blocks, N = 65 → two N blocks), with f16 weights in sequences.
  constexpr std::uint32_t layers = 3, rows = 12, width = 72, out_width = 65;
  std::mt19937 random(27);
  // Weights below 1/8 and codes below 1 at scales 2^-4 … 2^0 keep every
  // layer's values in range.
  const auto w = random_f16(random, std::size_t{layers} * width * width, -6, -4);
  const auto b = random_f16(random, std::size_t{layers} * width);
  const auto x = random_f16(random, std::size_t{rows} * width);
  std::vector<std::uint8_t> codes(std::size_t{layers} * width * out_width);
  // Codes 0x01 … 0x3F and their negatives (never 0x80, the NaN).
  for (auto& c : codes) c = static_cast<std::uint8_t>((random() % 0x3F + 1) | (random() % 2) << 7);
  std::vector<std::int32_t> scales(layers * 2 * 2);
  for (auto& s : scales) s = static_cast<std::int32_t>(random() % 5) - 4;
  const auto down_weights = random_f16(random, std::size_t{out_width} * width, -6, -4);
  const TensorBytes bindings{{"x", f16_bytes(x)},           {"w", f16_bytes(w)},
                             {"b", f16_bytes(b)},           {"codes", codes},
                             {"scales", i32_bytes(scales)}, {"down", f16_bytes(down_weights)}};
  const auto layer = [](Graph& g, ValueId h, ValueId wi, ValueId bi, ValueId vi, ValueId down) {
    const ValueId up = g.gelu(g.add(g.matmul(h, wi), bi));
    return g.matmul(g.matmul(up, vi), down);  // back to [rows, width]
  };
  Graph rolled;
  {
    const ValueId h = rolled.host_input("x", DType::kF16, {rows, width});
    const ValueId ws = rolled.parameter("w", DType::kF16, {layers, width, width});
    const ValueId bs = rolled.parameter("b", DType::kF16, {layers, width});
    const ValueId vs =
        rolled.block_scale(rolled.parameter("codes", DType::kU8, {layers, width, out_width}),
                           rolled.parameter("scales", DType::kI32, {layers, 2, 2}));
    const ValueId down = rolled.parameter("down", DType::kF16, {out_width, width});
    const auto result =
        rolled.repeat(layers, {h}, {ws, bs, vs}, {down},
                      [&](Graph& body, auto carried, auto sequence, auto invariant) {
                        return std::vector<ValueId>{layer(body, carried[0], sequence[0],
                                                          sequence[1], sequence[2], invariant[0])};
                      });
    rolled.host_output("y", result[0]);
  }
  Graph unrolled;
  {
    ValueId h = unrolled.host_input("x", DType::kF16, {rows, width});
    const ValueId ws = unrolled.parameter("w", DType::kF16, {layers, width, width});
    const ValueId bs = unrolled.parameter("b", DType::kF16, {layers, width});
    const ValueId cs = unrolled.parameter("codes", DType::kU8, {layers, width, out_width});
    const ValueId ss = unrolled.parameter("scales", DType::kI32, {layers, 2, 2});
    const ValueId down = unrolled.parameter("down", DType::kF16, {out_width, width});
    for (std::uint32_t i = 0; i < layers; ++i) {
      const ValueId wi =
          unrolled.reshape(unrolled.slice(ws, {i, 0, 0}, {i + 1, width, width}), {width, width});
      const ValueId bi = unrolled.reshape(unrolled.slice(bs, {i, 0}, {i + 1, width}), {width});
      const ValueId ci = unrolled.reshape(unrolled.slice(cs, {i, 0, 0}, {i + 1, width, out_width}),
                                          {width, out_width});
      const ValueId si = unrolled.reshape(unrolled.slice(ss, {i, 0, 0}, {i + 1, 2, 2}), {2, 2});
      h = layer(unrolled, h, wi, bi, unrolled.block_scale(ci, si), down);
    }
    unrolled.host_output("y", h);
  }
  const auto a = run(rolled, bindings), c = run(unrolled, bindings);
  EXPECT_EQ(a.outputs.at("y"), c.outputs.at("y"));
  EXPECT_EQ(a.bounds.at("y"), c.bounds.at("y"));
  // And the layers differ: iteration i really used entry i (a body that
  // always took entry 0 would give the three-times-layer-0 result).
  Graph first_only;
  {
    ValueId h = first_only.host_input("x", DType::kF16, {rows, width});
    const ValueId ws = first_only.parameter("w", DType::kF16, {layers, width, width});
    const ValueId bs = first_only.parameter("b", DType::kF16, {layers, width});
    const ValueId cs = first_only.parameter("codes", DType::kU8, {layers, width, out_width});
    const ValueId ss = first_only.parameter("scales", DType::kI32, {layers, 2, 2});
    const ValueId down = first_only.parameter("down", DType::kF16, {out_width, width});
    const ValueId w0 =
        first_only.reshape(first_only.slice(ws, {0, 0, 0}, {1, width, width}), {width, width});
    const ValueId b0 = first_only.reshape(first_only.slice(bs, {0, 0}, {1, width}), {width});
    const ValueId v0 = first_only.block_scale(
        first_only.reshape(first_only.slice(cs, {0, 0, 0}, {1, width, out_width}),
                           {width, out_width}),
        first_only.reshape(first_only.slice(ss, {0, 0, 0}, {1, 2, 2}), {2, 2}));
    for (std::uint32_t i = 0; i < layers; ++i) h = layer(first_only, h, w0, b0, v0, down);
    first_only.host_output("y", h);
  }
  EXPECT_NE(run(first_only, bindings).outputs.at("y"), a.outputs.at("y"));
}

TEST(TransformerReference, BoundsFollowDataMovementAddMulAndStopElsewhere) {
  // ab [2, 3]; abᵀ as f32 keeps ab's bounds (the widening is exact); a
  // concat of a [2, 3] over ab has exact rows, then bounded ones; ab + c and
  // ab·c carry the bound through one more rounding; gelu(ab) is not bounded.
  std::mt19937 random(1);
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, {2, 3});
  const ValueId b = g.host_input("b", DType::kF16, {3, 3});
  const ValueId c = g.host_input("c", DType::kF16, {3});
  const ValueId ab = g.matmul(a, b);
  g.host_output("ab", ab);
  g.host_output("t", g.convert(g.transpose(ab, {1, 0}), DType::kF32));
  g.host_output("joined", g.concat({g.copy(a), ab}, 0));
  const ValueId plus = g.add(ab, c), times = g.mul(ab, c);
  g.host_output("plus", plus);
  g.host_output("times", times);
  g.host_output("gelu", g.gelu(ab));
  const auto a_bits = random_f16(random, 6), b_bits = random_f16(random, 9);
  const std::vector<std::uint16_t> c_bits{f16_of(0.5f), f16_of(-3.0f), f16_of(100.0f)};
  const auto out =
      run(g, {{"a", f16_bytes(a_bits)}, {"b", f16_bytes(b_bits)}, {"c", f16_bytes(c_bits)}});
  EXPECT_EQ(out.bounds.at("t").size(), 6u);
  for (const auto& bound : out.bounds.at("t")) EXPECT_EQ(bound.kind, Kind::kWithin);
  for (const auto& bound : out.bounds.at("gelu")) EXPECT_EQ(bound.kind, Kind::kUnconstrained);
  const auto& mixed = out.bounds.at("joined");
  EXPECT_EQ(mixed.size(), 12u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(mixed[i].kind, Kind::kExact);
  for (std::size_t i = 6; i < 12; ++i) EXPECT_EQ(mixed[i].kind, Kind::kWithin);
  // A device whose ab is off by as much as its bound allows (pushed to the
  // far end), then adds and multiplies exactly as the graph says, is inside
  // the propagated bounds of plus and times.
  const auto reference_ab = f16_bits(out.outputs.at("ab"));
  const auto& ab_bounds = out.bounds.at("ab");
  std::vector<std::uint16_t> device_plus, device_times;
  for (std::size_t e = 0; e < 6; ++e) {
    // The f16 farthest from the reference within the bound, upward.
    std::uint16_t pushed = reference_ab[e];
    const auto next = [](std::uint16_t h) {
      return static_cast<std::uint16_t>((h & 0x8000) != 0 ? (h == 0x8000 ? 0x0001 : h - 1) : h + 1);
    };
    while (f16_value(next(pushed)) - f16_value(reference_ab[e]) <= ab_bounds[e].max_error) {
      pushed = next(pushed);
    }
    ASSERT_NE(pushed, reference_ab[e]) << "the bound admits at least one ulp";
    device_plus.push_back(kernels::add_f16_bits(pushed, c_bits[e % 3]));
    device_times.push_back(kernels::mul_f16_bits(pushed, c_bits[e % 3]));
  }
  for (const auto& [name, device] :
       {std::pair{"plus", &device_plus}, std::pair{"times", &device_times}}) {
    for (const auto& bound : out.bounds.at(name)) EXPECT_EQ(bound.kind, Kind::kWithin) << name;
    EXPECT_EQ(check_within_bounds(g.type(name == std::string("plus") ? plus : times),
                                  f16_bytes(*device), out.outputs.at(name), out.bounds.at(name)),
              std::nullopt)
        << name;
  }
}

TEST(TransformerReference, CheckWithinBoundsReportsTheFirstMiss) {
  const TensorType type{{DType::kF32, 0}, {4}};
  const auto reference = f32_bytes({1, 2, std::numeric_limits<float>::quiet_NaN(), 4});
  const std::vector<ElementBound> bounds{
      {Kind::kExact, 0}, {Kind::kWithin, 0.5}, {Kind::kNan, 0}, {Kind::kUnconstrained, 0}};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(check_within_bounds(type, f32_bytes({1, 2.5f, nan, 100}), reference, bounds),
            std::nullopt);
  EXPECT_EQ(check_within_bounds(type, f32_bytes({1, 2.75f, nan, 4}), reference, bounds),
            "element 1: 2.75, reference 2, |difference| 0.75 > bound 0.5");
  EXPECT_EQ(check_within_bounds(type, f32_bytes({1, 2, 3, 4}), reference, bounds),
            "element 2: 3, but it depends on a NaN input");
  EXPECT_EQ(check_within_bounds(type, f32_bytes({-0.0f, 2, nan, 4}), reference, bounds),
            "element 0: bits 0x80000000, reference 0x3f800000 (exact)");
  EXPECT_EQ(
      check_within_bounds(type, f32_bytes({1, std::numeric_limits<float>::infinity(), nan, 4}),
                          reference, bounds),
      "element 1: inf, reference 2, |difference| inf > bound 0.5");
}

}  // namespace
}  // namespace tessera::testing
