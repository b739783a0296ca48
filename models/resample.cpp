#include "models/resample.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::models {
namespace {

// Resample.c: PRECISION_BITS = 32 − 8 − 2.
constexpr int kPrecisionBits = 22;

// Keys' cubic convolution kernel with a = −0.5 (Resample.c, bicubic_filter).
double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// One pass along an axis of `count` lines: line l's samples are at
// in[l·line_stride + k·sample_stride + c] for k < in_size.
void pass(const std::uint8_t* in, std::uint8_t* out, const ResampleTaps& taps, std::size_t lines,
          std::size_t channels, std::size_t in_line, std::size_t in_sample, std::size_t out_line,
          std::size_t out_sample) {
  for (std::size_t l = 0; l < lines; ++l) {
    for (std::size_t i = 0; i < taps.first.size(); ++i) {
      const auto& weights = taps.weights[i];
      for (std::size_t c = 0; c < channels; ++c) {
        std::int64_t sum = std::int64_t{1} << (kPrecisionBits - 1);
        for (std::size_t k = 0; k < weights.size(); ++k) {
          sum += std::int64_t{weights[k]} * in[l * in_line + (taps.first[i] + k) * in_sample + c];
        }
        // clip8: an arithmetic shift (floor), then [0, 255].
        const std::int64_t value = sum >> kPrecisionBits;
        out[l * out_line + i * out_sample + c] =
            static_cast<std::uint8_t>(std::clamp<std::int64_t>(value, 0, 255));
      }
    }
  }
}

}  // namespace

ResampleTaps bicubic_taps(std::uint32_t in_size, std::uint32_t out_size) {
  constexpr double kSupport = 2.0;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = kSupport * filter_scale;
  ResampleTaps taps;
  for (std::uint32_t i = 0; i < out_size; ++i) {
    const double centre = (i + 0.5) * scale;
    // C's (int) truncates toward zero; both ends are clipped to the image.
    const auto low = static_cast<std::int64_t>(centre - support + 0.5);
    const auto high = static_cast<std::int64_t>(centre + support + 0.5);
    const auto first = static_cast<std::uint32_t>(std::max<std::int64_t>(low, 0));
    const auto end = static_cast<std::uint32_t>(std::min<std::int64_t>(high, in_size));
    // Resample.c multiplies by the reciprocal (ss = 1 / filterscale): so
    // must we, or a weight could differ in its last bit.
    const double reciprocal = 1.0 / filter_scale;
    std::vector<double> weights;
    double total = 0.0;
    for (std::uint32_t x = first; x < end; ++x) {
      const double w = bicubic((x - centre + 0.5) * reciprocal);
      weights.push_back(w);
      total += w;
    }
    std::vector<std::int32_t> fixed;
    for (double w : weights) {
      if (total != 0.0) w /= total;
      const double scaled = w * (1 << kPrecisionBits);
      fixed.push_back(static_cast<std::int32_t>(w < 0 ? scaled - 0.5 : scaled + 0.5));
    }
    taps.first.push_back(first);
    taps.weights.push_back(std::move(fixed));
  }
  return taps;
}

std::vector<std::uint8_t> resize_bicubic(std::span<const std::uint8_t> pixels, std::uint32_t width,
                                         std::uint32_t height, std::uint32_t channels,
                                         std::uint32_t out_width, std::uint32_t out_height) {
  if (width == 0 || height == 0 || channels == 0 || out_width == 0 || out_height == 0 ||
      pixels.size() != std::size_t{width} * height * channels) {
    throw UsageError(fmt::format("resize_bicubic: {} bytes for a {}x{}x{} image to {}x{}",
                                 pixels.size(), width, height, channels, out_width, out_height));
  }
  std::vector<std::uint8_t> current(pixels.begin(), pixels.end());
  if (out_width != width) {
    std::vector<std::uint8_t> next(std::size_t{out_width} * height * channels);
    pass(current.data(), next.data(), bicubic_taps(width, out_width), height, channels,
         std::size_t{width} * channels, channels, std::size_t{out_width} * channels, channels);
    current = std::move(next);
  }
  if (out_height != height) {
    const std::size_t row = std::size_t{out_width} * channels;
    std::vector<std::uint8_t> next(row * out_height);
    // Lines are the columns (one per x and channel, so channels = 1 here),
    // samples the rows.
    pass(current.data(), next.data(), bicubic_taps(height, out_height), row, 1, 1, row, 1, row);
    current = std::move(next);
  }
  return current;
}

}  // namespace tessera::models
