#include "models/siglip/reference.hpp"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "models/parallel.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::models::siglip {
namespace {

// CBLAS takes int dimensions; a model whose dimensions do not fit is refused
// rather than wrapped.
int blas_int(std::size_t value) { return checked_cast<int>(value, "BLAS dimension"); }

// y[rows, out] = x[rows, in] · weightᵀ + bias, weight [out, in] as torch stores it.
void linear(const float* x, std::size_t rows, std::size_t in, const float* weight,
            const float* bias, std::size_t out, float* y) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas_int(rows), blas_int(out), blas_int(in),
              1.0F, x, blas_int(in), weight, blas_int(in), 0.0F, y, blas_int(out));
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = y + r * out;
    for (std::size_t c = 0; c < out; ++c) row[c] += bias[c];
  }
}

std::vector<float> linear(const std::vector<float>& x, std::size_t rows, std::size_t in,
                          const Linear& layer) {
  const std::size_t out = layer.bias.values.size();
  std::vector<float> y(rows * out);
  linear(x.data(), rows, in, layer.weight.values.data(), layer.bias.values.data(), out, y.data());
  return y;
}

std::vector<float> layer_norm(const std::vector<float>& x, std::size_t rows, std::size_t width,
                              const LayerNorm& norm, double eps) {
  std::vector<float> y(x.size());
  const float* gamma = norm.weight.values.data();
  const float* beta = norm.bias.values.data();
  parallel_for(rows, 64, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const float* in = x.data() + r * width;
      double sum = 0.0;
      for (std::size_t c = 0; c < width; ++c) sum += double{in[c]};
      const double mean = sum / static_cast<double>(width);
      double squares = 0.0;
      for (std::size_t c = 0; c < width; ++c) {
        const double d = double{in[c]} - mean;
        squares += d * d;
      }
      const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(width) + eps);
      float* out = y.data() + r * width;
      for (std::size_t c = 0; c < width; ++c) {
        out[c] = static_cast<float>((double{in[c]} - mean) * rstd) * gamma[c] + beta[c];
      }
    }
  });
  return y;
}

void softmax_rows(float* scores, std::size_t rows, std::size_t width) {
  parallel_for(rows, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      float* row = scores + r * width;
      const float max = *std::max_element(row, row + width);
      double sum = 0.0;
      for (std::size_t c = 0; c < width; ++c) {
        row[c] = std::exp(row[c] - max);
        sum += double{row[c]};
      }
      const auto inverse = static_cast<float>(1.0 / sum);
      for (std::size_t c = 0; c < width; ++c) row[c] *= inverse;
    }
  });
}

// Scaled dot-product attention of every head of every image: q has
// `queries` rows per image, k and v `keys` rows, all [.., hidden] with head h
// in columns [h·d, (h+1)·d). The result has q's shape.
std::vector<float> attention(const std::vector<float>& q, const std::vector<float>& k,
                             const std::vector<float>& v, std::uint32_t batch, std::size_t queries,
                             std::size_t keys, std::size_t hidden, std::size_t heads) {
  const std::size_t d = hidden / heads;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  std::vector<float> context(std::size_t{batch} * queries * hidden);
  std::vector<float> scores(queries * keys);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t h = 0; h < heads; ++h) {
      const float* qh = q.data() + b * queries * hidden + h * d;
      const float* kh = k.data() + b * keys * hidden + h * d;
      const float* vh = v.data() + b * keys * hidden + h * d;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blas_int(queries), blas_int(keys),
                  blas_int(d), scale, qh, blas_int(hidden), kh, blas_int(hidden), 0.0F,
                  scores.data(), blas_int(keys));
      softmax_rows(scores.data(), queries, keys);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_int(queries), blas_int(d),
                  blas_int(keys), 1.0F, scores.data(), blas_int(keys), vh, blas_int(hidden), 0.0F,
                  context.data() + b * queries * hidden + h * d, blas_int(hidden));
    }
  }
  return context;
}

void add_in_place(std::vector<float>& accumulator, const std::vector<float>& addend) {
  for (std::size_t i = 0; i < accumulator.size(); ++i) accumulator[i] += addend[i];
}

std::vector<float> embed(const SiglipVisionWeights& w, std::span<const float> pixels,
                         std::uint32_t batch) {
  const auto& c = w.config;
  const std::size_t channels = c.num_channels, p = c.patch_size, s = c.image_size;
  const std::size_t grid = c.patches_per_side(), tokens = c.num_patches();
  const std::size_t inner = c.patch_inner(), hidden = c.hidden_size;
  std::vector<float> patches(std::size_t{batch} * tokens * inner);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t t = 0; t < tokens; ++t) {
      const std::size_t y0 = (t / grid) * p, x0 = (t % grid) * p;
      float* row = patches.data() + (b * tokens + t) * inner;
      for (std::size_t ch = 0; ch < channels; ++ch) {
        for (std::size_t y = 0; y < p; ++y) {
          const float* source = pixels.data() + ((b * channels + ch) * s + y0 + y) * s + x0;
          std::copy(source, source + p, row + (ch * p + y) * p);
        }
      }
    }
  }
  std::vector<float> hidden_states(std::size_t{batch} * tokens * hidden);
  linear(patches.data(), std::size_t{batch} * tokens, inner,
         w.embeddings.patch_embedding.weight.values.data(),
         w.embeddings.patch_embedding.bias.values.data(), hidden, hidden_states.data());
  const auto& position = w.embeddings.position_embedding.weight.values;
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < tokens * hidden; ++i) {
      hidden_states[b * tokens * hidden + i] += position[i];
    }
  }
  return hidden_states;
}

void encoder_layer(const SiglipEncoderLayer& layer, std::size_t index, const SiglipVisionConfig& c,
                   std::uint32_t batch, std::vector<float>& hidden, LinearInputObserver* observer) {
  const std::size_t tokens = c.num_patches(), rows = std::size_t{batch} * tokens;
  const std::size_t h = c.hidden_size, inter = c.intermediate_size;
  const auto observe = [&](LinearInput site, const std::vector<float>& x, std::size_t cols) {
    if (observer != nullptr) observer->observe(index, site, x, rows, cols);
  };

  const std::vector<float> normed =
      layer_norm(hidden, rows, h, layer.layer_norm1, c.layer_norm_eps);
  observe(LinearInput::kQkv, normed, h);
  const auto q = linear(normed, rows, h, layer.self_attn.q_proj);
  const auto k = linear(normed, rows, h, layer.self_attn.k_proj);
  const auto v = linear(normed, rows, h, layer.self_attn.v_proj);
  const auto context = attention(q, k, v, batch, tokens, tokens, h, c.num_attention_heads);
  observe(LinearInput::kOutProj, context, h);
  add_in_place(hidden, linear(context, rows, h, layer.self_attn.out_proj));

  const std::vector<float> normed2 =
      layer_norm(hidden, rows, h, layer.layer_norm2, c.layer_norm_eps);
  observe(LinearInput::kFc1, normed2, h);
  std::vector<float> up = linear(normed2, rows, h, layer.mlp.fc1);
  parallel_for(up.size(), 1u << 14, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) up[i] = gelu_tanh(up[i]);
  });
  observe(LinearInput::kFc2, up, inter);
  add_in_place(hidden, linear(up, rows, inter, layer.mlp.fc2));
}

std::vector<float> mlp(const SiglipMLP& m, const std::vector<float>& x, std::size_t rows,
                       std::size_t hidden) {
  std::vector<float> up = linear(x, rows, hidden, m.fc1);
  for (float& value : up) value = gelu_tanh(value);
  return linear(up, rows, m.fc1.bias.values.size(), m.fc2);
}

std::vector<float> pooling_head(const SiglipMultiheadAttentionPoolingHead& head,
                                const SiglipVisionConfig& c, std::uint32_t batch,
                                const std::vector<float>& x) {
  const std::size_t h = c.hidden_size, tokens = c.num_patches(), rows = std::size_t{batch} * tokens;
  const float* w = head.attention.in_proj_weight.values.data();
  const float* bias = head.attention.in_proj_bias.values.data();
  // The probe is one query, the same for every image.
  std::vector<float> q(std::size_t{batch} * h);
  linear(head.probe.values.data(), 1, h, w, bias, h, q.data());
  for (std::size_t b = 1; b < batch; ++b)
    std::copy(q.begin(), q.begin() + static_cast<long>(h), q.begin() + static_cast<long>(b * h));
  std::vector<float> k(rows * h), v(rows * h);
  linear(x.data(), rows, h, w + h * h, bias + h, h, k.data());
  linear(x.data(), rows, h, w + 2 * h * h, bias + 2 * h, h, v.data());
  const auto context = attention(q, k, v, batch, 1, tokens, h, c.num_attention_heads);
  std::vector<float> attended = linear(context, batch, h, head.attention.out_proj);
  const auto normed = layer_norm(attended, batch, h, head.layernorm, c.layer_norm_eps);
  add_in_place(attended, mlp(head.mlp, normed, batch, h));
  return attended;
}

}  // namespace

std::optional<std::string> blas_performance_note() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return std::nullopt;
  const char* name = openblas_get_corename();
  const std::string_view core = name == nullptr ? "" : name;
  // OpenBLAS's x86-64 cores without AVX2 kernels.
  constexpr std::array<std::string_view, 8> kPreAvx2 = {
      "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge", "Opteron"};
  if (std::find(kPreAvx2.begin(), kPreAvx2.end(), core) == kPreAvx2.end()) return std::nullopt;
  const char* better = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : nullptr;
  if (better == nullptr) return std::nullopt;
  return fmt::format(
      "OpenBLAS does not recognise this CPU and runs its generic {} kernels; "
      "OPENBLAS_CORETYPE={} (the CPU has {}) makes the reference several times faster",
      core, better, std::string_view(better) == "SkylakeX" ? "AVX-512" : "AVX2");
}

float gelu_tanh(float x) noexcept {
  // sqrt(2/pi) and 0.044715, as torch's tanh GeLU.
  constexpr float kSqrt2OverPi = 0.7978845608028654F;
  constexpr float kCubic = 0.044715F;
  return 0.5F * x * (1.0F + std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x)));
}

namespace {

void check_pixels(const SiglipVisionConfig& c, std::span<const float> pixels, std::uint32_t batch) {
  const std::uint64_t expected =
      std::uint64_t{batch} * c.num_channels * c.image_size * std::uint64_t{c.image_size};
  if (batch == 0 || pixels.size() != expected) {
    throw UsageError(
        fmt::format("the reference takes pixels [B, {}, {}, {}] for B ≥ 1: got {} "
                    "values for B = {}",
                    c.num_channels, c.image_size, c.image_size, pixels.size(), batch));
  }
}

}  // namespace

std::vector<float> reference_embeddings(const SiglipVisionWeights& weights,
                                        std::span<const float> pixels, std::uint32_t batch) {
  check_pixels(weights.config, pixels, batch);
  return embed(weights, pixels, batch);
}

void reference_encoder_layer(const SiglipVisionWeights& weights, std::size_t layer,
                             std::uint32_t batch, std::vector<float>& hidden,
                             LinearInputObserver* observer) {
  const auto& c = weights.config;
  if (layer >= weights.layers.size() ||
      hidden.size() != std::size_t{batch} * c.num_patches() * c.hidden_size) {
    throw UsageError("reference_encoder_layer: no such layer, or hidden states of the wrong size");
  }
  encoder_layer(weights.layers[layer], layer, c, batch, hidden, observer);
}

SiglipOutputs run_reference(const SiglipVisionWeights& weights, std::span<const float> pixels,
                            std::uint32_t batch, LinearInputObserver* observer,
                            const Progress& progress) {
  const auto& c = weights.config;
  check_pixels(c, pixels, batch);
  const auto report = [&](const std::string& step) {
    if (progress) progress(step);
  };
  report("patch and position embeddings");
  std::vector<float> hidden = embed(weights, pixels, batch);
  for (std::size_t i = 0; i < weights.layers.size(); ++i) {
    report(fmt::format("encoder layer {}/{}", i + 1, weights.layers.size()));
    encoder_layer(weights.layers[i], i, c, batch, hidden, observer);
  }
  const std::size_t rows = std::size_t{batch} * c.num_patches();
  SiglipOutputs outputs;
  outputs.batch = batch;
  outputs.last_hidden_state =
      layer_norm(hidden, rows, c.hidden_size, weights.post_layernorm, c.layer_norm_eps);
  if (weights.head) {
    report("pooling head");
    outputs.pooler_output = pooling_head(*weights.head, c, batch, outputs.last_hidden_state);
  }
  return outputs;
}

}  // namespace tessera::models::siglip
