#include "cli/siglip_common.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/progress.hpp"
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
  // One progress line on the terminal (cli/progress.hpp), erased when the
  // command's last copy of the callback goes; nothing when stderr is not a
  // terminal, so logs and pipes stay clean.
  auto line = std::make_shared<Progress>(io.progress);
  return [line, command = std::string(command)](std::string_view step) {
    if (step.empty()) return line->hide();  // results are about to print
    line->phase(fmt::format("siglip {}: {}", command, step));
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

ModelInput load_model_input(const boost::program_options::variables_map& values,
                            const siglip::Progress& progress) {
  const std::string directory = values["model"].as<std::string>();
  progress(fmt::format("loading {}", directory));
  ModelInput input{siglip::load_model(directory), {}};
  if (values.count("output") && !input.model.weights.head) {
    throw InputError(fmt::format("{}: the model has no pooling head (vision_use_head is false), so "
                                 "no pooler_output: write --hidden only",
                                 directory));
  }
  input.pixels = read_pixels_or_images(
      values.count("pixels") ? &values["pixels"].as<std::string>() : nullptr,
      values.count("image") ? &values["image"].as<std::vector<std::string>>() : nullptr,
      input.model.weights.config);
  return input;
}

void write_outputs(const boost::program_options::variables_map& values,
                   const siglip::SiglipVisionConfig& config, std::uint32_t batch,
                   const std::vector<float>& pooled, const std::vector<float>& hidden, Streams& io) {
  const std::uint64_t b = batch, h = config.hidden_size, t = config.num_patches();
  if (values.count("output")) {
    const std::string path = values["output"].as<std::string>();
    write_f32(path, {b, h}, pooled);
    io.out << fmt::format("{}: pooler_output f32[{}, {}]\n", path, b, h);
  }
  if (values.count("hidden")) {
    const std::string path = values["hidden"].as<std::string>();
    write_f32(path, {b, t, h}, hidden);
    io.out << fmt::format("{}: last_hidden_state f32[{}, {}, {}]\n", path, b, t, h);
  }
}

}  // namespace tessera::cli
