#include "cli/siglip_common.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "models/siglip/image_processor.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::cli {

namespace siglip = models::siglip;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

siglip::Progress progress_to(Streams& io, std::string_view command, bool uses_blas) {
  if (const auto note = uses_blas ? siglip::blas_performance_note() : std::nullopt) {
    io.err << "tessera siglip " << command << ": note: " << *note << '\n';
  }
  return [&io, command = std::string(command)](std::string_view step) {
    io.err << "tessera siglip " << command << ": " << step << '\n' << std::flush;
  };
}

Pixels read_pixels(const std::string& path, const siglip::SiglipVisionConfig& config) {
  const runtime::HostTensor tensor = runtime::read_npy_file(path);
  return with_context(path, [&] {
    const auto& shape = tensor.shape();
    const std::vector<std::uint64_t> per_image = {config.num_channels, config.image_size,
                                                  config.image_size};
    if (tensor.dtype() != schema::DType::kF32 || shape.size() != 4 ||
        !std::equal(per_image.begin(), per_image.end(), shape.begin() + 1) || shape[0] == 0) {
      throw InputError(fmt::format(
          "is {}, but the model takes pixel values f32[B, {}, {}, {}] (B ≥ 1), as "
          "SiglipImageProcessor produces them",
          tensor.describe_shape(), config.num_channels, config.image_size, config.image_size));
    }
    Pixels pixels;
    pixels.batch = checked_cast<std::uint32_t>(shape[0], "batch");
    pixels.values.resize(tensor.byte_size() / sizeof(float));
    std::memcpy(pixels.values.data(), tensor.bytes().data(), tensor.byte_size());
    for (std::size_t i = 0; i < pixels.values.size(); ++i) {
      if (!std::isfinite(pixels.values[i])) {
        throw InputError(fmt::format("element {} is {}: pixel values must be finite", i,
                                     pixels.values[i]));
      }
    }
    return pixels;
  });
}

void write_f32(const std::string& path, std::vector<std::uint64_t> shape,
               const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  runtime::write_tensor_file(path, runtime::HostTensor(schema::DType::kF32, std::move(shape),
                                                       std::move(bytes)));
}

Pixels read_pixels_or_images(const std::string* pixels_file, const std::vector<std::string>* images,
                             const siglip::SiglipVisionConfig& config) {
  if ((pixels_file != nullptr) == (images != nullptr)) {
    throw UsageError("give exactly one of --pixels and --image");
  }
  if (pixels_file != nullptr) return read_pixels(*pixels_file, config);
  const std::vector<std::filesystem::path> files(images->begin(), images->end());
  Pixels pixels;
  pixels.values = siglip::pixel_values_from_files(files, config);
  pixels.batch = checked_cast<std::uint32_t>(files.size(), "images");
  return pixels;
}

}  // namespace tessera::cli
