#include "models/siglip/image_processor.hpp"

#include <fmt/format.h>

#include "models/resample.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip {
namespace {

// SiglipImageProcessor's defaults (IMAGENET_STANDARD_MEAN / _STD).
constexpr double kRescaleFactor = 1.0 / 255.0;
constexpr float kMean = 0.5F;
constexpr float kStd = 0.5F;

}  // namespace

std::vector<float> preprocess(const Rgb8Image& image, std::uint32_t image_size) {
  const std::vector<std::uint8_t> resized =
      resize_bicubic(image.pixels, image.width, image.height, 3, image_size, image_size);
  const std::size_t plane = std::size_t{image_size} * image_size;
  std::vector<float> values(3 * plane);
  for (std::size_t i = 0; i < plane; ++i) {
    for (std::size_t c = 0; c < 3; ++c) {
      // numpy: image.astype(float64) * scale → float32; (x − mean) / std in float32.
      const auto rescaled =
          static_cast<float>(static_cast<double>(resized[i * 3 + c]) * kRescaleFactor);
      values[c * plane + i] = (rescaled - kMean) / kStd;
    }
  }
  return values;
}

std::vector<float> pixel_values_from_files(std::span<const std::filesystem::path> files,
                                           const SiglipVisionConfig& config) {
  if (config.num_channels != 3) {
    throw InputError("num_channels", fmt::format("images have 3 channels (RGB), the model takes {}",
                                                 config.num_channels));
  }
  std::vector<float> pixels;
  for (const auto& file : files) {
    const Rgb8Image image = read_image(file);
    const std::vector<float> one = preprocess(image, config.image_size);
    pixels.insert(pixels.end(), one.begin(), one.end());
  }
  return pixels;
}

}  // namespace tessera::models::siglip
