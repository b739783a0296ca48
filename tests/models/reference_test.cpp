// The CPU reference against a naive implementation of modeling_siglip.py
// written here: plain loops in double, no BLAS, nothing shared with
// models/siglip/reference.cpp but the weights' struct.
#include "models/siglip/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "models/siglip/random_weights.hpp"
#include "support/error.hpp"
#include "tests/models/siglip_testing.hpp"

namespace tessera::models::siglip {
namespace {

using Matrix = std::vector<double>;  // row-major

struct Naive {
  const SiglipVisionWeights& w;
  std::size_t H = w.config.hidden_size, I = w.config.intermediate_size;
  std::size_t heads = w.config.num_attention_heads, d = H / heads;
  double eps = w.config.layer_norm_eps;

  Matrix linear(const Matrix& x, std::size_t rows, const FloatTensor& weight, const float* bias,
                std::size_t out, std::size_t in, std::size_t row_offset = 0) const {
    Matrix y(rows * out);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t o = 0; o < out; ++o) {
        double sum = bias[o];
        for (std::size_t i = 0; i < in; ++i) {
          sum += x[r * in + i] * double{weight.values[(row_offset + o) * in + i]};
        }
        y[r * out + o] = sum;
      }
    }
    return y;
  }
  Matrix linear(const Matrix& x, std::size_t rows, const Linear& l) const {
    const std::size_t out = l.weight.shape[0], in = l.weight.shape[1];
    return linear(x, rows, l.weight, l.bias.values.data(), out, in);
  }
  Matrix layer_norm(const Matrix& x, std::size_t rows, const LayerNorm& n) const {
    Matrix y(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (std::size_t c = 0; c < H; ++c) mean += x[r * H + c] / double(H);
      for (std::size_t c = 0; c < H; ++c)
        var += (x[r * H + c] - mean) * (x[r * H + c] - mean) / double(H);
      for (std::size_t c = 0; c < H; ++c) {
        y[r * H + c] = (x[r * H + c] - mean) / std::sqrt(var + eps) * double{n.weight.values[c]} +
                       double{n.bias.values[c]};
      }
    }
    return y;
  }
  static double gelu(double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  // softmax(q kᵀ / √d) v per head, q [nq, H], k and v [nk, H].
  Matrix attention(const Matrix& q, const Matrix& k, const Matrix& v, std::size_t nq,
                   std::size_t nk) const {
    Matrix out(nq * H, 0.0);
    for (std::size_t h = 0; h < heads; ++h) {
      for (std::size_t i = 0; i < nq; ++i) {
        std::vector<double> s(nk);
        double max = -INFINITY;
        for (std::size_t j = 0; j < nk; ++j) {
          double dot = 0;
          for (std::size_t e = 0; e < d; ++e) dot += q[i * H + h * d + e] * k[j * H + h * d + e];
          s[j] = dot / std::sqrt(double(d));
          max = std::max(max, s[j]);
        }
        double sum = 0;
        for (auto& value : s) sum += (value = std::exp(value - max));
        for (std::size_t j = 0; j < nk; ++j) {
          for (std::size_t e = 0; e < d; ++e)
            out[i * H + h * d + e] += s[j] / sum * v[j * H + h * d + e];
        }
      }
    }
    return out;
  }
  Matrix mlp(const Matrix& x, std::size_t rows, const SiglipMLP& m) const {
    Matrix up = linear(x, rows, m.fc1);
    for (auto& value : up) value = gelu(value);
    return linear(up, rows, m.fc2);
  }

  // One image [C, S, S] → (last_hidden_state [T, H], pooled [H]).
  std::pair<Matrix, Matrix> run(const float* pixels) const {
    const auto& c = w.config;
    const std::size_t P = c.patch_size, S = c.image_size, G = S / P, T = G * G;
    Matrix x(T * H);
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t o = 0; o < H; ++o) {
        // Conv2d, stride P, no padding: output (t / G, t % G).
        double sum = w.embeddings.patch_embedding.bias.values[o];
        for (std::size_t ch = 0; ch < c.num_channels; ++ch) {
          for (std::size_t y = 0; y < P; ++y) {
            for (std::size_t xx = 0; xx < P; ++xx) {
              sum += double{w.embeddings.patch_embedding.weight
                                .values[((o * c.num_channels + ch) * P + y) * P + xx]} *
                     double{pixels[(ch * S + (t / G) * P + y) * S + (t % G) * P + xx]};
            }
          }
        }
        x[t * H + o] = sum + double{w.embeddings.position_embedding.weight.values[t * H + o]};
      }
    }
    for (const auto& layer : w.layers) {
      const Matrix n1 = layer_norm(x, T, layer.layer_norm1);
      const Matrix a =
          attention(linear(n1, T, layer.self_attn.q_proj), linear(n1, T, layer.self_attn.k_proj),
                    linear(n1, T, layer.self_attn.v_proj), T, T);
      const Matrix o = linear(a, T, layer.self_attn.out_proj);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      const Matrix m = mlp(layer_norm(x, T, layer.layer_norm2), T, layer.mlp);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += m[i];
    }
    const Matrix last = layer_norm(x, T, w.post_layernorm);
    const auto& head = *w.head;
    const Matrix probe(head.probe.values.begin(), head.probe.values.end());
    const float* b = head.attention.in_proj_bias.values.data();
    const auto& in_w = head.attention.in_proj_weight;
    const Matrix q = linear(probe, 1, in_w, b, H, H, 0);
    const Matrix k = linear(last, T, in_w, b + H, H, H, H);
    const Matrix v = linear(last, T, in_w, b + 2 * H, H, H, 2 * H);
    Matrix pooled = linear(attention(q, k, v, 1, T), 1, head.attention.out_proj);
    const Matrix m = mlp(layer_norm(pooled, 1, head.layernorm), 1, head.mlp);
    for (std::size_t i = 0; i < H; ++i) pooled[i] += m[i];
    return {last, pooled};
  }
};

std::vector<float> random_pixels(const SiglipVisionConfig& c, std::uint32_t batch,
                                 std::uint64_t seed) {
  NormalStream stream(seed);
  std::vector<float> pixels(std::size_t{batch} * c.num_channels * c.image_size * c.image_size);
  // Inside [−1, 1], as normalised pixels are.
  for (auto& p : pixels) p = static_cast<float>(std::tanh(stream.normal()));
  return pixels;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// The bound: |reference − naive| ≤ 2e-5 · max(1, max|naive|) on every output
// element. f32 rounds each product and partial sum to 2^−24 ≈ 6e-8; the
// longest dot product here has 272 terms, two layers, LayerNorms that divide
// by σ ≈ 1 and the head: measured, the worst error is 1.6e-6 (tiny config)
// and 1.9e-6 (head dim 72), so 2e-5 leaves a factor of ten.
constexpr double kRelativeBound = 2e-5;

void check_against_naive(const SiglipVisionConfig& config, std::uint32_t batch) {
  const SiglipVisionWeights weights = random_weights(config, 2024);
  const std::vector<float> pixels = random_pixels(config, batch, 99);
  const SiglipOutputs outputs = run_reference(weights, pixels, batch);
  const std::size_t T = config.num_patches(), H = config.hidden_size;
  ASSERT_EQ(outputs.last_hidden_state.size(), batch * T * H);
  ASSERT_EQ(outputs.pooler_output.size(), batch * H);
  const Naive naive{weights};
  double worst = 0;
  for (std::uint32_t b = 0; b < batch; ++b) {
    const auto [last, pooled] =
        naive.run(pixels.data() +
                  std::size_t{b} * config.num_channels * config.image_size * config.image_size);
    const double last_bound = kRelativeBound * std::max(1.0, max_abs(last));
    const double pooled_bound = kRelativeBound * std::max(1.0, max_abs(pooled));
    for (std::size_t i = 0; i < T * H; ++i) {
      const double e = std::fabs(double{outputs.last_hidden_state[b * T * H + i]} - last[i]);
      worst = std::max(worst, e);
      ASSERT_LE(e, last_bound) << "last_hidden_state[" << b << "] element " << i;
    }
    for (std::size_t i = 0; i < H; ++i) {
      const double e = std::fabs(double{outputs.pooler_output[b * H + i]} - pooled[i]);
      worst = std::max(worst, e);
      ASSERT_LE(e, pooled_bound) << "pooler_output[" << b << "] element " << i;
    }
  }
  ::testing::Test::RecordProperty("worst_abs_error", std::to_string(worst));
}

TEST(SiglipReference, MatchesANaiveDoubleImplementation) {
  check_against_naive(testing::tiny_config(), 2);
}

TEST(SiglipReference, MatchesANaiveDoubleImplementationAtHeadDim72) {
  check_against_naive(testing::head_dim_72_config(), 2);
}

TEST(SiglipReference, ImagesInABatchAreComputedIndependently) {
  const auto config = testing::tiny_config();
  const SiglipVisionWeights weights = random_weights(config, 5);
  const auto pixels = random_pixels(config, 3, 6);
  const auto all = run_reference(weights, pixels, 3);
  const std::size_t image = pixels.size() / 3;
  const auto second =
      run_reference(weights, std::span<const float>(pixels).subspan(image, image), 1);
  const std::size_t H = config.hidden_size, TH = config.num_patches() * H;
  // BLAS may block a GEMM of 27 rows differently from one of 9: equal up to
  // f32 rounding, not bit for bit.
  for (std::size_t i = 0; i < H; ++i)
    EXPECT_NEAR(second.pooler_output[i], all.pooler_output[H + i], 1e-5);
  for (std::size_t i = 0; i < TH; ++i) {
    EXPECT_NEAR(second.last_hidden_state[i], all.last_hidden_state[TH + i], 1e-5);
  }
}

TEST(SiglipReference, RefusesPixelsOfTheWrongSize) {
  const auto config = testing::tiny_config();
  const SiglipVisionWeights weights = random_weights(config, 5);
  const std::vector<float> pixels(10);
  EXPECT_THROW(run_reference(weights, pixels, 1), UsageError);
  EXPECT_THROW(run_reference(weights, {}, 0), UsageError);
}

TEST(SiglipReference, GeluIsTheTanhApproximation) {
  // 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) at x = 1: tanh(0.7978846·1.044715) = tanh(0.8335620)
  // = 0.6823094, so 0.5·1.6823094 = 0.8411920.
  EXPECT_NEAR(gelu_tanh(1.0F), 0.8411920F, 1e-6);
  EXPECT_EQ(gelu_tanh(0.0F), 0.0F);
  EXPECT_NEAR(gelu_tanh(-3.0F), -0.0036373F, 1e-6);
}

}  // namespace
}  // namespace tessera::models::siglip
