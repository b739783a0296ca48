#include "models/siglip/quantizer/quantize.hpp"

#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "models/checkpoint.hpp"
#include "models/siglip/quantizer/equalize.hpp"
#include "models/siglip/quantizer/statistics.hpp"
#include "support/atomic_file.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip::quantizer {
namespace {

using nlohmann::json;
namespace f143 = kernels::f143;

// quantization.json is small (so400m: about 100 k scales); anything much
// larger is not one.
constexpr std::uintmax_t kMaxQuantizationBytes = 64u << 20;

std::string layer_prefix(std::size_t layer) {
  return fmt::format("{}encoder.layers.{}.", kPrefix, layer);
}

void check_finite(const std::string& name, const FloatTensor& tensor) {
  for (std::size_t i = 0; i < tensor.values.size(); ++i) {
    if (!std::isfinite(tensor.values[i])) {
      throw InputError(name, fmt::format("element {} is {}: only finite weights can be quantized",
                                         i, tensor.values[i]));
    }
  }
}

void quantize_one(const std::string& name, Linear& linear, const InputStatistics* statistics,
                  const QuantizeOptions& options, QuantizationRecord& record) {
  check_finite(name + ".weight", linear.weight);
  const auto out = static_cast<std::uint32_t>(linear.weight.shape[0]);
  const auto in = static_cast<std::uint32_t>(linear.weight.shape[1]);
  QuantizedLinear q = with_context(name + ".weight", [&] {
    return quantize_linear(linear.weight.values, out, in, options.algorithm, statistics,
                           options.damp);
  });
  if (statistics != nullptr && options.bias_correction) {
    for (std::uint32_t o = 0; o < out; ++o) {
      double shift = 0.0;
      for (std::uint32_t i = 0; i < in; ++i) {
        const std::size_t at = std::size_t{o} * in + i;
        shift += (double{linear.weight.values[at]} - double{q.weight[at]}) * statistics->mean(i);
      }
      linear.bias.values[o] = static_cast<float>(double{linear.bias.values[o]} + shift);
    }
  }
  linear.weight.values = std::move(q.weight);
  std::optional<int> activation_scale;
  if (statistics != nullptr && statistics->tokens > 0) {
    const float largest = statistics->largest();
    activation_scale = f143::choose_scale(std::span<const float>(&largest, 1));
  }
  record.tensors[name + ".weight"] = {linear.weight.shape, std::move(q.scales), activation_scale,
                                      q.error_nearest, q.error, q.cholesky_fallbacks};
}

void equalize_one(const std::string& norm_name, LayerNorm& norm, std::vector<Linear*> consumers,
                  InputStatistics& input, QuantizationRecord& record) {
  const std::vector<const Linear*> view(consumers.begin(), consumers.end());
  const Equalization choice = choose_equalization(view, input);
  apply_equalization(choice.factors, norm, consumers, input);
  record.equalization[norm_name] = {choice.alpha, choice.objective, choice.identity_objective};
}

json tensor_json(const QuantizedTensor& t) {
  return {{"shape", t.shape},
          {"block_scales", std::vector<int>(t.scales.scales().begin(), t.scales.scales().end())},
          {"error_nearest", t.error_nearest},
          {"error", t.error},
          {"cholesky_fallbacks", t.cholesky_fallbacks},
          {"activation_scale", t.activation_scale ? json(*t.activation_scale) : json(nullptr)}};
}

// A required member of `object`, or InputError naming it.
const json& member(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) {
    throw InputError(key, "is missing");
  }
  return object[key];
}

// An F143 scale, range-checked as a 64-bit value: a narrowing get<int>()
// would take 2^32 + 5 for 5.
int parse_scale(const json& scale, const char* field) {
  const bool in_range =
      scale.is_number_unsigned()
          ? scale.get<std::uint64_t>() <= std::uint64_t{f143::kMaxScale}
          : scale.is_number_integer() && scale.get<std::int64_t>() >= f143::kMinScale &&
                scale.get<std::int64_t>() <= f143::kMaxScale;
  if (!in_range) {
    throw InputError(field, fmt::format("{} is not an F143 scale (an integer in [{}, {}])",
                                        scale.dump(), f143::kMinScale, f143::kMaxScale));
  }
  return static_cast<int>(scale.get<std::int64_t>());
}

}  // namespace

std::string quantized_weight_name(std::size_t layer, std::string_view module) {
  return fmt::format("{}{}.weight", layer_prefix(layer), module);
}

std::vector<std::string> quantized_weight_names(const SiglipVisionConfig& config) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < config.num_hidden_layers; ++i) {
    for (const std::string_view module : kQuantizedModules)
      names.push_back(quantized_weight_name(i, module));
  }
  return names;
}

QuantizationRecord quantize(SiglipVisionWeights& weights,
                            const std::optional<Calibration>& calibration,
                            const QuantizeOptions& options, const Progress& progress) {
  if (!calibration && options.algorithm == Algorithm::kGptq) {
    throw UsageError("--algorithm gptq needs calibration inputs (--calibration PIXELS.npy)");
  }
  if (!calibration && options.equalize_layernorm) {
    throw UsageError("--equalize-layernorm needs calibration inputs (--calibration PIXELS.npy)");
  }
  if (!calibration && options.sequential_layers) {
    throw UsageError("--sequential-layers needs calibration inputs (--calibration PIXELS.npy)");
  }
  if (!(options.damp >= 0.0) || !std::isfinite(options.damp)) {
    throw UsageError(fmt::format("the damping {} is not a finite non-negative number", options.damp));
  }
  QuantizationRecord record;
  record.algorithm = options.algorithm;
  record.damp = options.damp;
  record.equalize_layernorm = options.equalize_layernorm;
  record.sequential_layers = options.sequential_layers;
  record.bias_correction = calibration.has_value() && options.bias_correction;

  std::optional<CalibrationStatistics> statistics;
  std::optional<LayerByLayerCalibration> layer_by_layer;
  if (calibration && options.sequential_layers) {
    if (progress) progress(fmt::format("embedding {} calibration images", calibration->images));
    layer_by_layer.emplace(weights, calibration->pixels, calibration->images,
                           options.calibration_chunk);
    statistics.emplace();
    statistics->images = calibration->images;
    statistics->layers.resize(weights.layers.size());
  } else if (calibration) {
    statistics = collect_statistics(weights, calibration->pixels, calibration->images,
                                    options.calibration_chunk, progress);
  }
  if (calibration) record.calibration_images = calibration->images;
  for (std::size_t i = 0; i < weights.layers.size(); ++i) {
    if (progress) {
      progress(fmt::format("quantizing encoder layer {}/{} ({})", i + 1, weights.layers.size(),
                           algorithm_name(options.algorithm)));
    }
    SiglipEncoderLayer& layer = weights.layers[i];
    if (layer_by_layer) statistics->layers[i] = layer_by_layer->statistics(weights, i);
    LayerStatistics* s = statistics ? &statistics->layers[i] : nullptr;
    if (s != nullptr) record.calibration_tokens = s->qkv.tokens;
    const std::string p = layer_prefix(i);
    if (options.equalize_layernorm) {
      equalize_one(p + "layer_norm1", layer.layer_norm1,
                   {&layer.self_attn.q_proj, &layer.self_attn.k_proj, &layer.self_attn.v_proj},
                   s->qkv, record);
      equalize_one(p + "layer_norm2", layer.layer_norm2, {&layer.mlp.fc1}, s->fc1, record);
    }
    quantize_one(p + "self_attn.q_proj", layer.self_attn.q_proj, s ? &s->qkv : nullptr, options, record);
    quantize_one(p + "self_attn.k_proj", layer.self_attn.k_proj, s ? &s->qkv : nullptr, options, record);
    quantize_one(p + "self_attn.v_proj", layer.self_attn.v_proj, s ? &s->qkv : nullptr, options, record);
    quantize_one(p + "self_attn.out_proj", layer.self_attn.out_proj, s ? &s->out_proj : nullptr,
                 options, record);
    quantize_one(p + "mlp.fc1", layer.mlp.fc1, s ? &s->fc1 : nullptr, options, record);
    quantize_one(p + "mlp.fc2", layer.mlp.fc2, s ? &s->fc2 : nullptr, options, record);
    if (layer_by_layer) {
      layer_by_layer->advance(weights, i);  // through the layer as now quantized
      statistics->layers[i] = {};           // no longer needed
    }
  }
  return record;
}

std::string quantization_json(const QuantizationRecord& record) {
  json root = {{"format", kQuantizationFormat},
               {"version", kQuantizationVersion},
               {"codec", "f143"},
               {"block", {{"k", f143::kBlockRows}, {"n", f143::kBlockColumns}}},
               {"algorithm", algorithm_name(record.algorithm)},
               {"damp", record.damp},
               {"bias_correction", record.bias_correction},
               {"equalize_layernorm", record.equalize_layernorm},
               {"sequential_layers", record.sequential_layers}};
  root["calibration"] = record.calibration_images
                            ? json{{"images", *record.calibration_images},
                                   {"tokens", record.calibration_tokens}}
                            : json(nullptr);
  json equalization = json::object();
  for (const auto& [name, e] : record.equalization) {
    equalization[name] = {{"alpha", e.alpha ? json(*e.alpha) : json(nullptr)},
                          {"objective", e.objective},
                          {"identity_objective", e.identity_objective}};
  }
  root["equalization"] = std::move(equalization);
  json tensors = json::object();
  for (const auto& [name, t] : record.tensors) tensors[name] = tensor_json(t);
  root["tensors"] = std::move(tensors);
  return root.dump(1) + "\n";
}

void save_quantized_model(const std::filesystem::path& directory, std::string_view config_json,
                          const SiglipVisionWeights& weights, const QuantizationRecord& record) {
  save_model(directory, config_json, weights, SafeTensorsDType::kF32,
             {{"tessera.quantization", "f143"}});
  const std::string text = quantization_json(record);
  write_file_atomically(directory / kQuantizationFile,
                        {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

namespace {

// DIRECTORY/quantization.json parsed, with its format, version, codec and
// block checked and its tensors an object; nullopt when there is none. The
// caller reads it inside with_context(the path) too.
std::optional<json> read_record(const std::filesystem::path& path) {
  if (!path_exists(path)) return std::nullopt;
  const std::string text = read_text_file(path, kMaxQuantizationBytes);
  return with_context(path.string(), [&] {
    json root;
    try {
      root = json::parse(text);
    } catch (const json::exception& error) {
      throw InputError(fmt::format("is not valid JSON: {}", error.what()));
    }
    if (!root.is_object()) throw InputError("is not a JSON object");
    const json& format = member(root, "format");
    if (format != kQuantizationFormat) {
      throw InputError("format", fmt::format("is {}, expected \"{}\"", format.dump(), kQuantizationFormat));
    }
    if (member(root, "version") != kQuantizationVersion) {
      throw InputError("version", fmt::format("is {}, only {} is known", root["version"].dump(),
                                              kQuantizationVersion));
    }
    if (member(root, "codec") != "f143") {
      throw InputError("codec", fmt::format("is {}, only \"f143\" is known", root["codec"].dump()));
    }
    const json& block = member(root, "block");
    if (block != json{{"k", f143::kBlockRows}, {"n", f143::kBlockColumns}}) {
      throw InputError("block", fmt::format("is {}: the F143 grid is 64 x 64 ({{\"k\": 64, \"n\": 64}})",
                                            block.dump()));
    }
    if (!member(root, "tensors").is_object()) throw InputError("tensors", "must be an object");
    return root;
  });
}

// A tensor entry's name must be a weight the quantizer rewrites.
void require_quantized(const std::set<std::string>& allowed, const std::string& name) {
  if (!allowed.contains(name)) {
    throw InputError(
        "is not a weight the quantizer rewrites (the q, k, v, out, fc1 and fc2 "
        "weights of the encoder layers)");
  }
}

// An entry's activation_scale: nullopt when absent or null.
std::optional<int> activation_scale_of(const json& entry) {
  if (!entry.is_object() || !entry.contains("activation_scale") ||
      entry["activation_scale"].is_null()) {
    return std::nullopt;
  }
  return parse_scale(entry["activation_scale"], "activation_scale");
}

// The quantizer records every weight it rewrites; one without a record
// would be packed at scales of the compiler's choosing, not the grid the
// checkpoint's values were put on.
void require_every_weight(const std::vector<std::string>& names, const json& tensors) {
  for (const std::string& name : names) {
    if (!tensors.contains(name)) {
      throw InputError("tensors." + name,
                       "is missing: the checkpoint has this weight, and the quantizer records "
                       "the block scales of every weight it rewrites");
    }
  }
}

}  // namespace

std::optional<std::map<std::string, F143Weight>> read_quantization(
    const std::filesystem::path& directory, const SiglipVisionWeights& weights) {
  const auto path = directory / kQuantizationFile;
  const std::optional<json> record = read_record(path);
  if (!record) return std::nullopt;
  return with_context(path.string(), [&] {
    const json& tensors = (*record)["tensors"];
    std::map<std::string, const FloatTensor*> quantizable;
    for_each_tensor(weights, [&](const std::string& name, const FloatTensor& tensor) {
      quantizable.emplace(name, &tensor);
    });
    const auto names = quantized_weight_names(weights.config);
    const std::set<std::string> allowed(names.begin(), names.end());

    std::map<std::string, F143Weight> result;
    for (const auto& [name, entry] : tensors.items()) {
      with_context("tensors." + name, [&] {
        require_quantized(allowed, name);
        const FloatTensor& tensor = *quantizable.at(name);
        const json& shape = member(entry, "shape");
        if (!shape.is_array() || shape != json(tensor.shape)) {
          throw InputError("shape", fmt::format("is {}, but the model's tensor is [{}]", shape.dump(),
                                                fmt::join(tensor.shape, ", ")));
        }
        const auto out = static_cast<std::uint32_t>(tensor.shape[0]);
        const auto in = static_cast<std::uint32_t>(tensor.shape[1]);
        const json& scales_json = member(entry, "block_scales");
        if (!scales_json.is_array())
          throw InputError("block_scales", "must be an array of integers");
        const std::optional<int> activation_scale = activation_scale_of(entry);
        std::vector<std::int8_t> scales;
        for (const json& scale : scales_json) {
          scales.push_back(static_cast<std::int8_t>(parse_scale(scale, "block_scales")));
        }
        const std::size_t blocks = std::size_t{(in + f143::kBlockRows - 1) / f143::kBlockRows} *
                                   ((out + f143::kBlockColumns - 1) / f143::kBlockColumns);
        if (scales.size() != blocks) {
          throw InputError("block_scales", fmt::format("has {} scales, the [{}, {}] weight has {} "
                                                       "64 x 64 blocks",
                                                       scales.size(), out, in, blocks));
        }
        F143Weight weight{f143::BlockScales(in, out, std::move(scales)), {}, activation_scale};
        std::vector<float> transposed(tensor.values.size());
        for (std::size_t o = 0; o < out; ++o) {
          for (std::size_t i = 0; i < in; ++i) transposed[i * out + o] = tensor.values[o * in + i];
        }
        weight.codes = f143::encode(transposed, weight.scales);
        const std::vector<float> decoded = f143::decode(weight.codes, weight.scales);
        for (std::size_t k = 0; k < decoded.size(); ++k) {
          if (!(decoded[k] == transposed[k])) {  // NaN included
            const std::size_t i = k / out, o = k % out;
            throw InputError(fmt::format(
                "element [{}, {}] = {} is not on the F143 grid at its block's scale {} (it "
                "encodes to {}): the weight was changed after quantizing, or the scales do not "
                "belong to it",
                o, i, transposed[k], weight.scales.scale_at(static_cast<std::uint32_t>(i),
                                                             static_cast<std::uint32_t>(o)),
                decoded[k]));
          }
        }
        result.emplace(name, std::move(weight));
      });
    }
    require_every_weight(names, tensors);
    return result;
  });
}

std::optional<std::map<std::string, std::optional<int>>> read_activation_scales(
    const std::filesystem::path& directory, const SiglipVisionConfig& config) {
  const auto path = directory / kQuantizationFile;
  const std::optional<json> record = read_record(path);
  if (!record) return std::nullopt;
  return with_context(path.string(), [&] {
    const json& tensors = (*record)["tensors"];
    const auto names = quantized_weight_names(config);
    const std::set<std::string> allowed(names.begin(), names.end());
    std::map<std::string, std::optional<int>> result;
    for (const auto& [name, entry] : tensors.items()) {
      with_context("tensors." + name, [&] {
        require_quantized(allowed, name);
        result.emplace(name, activation_scale_of(entry));
      });
    }
    require_every_weight(names, tensors);
    return result;
  });
}

}  // namespace tessera::models::siglip::quantizer
