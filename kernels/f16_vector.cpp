#include "kernels/f16_vector.hpp"

#include <bit>

#include "kernels/float_arith.hpp"
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

void add_scalar(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out,
                std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) out[i] = add_f16_bits(a[i], b[i]);
}

namespace {
float on_f16_grid(float v) noexcept { return f16_to_f32(f32_to_f16(v)); }
}  // namespace

void normalise_affine_scalar(const float* x, float m, float s, const float* g, const float* b,
                             std::uint16_t* out, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    const float scaled = on_f16_grid(on_f16_grid(x[i] - m) * s);
    const float y = on_f16_grid(scaled * g[i]) + b[i];
    out[i] = y != y ? std::uint16_t{0x7E00} : f32_to_f16(y);
  }
}

#if TESSERA_X86

// Eight values rounded to the f16 grid (to nearest even).
// Eight f32 lanes to f16, rounded to nearest even, NaN lanes the canonical
// quiet NaN (`quiet`, kF16QuietNan in every lane): the scalar rule's bits.
__attribute__((target("avx2,f16c"))) inline __m128i narrow_canonical(__m256 y, __m128i quiet) {
  const __m128i h = _mm256_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 nan = _mm256_cmp_ps(y, y, _CMP_UNORD_Q);
  const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(nan)),
                                        _mm256_extractf128_si256(_mm256_castps_si256(nan), 1));
  return _mm_blendv_epi8(h, quiet, nan16);
}

__attribute__((target("avx2,f16c"))) inline __m256 grid(__m256 v) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

__attribute__((target("avx2,f16c"))) void normalise_affine_f16c(const float* x, float m, float s,
                                                                const float* g, const float* b,
                                                                std::uint16_t* out,
                                                                std::size_t count) noexcept {
  const __m256 mean = _mm256_set1_ps(m), scale = _mm256_set1_ps(s);
  const __m128i quiet = _mm_set1_epi16(0x7E00);
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 centred = grid(_mm256_sub_ps(_mm256_loadu_ps(x + i), mean));
    const __m256 scaled = grid(_mm256_mul_ps(centred, scale));
    const __m256 y =
        _mm256_add_ps(grid(_mm256_mul_ps(scaled, _mm256_loadu_ps(g + i))), _mm256_loadu_ps(b + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), narrow_canonical(y, quiet));  // NOLINT
  }
  _mm256_zeroupper();
  normalise_affine_scalar(x + i, m, s, g + i, b + i, out + i, count - i);
}

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
  // Clean the upper halves before any SSE code runs (the scalar tail, the
  // caller): dirty ones make every legacy-SSE instruction merge, and GCC does
  // not always emit this before a tail call.
  _mm256_zeroupper();
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
  _mm256_zeroupper();
  narrow_scalar(in + i, out + i, count - i);
}

__attribute__((target("avx2,f16c"))) void round_f16c(float* values, std::size_t count) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_loadu_ps(values + i);
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(values + i, _mm256_cvtph_ps(h));
  }
  _mm256_zeroupper();
  round_scalar(values + i, count - i);
}

// Both operands widen exactly (a signalling NaN comes out quiet, but any NaN
// operand makes the sum a NaN, which becomes the canonical one anyway), the
// f32 add is the scalar rule's, and F16C's rounding is half.hpp's for every
// non-NaN sum.
__attribute__((target("avx2,f16c"))) void add_f16c(const std::uint16_t* a, const std::uint16_t* b,
                                                   std::uint16_t* out, std::size_t count) noexcept {
  const __m128i quiet = _mm_set1_epi16(static_cast<short>(kF16QuietNan));
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));  // NOLINT
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));  // NOLINT
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),  // NOLINT
                     narrow_canonical(_mm256_add_ps(x, y), quiet));
  }
  _mm256_zeroupper();
  add_scalar(a + i, b + i, out + i, count - i);
}

#else

void add_f16c(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out,
              std::size_t count) noexcept {
  add_scalar(a, b, out, count);
}
void widen_f16c(const std::uint16_t* in, float* out, std::size_t count) noexcept {
  widen_scalar(in, out, count);
}
void narrow_f16c(const float* in, std::uint16_t* out, std::size_t count) noexcept {
  narrow_scalar(in, out, count);
}
void round_f16c(float* values, std::size_t count) noexcept { round_scalar(values, count); }
void normalise_affine_f16c(const float* x, float m, float s, const float* g, const float* b,
                           std::uint16_t* out, std::size_t count) noexcept {
  normalise_affine_scalar(x, m, s, g, b, out, count);
}

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

void normalise_affine_f16(const float* x, float m, float s, const float* g, const float* b,
                          std::uint16_t* out, std::size_t count) noexcept {
  if (host_has_f16c()) {
    normalise_affine_f16c(x, m, s, g, b, out, count);
  } else {
    normalise_affine_scalar(x, m, s, g, b, out, count);
  }
}

void add_f16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out,
             std::size_t count) noexcept {
  if (host_has_f16c()) {
    add_f16c(a, b, out, count);
  } else {
    add_scalar(a, b, out, count);
  }
}

void canonicalize_nans(float* values, std::size_t count) noexcept {
  const float quiet = std::bit_cast<float>(std::uint32_t{0x7FC00000});
  for (std::size_t i = 0; i < count; ++i) values[i] = values[i] != values[i] ? quiet : values[i];
}

}  // namespace tessera::kernels
