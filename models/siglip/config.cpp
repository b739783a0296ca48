#include "models/siglip/config.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/checkpoint.hpp"
#include "models/strict_json.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip {
namespace {

using nlohmann::json;

void read_size(const json& object, const std::string& prefix, const char* key, std::uint32_t min,
               std::uint32_t max, std::uint32_t& out) {
  if (!object.contains(key)) return;
  const json& value = object[key];
  if (!value.is_number_unsigned() || value.get<std::uint64_t>() < min ||
      value.get<std::uint64_t>() > max) {
    throw InputError(prefix + key, fmt::format("expected an integer from {} to {}, got {}", min,
                                               max, value.dump()));
  }
  out = static_cast<std::uint32_t>(value.get<std::uint64_t>());
}

void read_number(const json& object, const std::string& prefix, const char* key, double min,
                 double max, bool min_inclusive, double& out) {
  if (!object.contains(key)) return;
  const json& value = object[key];
  const bool ok = value.is_number() && std::isfinite(value.get<double>()) &&
                  (min_inclusive ? value.get<double>() >= min : value.get<double>() > min) &&
                  value.get<double>() <= max;
  if (!ok) {
    throw InputError(prefix + key,
                     fmt::format("expected a number {} {} and at most {}, got {}",
                                 min_inclusive ? "from" : "above", min, max, value.dump()));
  }
  out = value.get<double>();
}

SiglipVisionConfig parse_vision(const json& object, const std::string& prefix) {
  if (!object.is_object()) {
    throw InputError(prefix.empty() ? "config" : prefix.substr(0, prefix.size() - 1),
                     "must be a JSON object");
  }
  SiglipVisionConfig config;
  read_size(object, prefix, "hidden_size", 1, kMaxWidth, config.hidden_size);
  read_size(object, prefix, "intermediate_size", 1, kMaxWidth, config.intermediate_size);
  read_size(object, prefix, "num_hidden_layers", 1, kMaxLayers, config.num_hidden_layers);
  read_size(object, prefix, "num_attention_heads", 1, kMaxWidth, config.num_attention_heads);
  read_size(object, prefix, "num_channels", 1, kMaxChannels, config.num_channels);
  read_size(object, prefix, "image_size", 1, kMaxImageSize, config.image_size);
  read_size(object, prefix, "patch_size", 1, kMaxImageSize, config.patch_size);
  if (object.contains("hidden_act")) {
    const json& value = object["hidden_act"];
    if (!value.is_string()) {
      throw InputError(prefix + "hidden_act",
                       fmt::format("expected a string, got {}", value.dump()));
    }
    config.hidden_act = value.get<std::string>();
  }
  read_number(object, prefix, "layer_norm_eps", 0.0, 1.0, false, config.layer_norm_eps);
  read_number(object, prefix, "attention_dropout", 0.0, 1.0, true, config.attention_dropout);
  if (object.contains("vision_use_head")) {
    const json& value = object["vision_use_head"];
    if (!value.is_boolean()) {
      throw InputError(prefix + "vision_use_head",
                       fmt::format("expected true or false, got {}", value.dump()));
    }
    config.vision_use_head = value.get<bool>();
  }
  with_context(prefix.empty() ? "config" : prefix.substr(0, prefix.size() - 1),
               [&] { validate(config); });
  return config;
}

}  // namespace

void validate(const SiglipVisionConfig& config) {
  if (config.hidden_act != kGeluTanh) {
    throw InputError("hidden_act",
                     fmt::format("'{}' is not supported: SigLIP's vision tower uses '{}' (GeLU, "
                                 "tanh approximation), the only activation Tessera implements",
                                 config.hidden_act, kGeluTanh));
  }
  if (config.hidden_size == 0 || config.num_attention_heads == 0 ||
      config.hidden_size % config.num_attention_heads != 0) {
    throw InputError("num_attention_heads",
                     fmt::format("{} heads do not divide hidden_size {}",
                                 config.num_attention_heads, config.hidden_size));
  }
  if (config.patch_size == 0 || config.patch_size > config.image_size) {
    throw InputError("patch_size", fmt::format("{} does not fit in image_size {}: no patches",
                                               config.patch_size, config.image_size));
  }
  if (config.intermediate_size == 0 || config.num_hidden_layers == 0 || config.num_channels == 0 ||
      !(config.layer_norm_eps > 0.0)) {
    throw InputError("config", "sizes and layer_norm_eps must be positive");
  }
}

SiglipVisionConfig parse_siglip_config(std::string_view json_text) {
  // Strict: a key given twice (two hidden_size values) is an error, not the
  // parser's silent choice of the last.
  const json root = parse_strict_json(json_text, kMaxConfigDepth);
  if (!root.is_object()) throw InputError("config", "must be a JSON object");
  std::string model_type;
  if (root.contains("model_type")) {
    if (!root["model_type"].is_string()) throw InputError("model_type", "must be a string");
    model_type = root["model_type"].get<std::string>();
  }
  if (model_type == "siglip" || (model_type.empty() && root.contains("vision_config"))) {
    // transformers: SiglipConfig(vision_config=None) is the default tower.
    if (!root.contains("vision_config") || root["vision_config"].is_null()) {
      return parse_vision(json::object(), "vision_config.");
    }
    return parse_vision(root["vision_config"], "vision_config.");
  }
  if (model_type.empty() || model_type == "siglip_vision_model") return parse_vision(root, "");
  throw InputError("model_type", fmt::format("'{}' is not a SigLIP config (expected 'siglip' or "
                                             "'siglip_vision_model')",
                                             model_type));
}

SiglipVisionConfig read_siglip_config(const std::filesystem::path& path) {
  const std::string text = read_text_file(path, kMaxConfigBytes);  // its errors name the file
  return with_context(path.string(), [&] { return parse_siglip_config(text); });
}

std::string describe(const SiglipVisionConfig& config) {
  return fmt::format(
      "hidden {}, intermediate {}, {} layers, {} heads (head dim {}), patch {}, image {} ({} "
      "patches){}",
      config.hidden_size, config.intermediate_size, config.num_hidden_layers,
      config.num_attention_heads, config.head_dim(), config.patch_size, config.image_size,
      config.num_patches(), config.vision_use_head ? "" : ", no pooling head");
}

}  // namespace tessera::models::siglip
