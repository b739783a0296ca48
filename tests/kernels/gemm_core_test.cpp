// The GEMM arithmetic's two paths (kernels/gemm_core.hpp) give the same bits
// on every input, special values included (ARCHITECTURE.md decision 10: a
// host without AVX2 computes what a host with it computes).
#include "kernels/gemm_core.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "kernels/half.hpp"
#include "tests/kernels/f16_generators.hpp"

namespace tessera::kernels::gemm {
namespace {

using testing::f16_pattern;
using testing::f32_pattern;

struct Group {
  std::uint32_t rows, inner, pass;
  bool init;
  std::vector<float> left, weights;
};

// Values an f16 (or F143) operand can hold, as f32: every f16 pattern,
// specials weighted up. F143 values are a subset of these.
std::vector<float> f16_values(std::size_t n) {
  const auto bits = *rc::gen::container<std::vector<std::uint16_t>>(n, f16_pattern());
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = f16_to_f32(bits[i]);
  return values;
}

std::vector<float> f32_values(std::size_t n) {
  const auto bits = *rc::gen::container<std::vector<std::uint32_t>>(n, f32_pattern());
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = std::bit_cast<float>(bits[i]);
  return values;
}

Group any_group(unsigned pass, bool f32) {
  Group g;
  g.rows = *rc::gen::inRange(1u, 40u);
  g.pass = pass;
  g.inner = pass * *rc::gen::inRange(1u, 5u);
  g.init = *rc::gen::arbitrary<bool>();
  g.left =
      f32 ? f32_values(std::size_t{g.rows} * g.inner) : f16_values(std::size_t{g.rows} * g.inner);
  g.weights = f32 ? f32_values(std::size_t{g.inner} * 16) : f16_values(std::size_t{g.inner} * 16);
  return g;
}

template <typename T>
KernelSpan<T> span_of(std::vector<T>& v) {
  return KernelSpan<T>(v.data(), v.size(), 2, 0x80000);
}

RC_GTEST_PROP(GemmCore, HihoVectorAndScalarPathsGiveTheSameBits, ()) {
  if (!vector_path_available()) return;  // only one path on this host
  const Group g = any_group(*rc::gen::element(16u, 32u), false);
  const ColumnGroup problem{g.left, g.weights, g.rows, g.inner, g.pass, g.init};
  const auto partials =
      *rc::gen::container<std::vector<std::uint16_t>>(std::size_t{g.rows} * 16, f16_pattern());
  std::vector<std::uint16_t> scalar = partials, vector = partials;
  const GemmRounding rounding(Rounding::kNearestEven, 0);
  hiho_column_group(problem, span_of(scalar), rounding, Path::kScalar);
  hiho_column_group(problem, span_of(vector), rounding, Path::kVector);
  RC_ASSERT(scalar == vector);
}

RC_GTEST_PROP(GemmCore, F32VectorAndScalarPathsGiveTheSameBits, ()) {
  if (!vector_path_available()) return;
  const Group g = any_group(8, true);
  const ColumnGroup problem{g.left, g.weights, g.rows, g.inner, g.pass, g.init};
  const auto partials = f32_values(std::size_t{g.rows} * 16);
  std::vector<float> scalar = partials, vector = partials;
  f32_column_group(problem, span_of(scalar), Path::kScalar);
  f32_column_group(problem, span_of(vector), Path::kVector);
  std::vector<std::uint32_t> scalar_bits, vector_bits;
  for (const float v : scalar) scalar_bits.push_back(std::bit_cast<std::uint32_t>(v));
  for (const float v : vector) vector_bits.push_back(std::bit_cast<std::uint32_t>(v));
  RC_ASSERT(scalar_bits == vector_bits);
}

// Widening is exact on both paths; NaNs stay NaNs (their payloads only feed
// arithmetic whose NaN results are canonical).
RC_GTEST_PROP(GemmCore, WideningIsExactOnBothPaths, ()) {
  const auto bits = *rc::gen::container<std::vector<std::uint16_t>>(f16_pattern());
  std::vector<float> scalar(bits.size()), vector(bits.size());
  widen_f16(bits, scalar, Path::kScalar);
  widen_f16(bits, vector, Path::kVector);
  for (std::size_t i = 0; i < bits.size(); ++i) {
    if (f16_is_nan(bits[i])) {
      RC_ASSERT(std::isnan(scalar[i]) && std::isnan(vector[i]));
    } else {
      RC_ASSERT(std::bit_cast<std::uint32_t>(scalar[i]) == f16_to_f32_bits(bits[i]));
      RC_ASSERT(std::bit_cast<std::uint32_t>(vector[i]) == f16_to_f32_bits(bits[i]));
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::gemm
