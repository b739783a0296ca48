#pragma once
// The f8 precision's activation scales (graph.hpp, ActivationScales) from a
// quantized model's record: the quantizer chose, from calibration inputs,
// the F143 scale of every encoder linear's input in every layer and stored it
// in quantization.json (quantizer/quantize.hpp) — never from environment
// variables, as the prior art did. The graph's one repeat body takes one
// scale per projection: the largest of the layers' (no layer's calibration
// input saturates).

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "models/siglip/config.hpp"
#include "models/siglip/graph.hpp"

namespace tessera::models::siglip {

// From `recorded`, each weight's recorded activation scale by checkpoint name
// (quantizer::read_activation_scales, or read_quantization's): for each
// projection the largest over the layers. InputError naming the first weight
// (in module order) whose scale is absent, saying to quantize with
// calibration inputs.
ActivationScales f8_activation_scales(const SiglipVisionConfig& config,
                                      const std::map<std::string, std::optional<int>>& recorded);

// The same from DIRECTORY/quantization.json (config alone, no weights read).
// InputError naming the directory when it has no quantization.json, and the
// record's own errors (naming the file and the tensor).
ActivationScales read_f8_activation_scales(const std::filesystem::path& directory,
                                           const SiglipVisionConfig& config);

// The activation scales of a quantized model's F143 weights
// (quantizer::read_quantization's), by name.
std::map<std::string, std::optional<int>> recorded_activation_scales(const RecordedF143& recorded);

}  // namespace tessera::models::siglip
