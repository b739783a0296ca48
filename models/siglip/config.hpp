#pragma once
// The SigLIP vision tower's configuration, read from `config.json` as Hugging
// Face writes it: a full SiglipConfig (model_type "siglip"; its
// "vision_config" is used, the text tower ignored) or a SiglipVisionConfig
// (model_type "siglip_vision_model", or none). Absent keys take the defaults
// of transformers' SiglipVisionConfig (configuration_siglip.py); other keys
// (architectures, torch_dtype, projection_dim, ...) are ignored.
//
// What is refused, with the key's path in the message: a value of the wrong
// type or out of range, an activation other than gelu_pytorch_tanh, a hidden
// size the heads do not divide, a patch larger than the image. An image size
// that is not a multiple of the patch is accepted, as the model's valid
// Conv2d accepts it: so400m has 384 = 27·14 + 6, and the last 6 rows and
// columns of pixels are never read.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace tessera::models::siglip {

struct SiglipVisionConfig {
  std::uint32_t hidden_size = 768;
  std::uint32_t intermediate_size = 3072;
  std::uint32_t num_hidden_layers = 12;
  std::uint32_t num_attention_heads = 12;
  std::uint32_t num_channels = 3;
  std::uint32_t image_size = 224;
  std::uint32_t patch_size = 16;
  std::string hidden_act = "gelu_pytorch_tanh";
  double layer_norm_eps = 1e-6;
  double attention_dropout = 0.0;  // training only: inference ignores it
  // transformers' SiglipVisionTransformer builds the pooling head unless the
  // config says "vision_use_head": false (PaliGemma's towers do).
  bool vision_use_head = true;

  std::uint32_t head_dim() const noexcept { return hidden_size / num_attention_heads; }
  std::uint32_t patches_per_side() const noexcept { return image_size / patch_size; }
  // T, the sequence length.
  std::uint32_t num_patches() const noexcept { return patches_per_side() * patches_per_side(); }
  // C·P·P, the patch embedding's inner dimension.
  std::uint64_t patch_inner() const noexcept {
    return std::uint64_t{num_channels} * patch_size * patch_size;
  }

  bool operator==(const SiglipVisionConfig&) const = default;
};

// The only activation SigLIP's vision tower uses, and the only one Tessera
// computes (the tanh approximation of GeLU).
inline constexpr std::string_view kGeluTanh = "gelu_pytorch_tanh";

// Bounds on each size, far above any SigLIP, so that a hostile config cannot
// ask random-weights or the loader for absurd allocations.
inline constexpr std::uint32_t kMaxWidth = 65536;  // hidden and intermediate sizes
inline constexpr std::uint32_t kMaxLayers = 1024;
inline constexpr std::uint32_t kMaxImageSize = 8192;
inline constexpr std::uint32_t kMaxChannels = 64;
// A config.json is a few kilobytes; a larger file is not one.
inline constexpr std::uintmax_t kMaxConfigBytes = 16u << 20;
// HF configs nest a few levels (vision_config, task_specific_params, label maps).
inline constexpr int kMaxConfigDepth = 16;

// Parses config.json text; InputError with the key path ("vision_config.
// hidden_size: ...") on any defect.
SiglipVisionConfig parse_siglip_config(std::string_view json_text);
// Reads and parses a config.json; errors carry the path as context.
SiglipVisionConfig read_siglip_config(const std::filesystem::path& path);

// Checks the config's own invariants (also run by parse_siglip_config), for a
// config built in code.
void validate(const SiglipVisionConfig& config);

// "hidden 1152, intermediate 4304, 27 layers, 16 heads (head dim 72), patch
// 14, image 384 (729 patches)".
std::string describe(const SiglipVisionConfig& config);

}  // namespace tessera::models::siglip
