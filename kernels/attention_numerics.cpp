// attention_exp_f32 (kernels/attention_numerics.hpp). Out of line so that
// every caller runs the same instructions: the kernels library is compiled
// with -ffp-contract=off, so no multiply and add here is ever fused.
#include "kernels/attention_numerics.hpp"

#include <algorithm>
#include <array>
#include <bit>

#if defined(__x86_64__)
#include <immintrin.h>
#define TESSERA_ATTENTION_F16C 1
#else
#define TESSERA_ATTENTION_F16C 0
#endif

namespace tessera::kernels {
namespace {

constexpr std::uint32_t kF32QuietNan = 0x7FC00000;
constexpr std::uint32_t kF32Infinity = 0x7F800000;

// 2^k for −126 ≤ k ≤ 127, exactly.
float power_of_two(int k) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
}

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

float attention_exp_f32(float x) noexcept {
  if (x != x) return std::bit_cast<float>(kF32QuietNan);
  if (x > 89.0F) return std::bit_cast<float>(kF32Infinity);
  if (x < -104.0F) return 0.0F;
  // k = x·log2 e to the nearest integer: adding and subtracting 1.5·2^23
  // rounds to an integer under round-to-nearest-even (|x·log2 e| < 151).
  constexpr float kRound = 12582912.0F;
  const float k = (x * 1.44269502F + kRound) - kRound;
  constexpr float kLn2Head = std::bit_cast<float>(0x3F317200u);  // 0.693145751953125
  constexpr float kLn2Tail = std::bit_cast<float>(0x35BFBE8Eu);  // 1.42860677e-6
  const float r = (x - k * kLn2Head) - k * kLn2Tail;
  // e^r = Σ r^n / n!, n = 0..7, in Horner form.
  float p = 1.0F / 5040.0F;
  p = p * r + 1.0F / 720.0F;
  p = p * r + 1.0F / 120.0F;
  p = p * r + 1.0F / 24.0F;
  p = p * r + 1.0F / 6.0F;
  p = p * r + 0.5F;
  p = p * r + 1.0F;
  p = p * r + 1.0F;
  const int n = static_cast<int>(k);                   // −150 … 128
  if (n > 127) return p * power_of_two(n - 1) * 2.0F;  // +Inf when e^x is past FLT_MAX
  if (n >= -126) return p * power_of_two(n);
  return p * power_of_two(n + 100) * power_of_two(-100);  // exact, then one rounding
}

const std::array<std::uint16_t, 65536>& attention_exp_f16_table() noexcept {
  static const std::array<std::uint16_t, 65536> table = [] {
    std::array<std::uint16_t, 65536> values{};
    const AttentionRounding nearest(Rounding::kNearestEven, 0);
    for (std::uint32_t h = 0; h < values.size(); ++h) {
      values[h] = nearest.to_f16(attention_exp_f32(f16_to_f32(static_cast<std::uint16_t>(h))), 0);
    }
    return values;
  }();
  return table;
}

std::uint16_t attention_exp_f16(std::uint16_t t) noexcept { return attention_exp_f16_table()[t]; }

}  // namespace tessera::kernels
