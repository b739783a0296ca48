#pragma once
// The SigLIP vision tower in FP32 on the CPU: what every compiled SigLIP is
// checked against. Written from modeling_siglip.py, independently of the
// compiler and its kernels; the GEMMs go through CBLAS (OpenBLAS).
//
//   embeddings   patches flattened in (channel, y, x) order — the Conv2d's
//                weight order — times patch_embedding.weightᵀ, + bias, +
//                position_embedding (a valid, stride-P convolution: pixels
//                past the last whole patch are never read)
//   encoder      per layer, pre-LN: h += out_proj(MHA(layer_norm1(h)));
//                h += fc2(gelu_tanh(fc1(layer_norm2(h)))); attention with
//                biases, scores scaled by head_dim^−0.5, softmax over keys
//   post_layernorm                                  → last_hidden_state [B, T, H]
//   head         SiglipMultiheadAttentionPoolingHead: a = MHA(probe, x, x)
//                (torch.nn.MultiheadAttention: in_proj split into q, k, v;
//                out_proj); pooled = a + mlp(layernorm(a))  → pooler_output [B, H]
//
// LayerNorm statistics and softmax sums accumulate in double; everything
// else is f32, as torch computes it in FP32.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/siglip/weights.hpp"

namespace tessera::models::siglip {

// The inputs of an encoder layer's linear projections, for the quantizer's
// calibration (Hessians, means, RMS per input column).
enum class LinearInput : std::uint8_t {
  kQkv,      // layer_norm1's output: the input of q_proj, k_proj and v_proj
  kOutProj,  // the attention's heads, concatenated: the input of out_proj
  kFc1,      // layer_norm2's output: the input of mlp.fc1
  kFc2,      // gelu(fc1): the input of mlp.fc2
};

class LinearInputObserver {
 public:
  virtual ~LinearInputObserver() = default;
  // `x` is rows × cols, row-major (rows = B·T tokens).
  virtual void observe(std::size_t layer, LinearInput site, std::span<const float> x,
                       std::size_t rows, std::size_t cols) = 0;
};

struct SiglipOutputs {
  std::uint32_t batch = 0;
  std::vector<float> last_hidden_state;  // [B, T, H]
  std::vector<float> pooler_output;      // [B, H]; empty when the model has no head
};

using Progress = std::function<void(std::string_view step)>;

// Runs the tower on `pixels`, float32 [B, C, S, S] as SiglipImageProcessor
// produces them (UsageError when the size is not batch · C · S · S).
SiglipOutputs run_reference(const SiglipVisionWeights& weights, std::span<const float> pixels,
                            std::uint32_t batch, LinearInputObserver* observer = nullptr,
                            const Progress& progress = {});

// The steps of run_reference, for the quantizer's layer-by-layer
// calibration: the embeddings of `pixels` (hidden states [B·T, H]), and one
// encoder layer applied to them in place.
std::vector<float> reference_embeddings(const SiglipVisionWeights& weights,
                                        std::span<const float> pixels, std::uint32_t batch);
void reference_encoder_layer(const SiglipVisionWeights& weights, std::size_t layer,
                             std::uint32_t batch, std::vector<float>& hidden,
                             LinearInputObserver* observer = nullptr);

// OpenBLAS (0.3.21, Debian 12) picks its kernels by CPU model number and
// falls back to its SSE3 "Prescott" kernels for a model it does not know
// (Emerald Rapids, model 207, is one): on such a machine the reference runs
// 6-9x slower than it could. It reads OPENBLAS_CORETYPE when the library is
// loaded, before main, so the process cannot fix this for itself. When
// OpenBLAS is on a pre-AVX2 core and the CPU has AVX2 or AVX-512, this is a
// one-line hint naming the setting to use; nullopt otherwise (and whenever
// OPENBLAS_CORETYPE is set).
std::optional<std::string> blas_performance_note();

// GeLU, tanh approximation (transformers' gelu_pytorch_tanh), in f32.
float gelu_tanh(float x) noexcept;

}  // namespace tessera::models::siglip
