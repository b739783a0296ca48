#include "kernels/rounding.hpp"

#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/f143.hpp"
#include "kernels/half.hpp"

namespace tessera::kernels {
namespace {

// Whether a value whose `drop` low bits (below the kept unit) are `rest`
// rounds up, given 64 uniform bits: with probability rest / 2^drop exactly
// when drop ≤ 64; beyond, the threshold is truncated (a bias < 2^−64 of a
// kept unit).
bool rounds_up(std::uint64_t rest, unsigned drop, std::uint64_t random) noexcept {
  if (rest == 0) return false;
  const std::uint64_t threshold = drop <= 64 ? rest << (64 - drop) : rest >> (drop - 64);
  // drop = 64 − 0 shift: rest < 2^64 already; drop = 0 cannot have rest ≠ 0.
  return random < threshold;
}

}  // namespace

std::uint16_t round_f16_stochastic(std::uint32_t f, std::uint64_t random) noexcept {
  const auto sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t exponent = (f >> 23) & 0xFFu;
  const std::uint32_t mantissa = f & 0x7FFFFFu;
  if (exponent == 0xFF) return f32_bits_to_f16(f);  // Inf, NaN: no rounding
  if (exponent == 0) return sign;                   // zero, f32 subnormals
  const int unbiased = static_cast<int>(exponent) - 127;
  if (unbiased > 15) return sign | kF16Infinity;
  const std::uint32_t significand = mantissa | 0x800000u;
  // Bits below the f16 unit: 13 for a normal, more for a subnormal (unit 2^−24).
  const auto drop = static_cast<unsigned>(unbiased >= -14 ? 13 : -unbiased - 1);
  std::uint32_t result = 0;
  std::uint64_t rest = significand;
  if (unbiased >= -14) {
    result = (static_cast<std::uint32_t>(unbiased + 15) << 10) | (mantissa >> 13);
    rest = significand & 0x1FFFu;
  } else if (drop < 24) {
    result = significand >> drop;
    rest = significand & ((1u << drop) - 1);
  }
  // A carry steps the exponent: to Inf past 65504, to the smallest normal
  // from the largest subnormal (the encoding's order).
  if (rounds_up(rest, drop, random)) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

std::uint8_t round_f143_stochastic(float x, int scale, std::uint64_t random) {
  if (!f143::valid_scale(scale)) {
    throw std::invalid_argument("F143 scale " + std::to_string(scale) + " is outside [-32, 31]");
  }
  if (std::isnan(x)) return f143::kNan;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float y = std::fabs(x) * f143::power_of_two(-scale);
  if (y == 0.0F) return 0x00;
  if (y >= f143::kMaxValue) return sign | f143::kMaxFinite;  // Inf included
  const auto bits = std::bit_cast<std::uint32_t>(y);
  const std::uint32_t exponent = bits >> 23;  // y is positive
  if (exponent == 0) return 0x00;             // below 2^−126: far below 2^−10
  const int e = static_cast<int>(exponent) - 127;
  const std::uint32_t significand = (bits & 0x7FFFFFu) | 0x800000u;  // y = significand·2^(e−23)
  if (e >= -7) {
    // A normal code keeps 1 + 3 mantissa bits: 20 bits go.
    std::uint32_t kept = significand >> 20;  // 8..15
    if (rounds_up(significand & 0xFFFFFu, 20, random)) ++kept;
    int biased = e + 8;
    if (kept == 16) {
      kept = 8;
      ++biased;
    }
    if (biased > 15) return sign | f143::kMaxFinite;
    return static_cast<std::uint8_t>(sign | static_cast<std::uint32_t>(biased) << 3 | (kept - 8));
  }
  // The subnormal codes m·2^−10 (m = 8 is code 0x08, 2^−7: the carry into
  // the normals); y / 2^−10 = significand·2^(e + 10 − 23).
  const auto drop = static_cast<unsigned>(13 - e);  // ≥ 21
  std::uint32_t kept = drop < 24 ? significand >> drop : 0;
  const std::uint64_t rest = drop < 24 ? significand & ((1u << drop) - 1) : significand;
  if (rounds_up(rest, drop, random)) ++kept;
  // Zero is +0 whatever the sign, so negative underflow never makes 0x80.
  return kept == 0 ? std::uint8_t{0x00} : static_cast<std::uint8_t>(sign | kept);
}

std::uint16_t F16Rounding::round(std::uint32_t f32_bits) noexcept {
  if (mode_ == Rounding::kNearestEven) return f32_bits_to_f16(f32_bits);
  return round_f16_stochastic(f32_bits, stream_->next());
}

std::uint16_t F16Rounding::round_result(float value) noexcept {
  // The draw is taken for NaNs too: the number of draws never depends on data.
  const std::uint16_t rounded = round(std::bit_cast<std::uint32_t>(value));
  return value != value ? kF16QuietNan : rounded;
}

// The f32 sum of two f16 values is exact unless their exponents are more
// than 13 apart; then it is rounded to nearest first, which moves the value
// by less than 2^−24 of it before the (stochastic) rounding to f16 [INF].
std::uint16_t F16Rounding::add(std::uint16_t a, std::uint16_t b) noexcept {
  return round_result(f16_to_f32(a) + f16_to_f32(b));
}

std::uint16_t F16Rounding::sub(std::uint16_t a, std::uint16_t b) noexcept {
  return round_result(f16_to_f32(a) - f16_to_f32(b));
}

std::uint16_t F16Rounding::mul(std::uint16_t a, std::uint16_t b) noexcept {
  // Exact in f32 (11 × 11 significant bits), so this rounds once.
  return round_result(f16_to_f32(a) * f16_to_f32(b));
}

RandomStream* worker_stream(KernelCall& call, unsigned worker) {
  if (call.rounding == Rounding::kNearestEven) return nullptr;
  if (call.prng == nullptr) {
    throw std::logic_error("a stochastically rounding kernel call has no tile PRNG state");
  }
  return &call.prng->worker(worker);
}

}  // namespace tessera::kernels
