#pragma once
// The SigLIP vision tower's weights, as the tree of modeling_siglip.py holds
// them, with the checkpoint's own names (STYLE.md, "Models mirror their
// checkpoint"):
//
//   vision_model.embeddings.patch_embedding.{weight [H, C, P, P], bias [H]}
//   vision_model.embeddings.position_embedding.weight [T, H]
//   vision_model.encoder.layers.{i}.layer_norm1.{weight, bias} [H]
//   vision_model.encoder.layers.{i}.self_attn.{q,k,v,out}_proj.{weight [H, H], bias [H]}
//   vision_model.encoder.layers.{i}.layer_norm2.{weight, bias} [H]
//   vision_model.encoder.layers.{i}.mlp.fc1.{weight [I, H], bias [I]}
//   vision_model.encoder.layers.{i}.mlp.fc2.{weight [H, I], bias [H]}
//   vision_model.post_layernorm.{weight, bias} [H]
//   vision_model.head.probe [1, 1, H]
//   vision_model.head.attention.{in_proj_weight [3H, H], in_proj_bias [3H]}
//   vision_model.head.attention.out_proj.{weight [H, H], bias [H]}
//   vision_model.head.layernorm.{weight, bias} [H]
//   vision_model.head.mlp.fc1.{weight [I, H], bias [I]}, fc2.{weight [H, I], bias [H]}
//
// Linear weights are [out, in], row-major, as torch stores them. Values are
// f32 whatever the checkpoint's dtype (F32, F16 and BF16 widen exactly).
// for_each_tensor is the one owner of the names and shapes: the loader,
// the writer, random-weights and the quantizer all walk it.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/checkpoint.hpp"
#include "models/safetensors.hpp"
#include "models/siglip/config.hpp"

namespace tessera::models::siglip {

struct FloatTensor {
  std::vector<std::uint64_t> shape;
  std::vector<float> values;  // product(shape) of them, row-major
};

struct Linear {
  FloatTensor weight;  // [out, in]
  FloatTensor bias;    // [out]
};

struct LayerNorm {
  FloatTensor weight;
  FloatTensor bias;
};

struct Conv2d {
  FloatTensor weight;  // [H, C, P, P]
  FloatTensor bias;
};

struct Embedding {
  FloatTensor weight;  // [T, H]
};

struct SiglipVisionEmbeddings {
  Conv2d patch_embedding;
  Embedding position_embedding;
};

struct SiglipAttention {
  Linear q_proj, k_proj, v_proj, out_proj;
};

struct SiglipMLP {
  Linear fc1, fc2;
};

struct SiglipEncoderLayer {
  LayerNorm layer_norm1;
  SiglipAttention self_attn;
  LayerNorm layer_norm2;
  SiglipMLP mlp;
};

// torch.nn.MultiheadAttention: q, k and v stacked in one [3H, H] projection.
struct MultiheadAttention {
  FloatTensor in_proj_weight;  // [3H, H]
  FloatTensor in_proj_bias;    // [3H]
  Linear out_proj;
};

struct SiglipMultiheadAttentionPoolingHead {
  FloatTensor probe;  // [1, 1, H]
  MultiheadAttention attention;
  LayerNorm layernorm;
  SiglipMLP mlp;
};

struct SiglipVisionWeights {
  SiglipVisionConfig config;
  SiglipVisionEmbeddings embeddings;
  std::vector<SiglipEncoderLayer> layers;  // encoder.layers
  LayerNorm post_layernorm;
  std::optional<SiglipMultiheadAttentionPoolingHead> head;  // absent when !vision_use_head
};

inline constexpr std::string_view kPrefix = "vision_model.";

// Weights with every tensor shaped for the config and zero-filled (or, with
// allocate false, shaped but without values: for checking a checkpoint
// before any memory is committed to it).
SiglipVisionWeights make_weights(const SiglipVisionConfig& config, bool allocate = true);

// Calls visit(name, tensor) for every tensor of the tower, in the order of
// modeling_siglip.py's module tree; the tensor's shape is the one the config
// asks for.
void for_each_tensor(SiglipVisionWeights& weights,
                     const std::function<void(const std::string& name, FloatTensor&)>& visit);
void for_each_tensor(const SiglipVisionWeights& weights,
                     const std::function<void(const std::string& name, const FloatTensor&)>& visit);

// Far above so400m's 428 M: a config asking for more is refused before any
// memory is committed to it.
inline constexpr std::uint64_t kMaxParameters = std::uint64_t{1} << 34;

// The number of parameters of the tower; InputError above kMaxParameters.
std::uint64_t parameter_count(const SiglipVisionConfig& config);

// Loads the vision tower of a checkpoint. First checks, for every tensor the
// config asks for, that the checkpoint has it with that shape and a float
// dtype (F32, F16, BF16) — before any tensor byte is read; the first problem,
// in module order, is one InputError naming the tensor (and how many more
// problems there are). text_model.* and any other tensors are ignored.
SiglipVisionWeights load_weights(const SiglipVisionConfig& config, const Checkpoint& checkpoint);

// DIRECTORY/config.json and the checkpoint in DIRECTORY.
struct SiglipModel {
  std::string config_json;  // the file's text, as written (copied into derived models)
  SiglipVisionWeights weights;
  SafeTensorsDType dtype = SafeTensorsDType::kF32;  // the patch embedding's, for messages
};
SiglipModel load_model(const std::filesystem::path& directory);

// Writes DIRECTORY/config.json (`config_json` as is) and
// DIRECTORY/model.safetensors (every tensor, in `dtype`), creating DIRECTORY
// if needed. Both files are written atomically.
void save_model(const std::filesystem::path& directory, std::string_view config_json,
                const SiglipVisionWeights& weights, SafeTensorsDType dtype,
                const std::map<std::string, std::string>& metadata = {});

}  // namespace tessera::models::siglip
