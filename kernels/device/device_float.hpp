#pragma once
// The element arithmetic of the device sources, on bit patterns: what the
// device's f32 unit and f16 ↔ f32 conversions do under the rules the host
// models state (kernels/float_arith.hpp, kernels/half.hpp — round to nearest
// even with subnormals; every NaN an operation makes is the canonical quiet
// NaN 0x7FC00000 / 0x7E00; a conversion keeps a NaN's sign and top payload
// bits). The device does this in hardware (f32add, f32tof16, f16tof32): the
// portable versions here are written independently of the host models'
// (a different algorithm: the f32 → f16 rounding by an integer add of the
// rounding bias), so tests/kernels/device_kernels_test.cpp compares two
// implementations, not one with itself.
//
// [INF] On silicon: NaN payloads, f32 subnormals and the conversion's NaN
// rule are unconfirmed; device fast paths canonicalise NaNs explicitly so the
// results stay the model's whatever the hardware does with them.

#include <cstdint>
#include <cstring>

namespace tessera::device {

inline constexpr std::uint32_t kF32CanonicalNan = 0x7FC00000u;
inline constexpr std::uint16_t kF16CanonicalNan = 0x7E00u;

inline float f32_from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
inline std::uint32_t f32_bits(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// A NaN result becomes the canonical NaN; everything else keeps its bits.
inline std::uint32_t canonical_f32(float value) {
  return value != value ? kF32CanonicalNan : f32_bits(value);
}

// f16 → f32, exact. Subnormals: m·2^−24 is exactly representable, so it is
// computed as a product (no normalisation loop, unlike half.hpp's).
inline std::uint32_t widen_f16(std::uint16_t h) {
  const std::uint32_t sign = (std::uint32_t{h} & 0x8000u) << 16;
  const std::uint32_t exponent = (std::uint32_t{h} >> 10) & 0x1Fu;
  const std::uint32_t mantissa = std::uint32_t{h} & 0x3FFu;
  if (exponent == 0x1F) return sign | 0x7F800000u | (mantissa << 13);
  if (exponent != 0) return sign | ((exponent + 112u) << 23) | (mantissa << 13);
  // 2^−24 = 0x33800000.
  return sign | f32_bits(static_cast<float>(mantissa) * f32_from_bits(0x33800000u));
}

// f32 → f16, round to nearest even, overflow to ±Inf, f16 subnormals; a NaN
// keeps its sign and top ten payload bits, or becomes 0x7E00 (with its sign)
// when those are zero, so a NaN never turns into an infinity.
inline std::uint16_t narrow_f32(std::uint32_t f) {
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t magnitude = f & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) {
    const std::uint32_t payload = (magnitude >> 13) & 0x3FFu;
    return static_cast<std::uint16_t>(sign | 0x7C00u | (payload != 0 ? payload : 0x200u));
  }
  // ≥ 65520 (the midpoint above 65504, ties to the even Inf) overflows.
  if (magnitude >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (magnitude >= 0x38800000u) {
    // Normal f16: rebias the exponent (−112 << 23) and drop 13 bits, adding
    // 0xFFF plus the kept lsb so ties go to even; a carry steps the exponent.
    const std::uint32_t lsb = (magnitude >> 13) & 1u;
    const std::uint32_t rounded = magnitude - (112u << 23) + 0xFFFu + lsb;
    return static_cast<std::uint16_t>(sign | (rounded >> 13));
  }
  // Subnormal f16 (or zero): the value in units of 2^−24, rounded to nearest
  // even. Adding 0.5f (= 2^−1) aligns the unit 2^−24 with the f32 ulp of
  // [0.5, 1) (2^−24), so the f32 add rounds exactly as wanted.
  const float scaled = f32_from_bits(magnitude) + 0.5f;
  return static_cast<std::uint16_t>(sign | (f32_bits(scaled) - 0x3F000000u));
}

// The float kernels' element operations (kernels/float_arith.hpp's rules).
inline std::uint32_t add_f32(std::uint32_t a, std::uint32_t b) {
  return canonical_f32(f32_from_bits(a) + f32_from_bits(b));
}
inline std::uint32_t mul_f32(std::uint32_t a, std::uint32_t b) {
  return canonical_f32(f32_from_bits(a) * f32_from_bits(b));
}
// An f16 add or product is exact in f32 before its one rounding; a NaN is
// canonical in f32 already, and 0x7FC00000 narrows to 0x7E00.
inline std::uint16_t add_f16(std::uint16_t a, std::uint16_t b) {
  return narrow_f32(add_f32(widen_f16(a), widen_f16(b)));
}
inline std::uint16_t mul_f16(std::uint16_t a, std::uint16_t b) {
  return narrow_f32(mul_f32(widen_f16(a), widen_f16(b)));
}

}  // namespace tessera::device
