#pragma once
// IEEE 754 binary16 ("f16", "half") <-> binary32 conversions on bit patterns,
// the one definition every kernel model and CPU reference uses.
//
// f16 -> f32 is exact for every value. f32 -> f16 rounds to nearest, ties to
// even, overflowing to ±Inf and producing f16 subnormals, as the IPU's
// round-to-nearest mode does with stochastic rounding off.
//
// NaN rules (the hardware's payload behaviour is not modelled, [INF]): a NaN
// keeps its sign and the top 10 bits of its payload in both directions, so
// f16 -> f32 -> f16 is the identity on all 65536 patterns, signalling NaNs
// included (no arithmetic happens, so nothing is quieted). An f32 NaN whose
// payload lives only in the low 13 bits would truncate to the Inf pattern; it
// becomes the f16 quiet NaN instead, so a NaN never turns into an infinity.
// Working on bits, not `float`, keeps signalling NaNs out of host FP registers.

#include <bit>
#include <cstdint>

namespace tessera::kernels {

inline constexpr std::uint16_t kF16QuietNan = 0x7E00;
inline constexpr std::uint16_t kF16Infinity = 0x7C00;
inline constexpr std::uint16_t kF16MaxFinite = 0x7BFF;  // 65504

constexpr bool f16_is_nan(std::uint16_t h) noexcept { return (h & 0x7FFF) > kF16Infinity; }

constexpr std::uint32_t f16_to_f32_bits(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return sign | 0x7F800000u | (mantissa << 13);  // Inf, NaN
  if (exponent != 0) return sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  if (mantissa == 0) return sign;
  // Subnormal m·2^-24: normalise so the leading one reaches bit 10.
  std::uint32_t shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  return sign | ((127 - 14 - shift) << 23) | ((mantissa & 0x3FFu) << 13);
}

constexpr std::uint16_t f32_bits_to_f16(std::uint32_t f) noexcept {
  const auto sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t exponent = (f >> 23) & 0xFFu;
  const std::uint32_t mantissa = f & 0x7FFFFFu;
  if (exponent == 0xFF) {
    if (mantissa == 0) return sign | kF16Infinity;
    const auto payload = static_cast<std::uint16_t>(mantissa >> 13);
    return sign | kF16Infinity | (payload != 0 ? payload : std::uint16_t{0x200});
  }
  // Zero and f32 subnormals (< 2^-126) are far below half the smallest f16
  // subnormal (2^-25): they round to a signed zero.
  if (exponent == 0) return sign;
  const int unbiased = static_cast<int>(exponent) - 127;
  if (unbiased > 15) return sign | kF16Infinity;  // ≥ 2^16 rounds past 65504
  const std::uint32_t significand = mantissa | 0x800000u;  // value = significand·2^(unbiased-23)
  // Target significand and the bits rounded away: 13 of them for an f16
  // normal, more for a subnormal (unit 2^-24).
  const int drop = unbiased >= -14 ? 13 : -unbiased - 1;
  if (drop > 24) return sign;  // below 2^-25: rounds to zero
  std::uint32_t result = unbiased >= -14
                             ? (static_cast<std::uint32_t>(unbiased + 15) << 10) | (mantissa >> 13)
                             : significand >> drop;
  const std::uint32_t rest = significand & ((1u << drop) - 1);
  const std::uint32_t half = 1u << (drop - 1);
  // A carry out of the mantissa steps the exponent (to Inf past 65504, to
  // the smallest normal from the largest subnormal): the encoding's order.
  if (rest > half || (rest == half && (result & 1u) != 0)) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

inline float f16_to_f32(std::uint16_t h) noexcept { return std::bit_cast<float>(f16_to_f32_bits(h)); }
inline std::uint16_t f32_to_f16(float f) noexcept { return f32_bits_to_f16(std::bit_cast<std::uint32_t>(f)); }

}  // namespace tessera::kernels
