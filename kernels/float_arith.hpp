#pragma once
// The arithmetic of Tessera's floating-point kernels, element by element: the
// one definition the host models use and the CPU references must match bit
// for bit (ARCHITECTURE.md decision 10: same inputs, same bits on any host).
//
// - f32 add is IEEE binary32 round-to-nearest-even with subnormals, as the
//   host computes it. [INF] The IPU's f32 subnormal handling is unconfirmed;
//   if silicon flushes them, this is the one place to change.
// - f16 add converts both operands to f32 exactly, adds, and rounds once to
//   f16. A single f32 add of two f16 values rounded again to f16 is the
//   correctly rounded f16 sum (24 ≥ 2·11 + 2, so double rounding is
//   innocuous), so this is IEEE binary16 addition.
// - Any NaN result is the canonical quiet NaN (0x7FC00000 / 0x7E00): NaN
//   payload propagation differs between hosts and is unknown on the IPU [INF],
//   so the models do not pretend to know it.
// - Stochastic rounding is off for these kernels (the device kernels must not
//   set ESR in $FP_ICTL).

#include <bit>
#include <cstdint>

#include "kernels/half.hpp"

namespace tessera::kernels {

inline constexpr std::uint32_t kF32QuietNan = 0x7FC00000;

inline std::uint32_t add_f32_bits(std::uint32_t a, std::uint32_t b) noexcept {
  const float sum = std::bit_cast<float>(a) + std::bit_cast<float>(b);
  return sum != sum ? kF32QuietNan : std::bit_cast<std::uint32_t>(sum);
}

inline std::uint16_t add_f16_bits(std::uint16_t a, std::uint16_t b) noexcept {
  return f32_bits_to_f16(add_f32_bits(f16_to_f32_bits(a), f16_to_f32_bits(b)));
}

// Products: f32 is IEEE RNE; f16 is exact in f32 (11 × 11 significant bits)
// and rounded once, the correctly rounded binary16 product. NaNs canonical.
inline std::uint32_t mul_f32_bits(std::uint32_t a, std::uint32_t b) noexcept {
  const float product = std::bit_cast<float>(a) * std::bit_cast<float>(b);
  return product != product ? kF32QuietNan : std::bit_cast<std::uint32_t>(product);
}

inline std::uint16_t mul_f16_bits(std::uint16_t a, std::uint16_t b) noexcept {
  return f32_bits_to_f16(mul_f32_bits(f16_to_f32_bits(a), f16_to_f32_bits(b)));
}

// Element types of the float kernels: storage size, the exact widening to the
// f32 that sums accumulate in and the one rounding back, and the add.
struct F32Element {
  using Bits = std::uint32_t;  // what a span of these elements holds
  static constexpr unsigned kBytes = 4;
  static constexpr const char* kName = "f32";
  static std::uint32_t widen(std::uint32_t bits) noexcept { return bits; }
  static std::uint32_t narrow(std::uint32_t f32) noexcept { return f32; }
  static std::uint32_t add(std::uint32_t a, std::uint32_t b) noexcept { return add_f32_bits(a, b); }
};

struct F16Element {
  using Bits = std::uint16_t;
  static constexpr unsigned kBytes = 2;
  static constexpr const char* kName = "f16";
  static std::uint32_t widen(std::uint16_t bits) noexcept { return f16_to_f32_bits(bits); }
  static std::uint16_t narrow(std::uint32_t f32) noexcept { return f32_bits_to_f16(f32); }
  static std::uint16_t add(std::uint16_t a, std::uint16_t b) noexcept { return add_f16_bits(a, b); }
};

}  // namespace tessera::kernels
