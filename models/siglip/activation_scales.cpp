#include "models/siglip/activation_scales.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "models/siglip/quantizer/quantize.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip {
namespace {

// What to do about a model without activation scales.
constexpr const char* kCalibrate =
    "--precision f8 quantises each projection's input at the scale the quantizer chose from "
    "calibration inputs: run `tessera siglip quantize --model DIR --calibration PIXELS.npy` (or "
    "--calibration-image FILE...) and use the directory it writes";

}  // namespace

ActivationScales f8_activation_scales(const SiglipVisionConfig& config,
                                      const std::map<std::string, std::optional<int>>& recorded) {
  ActivationScales result;
  for (std::size_t p = 0; p < kProjections; ++p) {
    const std::string_view module = projection_module(static_cast<Projection>(p));
    std::optional<int> largest;
    for (std::size_t layer = 0; layer < config.num_hidden_layers; ++layer) {
      const std::string name = quantizer::quantized_weight_name(layer, module);
      const auto it = recorded.find(name);
      if (it == recorded.end() || !it->second) {
        throw InputError(
            "tensors." + name,
            fmt::format("{} no activation scale: {}",
                        it == recorded.end() ? "has no record, so" : "has", kCalibrate));
      }
      largest = std::max(largest.value_or(*it->second), *it->second);
    }
    // A config has at least one layer (its parser's rule).
    result.scales[p] = largest.value_or(0);
  }
  return result;
}

ActivationScales read_f8_activation_scales(const std::filesystem::path& directory,
                                           const SiglipVisionConfig& config) {
  const auto recorded = quantizer::read_activation_scales(directory, config);
  if (!recorded) {
    throw InputError(fmt::format("{} has no {}, so no activation scales: {}", directory.string(),
                                 quantizer::kQuantizationFile, kCalibrate));
  }
  return with_context((directory / quantizer::kQuantizationFile).string(),
                      [&] { return f8_activation_scales(config, *recorded); });
}

std::map<std::string, std::optional<int>> recorded_activation_scales(const RecordedF143& recorded) {
  std::map<std::string, std::optional<int>> scales;
  for (const auto& [name, weight] : recorded) scales.emplace(name, weight.activation_scale);
  return scales;
}

}  // namespace tessera::models::siglip
