#include "models/siglip/weights.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/atomic_file.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip {
namespace {

std::size_t element_count(std::span<const std::uint64_t> shape) {
  std::uint64_t count = 1;
  for (const auto dimension : shape) count = checked_mul(count, dimension, "tensor size");
  return checked_cast<std::size_t>(count, "tensor size");
}

// Shapes the weights; with `allocate`, also their zero-filled values.
class Shaper {
 public:
  explicit Shaper(bool allocate) : allocate_(allocate) {}
  FloatTensor operator()(std::vector<std::uint64_t> shape) const {
    FloatTensor tensor;
    if (allocate_) tensor.values.assign(element_count(shape), 0.0F);
    tensor.shape = std::move(shape);
    return tensor;
  }
  Linear linear(std::uint64_t out, std::uint64_t in) const {
    return {(*this)({out, in}), (*this)({out})};
  }
  LayerNorm layer_norm(std::uint64_t width) const { return {(*this)({width}), (*this)({width})}; }

 private:
  bool allocate_;
};

template <typename Weights, typename Visit>
void walk(Weights& w, Visit&& visit) {
  const std::string v(kPrefix);
  const auto linear_at = [&](const std::string& name, auto& l) {
    visit(name + ".weight", l.weight);
    visit(name + ".bias", l.bias);
  };
  visit(v + "embeddings.patch_embedding.weight", w.embeddings.patch_embedding.weight);
  visit(v + "embeddings.patch_embedding.bias", w.embeddings.patch_embedding.bias);
  visit(v + "embeddings.position_embedding.weight", w.embeddings.position_embedding.weight);
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    auto& layer = w.layers[i];
    const std::string p = fmt::format("{}encoder.layers.{}.", v, i);
    linear_at(p + "layer_norm1", layer.layer_norm1);
    linear_at(p + "self_attn.k_proj", layer.self_attn.k_proj);
    linear_at(p + "self_attn.v_proj", layer.self_attn.v_proj);
    linear_at(p + "self_attn.q_proj", layer.self_attn.q_proj);
    linear_at(p + "self_attn.out_proj", layer.self_attn.out_proj);
    linear_at(p + "layer_norm2", layer.layer_norm2);
    linear_at(p + "mlp.fc1", layer.mlp.fc1);
    linear_at(p + "mlp.fc2", layer.mlp.fc2);
  }
  linear_at(v + "post_layernorm", w.post_layernorm);
  if (w.head) {
    auto& head = *w.head;
    const std::string p = v + "head.";
    visit(p + "probe", head.probe);
    visit(p + "attention.in_proj_weight", head.attention.in_proj_weight);
    visit(p + "attention.in_proj_bias", head.attention.in_proj_bias);
    linear_at(p + "attention.out_proj", head.attention.out_proj);
    linear_at(p + "layernorm", head.layernorm);
    linear_at(p + "mlp.fc1", head.mlp.fc1);
    linear_at(p + "mlp.fc2", head.mlp.fc2);
  }
}

std::string shape_text(std::span<const std::uint64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

SiglipVisionWeights make_weights(const SiglipVisionConfig& config, bool allocate) {
  (void)parameter_count(config);  // validates the config and bounds what follows
  const Shaper zeros(allocate);
  const std::uint64_t h = config.hidden_size, i = config.intermediate_size;
  SiglipVisionWeights w;
  w.config = config;
  w.embeddings.patch_embedding = {
      zeros({h, config.num_channels, config.patch_size, config.patch_size}), zeros({h})};
  w.embeddings.position_embedding = {zeros({config.num_patches(), h})};
  w.layers.resize(config.num_hidden_layers);
  for (auto& layer : w.layers) {
    layer.layer_norm1 = zeros.layer_norm(h);
    layer.self_attn = {zeros.linear(h, h), zeros.linear(h, h), zeros.linear(h, h),
                       zeros.linear(h, h)};
    layer.layer_norm2 = zeros.layer_norm(h);
    layer.mlp = {zeros.linear(i, h), zeros.linear(h, i)};
  }
  w.post_layernorm = zeros.layer_norm(h);
  if (config.vision_use_head) {
    w.head.emplace();
    w.head->probe = zeros({1, 1, h});
    w.head->attention = {zeros({3 * h, h}), zeros({3 * h}), zeros.linear(h, h)};
    w.head->layernorm = zeros.layer_norm(h);
    w.head->mlp = {zeros.linear(i, h), zeros.linear(h, i)};
  }
  return w;
}

void for_each_tensor(SiglipVisionWeights& weights,
                     const std::function<void(const std::string&, FloatTensor&)>& visit) {
  walk(weights, visit);
}

void for_each_tensor(const SiglipVisionWeights& weights,
                     const std::function<void(const std::string&, const FloatTensor&)>& visit) {
  walk(weights, visit);
}

std::uint64_t parameter_count(const SiglipVisionConfig& config) {
  validate(config);
  const std::uint64_t h = config.hidden_size, i = config.intermediate_size;
  const auto add = [](std::uint64_t a, std::uint64_t b) { return checked_add(a, b, "parameters"); };
  const auto mul = [](std::uint64_t a, std::uint64_t b) { return checked_mul(a, b, "parameters"); };
  const std::uint64_t linear_hh = add(mul(h, h), h);
  const std::uint64_t mlp = add(add(mul(i, h), i), add(mul(h, i), h));
  const std::uint64_t layer = add(add(mul(4, linear_hh), mul(4, h)), mlp);
  std::uint64_t total = add(mul(h, config.patch_inner()), h);
  total = add(total, mul(config.num_patches(), h));
  total = add(total, mul(config.num_hidden_layers, layer));
  total = add(total, mul(2, h));
  if (config.vision_use_head) {
    total = add(total, h);                          // probe
    total = add(total, add(mul(3 * h, h), 3 * h));  // in_proj
    total = add(total, add(linear_hh, mul(2, h)));  // out_proj, layernorm
    total = add(total, mlp);
  }
  if (total > kMaxParameters) {
    throw InputError("config", fmt::format("asks for {} parameters, more than the {} Tessera loads",
                                           total, kMaxParameters));
  }
  return total;
}

SiglipVisionWeights load_weights(const SiglipVisionConfig& config, const Checkpoint& checkpoint) {
  // Shapes only: nothing is allocated for a checkpoint that does not fit.
  SiglipVisionWeights weights = make_weights(config, /*allocate=*/false);

  // Everything is checked before any tensor byte is read.
  std::string first_problem;
  std::size_t problems = 0;
  for_each_tensor(weights, [&](const std::string& name, FloatTensor& tensor) {
    const Checkpoint::Tensor found = checkpoint.find(name);
    std::string problem;
    if (found.info == nullptr) {
      problem = fmt::format("{}: missing from the checkpoint (expected {} {})", name, "shape",
                            shape_text(tensor.shape));
    } else if (found.info->shape != tensor.shape) {
      problem = fmt::format("{}: shape {}, expected {}", name, shape_text(found.info->shape),
                            shape_text(tensor.shape));
    } else if (!is_float_dtype(found.info->dtype)) {
      problem = fmt::format("{}: dtype {}, expected F32, F16 or BF16", name,
                            dtype_name(found.info->dtype));
    }
    if (problem.empty()) return;
    if (problems++ == 0) first_problem = std::move(problem);
  });
  if (problems > 1) {
    first_problem += fmt::format(" (and {} more tensor{} missing or misshapen)", problems - 1,
                                 problems == 2 ? "" : "s");
  }
  if (problems > 0) throw InputError(first_problem);

  for_each_tensor(weights, [&](const std::string& name, FloatTensor& tensor) {
    const Checkpoint::Tensor found = checkpoint.find(name);
    tensor.values.resize(element_count(tensor.shape));
    convert_to_f32(found.info->dtype, found.file->read(*found.info), tensor.values);
  });
  return weights;
}

SiglipModel load_model(const std::filesystem::path& directory) {
  SiglipModel model;
  const auto config_path = directory / "config.json";
  model.config_json = read_text_file(config_path, kMaxConfigBytes);  // its errors name the file
  const SiglipVisionConfig config =
      with_context(config_path.string(), [&] { return parse_siglip_config(model.config_json); });
  const Checkpoint checkpoint = Checkpoint::open(directory);
  model.weights =
      with_context(directory.string(), [&] { return load_weights(config, checkpoint); });
  model.dtype =
      checkpoint.find(std::string(kPrefix) + "embeddings.patch_embedding.weight").info->dtype;
  return model;
}

void save_model(const std::filesystem::path& directory, std::string_view config_json,
                const SiglipVisionWeights& weights, SafeTensorsDType dtype,
                const std::map<std::string, std::string>& metadata) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    throw IoError(
        fmt::format("{}: cannot create the directory: {}", directory.string(), error.message()));
  }
  // F32 is written straight from the values; other dtypes through a copy.
  std::vector<std::vector<std::uint8_t>> converted;
  std::vector<SafeTensorsEntry> entries;
  for_each_tensor(weights, [&](const std::string& name, const FloatTensor& tensor) {
    std::span<const std::uint8_t> bytes{reinterpret_cast<const std::uint8_t*>(tensor.values.data()),
                                        tensor.values.size() * sizeof(float)};
    if (dtype != SafeTensorsDType::kF32) {
      converted.push_back(convert_from_f32(dtype, tensor.values));
      bytes = converted.back();
    }
    entries.push_back({name, dtype, tensor.shape, bytes});
  });
  std::map<std::string, std::string> file_metadata = metadata;
  file_metadata.emplace("format", "pt");  // what transformers' save_pretrained records
  write_safetensors(directory / kSafeTensorsFile, entries, file_metadata);
  write_file_atomically(
      directory / "config.json",
      {reinterpret_cast<const std::uint8_t*>(config_json.data()), config_json.size()});
}

}  // namespace tessera::models::siglip
