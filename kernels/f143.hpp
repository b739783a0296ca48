#pragma once
// F143, the IPU21's 8-bit float "1.4.3" (kernels-siglip-f143.md §3), and its
// block scales: the one codec and the one block-scale type shared by the
// quantizer (models/), the packer (compiler/) and the kernels' host models
// (review-findings.md #19), with every scale computation in f32 or wider
// (review #6).
//
// A code is s | eeee | mmm with exponent bias 8: e = 1..15 is
// (1 + m/8)·2^(e−8), e = 0 is m·2^−10. There are no infinities; 0x80 (the
// "negative zero" pattern) is the only NaN; ±240 (0x7F / 0xFF) are the
// largest finite codes. A stored value means decode(code)·2^scale, with the
// scale a power-of-two exponent in [−32, 31] (a 6-bit signed field in the
// hardware's metadata).
//
// Encoding x at scale s (the host rules of the prior art, §3): y = x·2^−s
// in f32; NaN → 0x80; ±0 → 0x00; |y| ≥ 240 or ±Inf → sign | 0x7F; below
// 2^−7 the mantissa is round-half-even(|y|·1024) capped at 8 (8 is 0x08 =
// 2^−7, the carry into the normals; 0 is +0 whatever the sign, so negative
// underflow never makes the NaN code); normals round the mantissa
// half-even, a carry steps the exponent, and past exponent 15 saturates.

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::kernels::f143 {

inline constexpr std::uint8_t kNan = 0x80;
inline constexpr std::uint8_t kMaxFinite = 0x7F;  // 240
inline constexpr float kMaxValue = 240.0F;
inline constexpr int kMinScale = -32;
inline constexpr int kMaxScale = 31;

constexpr bool valid_scale(int scale) noexcept { return scale >= kMinScale && scale <= kMaxScale; }

// 2^exponent as an f32, exactly, for exponents a scale arithmetic can reach
// ([−126, 127]): built from the float's bits, never by repeated halving in a
// narrower type.
float power_of_two(int exponent);

// x at `scale` → code (round to nearest, ties to even; saturating). The
// scale must be valid (std::invalid_argument otherwise: a caller bug).
std::uint8_t encode(float x, int scale);
// code at `scale` → value (quiet NaN for 0x80); exact in f32.
float decode(std::uint8_t code, int scale);

// The scale for a group of values: the smallest s in [−32, 31] with
// max|x| ≤ 240·2^s (so max|x|·2^−s lands in (120, 240] unless clamped), or 0
// when every value is zero. NaNs are ignored (they encode to 0x80 at any
// scale); an infinity asks for the largest scale.
int choose_scale(std::span<const float> values);

// One scale per 64 × 64 block of a [K, N] weight (the prior art's grid).
inline constexpr std::uint32_t kBlockRows = 64;     // along K
inline constexpr std::uint32_t kBlockColumns = 64;  // along N

class BlockScales {
 public:
  BlockScales() = default;
  // Every scale must be valid and there must be one per block
  // (std::invalid_argument otherwise).
  BlockScales(std::uint32_t inner, std::uint32_t columns, std::vector<std::int8_t> scales);
  // Chooses each block's scale from a row-major [inner, columns] weight.
  static BlockScales choose(std::span<const float> weight, std::uint32_t inner,
                            std::uint32_t columns);

  std::uint32_t inner() const noexcept { return inner_; }
  std::uint32_t columns() const noexcept { return columns_; }
  std::uint32_t block_rows() const noexcept { return (inner_ + kBlockRows - 1) / kBlockRows; }
  std::uint32_t block_columns() const noexcept {
    return (columns_ + kBlockColumns - 1) / kBlockColumns;
  }
  // The scale of the block holding element (k, n).
  int scale_at(std::uint32_t k, std::uint32_t n) const;
  // Block (i, j) along K and N.
  int block_scale(std::uint32_t i, std::uint32_t j) const;
  // Row-major by K block, then N block.
  std::span<const std::int8_t> scales() const noexcept { return scales_; }

  bool operator==(const BlockScales&) const = default;

 private:
  std::uint32_t inner_ = 0;
  std::uint32_t columns_ = 0;
  std::vector<std::int8_t> scales_;
};

// A row-major [inner, columns] weight encoded at its block scales, and back.
std::vector<std::uint8_t> encode(std::span<const float> weight, const BlockScales& scales);
std::vector<float> decode(std::span<const std::uint8_t> codes, const BlockScales& scales);

}  // namespace tessera::kernels::f143
