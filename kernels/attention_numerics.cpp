// AttentionRounding's batch form (kernels/attention_numerics.hpp).
#include "kernels/attention_numerics.hpp"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define TESSERA_ATTENTION_F16C 1
#else
#define TESSERA_ATTENTION_F16C 0
#endif

namespace tessera::kernels {
namespace {

#if TESSERA_ATTENTION_F16C
bool f16c_available() noexcept {
  static const bool available =
      __builtin_cpu_supports("avx") != 0 && __builtin_cpu_supports("f16c") != 0;
  return available;
}

// Round to nearest even, eight at a time (vcvtps2ph with an explicit
// rounding mode, so $MXCSR's does not matter; f32 subnormals are converted
// exactly, as DAZ is off).
__attribute__((target("avx,f16c"))) void narrow_f16c(const float* in, std::uint16_t* out,
                                                     std::size_t count) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);  // NOLINT
  }
  for (; i < count; ++i) out[i] = f32_to_f16(in[i]);
  _mm256_zeroupper();
}
#endif

}  // namespace

void AttentionRounding::to_f16(std::span<const float> values, std::span<std::uint16_t> out,
                               unsigned worker) const noexcept {
  const std::size_t count = std::min(values.size(), out.size());
#if TESSERA_ATTENTION_F16C
  if (mode_ == Rounding::kNearestEven && f16c_available()) {
    narrow_f16c(values.data(), out.data(), count);
    for (std::size_t i = 0; i < count; ++i) {
      if (f16_is_nan(out[i])) out[i] = kF16QuietNan;
    }
    return;
  }
#endif
  for (std::size_t i = 0; i < count; ++i) out[i] = to_f16(values[i], worker);
}

}  // namespace tessera::kernels
