#include "kernels/activation_math.hpp"

#include "kernels/f16_vector.hpp"
#include "kernels/half.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera::kernels {

namespace activation_detail {

void gelu_f32_many_scalar(const float* in, float* out, std::size_t count) noexcept {
  const float quiet = std::bit_cast<float>(std::uint32_t{0x7FC00000});
  for (std::size_t i = 0; i < count; ++i) {
    const float y = gelu_f32(in[i]);
    out[i] = y != y ? quiet : y;
  }
}

#if defined(__x86_64__)

namespace {

// power_of_two for eight exponents (each in f32's normal range where used).
__attribute__((target("avx2"))) __m256 power_of_two8(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

// exp_f32 on eight lanes that are not NaN, step for step.
__attribute__((target("avx2"))) __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.0F)), _mm256_set1_ps(89.0F));
  const __m256 kf = _mm256_floor_ps(_mm256_add_ps(
      _mm256_mul_ps(x, _mm256_set1_ps(1.44269502162933349609375F)), _mm256_set1_ps(0.5F)));
  const __m256 r =
      _mm256_sub_ps(_mm256_sub_ps(x, _mm256_mul_ps(kf, _mm256_set1_ps(0.693145751953125F))),
                    _mm256_mul_ps(kf, _mm256_set1_ps(1.428606765330187045037746429e-6F)));
  __m256 p = _mm256_set1_ps(1.0F / 5040.0F);
  for (const float c :
       {1.0F / 720.0F, 1.0F / 120.0F, 1.0F / 24.0F, 1.0F / 6.0F, 0.5F, 1.0F, 1.0F}) {
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
  }
  const __m256i k = _mm256_cvttps_epi32(kf);  // kf is integral
  const __m256 normal = _mm256_mul_ps(p, power_of_two8(k));
  const __m256 big = _mm256_mul_ps(_mm256_mul_ps(p, power_of_two8(_mm256_set1_epi32(127))),
                                   power_of_two8(_mm256_sub_epi32(k, _mm256_set1_epi32(127))));
  const __m256 small =
      _mm256_mul_ps(_mm256_mul_ps(p, power_of_two8(_mm256_add_epi32(k, _mm256_set1_epi32(64)))),
                    power_of_two8(_mm256_set1_epi32(-64)));
  const __m256 is_big = _mm256_castsi256_ps(_mm256_cmpgt_epi32(k, _mm256_set1_epi32(127)));
  const __m256 is_small = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(-126), k));
  return _mm256_blendv_ps(_mm256_blendv_ps(normal, big, is_big), small, is_small);
}

// tanh_f32 on eight lanes, step for step (NaN lanes give the NaN itself).
__attribute__((target("avx2"))) __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0F);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256 y = _mm256_add_ps(a, a);  // 2·|x|, exact
  // expm1_small(y): the Horner form of Σ y^n/n!, n = 1..12.
  constexpr float c[] = {1.0F / 479001600.0F,
                         1.0F / 39916800.0F,
                         1.0F / 3628800.0F,
                         1.0F / 362880.0F,
                         1.0F / 40320.0F,
                         1.0F / 5040.0F,
                         1.0F / 720.0F,
                         1.0F / 120.0F,
                         1.0F / 24.0F,
                         1.0F / 6.0F,
                         0.5F,
                         1.0F};
  __m256 p = _mm256_set1_ps(c[0]);
  for (std::size_t i = 1; i < std::size(c); ++i)
    p = _mm256_add_ps(_mm256_mul_ps(p, y), _mm256_set1_ps(c[i]));
  const __m256 m = _mm256_mul_ps(p, y);
  const __m256 near_zero = _mm256_div_ps(m, _mm256_add_ps(m, _mm256_set1_ps(2.0F)));
  const __m256 one = _mm256_set1_ps(1.0F);
  const __m256 far =
      _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0F), _mm256_add_ps(exp8(y), one)));
  const __m256 t =
      _mm256_blendv_ps(far, near_zero, _mm256_cmp_ps(a, _mm256_set1_ps(0.625F), _CMP_LT_OQ));
  const __m256 signed_t = _mm256_or_ps(_mm256_andnot_ps(sign, t), _mm256_and_ps(sign, x));
  return _mm256_blendv_ps(signed_t, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

}  // namespace

__attribute__((target("avx2"))) void gelu_f32_many_avx2(const float* in, float* out,
                                                        std::size_t count) noexcept {
  const __m256 c0 = _mm256_set1_ps(std::bit_cast<float>(kGeluF32C0));
  const __m256 c1 = _mm256_set1_ps(std::bit_cast<float>(kGeluF32C1));
  const __m256 quiet = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000));
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 t = tanh8(_mm256_mul_ps(c0, _mm256_add_ps(x, _mm256_mul_ps(c1, x3))));
    const __m256 y = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5F), x),
                                   _mm256_add_ps(_mm256_set1_ps(1.0F), t));
    _mm256_storeu_ps(out + i, _mm256_blendv_ps(y, quiet, _mm256_cmp_ps(y, y, _CMP_UNORD_Q)));
  }
  _mm256_zeroupper();
  gelu_f32_many_scalar(in + i, out + i, count - i);
}

#else

void gelu_f32_many_avx2(const float* in, float* out, std::size_t count) noexcept {
  gelu_f32_many_scalar(in, out, count);
}

#endif

}  // namespace activation_detail

void gelu_f32_many(const float* in, float* out, std::size_t count) noexcept {
  // AVX2 hosts; F16C comes with them on every CPU that has both.
  if (f16_vector_detail::host_has_f16c()) {
    activation_detail::gelu_f32_many_avx2(in, out, count);
  } else {
    activation_detail::gelu_f32_many_scalar(in, out, count);
  }
}

std::uint16_t exp_f16(std::uint16_t x, F16Rounding& rounding) noexcept {
  return rounding.round_result(exp_f32(f16_to_f32(x)));
}

std::uint16_t tanh_f16(std::uint16_t x, F16Rounding& rounding) noexcept {
  return rounding.round_result(tanh_f32(f16_to_f32(x)));
}

std::uint16_t gelu_f16(std::uint16_t x, F16Rounding& rounding) noexcept {
  constexpr std::uint16_t kOne = 0x3C00;
  constexpr std::uint16_t kHalf = 0x3800;
  const std::uint16_t x2 = rounding.mul(x, x);
  const std::uint16_t x3 = rounding.mul(x2, x);
  const std::uint16_t a = rounding.mul(kGeluF16C1, x3);
  const std::uint16_t u = rounding.add(x, a);
  const std::uint16_t v = rounding.mul(kGeluF16C0, u);
  const std::uint16_t t = tanh_f16(v, rounding);
  const std::uint16_t s = rounding.add(kOne, t);
  const std::uint16_t h = rounding.mul(kHalf, x);
  return rounding.mul(h, s);
}

namespace {

// f of every input pattern under round to nearest.
std::array<std::uint16_t, 65536> nearest_table(std::uint16_t (*f)(std::uint16_t,
                                                                  F16Rounding&) noexcept) {
  std::array<std::uint16_t, 65536> result{};
  F16Rounding nearest(Rounding::kNearestEven, nullptr);
  for (std::uint32_t h = 0; h < result.size(); ++h) {
    result[h] = f(static_cast<std::uint16_t>(h), nearest);
  }
  return result;
}

}  // namespace

const std::array<std::uint16_t, 65536>& gelu_f16_nearest_table() {
  static const std::array<std::uint16_t, 65536> table = nearest_table(gelu_f16);
  return table;
}

const std::array<std::uint16_t, 65536>& exp_f16_nearest_table() {
  static const std::array<std::uint16_t, 65536> table = nearest_table(exp_f16);
  return table;
}

}  // namespace tessera::kernels
