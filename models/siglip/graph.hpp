#pragma once
// The SigLIP vision tower as one compiler graph (compiler/ir): what
// `tessera siglip compile` compiles and the simulator runs.
//
//   pixel_values f32 [B, C, S, S]
//     → patches: slice to whole patches, reshape [B, C, g, P, g, P],
//       transpose to [B, g, g, C, P, P], reshape [B·T, C·P·P] (channel, y, x
//       order, as the conv weight flattens)
//     → patch embedding GEMM + bias, + position embedding    [B, T, H]
//     → ONE repeat over the L encoder layers, their weights as sequence
//       values [L, …] (pre-LN attention with biases, GeLU-tanh MLP, residuals)
//     → post-LayerNorm                                        last_hidden_state
//     → the attention-pooling head: the probe replicated to the GEMM's row
//       minimum (kernels::kGemmMinimumRows) as the query, nn.MultiheadAttention
//       over the hidden states, out_proj, LayerNorm + MLP with a residual,
//       row 0                                                 pooler_output
//
// Weights are parameters, packed on the host by `pack_vision_weights` into
// the graph's layouts (linear weights transposed to [in, out], the conv
// weight flattened to [C·P·P, H], layers stacked on axis 0); the one table of
// parameter names is graph.cpp's. Outputs are f32 at every precision.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "models/siglip/config.hpp"
#include "models/siglip/quantizer/quantize.hpp"
#include "models/siglip/weights.hpp"

namespace tessera::models::siglip {

// Activations and weights: f32 throughout; f16 (weights stored f16, the
// pixels converted to f16 on entry, the outputs back to f32); f143: f16
// activations and every GEMM weight F143 with one scale per 64 × 64 block,
// expanded on the tile (the prior art's default, which lets so400m fit); or
// f8: f143's weights, and the inputs of the encoder's six projections (q, k,
// v, out, fc1, fc2) converted to F143 at the activation scales the quantizer
// chose from calibration inputs, so those GEMMs are the native FP8 GEMM (F143
// · block-scaled F143 → f16). The patch embedding and the pooling head stay
// as at f143 (f16 activations, F143 weights expanded on the tile): the
// quantizer calibrates only the encoder's linears — the prior art's native
// mode quantised the same four projections — and they are ~1 % of the FLOPs.
enum class GraphPrecision : std::uint8_t { kF32, kF16, kF143, kF8 };

// The encoder projections whose inputs f8 quantises, in the order of
// quantizer::quantized_weight_names within a layer.
enum class Projection : std::uint8_t { kQ, kK, kV, kOut, kFc1, kFc2 };
inline constexpr std::size_t kProjections = 6;

// "self_attn.q_proj", …, "mlp.fc2": the projection's module name inside an
// encoder layer (the checkpoint's).
std::string_view projection_module(Projection projection);

// The F143 scale each projection's input is converted at, at f8. One per
// projection for all layers: the layers are ONE repeat whose body is
// compiled once, and a convert's scale is part of its result type
// (docs/GRAPH_FORMAT.md), so it cannot change from one iteration to the
// next. models/siglip/activation_scales.hpp takes the largest of the layers'
// recorded scales, so no layer's calibration input saturates; F143 is a
// float, so a layer whose inputs are smaller keeps 3 mantissa bits on every
// value above 2^(s−7) (1/30720 of the largest code's 240·2^s) and loses
// precision only below that, among the subnormals.
struct ActivationScales {
  std::array<int, kProjections> scales{};
  int operator[](Projection projection) const {
    return scales.at(static_cast<std::size_t>(projection));
  }
  friend bool operator==(const ActivationScales&, const ActivationScales&) = default;
};

inline constexpr std::string_view kPixelValues = "pixel_values";
inline constexpr std::string_view kLastHiddenState = "last_hidden_state";
inline constexpr std::string_view kPoolerOutput = "pooler_output";

// The graph for `batch` images. UsageError for batch 0, and at f8 without
// `activations` or with a scale outside [−32, 31] (`activations` is ignored
// at the other precisions); the config is validated by its parser.
compiler::Graph build_vision_graph(const SiglipVisionConfig& config, std::uint32_t batch,
                                   GraphPrecision precision,
                                   const ActivationScales* activations = nullptr);

// "f32", "f16", "f143", "f8": the CLI's --precision spelling.
std::string_view precision_name(GraphPrecision precision);

// A quantized model's F143 weights by checkpoint name, as
// quantizer::read_quantization returns them from its quantization.json.
using RecordedF143 = std::map<std::string, quantizer::F143Weight>;

// Every parameter of build_vision_graph's graph, by name, as row-major
// little-endian bytes of its type. At f143 and f8 with `recorded` (a
// quantized model's record), each encoder linear weight the quantizer
// rewrote is packed at its recorded block scales with the codes
// read_quantization checked are lossless, so the package carries exactly
// the quantizer's codes (review #19: same block grid, one block-scale
// type); InputError naming the tensor when one of them has no record or a
// record of another shape. Without it — and for every other GEMM weight — the scales are
// chosen from the values (kernels::f143::BlockScales::choose), which for a
// quantized weight may pick a finer scale than the quantizer did. `recorded`
// is ignored at f32 and f16.
std::map<std::string, std::vector<std::uint8_t>> pack_vision_weights(
    const SiglipVisionWeights& weights, GraphPrecision precision,
    const RecordedF143* recorded = nullptr);

// The bytes of every parameter of build_vision_graph's graph at `precision`
// (whatever the batch): what the weights occupy on the chip. Summed from the
// same parameter table and types the graph declares (an f143 GEMM weight is
// its u8 codes plus one i32 scale per 64 × 64 block), from the config alone,
// before any weight is read (f8's are f143's). InputError for an invalid
// config.
std::uint64_t vision_weight_bytes(const SiglipVisionConfig& config, GraphPrecision precision);

}  // namespace tessera::models::siglip
