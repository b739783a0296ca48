#pragma once
// Small SigLIP configs and model directories for the models/ tests.
#include <filesystem>
#include <string>

#include "models/safetensors.hpp"
#include "models/siglip/config.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/weights.hpp"

namespace tessera::models::siglip::testing {

// Two layers; head dim 32; the image (30) is not a multiple of the patch (8):
// a 3 × 3 grid, the last 6 rows and columns of pixels unread, like so400m's.
inline SiglipVisionConfig tiny_config() {
  SiglipVisionConfig c;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.image_size = 30;
  c.patch_size = 8;
  return c;
}

// Head dim 72, as so400m's (16 × 72 = 1152): hidden 144, 2 heads.
inline SiglipVisionConfig head_dim_72_config() {
  SiglipVisionConfig c;
  c.hidden_size = 144;
  c.intermediate_size = 272;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.image_size = 32;
  c.patch_size = 8;
  return c;
}

// config.json as transformers writes a SiglipVisionConfig.
inline std::string config_json(const SiglipVisionConfig& c) {
  return "{\n  \"architectures\": [\"SiglipVisionModel\"],\n  \"model_type\": "
         "\"siglip_vision_model\",\n"
         "  \"hidden_size\": " +
         std::to_string(c.hidden_size) +
         ",\n  \"intermediate_size\": " + std::to_string(c.intermediate_size) +
         ",\n  \"num_hidden_layers\": " + std::to_string(c.num_hidden_layers) +
         ",\n  \"num_attention_heads\": " + std::to_string(c.num_attention_heads) +
         ",\n  \"num_channels\": " + std::to_string(c.num_channels) +
         ",\n  \"image_size\": " + std::to_string(c.image_size) +
         ",\n  \"patch_size\": " + std::to_string(c.patch_size) +
         ",\n  \"hidden_act\": \"gelu_pytorch_tanh\",\n  \"layer_norm_eps\": 1e-06,\n"
         "  \"torch_dtype\": \"float32\"\n}\n";
}

// Writes a random model (config.json + model.safetensors) into `directory`.
inline SiglipVisionWeights write_random_model(const std::filesystem::path& directory,
                                              const SiglipVisionConfig& c, std::uint64_t seed,
                                              SafeTensorsDType dtype = SafeTensorsDType::kF32) {
  SiglipVisionWeights weights = random_weights(c, seed);
  save_model(directory, config_json(c), weights, dtype);
  return weights;
}

}  // namespace tessera::models::siglip::testing
