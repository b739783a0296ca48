// The row-major softmax and f32 LayerNorm kernels through a simulated call,
// bit for bit against a CPU reference written here from the documented
// numerics (kernels/row_normalisation.hpp), within a stated bound of FP64,
// on edge shapes (rows 0, 1, 6, 7, 13, 61; columns 1, 12, 13, 71, 72, 80,
// 129), with NaN, ±Inf, subnormals and large values, in place and not, plus
// zero work, each operand one element short, preconditions and costs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "kernels/activation_math.hpp"
#include "kernels/half.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/row_normalisation.hpp"
#include "tests/kernels/kernel_case.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;

constexpr std::uint32_t kRows[] = {0, 1, 6, 7, 13, 61};
constexpr std::uint32_t kColumns[] = {1, 12, 13, 71, 72, 80, 129};
constexpr std::uint32_t kNan32 = 0x7FC00000;

// ---- The reference, restated from row_normalisation.hpp.

std::vector<float> softmax_reference(const std::vector<float>& x, std::uint32_t rows,
                                     std::uint32_t columns) {
  std::vector<float> y(x.size());
  for (std::uint32_t r = 0; r < rows; ++r) {
    const float* row = &x[std::size_t{r} * columns];
    bool nan = false;
    float m = -std::numeric_limits<float>::infinity();
    for (std::uint32_t j = 0; j < columns; ++j) {
      nan = nan || std::isnan(row[j]);
      m = std::max(m, row[j]);
    }
    std::vector<float> e(columns);
    float sum = 0;
    for (std::uint32_t j = 0; j < columns; ++j) {
      e[j] = exp_f32(row[j] - m);
      sum = j == 0 ? e[0] : sum + e[j];
    }
    const float reciprocal = 1.0F / sum;
    for (std::uint32_t j = 0; j < columns; ++j) {
      const float v = e[j] * reciprocal;
      y[std::size_t{r} * columns + j] =
          nan || std::isnan(v) ? std::bit_cast<float>(kNan32) : v;
    }
  }
  return y;
}

std::vector<float> layer_norm_reference(const std::vector<float>& x, const std::vector<float>& gamma,
                                        const std::vector<float>& beta, std::uint32_t rows,
                                        std::uint32_t columns, std::uint32_t q30) {
  std::vector<float> y(x.size());
  const float epsilon = static_cast<float>(q30) / 1073741824.0F;
  for (std::uint32_t r = 0; r < rows; ++r) {
    const float* row = &x[std::size_t{r} * columns];
    float lanes[4] = {}, squares[4] = {};
    for (std::uint32_t c = 0; c < columns; ++c) {
      lanes[c % 4] += row[c];
      squares[c % 4] += row[c] * row[c];
    }
    const float mean = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) / static_cast<float>(columns);
    float variance =
        ((squares[0] + squares[1]) + (squares[2] + squares[3])) / static_cast<float>(columns) -
        mean * mean;
    if (variance < 0) variance = 0;
    const float rstd = 1.0F / std::sqrt(variance + epsilon);
    for (std::uint32_t c = 0; c < columns; ++c) {
      const float v = ((row[c] - mean) * rstd) * gamma[c] + beta[c];
      y[std::size_t{r} * columns + c] = std::isnan(v) ? std::bit_cast<float>(kNan32) : v;
    }
  }
  return y;
}

// ---- Data

// Moderate values; with `specials`, some NaN, ±Inf, subnormal and large ones.
std::vector<float> random_values(std::size_t n, std::uint32_t seed, bool specials, float scale = 4) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> moderate(-scale, scale);
  std::uniform_int_distribution<int> pick(0, 199);
  std::vector<float> v(n);
  for (float& x : v) {
    x = moderate(random);
    if (!specials) continue;
    switch (pick(random)) {
      case 0: x = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: x = std::numeric_limits<float>::infinity(); break;
      case 2: x = -std::numeric_limits<float>::infinity(); break;
      case 3: x = 1e-40F; break;
      case 4: x = -0.0F; break;
      case 5: x = 80.0F; break;
      default: break;
    }
  }
  return v;
}

std::vector<std::uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<std::uint16_t> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
  return h;
}

KernelCase softmax_case(bool f16, std::uint32_t rows, std::uint32_t columns,
                        const std::vector<std::uint8_t>& in, bool in_place) {
  const unsigned s = f16 ? 2 : 4;
  KernelCase c{f16 ? kSoftmaxRowsF16 : kSoftmaxRowsF32, {}, {{4, rows}, {5, columns}}};
  c.operands.push_back(input(3, "in", s, in));
  if (in_place) {
    c.operands.push_back(alias(2, "out", s, 3));
  } else {
    c.operands.push_back(output(2, "out", s, static_cast<std::uint32_t>(in.size())));
  }
  return c;
}

KernelCase layer_norm_case(std::uint32_t rows, std::uint32_t columns, const std::vector<float>& x,
                           const std::vector<float>& affine, bool in_place, std::uint32_t q30 = 1074) {
  KernelCase c{kLayerNormRowsF32, {}, {{5, rows}, {6, columns}, {7, q30}}};
  c.operands.push_back(input(3, "in", 4, bytes_of(x)));
  c.operands.push_back(input(4, "affine", 4, bytes_of(affine)));
  if (in_place) {
    c.operands.push_back(alias(2, "out", 4, 3));
  } else {
    c.operands.push_back(output(2, "out", 4, static_cast<std::uint32_t>(x.size() * 4)));
  }
  return c;
}

template <typename T>
std::vector<T> values_of(const std::vector<std::uint8_t>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// ---- softmax

TEST(RowNormalisation, SoftmaxMatchesTheReferenceBitForBit) {
  std::uint32_t seed = 1;
  for (const bool f16 : {false, true}) {
    for (const std::uint32_t rows : kRows) {
      for (const std::uint32_t columns : kColumns) {
        for (const bool in_place : {false, true}) {
          SCOPED_TRACE(::testing::Message() << (f16 ? "f16 " : "f32 ") << rows << " × " << columns
                                            << (in_place ? " in place" : ""));
          const auto x = random_values(std::size_t{rows} * columns, seed++, true);
          const auto h = to_f16(x);
          std::vector<float> widened(x.size());
          for (std::size_t i = 0; i < x.size(); ++i) widened[i] = f16 ? f16_to_f32(h[i]) : x[i];
          const auto expected = softmax_reference(widened, rows, columns);
          const auto result =
              run_case(softmax_case(f16, rows, columns, f16 ? bytes_of(h) : bytes_of(x), in_place));
          ASSERT_TRUE(result.halted) << result.fault;
          EXPECT_EQ(result.kernel_cycles, softmax_rows_cycles(rows, columns));
          if (rows == 0) continue;
          const auto& out = result.operands.at(in_place ? 3 : 2);
          if (f16) {
            std::vector<std::uint16_t> want(expected.size());
            for (std::size_t i = 0; i < want.size(); ++i) {
              want[i] = std::isnan(expected[i]) ? kF16QuietNan : f32_to_f16(expected[i]);
            }
            EXPECT_EQ(values_of<std::uint16_t>(out), want);
          } else {
            EXPECT_EQ(values_of<std::uint32_t>(out), values_of<std::uint32_t>(bytes_of(expected)));
          }
        }
      }
    }
  }
}

TEST(RowNormalisation, SoftmaxIsCloseToFp64AndANanFillsItsRow) {
  for (const bool f16 : {false, true}) {
    const std::uint32_t rows = 7, columns = 129;
    auto x = random_values(std::size_t{rows} * columns, 99, false, 12);
    x[3 * columns + 5] = std::numeric_limits<float>::quiet_NaN();  // row 3
    const auto h = to_f16(x);
    const auto result = run_case(softmax_case(f16, rows, columns, f16 ? bytes_of(h) : bytes_of(x), false));
    ASSERT_TRUE(result.halted) << result.fault;
    const auto& out = result.operands.at(2);
    for (std::uint32_t r = 0; r < rows; ++r) {
      double m = -INFINITY, sum = 0;
      std::vector<double> v(columns);
      for (std::uint32_t j = 0; j < columns; ++j) {
        v[j] = f16 ? f16_to_f32(h[r * columns + j]) : x[r * columns + j];
        m = std::max(m, v[j]);
      }
      for (const double a : v) sum += std::exp(a - m);
      for (std::uint32_t j = 0; j < columns; ++j) {
        const std::size_t i = std::size_t{r} * columns + j;
        const double got = f16 ? f16_to_f32(values_of<std::uint16_t>(out)[i]) : values_of<float>(out)[i];
        if (r == 3) {
          EXPECT_TRUE(std::isnan(got)) << i;
          continue;
        }
        const double exact = std::exp(v[j] - m) / sum;
        // f32: exp's 2 ulp, the subtract's rounding at |d| ≤ 24, the sum;
        // f16: the final rounding dominates.
        const double bound = f16 ? 0x1p-11 * exact + 0x1p-24 : 0x1p-19 * exact + 0x1p-149;
        EXPECT_LE(std::fabs(got - exact), bound) << r << ", " << j;
      }
    }
  }
}

// ---- layer_norm

TEST(RowNormalisation, LayerNormMatchesTheReferenceBitForBit) {
  std::uint32_t seed = 1000;
  for (const std::uint32_t rows : kRows) {
    for (const std::uint32_t columns : kColumns) {
      for (const bool in_place : {false, true}) {
        SCOPED_TRACE(::testing::Message() << rows << " × " << columns << (in_place ? " in place" : ""));
        const auto x = random_values(std::size_t{rows} * columns, seed++, true);
        const auto gamma = random_values(columns, seed++, false, 2);
        const auto beta = random_values(columns, seed++, false, 2);
        std::vector<float> affine(gamma);
        affine.insert(affine.end(), beta.begin(), beta.end());
        const auto expected = layer_norm_reference(x, gamma, beta, rows, columns, 1074);
        const auto result = run_case(layer_norm_case(rows, columns, x, affine, in_place));
        ASSERT_TRUE(result.halted) << result.fault;
        EXPECT_EQ(result.kernel_cycles, layer_norm_rows_cycles(rows, columns));
        if (rows == 0) continue;
        EXPECT_EQ(values_of<std::uint32_t>(result.operands.at(in_place ? 3 : 2)),
                  values_of<std::uint32_t>(bytes_of(expected)));
      }
    }
  }
}

TEST(RowNormalisation, LayerNormIsCloseToFp64) {
  const std::uint32_t rows = 13, columns = 72;
  const auto x = random_values(std::size_t{rows} * columns, 7, false, 3);
  const auto gamma = random_values(columns, 8, false, 2);
  const auto beta = random_values(columns, 9, false, 2);
  std::vector<float> affine(gamma);
  affine.insert(affine.end(), beta.begin(), beta.end());
  const auto epsilon = static_cast<double>(epsilon_value(epsilon_q30(1e-5)));
  const auto result = run_case(layer_norm_case(rows, columns, x, affine, false, epsilon_q30(1e-5)));
  ASSERT_TRUE(result.halted) << result.fault;
  const auto y = values_of<float>(result.operands.at(2));
  const auto wide = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  const auto xs = wide(x), g = wide(gamma), b = wide(beta), ys = wide(y);
  for (std::uint32_t r = 0; r < rows; ++r) {
    double mean = 0, variance = 0;
    for (std::uint32_t c = 0; c < columns; ++c) mean += xs[r * columns + c];
    mean /= columns;
    for (std::uint32_t c = 0; c < columns; ++c) {
      variance += (xs[r * columns + c] - mean) * (xs[r * columns + c] - mean);
    }
    variance /= columns;
    for (std::uint32_t c = 0; c < columns; ++c) {
      const double exact = (xs[r * columns + c] - mean) / std::sqrt(variance + epsilon) * g[c] + b[c];
      EXPECT_LE(std::fabs(ys[r * columns + c] - exact), 0x1p-16 * (1 + std::fabs(exact))) << r << ", " << c;
    }
  }
}

// ---- ABI

TEST(RowNormalisation, EachOperandOneElementShortOverruns) {
  const auto x = random_values(7 * 13, 3, false);
  expect_each_short_operand_overruns(softmax_case(false, 7, 13, bytes_of(x), false));
  expect_each_short_operand_overruns(softmax_case(true, 7, 13, bytes_of(to_f16(x)), false));
  std::vector<float> affine(26, 1.0F);
  expect_each_short_operand_overruns(layer_norm_case(7, 13, x, affine, false));
}

TEST(RowNormalisation, ZeroWorkTouchesNothing) {
  for (const auto& [rows, columns] : {std::pair{0u, 13u}, std::pair{7u, 0u}}) {
    KernelCase soft{kSoftmaxRowsF32, {}, {{4, rows}, {5, columns}}};
    soft.operands.push_back(output(3, "in", 4, 4));
    soft.operands.push_back(output(2, "out", 4, 4));
    EXPECT_TRUE(run_case(soft).halted);
    KernelCase norm{kLayerNormRowsF32, {}, {{5, rows}, {6, columns}, {7, 1074}}};
    norm.operands.push_back(output(3, "in", 4, 4));
    norm.operands.push_back(output(4, "affine", 4, 4));
    norm.operands.push_back(output(2, "out", 4, 4));
    EXPECT_TRUE(run_case(norm).halted);
  }
}

Registers regs(std::initializer_list<std::pair<unsigned, std::uint32_t>> values) {
  Registers r{};
  for (const auto& [reg, value] : values) r[reg] = value;
  return r;
}

TEST(RowNormalisation, PreconditionViolationsAreFaultsWithTheReason) {
  constexpr std::uint32_t a = kBufferBase, b = kBufferBase + 0x1000, out = kBufferBase + 0x2000;
  expect_precondition_failure(kSoftmaxRowsF16, regs({{2, out + 2}, {3, a}, {4, 1}, {5, 4}}),
                              "$m2 = 0x62002 is not word-aligned");
  expect_precondition_failure(kSoftmaxRowsF32, regs({{2, a + 4}, {3, a}, {4, 2}, {5, 4}}),
                              "partially overlaps $m3 (source)");
  expect_precondition_failure(kSoftmaxRowsF32, regs({{2, out}, {3, 0xFFFFFFF0}, {4, 1}, {5, 16}}),
                              "reaches past the 32-bit address space");
  expect_precondition_failure(kLayerNormRowsF32,
                              regs({{2, a}, {3, a}, {4, a + 8}, {5, 2}, {6, 4}, {7, 1074}}),
                              "$m2 (normalised) [0x60000, 0x60020) overlaps $m4 (affine)");
  expect_precondition_failure(kLayerNormRowsF32,
                              regs({{2, out}, {3, a}, {4, b + 2}, {5, 2}, {6, 4}, {7, 1074}}),
                              "$m4 = 0x61002 is not word-aligned");
}

TEST(RowNormalisation, CostsGrowWithTheSlowestWorkersRows) {
  EXPECT_EQ(softmax_rows_cycles(0, 72), 47u);
  EXPECT_EQ(softmax_rows_cycles(6, 72), 47u + 6 * (36 * 16 + 20));
  EXPECT_EQ(softmax_rows_cycles(7, 72), 47u + 6 * 2 * (36 * 16 + 20));
  EXPECT_EQ(layer_norm_rows_cycles(13, 13), 47u + 6 * 3 * (7 * 6 + 40));
}

}  // namespace
}  // namespace tessera::kernels
