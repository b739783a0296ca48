// config.json as Hugging Face writes it: defaults, both config classes, and
// every defect a clear error naming the key.
#include "models/siglip/config.hpp"

#include <gtest/gtest.h>

#include "support/error.hpp"

namespace tessera::models::siglip {
namespace {

std::string error_of(std::string_view json) {
  try {
    (void)parse_siglip_config(json);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

// The defaults of transformers' SiglipVisionConfig (configuration_siglip.py).
TEST(SiglipConfig, AbsentKeysTakeTransformersDefaults) {
  const SiglipVisionConfig c = parse_siglip_config("{}");
  EXPECT_EQ(c.hidden_size, 768u);
  EXPECT_EQ(c.intermediate_size, 3072u);
  EXPECT_EQ(c.num_hidden_layers, 12u);
  EXPECT_EQ(c.num_attention_heads, 12u);
  EXPECT_EQ(c.num_channels, 3u);
  EXPECT_EQ(c.image_size, 224u);
  EXPECT_EQ(c.patch_size, 16u);
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(c.layer_norm_eps, 1e-6);
  EXPECT_EQ(c.attention_dropout, 0.0);
  EXPECT_TRUE(c.vision_use_head);
  EXPECT_EQ(c.num_patches(), 196u);
  // A SiglipConfig without vision_config has the default tower too.
  EXPECT_EQ(parse_siglip_config(R"({"model_type": "siglip"})"), c);
}

// google/siglip-so400m-patch14-384's config.json (abridged: the text tower's
// keys are ignored).
TEST(SiglipConfig, ReadsTheVisionConfigOfAFullSiglipConfig) {
  const SiglipVisionConfig c = parse_siglip_config(R"({
    "architectures": ["SiglipModel"], "model_type": "siglip", "initializer_factor": 1.0,
    "text_config": {"hidden_size": 1152, "intermediate_size": 4304, "model_type": "siglip_text_model",
                    "num_attention_heads": 16, "num_hidden_layers": 27, "hidden_act": "quick_gelu"},
    "torch_dtype": "float32", "transformers_version": "4.37.0.dev0",
    "vision_config": {"hidden_size": 1152, "image_size": 384, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16,
                      "num_hidden_layers": 27, "patch_size": 14}
  })");
  EXPECT_EQ(c.hidden_size, 1152u);
  EXPECT_EQ(c.intermediate_size, 4304u);
  EXPECT_EQ(c.num_hidden_layers, 27u);
  EXPECT_EQ(c.num_attention_heads, 16u);
  EXPECT_EQ(c.head_dim(), 72u);
  EXPECT_EQ(c.image_size, 384u);
  EXPECT_EQ(c.patch_size, 14u);
  // 384 = 27·14 + 6: a valid convolution reads a 27 × 27 grid.
  EXPECT_EQ(c.patches_per_side(), 27u);
  EXPECT_EQ(c.num_patches(), 729u);
  EXPECT_EQ(c.patch_inner(), 588u);
}

TEST(SiglipConfig, ReadsASiglipVisionConfig) {
  const SiglipVisionConfig c = parse_siglip_config(R"({"model_type": "siglip_vision_model",
      "hidden_size": 144, "num_attention_heads": 2, "layer_norm_eps": 1e-5,
      "vision_use_head": false})");
  EXPECT_EQ(c.hidden_size, 144u);
  EXPECT_EQ(c.head_dim(), 72u);
  EXPECT_EQ(c.layer_norm_eps, 1e-5);
  EXPECT_FALSE(c.vision_use_head);
}

TEST(SiglipConfig, EveryDefectIsAnErrorNamingTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"hidden_act": "gelu"})", "hidden_act: 'gelu' is not supported"},
      {R"({"model_type": "siglip", "vision_config": {"hidden_act": "quick_gelu"}})",
       "vision_config: hidden_act: 'quick_gelu' is not supported"},
      {R"({"hidden_size": 770})", "num_attention_heads: 12 heads do not divide hidden_size 770"},
      {R"({"image_size": 8, "patch_size": 16})", "patch_size: 16 does not fit in image_size 8"},
      {R"({"hidden_size": "768"})",
       "hidden_size: expected an integer from 1 to 65536, got \"768\""},
      {R"({"hidden_size": 768.5})", "hidden_size: expected an integer"},
      {R"({"num_hidden_layers": -1})", "num_hidden_layers: expected an integer"},
      {R"({"num_hidden_layers": 0})", "num_hidden_layers: expected an integer from 1"},
      {R"({"model_type": "siglip", "vision_config": {"patch_size": null}})",
       "vision_config.patch_size: expected an integer"},
      {R"({"layer_norm_eps": 0})", "layer_norm_eps: expected a number above 0"},
      {R"({"vision_use_head": 1})", "vision_use_head: expected true or false"},
      {R"({"model_type": "clip"})", "model_type: 'clip' is not a SigLIP config"},
      {R"({"model_type": "siglip", "vision_config": [1]})", "vision_config: must be a JSON object"},
      {R"([1, 2])", "config: must be a JSON object"},
      {R"({"hidden_size": 768,)", "not valid JSON"},
      {R"({"hidden_size": 768, "hidden_size": 1152})", "the key 'hidden_size' appears twice"},
      {R"({"model_type": "siglip", "vision_config": {"patch_size": 14, "patch_size": 16}})",
       "the key 'patch_size' appears twice"},
  };
  for (const auto& [json, expected] : cases) {
    EXPECT_NE(error_of(json).find(expected), std::string::npos)
        << json << " gave: " << error_of(json);
  }
}

}  // namespace
}  // namespace tessera::models::siglip
