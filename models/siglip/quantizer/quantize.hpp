#pragma once
// `tessera siglip quantize`: the q, k, v, out, fc1 and fc2 weights of every
// encoder layer onto the F143 grid (one scale per 64 × 64 block of the
// GEMM's [K, N] weight, review #19), the rest of the tower unchanged (the
// compiled model keeps it f16: the biases, LayerNorms, the patch embedding
// and the pooling head — exactly the weights the f143 and f8 graphs leave
// f16, graph.cpp's f143_encoded). Per layer, in order:
//   1. with equalize_layernorm, LayerNorm equalization (equalize.hpp) of
//      norm1 → q, k, v and norm2 → fc1;
//   2. each weight's block scales chosen from it, then nearest or GPTQ
//      (gptq.hpp) at those scales;
//   3. with calibration and bias_correction, bias += (W − Ŵ) · mean(x), in
//      double, so the layer's mean output over the calibration set is kept.
// Statistics come from the FP32 model in one pass, or with sequential_layers
// layer by layer from the partly quantized model. GPTQ, equalization and
// sequential_layers need calibration inputs.
//
// The result is an HF-layout directory: config.json (as the source had it),
// model.safetensors (F32, the quantized weights exactly on the grid) and
// quantization.json, which records for each quantized tensor its block
// scales — so the compiler encodes it at exactly those scales, losslessly
// (read_quantization checks that it does) — and the error figures.
//
// quantization.json:
//   {"format": "tessera.siglip.quantization", "version": 1, "codec": "f143",
//    "block": {"k": 64, "n": 64}, "algorithm": "nearest" | "gptq",
//    "damp": 0.01, "bias_correction": bool, "equalize_layernorm": bool,
//    "sequential_layers": bool,
//    "calibration": null | {"images": N, "tokens": T},
//    "equalization": {"<layer_norm name>": {"alpha": null | a, "objective": x,
//                     "identity_objective": y}},
//    "tensors": {"<weight name>": {"shape": [out, in], "block_scales": [...],
//                "error_nearest": e0, "error": e, "cholesky_fallbacks": n,
//                "activation_scale": null | s}}}
// block_scales are kernels::f143::BlockScales::scales() of the [in, out]
// GEMM weight: by K block (64 input columns), then N block (64 output rows).

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/f143.hpp"
#include "models/siglip/quantizer/gptq.hpp"
#include "models/siglip/reference.hpp"
#include "models/siglip/weights.hpp"

namespace tessera::models::siglip::quantizer {

inline constexpr std::string_view kQuantizationFile = "quantization.json";
inline constexpr std::string_view kQuantizationFormat = "tessera.siglip.quantization";
inline constexpr int kQuantizationVersion = 1;

struct QuantizeOptions {
  Algorithm algorithm = Algorithm::kGptq;
  double damp = kDefaultDamp;
  bool bias_correction = true;  // when there is calibration
  bool equalize_layernorm = false;
  // Each layer's statistics from the model with the layers before it
  // already quantized (statistics.hpp, LayerByLayerCalibration), instead of
  // all from the FP32 model in one pass.
  bool sequential_layers = false;
  std::uint32_t calibration_chunk = 4;  // images per reference run
};

struct Calibration {
  std::span<const float> pixels;  // [images, C, S, S]
  std::uint32_t images = 0;
};

struct QuantizedTensor {
  std::vector<std::uint64_t> shape;  // [out, in]
  kernels::f143::BlockScales scales;
  // The F143 scale of this linear's input for the f8 precision (F143
  // activations into the native FP8 GEMM): choose_scale of the largest
  // |x| the calibration inputs gave it, so none of them saturates. Absent
  // without calibration.
  std::optional<int> activation_scale;
  double error_nearest = 0.0;
  double error = 0.0;
  std::uint32_t cholesky_fallbacks = 0;
};

struct EqualizationRecord {
  std::optional<double> alpha;
  double objective = 0.0;
  double identity_objective = 0.0;
};

struct QuantizationRecord {
  Algorithm algorithm = Algorithm::kNearest;
  double damp = kDefaultDamp;
  bool bias_correction = false;
  bool equalize_layernorm = false;
  bool sequential_layers = false;
  std::optional<std::uint32_t> calibration_images;
  std::uint64_t calibration_tokens = 0;
  std::map<std::string, EqualizationRecord> equalization;
  std::map<std::string, QuantizedTensor> tensors;
};

// The linears of an encoder layer the quantizer rewrites, in module order:
// the four attention projections and the MLP's two.
inline constexpr std::array<std::string_view, 6> kQuantizedModules = {
    "self_attn.q_proj",   "self_attn.k_proj", "self_attn.v_proj",
    "self_attn.out_proj", "mlp.fc1",          "mlp.fc2"};

// "vision_model.encoder.layers.<layer>.<module>.weight": the checkpoint name
// of one of them.
std::string quantized_weight_name(std::size_t layer, std::string_view module);

// The names of the weights the quantizer rewrites, in module order.
std::vector<std::string> quantized_weight_names(const SiglipVisionConfig& config);

// Quantizes `weights` in place and returns what was done. UsageError when
// GPTQ or equalization is asked for without calibration; InputError naming
// the tensor for a non-finite weight.
QuantizationRecord quantize(SiglipVisionWeights& weights, const std::optional<Calibration>& calibration,
                            const QuantizeOptions& options, const Progress& progress = {});

std::string quantization_json(const QuantizationRecord& record);

// Writes DIRECTORY/{config.json, model.safetensors, quantization.json}.
void save_quantized_model(const std::filesystem::path& directory, std::string_view config_json,
                          const SiglipVisionWeights& weights, const QuantizationRecord& record);

// A quantized model's F143 weights as the compiler takes them: per tensor
// its block scales and codes ([in, out], the GEMM's K × N, row-major).
struct F143Weight {
  kernels::f143::BlockScales scales;
  std::vector<std::uint8_t> codes;
  std::optional<int> activation_scale;  // in [−32, 31]; absent without calibration
};

// Reads DIRECTORY/quantization.json against the loaded weights: the format,
// version, codec and block must be these; every tensor named must be one the
// quantizer rewrites, with the weights' shape, one valid scale per block, and
// values that its scales encode losslessly; and every weight the quantizer
// rewrites must be named (a scale is an exponent, an integer in [−32, 31],
// so 2^scale is always finite and positive). InputError naming the file and
// the tensor otherwise; nullopt when the directory has no quantization.json.
std::optional<std::map<std::string, F143Weight>> read_quantization(
    const std::filesystem::path& directory, const SiglipVisionWeights& weights);

// The activation scale quantization.json records for each weight the
// quantizer rewrites (quantized_weight_names(config)), by name: nullopt for
// one recorded without calibration (`null`). The same checks of the file's
// format, version, codec, block and tensor names as read_quantization's,
// from the config alone — what `siglip compile --precision f8` needs before
// any weight is read; read_quantization checks the weights themselves when
// they are packed. nullopt when the directory has no quantization.json.
std::optional<std::map<std::string, std::optional<int>>> read_activation_scales(
    const std::filesystem::path& directory, const SiglipVisionConfig& config);

}  // namespace tessera::models::siglip::quantizer
