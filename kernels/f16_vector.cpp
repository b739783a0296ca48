#include "kernels/f16_vector.hpp"

#include <bit>

#include "kernels/half.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#define TESSERA_X86 1
#else
#define TESSERA_X86 0
#endif

namespace tessera::kernels {
namespace f16_vector_detail {

bool host_has_f16c() noexcept {
#if TESSERA_X86
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("f16c") != 0;
  }();
  return has;
#else
  return false;
#endif
}

void widen_scalar(const std::uint16_t* in, float* out, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) out[i] = f16_to_f32(in[i]);
}

void narrow_scalar(const float* in, std::uint16_t* out, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) out[i] = f32_to_f16(in[i]);
}

void round_scalar(float* values, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) values[i] = f16_to_f32(f32_to_f16(values[i]));
}

#if TESSERA_X86

// Eight lanes at a time; a group holding a NaN is redone by the scalar rule.
__attribute__((target("avx2,f16c"))) void widen_f16c(const std::uint16_t* in, float* out,
                                                     std::size_t count) noexcept {
  const __m128i magnitude_mask = _mm_set1_epi16(0x7FFF);
  const __m128i infinity = _mm_set1_epi16(0x7C00);
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));  // NOLINT
    // Magnitudes fit 15 bits, so the signed compare is the unsigned one.
    const __m128i nan = _mm_cmpgt_epi16(_mm_and_si128(h, magnitude_mask), infinity);
    if (_mm_movemask_epi8(nan) != 0) {
      widen_scalar(in + i, out + i, 8);
    } else {
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
    }
  }
  widen_scalar(in + i, out + i, count - i);
}

__attribute__((target("avx2,f16c"))) void narrow_f16c(const float* in, std::uint16_t* out,
                                                      std::size_t count) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0) {
      narrow_scalar(in + i, out + i, 8);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),  // NOLINT
                       _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  }
  narrow_scalar(in + i, out + i, count - i);
}

__attribute__((target("avx2,f16c"))) void round_f16c(float* values, std::size_t count) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_loadu_ps(values + i);
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(values + i, _mm256_cvtph_ps(h));
  }
  round_scalar(values + i, count - i);
}

#else

void widen_f16c(const std::uint16_t* in, float* out, std::size_t count) noexcept {
  widen_scalar(in, out, count);
}
void narrow_f16c(const float* in, std::uint16_t* out, std::size_t count) noexcept {
  narrow_scalar(in, out, count);
}
void round_f16c(float* values, std::size_t count) noexcept { round_scalar(values, count); }

#endif

}  // namespace f16_vector_detail

using namespace f16_vector_detail;

void widen_f16(const std::uint16_t* in, float* out, std::size_t count) noexcept {
  if (host_has_f16c()) {
    widen_f16c(in, out, count);
  } else {
    widen_scalar(in, out, count);
  }
}

void narrow_f16(const float* in, std::uint16_t* out, std::size_t count) noexcept {
  if (host_has_f16c()) {
    narrow_f16c(in, out, count);
  } else {
    narrow_scalar(in, out, count);
  }
}

void round_to_f16_grid(float* values, std::size_t count) noexcept {
  if (host_has_f16c()) {
    round_f16c(values, count);
  } else {
    round_scalar(values, count);
  }
}

void canonicalize_nans(float* values, std::size_t count) noexcept {
  const float quiet = std::bit_cast<float>(std::uint32_t{0x7FC00000});
  for (std::size_t i = 0; i < count; ++i) values[i] = values[i] != values[i] ? quiet : values[i];
}

}  // namespace tessera::kernels
