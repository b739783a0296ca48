#include "kernels/f143.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace tessera::kernels::f143 {
namespace {

void require_scale(int scale) {
  if (!valid_scale(scale)) {
    throw std::invalid_argument("F143 scale " + std::to_string(scale) + " is outside [-32, 31]");
  }
}

// Round half to even of a non-negative f32 that is at most 2^23.
std::uint32_t round_half_even(float value) {
  const auto down = static_cast<std::uint32_t>(value);
  const float rest = value - static_cast<float>(down);
  if (rest > 0.5F || (rest == 0.5F && (down & 1) != 0)) return down + 1;
  return down;
}

}  // namespace

float power_of_two(int exponent) {
  if (exponent < -126 || exponent > 127) {
    throw std::invalid_argument("2^" + std::to_string(exponent) + " is not a normal f32");
  }
  return std::bit_cast<float>(static_cast<std::uint32_t>(127 + exponent) << 23);
}

std::uint8_t encode(float x, int scale) {
  require_scale(scale);
  if (std::isnan(x)) return kNan;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float y = std::fabs(x) * power_of_two(-scale);  // exact unless it leaves f32's normals
  if (y == 0.0F) return 0x00;
  if (y >= kMaxValue) return sign | kMaxFinite;  // Inf included
  if (y < 0.0078125F) {  // below 2^−7: the subnormals (unit 2^−10)
    const std::uint32_t mantissa = std::min<std::uint32_t>(round_half_even(y * 1024.0F), 8);
    return mantissa == 0 ? 0x00 : static_cast<std::uint8_t>(sign | mantissa);
  }
  int exponent = 0;
  const float fraction = std::frexp(y, &exponent);  // y = fraction·2^exponent, fraction in [0.5, 1)
  int e = exponent - 1;                              // y = (1 + f)·2^e
  // (y / 2^e − 1)·8 is exact in f32: y has 24 significant bits.
  std::uint32_t mantissa = round_half_even((fraction * 2.0F - 1.0F) * 8.0F);
  if (mantissa == 8) {
    mantissa = 0;
    ++e;
  }
  const int biased = e + 8;
  if (biased > 15) return sign | kMaxFinite;
  return static_cast<std::uint8_t>(sign | static_cast<std::uint32_t>(biased) << 3 | mantissa);
}

float decode(std::uint8_t code, int scale) {
  require_scale(scale);
  if (code == kNan) return std::numeric_limits<float>::quiet_NaN();
  const float sign = (code & 0x80) != 0 ? -1.0F : 1.0F;
  const int e = (code >> 3) & 0xF;
  const auto m = static_cast<float>(code & 0x7);
  const float magnitude = e == 0 ? m * power_of_two(-10) : (1.0F + m / 8.0F) * power_of_two(e - 8);
  // magnitude·2^scale may leave f32's normal range only below 2^−126
  // (2^−42 at the least) or above 2^127 (240·2^31 at the most): both fit.
  return sign * magnitude * power_of_two(scale);
}

int choose_scale(std::span<const float> values) {
  float largest = 0.0F;
  for (const float v : values) {
    if (std::isnan(v)) continue;
    largest = std::max(largest, std::fabs(v));
  }
  if (largest == 0.0F) return 0;
  if (std::isinf(largest)) return kMaxScale;
  // The smallest s with largest ≤ 240·2^s, in double (exact: 240·2^s and
  // any f32 are representable there).
  const double target = static_cast<double>(largest);
  int s = static_cast<int>(std::ceil(std::log2(target / 240.0)));
  while (s > kMinScale - 1 && target <= 240.0 * std::ldexp(1.0, s - 1)) --s;
  while (target > 240.0 * std::ldexp(1.0, s)) ++s;
  return std::clamp(s, kMinScale, kMaxScale);
}

BlockScales::BlockScales(std::uint32_t inner, std::uint32_t columns,
                         std::vector<std::int8_t> scales)
    : inner_(inner), columns_(columns), scales_(std::move(scales)) {
  if (scales_.size() != std::size_t{block_rows()} * block_columns()) {
    throw std::invalid_argument("F143 block scales: " + std::to_string(scales_.size()) +
                                " scales for a " + std::to_string(inner) + " x " +
                                std::to_string(columns) + " weight, which has " +
                                std::to_string(std::size_t{block_rows()} * block_columns()) +
                                " blocks of 64 x 64");
  }
  for (const std::int8_t scale : scales_) require_scale(scale);
}

BlockScales BlockScales::choose(std::span<const float> weight, std::uint32_t inner,
                                std::uint32_t columns) {
  if (weight.size() != std::size_t{inner} * columns) {
    throw std::invalid_argument("F143 block scales: the weight has " +
                                std::to_string(weight.size()) + " values, not " +
                                std::to_string(std::size_t{inner} * columns));
  }
  BlockScales result;
  result.inner_ = inner;
  result.columns_ = columns;
  std::vector<float> block;
  for (std::uint32_t i = 0; i < result.block_rows(); ++i) {
    for (std::uint32_t j = 0; j < result.block_columns(); ++j) {
      block.clear();
      for (std::uint32_t k = i * kBlockRows; k < std::min(inner, (i + 1) * kBlockRows); ++k) {
        for (std::uint32_t n = j * kBlockColumns; n < std::min(columns, (j + 1) * kBlockColumns);
             ++n) {
          block.push_back(weight[std::size_t{k} * columns + n]);
        }
      }
      result.scales_.push_back(static_cast<std::int8_t>(choose_scale(block)));
    }
  }
  return result;
}

int BlockScales::block_scale(std::uint32_t i, std::uint32_t j) const {
  if (i >= block_rows() || j >= block_columns()) {
    throw std::out_of_range("F143 block (" + std::to_string(i) + ", " + std::to_string(j) +
                            ") is outside the weight's blocks");
  }
  return scales_[std::size_t{i} * block_columns() + j];
}

int BlockScales::scale_at(std::uint32_t k, std::uint32_t n) const {
  return block_scale(k / kBlockRows, n / kBlockColumns);
}

std::vector<std::uint8_t> encode(std::span<const float> weight, const BlockScales& scales) {
  if (weight.size() != std::size_t{scales.inner()} * scales.columns()) {
    throw std::invalid_argument("F143 encode: the weight does not match its block scales");
  }
  std::vector<std::uint8_t> codes(weight.size());
  for (std::uint32_t k = 0; k < scales.inner(); ++k) {
    for (std::uint32_t n = 0; n < scales.columns(); ++n) {
      const std::size_t i = std::size_t{k} * scales.columns() + n;
      codes[i] = encode(weight[i], scales.scale_at(k, n));
    }
  }
  return codes;
}

std::vector<float> decode(std::span<const std::uint8_t> codes, const BlockScales& scales) {
  if (codes.size() != std::size_t{scales.inner()} * scales.columns()) {
    throw std::invalid_argument("F143 decode: the codes do not match their block scales");
  }
  std::vector<float> values(codes.size());
  for (std::uint32_t k = 0; k < scales.inner(); ++k) {
    for (std::uint32_t n = 0; n < scales.columns(); ++n) {
      const std::size_t i = std::size_t{k} * scales.columns() + n;
      values[i] = decode(codes[i], scales.scale_at(k, n));
    }
  }
  return values;
}

}  // namespace tessera::kernels::f143
