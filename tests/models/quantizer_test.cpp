// The F143 quantizer: nearest against an encoding of the F143 rules written
// here from kernels-siglip-f143.md §3 (a table of every code's value and a
// search for the nearest — nothing shared with kernels/f143.cpp); GPTQ
// against nearest on the layer's own calibration inputs, measured here as
// ‖X (W − Ŵ)ᵀ‖²; bias correction, LayerNorm equalization and
// quantization.json checked against what they promise.
#include "models/siglip/quantizer/quantize.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "models/siglip/activation_scales.hpp"
#include "models/siglip/graph.hpp"
#include "models/siglip/quantizer/equalize.hpp"
#include "models/siglip/quantizer/f143_grid.hpp"
#include "models/siglip/quantizer/gptq.hpp"
#include "models/siglip/quantizer/statistics.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/reference.hpp"
#include "support/error.hpp"
#include "tests/models/f143_oracle.hpp"
#include "tests/models/siglip_testing.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::models::siglip::quantizer {
namespace {

using tessera::testing::ScratchDirectory;

// ---- An independent F143 (§3): tests/models/f143_oracle.hpp ---------------

using testing::code_value;
using testing::naive_decode;
using testing::naive_encode;
using testing::naive_scale;

TEST(F143Rules, TheTestsEncodingAgreesWithTheDocumentsVectors) {
  // kernels-siglip-f143.md §3, "Test vectors at scale 0".
  const std::pair<float, std::uint8_t> vectors[] = {{7.0F, 0x56}, {7.25F, 0x56}, {7.5F, 0x57},
                                                    {7.75F, 0x58}, {8.0F, 0x58}, {8.5F, 0x58},
                                                    {9.0F, 0x59}, {9.5F, 0x5a}, {240.0F, 0x7F},
                                                    {1e9F, 0x7F}, {-0.0F, 0x00}, {-1e-9F, 0x00}};
  for (const auto& [x, code] : vectors) EXPECT_EQ(naive_encode(x, 0), code) << x;
}

// A [130, 100] weight (partial blocks along both axes) whose blocks need
// very different scales: one all zero, one below 2^−42 (clamped at −32,
// everything underflows), one above 240·2^31 (clamped at 31, saturating).
std::vector<float> awkward_weight(std::uint32_t out, std::uint32_t in) {
  NormalStream stream(11);
  std::vector<float> w(std::size_t{out} * in);
  for (std::uint32_t o = 0; o < out; ++o) {
    for (std::uint32_t i = 0; i < in; ++i) {
      const std::uint32_t block = (o / 64) * 2 + i / 64;
      const double magnitude = std::ldexp(1.0, static_cast<int>(block * 7) - 12);
      double v = stream.normal() * magnitude;
      if (block == 1) v = 0.0;
      if (o >= 128 && i < 64) v = stream.normal() * 1e-14;
      if (o >= 128 && i >= 64) v = stream.normal() * 1e12;
      w[std::size_t{o} * in + i] = static_cast<float>(v);
    }
  }
  // Exact ties at block (0, 0)'s scale, which these (smaller than its
  // largest value) do not change: normal, the carry into the next exponent,
  // and subnormal, each to the even code.
  std::vector<float> first_block;
  for (std::uint32_t o = 0; o < 64; ++o) {
    for (std::uint32_t i = 0; i < 64; ++i) first_block.push_back(w[std::size_t{o} * in + i]);
  }
  const int s = naive_scale(first_block);
  const float ties[] = {7.25F, -7.75F, 1.875F + 0.0625F, 2.5F / 1024, -3.5F / 1024, 0.5F / 1024};
  for (std::size_t k = 0; k < std::size(ties); ++k) w[5 + k] = std::ldexp(ties[k], s);
  return w;
}

TEST(Quantizer, NearestIsBitExactAgainstTheF143Rules) {
  const std::uint32_t out = 130, in = 100;
  const std::vector<float> w = awkward_weight(out, in);
  const QuantizedLinear q = quantize_linear(w, out, in, Algorithm::kNearest, nullptr);
  // The block of weight[o][i] is (i / 64, o / 64): 64 K × 64 N of weightᵀ.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<float>> blocks;
  for (std::uint32_t o = 0; o < out; ++o) {
    for (std::uint32_t i = 0; i < in; ++i) blocks[{i / 64, o / 64}].push_back(w[o * in + i]);
  }
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> scales;
  for (const auto& [key, values] : blocks) scales[key] = naive_scale(values);
  ASSERT_EQ(q.scales.block_rows(), 2u);
  ASSERT_EQ(q.scales.block_columns(), 3u);
  for (const auto& [key, scale] : scales) {
    EXPECT_EQ(q.scales.block_scale(key.first, key.second), scale)
        << "block " << key.first << ", " << key.second;
  }
  EXPECT_EQ(scales.at({0, 2}), -32);  // clamped, as the blocks were built to be
  EXPECT_EQ(scales.at({1, 2}), 31);
  EXPECT_EQ(scales.at({1, 0}), 0);  // all zero
  std::size_t saturated = 0, flushed = 0;
  for (std::uint32_t o = 0; o < out; ++o) {
    for (std::uint32_t i = 0; i < in; ++i) {
      const int s = scales.at({i / 64, o / 64});
      const std::uint8_t code = naive_encode(w[o * in + i], s);
      const float expected = naive_decode(code, s);
      const float got = q.weight[o * in + i];
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(expected))
          << "weight[" << o << "][" << i << "] = " << w[o * in + i] << " at scale " << s;
      saturated += (code & 0x7F) == 0x7F;
      flushed += code == 0 && w[o * in + i] != 0.0F;
    }
  }
  EXPECT_GT(saturated, 0u);
  EXPECT_GT(flushed, 0u);
}

// ---- Calibration on a tiny model --------------------------------------

// Smooth images with a little noise: neighbouring pixels correlate, as in
// photographs, so the linears' inputs have a structured H.
std::vector<float> calibration_pixels(const SiglipVisionConfig& c, std::uint32_t images,
                                      std::uint64_t seed) {
  NormalStream stream(seed);
  const std::size_t s = c.image_size;
  std::vector<float> pixels(images * c.num_channels * s * s);
  for (std::uint32_t b = 0; b < images; ++b) {
    const double fx = 0.1 + 0.05 * stream.uniform(), fy = 0.1 + 0.05 * stream.uniform();
    const double phase = 6.0 * stream.uniform();
    for (std::size_t ch = 0; ch < c.num_channels; ++ch) {
      for (std::size_t y = 0; y < s; ++y) {
        for (std::size_t x = 0; x < s; ++x) {
          pixels[((b * c.num_channels + ch) * s + y) * s + x] = static_cast<float>(
              0.8 * std::sin(fx * static_cast<double>(x * (ch + 1)) + fy * static_cast<double>(y) + phase) + 0.1 * stream.normal());
        }
      }
    }
  }
  return pixels;
}

// Every input every linear saw, kept whole.
struct Recorder final : LinearInputObserver {
  std::map<std::pair<std::size_t, LinearInput>, std::vector<float>> inputs;
  void observe(std::size_t layer, LinearInput site, std::span<const float> x, std::size_t,
               std::size_t) override {
    auto& kept = inputs[{layer, site}];
    kept.insert(kept.end(), x.begin(), x.end());
  }
};

// ‖X (W − Ŵ)ᵀ‖² / rows, the full error (not the block-diagonal proxy).
double output_error(const std::vector<float>& x, const std::vector<float>& w,
                    const std::vector<float>& q, std::size_t out, std::size_t in) {
  const std::size_t rows = x.size() / in;
  double total = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      double e = 0.0;
      for (std::size_t i = 0; i < in; ++i) {
        e += double{x[r * in + i]} * (double{w[o * in + i]} - double{q[o * in + i]});
      }
      total += e * e;
    }
  }
  return total / static_cast<double>(rows);
}

struct Site {
  const char* name;
  const Linear& (*linear)(const SiglipEncoderLayer&);
  LinearInput input;
  const InputStatistics& (*statistics)(const LayerStatistics&);
};

const Site kSites[] = {
    {"q_proj", [](const SiglipEncoderLayer& l) -> const Linear& { return l.self_attn.q_proj; },
     LinearInput::kQkv, [](const LayerStatistics& s) -> const InputStatistics& { return s.qkv; }},
    {"v_proj", [](const SiglipEncoderLayer& l) -> const Linear& { return l.self_attn.v_proj; },
     LinearInput::kQkv, [](const LayerStatistics& s) -> const InputStatistics& { return s.qkv; }},
    {"out_proj", [](const SiglipEncoderLayer& l) -> const Linear& { return l.self_attn.out_proj; },
     LinearInput::kOutProj,
     [](const LayerStatistics& s) -> const InputStatistics& { return s.out_proj; }},
    {"fc1", [](const SiglipEncoderLayer& l) -> const Linear& { return l.mlp.fc1; },
     LinearInput::kFc1, [](const LayerStatistics& s) -> const InputStatistics& { return s.fc1; }},
    {"fc2", [](const SiglipEncoderLayer& l) -> const Linear& { return l.mlp.fc2; },
     LinearInput::kFc2, [](const LayerStatistics& s) -> const InputStatistics& { return s.fc2; }},
};

TEST(Quantizer, StatisticsAreTheInputsSumsAndBlockDiagonalGram) {
  const SiglipVisionConfig c = testing::head_dim_72_config();  // 144 = 64 + 64 + 16
  const SiglipVisionWeights w = random_weights(c, 4);
  const auto pixels = calibration_pixels(c, 5, 9);
  // The reference run in the same chunks of 2 images as the statistics: a
  // BLAS may block a GEMM of another row count differently, and its f32 sums
  // then differ in the last bits (seen with OpenBLAS on an AMD EPYC).
  Recorder recorder;
  const std::size_t image_floats = pixels.size() / 5;
  for (std::uint32_t first = 0; first < 5; first += 2) {
    const std::uint32_t count = std::min(2u, 5u - first);
    (void)run_reference(w, std::span<const float>(pixels).subspan(first * image_floats, count * image_floats),
                        count, &recorder);
  }
  const CalibrationStatistics s = collect_statistics(w, pixels, 5, /*chunk_images=*/2);
  const auto& x = recorder.inputs.at({1, LinearInput::kQkv});
  const InputStatistics& qkv = s.layers[1].qkv;
  ASSERT_EQ(qkv.tokens, 5u * c.num_patches());
  ASSERT_EQ(qkv.slice_count(), 3u);
  EXPECT_EQ(qkv.slice_width(2), 16u);
  const std::size_t in = c.hidden_size;
  for (const auto& [i, j] : std::vector<std::pair<std::size_t, std::size_t>>{
           {0, 0}, {3, 60}, {64, 127}, {130, 143}, {143, 128}}) {
    double gram = 0.0, sum = 0.0;
    for (std::size_t r = 0; r < qkv.tokens; ++r) {
      gram += double{x[r * in + i]} * double{x[r * in + j]};
      sum += double{x[r * in + i]};
    }
    const std::uint32_t b = static_cast<std::uint32_t>(i / 64), w_b = qkv.slice_width(b);
    EXPECT_NEAR(qkv.hessian_blocks[b][(i % 64) * w_b + (j % 64)], gram, 1e-9 * (1 + std::fabs(gram)));
    EXPECT_NEAR(qkv.sum[i], sum, 1e-9 * (1 + std::fabs(sum)));
  }
}

TEST(Quantizer, GptqLowersEachLayersReconstructionErrorBelowNearests) {
  for (const SiglipVisionConfig& c : {testing::tiny_config(), testing::head_dim_72_config()}) {
    const SiglipVisionWeights w = random_weights(c, 21);
    const std::uint32_t images = 12;
    const auto pixels = calibration_pixels(c, images, 5);
    Recorder recorder;
    (void)run_reference(w, pixels, images, &recorder);
    const CalibrationStatistics s = collect_statistics(w, pixels, images);
    for (std::size_t layer = 0; layer < w.layers.size(); ++layer) {
      for (const Site& site : kSites) {
        const Linear& linear = site.linear(w.layers[layer]);
        const auto out = static_cast<std::uint32_t>(linear.weight.shape[0]);
        const auto in = static_cast<std::uint32_t>(linear.weight.shape[1]);
        const InputStatistics& stats = site.statistics(s.layers[layer]);
        const auto nearest = quantize_linear(linear.weight.values, out, in, Algorithm::kNearest, &stats);
        const auto gptq = quantize_linear(linear.weight.values, out, in, Algorithm::kGptq, &stats);
        EXPECT_EQ(gptq.cholesky_fallbacks, 0u);
        EXPECT_EQ(gptq.scales, nearest.scales);  // the same grid: the compiler's
        // Every GPTQ value is on the grid: nearest of itself is itself.
        EXPECT_EQ(project_nearest(gptq.weight, gptq.scales), gptq.weight);
        const auto& x = recorder.inputs.at({layer, site.input});
        const double e_nearest = output_error(x, linear.weight.values, nearest.weight, out, in);
        const double e_gptq = output_error(x, linear.weight.values, gptq.weight, out, in);
        EXPECT_LT(e_gptq, 0.9 * e_nearest)
            << "hidden " << c.hidden_size << " layer " << layer << " " << site.name;
        EXPECT_LT(gptq.error, gptq.error_nearest);
        EXPECT_DOUBLE_EQ(gptq.error_nearest, nearest.error);
      }
    }
  }
}

TEST(Quantizer, SequentialLayersTakeEachLayersStatisticsFromThePartlyQuantizedModel) {
  const SiglipVisionConfig c = testing::head_dim_72_config();
  const SiglipVisionWeights original = random_weights(c, 17);
  const std::uint32_t images = 6;
  const auto pixels = calibration_pixels(c, images, 12);
  QuantizeOptions options;
  options.bias_correction = false;
  options.sequential_layers = true;
  SiglipVisionWeights sequential = original;
  const auto record = quantize(sequential, Calibration{pixels, images}, options);
  EXPECT_TRUE(record.sequential_layers);
  EXPECT_EQ(record.calibration_tokens, images * c.num_patches());
  options.sequential_layers = false;
  SiglipVisionWeights one_pass = original;
  (void)quantize(one_pass, Calibration{pixels, images}, options);

  // By definition: layer 0 from the FP32 model's statistics, layer 1 from
  // those of the model whose layer 0 is already quantized.
  SiglipVisionWeights expected = original;
  for (std::size_t layer = 0; layer < 2; ++layer) {
    const CalibrationStatistics s = collect_statistics(expected, pixels, images);
    const LayerStatistics& ls = s.layers[layer];
    auto& l = expected.layers[layer];
    const std::pair<Linear*, const InputStatistics*> linears[] = {
        {&l.self_attn.q_proj, &ls.qkv},      {&l.self_attn.k_proj, &ls.qkv},
        {&l.self_attn.v_proj, &ls.qkv},      {&l.self_attn.out_proj, &ls.out_proj},
        {&l.mlp.fc1, &ls.fc1},               {&l.mlp.fc2, &ls.fc2}};
    for (const auto& [linear, statistics] : linears) {
      const auto out = static_cast<std::uint32_t>(linear->weight.shape[0]);
      const auto in = static_cast<std::uint32_t>(linear->weight.shape[1]);
      linear->weight.values =
          quantize_linear(linear->weight.values, out, in, Algorithm::kGptq, statistics).weight;
    }
  }
  for (std::size_t layer = 0; layer < 2; ++layer) {
    for (const Site& site : kSites) {
      EXPECT_EQ(site.linear(sequential.layers[layer]).weight.values,
                site.linear(expected.layers[layer]).weight.values)
          << "layer " << layer << " " << site.name;
    }
    EXPECT_EQ(sequential.layers[layer].self_attn.k_proj.weight.values,
              expected.layers[layer].self_attn.k_proj.weight.values);
  }
  EXPECT_EQ(sequential.layers[0].mlp.fc2.weight.values, one_pass.layers[0].mlp.fc2.weight.values);
  EXPECT_NE(sequential.layers[1].mlp.fc2.weight.values, one_pass.layers[1].mlp.fc2.weight.values);
}

TEST(Quantizer, InverseUpperCholeskyFactorsTheDampedInverse) {
  const std::uint32_t n = 20;
  NormalStream stream(2);
  std::vector<double> a(n * 30);
  for (auto& v : a) v = stream.normal();
  std::vector<double> h(n * n, 0.0);  // AAᵀ: positive definite
  for (std::uint32_t i = 0; i < n; ++i)
    for (std::uint32_t j = 0; j < n; ++j)
      for (std::uint32_t k = 0; k < 30; ++k) h[i * n + j] += a[i * 30 + k] * a[j * 30 + k];
  double mean = 0.0;
  for (std::uint32_t i = 0; i < n; ++i) mean += h[i * n + i] / n;
  std::vector<double> u;
  ASSERT_TRUE(inverse_upper_cholesky(h, n, 0.01, u));
  // (Uᵀ U)(H + 0.01·mean·I) = I, and U is upper triangular.
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      if (j < i) {
        EXPECT_EQ(u[i * n + j], 0.0);
      }
      double product = 0.0;
      for (std::uint32_t k = 0; k < n; ++k) {
        double inverse_ik = 0.0;
        for (std::uint32_t m = 0; m < n; ++m) inverse_ik += u[m * n + i] * u[m * n + k];
        product += inverse_ik * (h[k * n + j] + (k == j ? 0.01 * mean : 0.0));
      }
      EXPECT_NEAR(product, i == j ? 1.0 : 0.0, 1e-9);
    }
  }
  std::vector<double> indefinite(n * n, 0.0);
  indefinite[0] = -1.0;
  EXPECT_FALSE(inverse_upper_cholesky(indefinite, n, 0.0, u));
}

TEST(Quantizer, ActivationScalesCoverEveryCalibrationInput) {
  const SiglipVisionConfig c = testing::head_dim_72_config();
  SiglipVisionWeights w = random_weights(c, 8);
  const std::uint32_t images = 4;
  const auto pixels = calibration_pixels(c, images, 6);
  Recorder recorder;
  (void)run_reference(w, pixels, images, &recorder);
  QuantizeOptions options;
  options.algorithm = Algorithm::kNearest;
  const auto record = quantize(w, Calibration{pixels, images}, options);
  const std::pair<const char*, LinearInput> linears[] = {
      {"self_attn.q_proj", LinearInput::kQkv}, {"self_attn.k_proj", LinearInput::kQkv},
      {"self_attn.v_proj", LinearInput::kQkv}, {"self_attn.out_proj", LinearInput::kOutProj},
      {"mlp.fc1", LinearInput::kFc1},          {"mlp.fc2", LinearInput::kFc2}};
  for (std::size_t layer = 0; layer < w.layers.size(); ++layer) {
    for (const auto& [linear, site] : linears) {
      const std::string name =
          "vision_model.encoder.layers." + std::to_string(layer) + "." + linear + ".weight";
      const auto& x = recorder.inputs.at({layer, site});
      const auto& scale = record.tensors.at(name).activation_scale;
      ASSERT_TRUE(scale.has_value()) << name;
      EXPECT_EQ(*scale, naive_scale(x)) << name;
      // No calibration input saturates at that scale, and one comes within
      // a factor of two of the top: the scale is as fine as it can be.
      float largest = 0.0F;
      for (const float v : x) largest = std::max(largest, std::fabs(v));
      EXPECT_LE(double{largest}, 240.0 * std::ldexp(1.0, *scale)) << name;
      EXPECT_GT(double{largest}, 120.0 * std::ldexp(1.0, *scale)) << name;
    }
  }
  // Without calibration there are none.
  SiglipVisionWeights plain = random_weights(c, 8);
  const auto uncalibrated = quantize(plain, std::nullopt, options);
  EXPECT_FALSE(uncalibrated.tensors.begin()->second.activation_scale.has_value());
}

TEST(Quantizer, BiasCorrectionKeepsEachLinearsMeanOutput) {
  const SiglipVisionConfig c = testing::tiny_config();
  SiglipVisionWeights w = random_weights(c, 8);
  const SiglipVisionWeights original = w;
  const std::uint32_t images = 6;
  const auto pixels = calibration_pixels(c, images, 3);
  Recorder recorder;
  (void)run_reference(original, pixels, images, &recorder);
  QuantizeOptions options;
  options.algorithm = Algorithm::kNearest;
  const auto record = quantize(w, Calibration{pixels, images}, options);
  EXPECT_TRUE(record.bias_correction);
  for (std::size_t layer = 0; layer < w.layers.size(); ++layer) {
    for (const Site& site : kSites) {
      const Linear& before = site.linear(original.layers[layer]);
      const Linear& after = site.linear(w.layers[layer]);
      const std::size_t out = before.weight.shape[0], in = before.weight.shape[1];
      const auto& x = recorder.inputs.at({layer, site.input});
      const std::size_t rows = x.size() / in;
      for (std::size_t o = 0; o < out; o += 7) {
        double mean_before = 0.0, mean_after = 0.0;
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::size_t i = 0; i < in; ++i) {
            mean_before += double{x[r * in + i]} * double{before.weight.values[o * in + i]};
            mean_after += double{x[r * in + i]} * double{after.weight.values[o * in + i]};
          }
        }
        mean_before = mean_before / static_cast<double>(rows) + double{before.bias.values[o]};
        mean_after = mean_after / static_cast<double>(rows) + double{after.bias.values[o]};
        EXPECT_NEAR(mean_after, mean_before, 1e-5) << site.name << " row " << o;
      }
    }
  }
}

TEST(Quantizer, LayerNormEqualizationKeepsTheFunctionAndNeverRaisesItsObjective) {
  const SiglipVisionConfig c = testing::head_dim_72_config();
  SiglipVisionWeights w = random_weights(c, 13);
  // Uneven LayerNorm gains, as trained towers have: equalization has work to do.
  NormalStream stream(77);
  for (auto& layer : w.layers) {
    for (float& g : layer.layer_norm1.weight.values) g *= static_cast<float>(std::exp(1.5 * stream.normal()));
    for (float& g : layer.layer_norm2.weight.values) g *= static_cast<float>(std::exp(1.5 * stream.normal()));
  }
  const std::uint32_t images = 4;
  const auto pixels = calibration_pixels(c, images, 1);
  const SiglipOutputs before = run_reference(w, pixels, images);
  CalibrationStatistics s = collect_statistics(w, pixels, images);
  bool equalized = false;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    auto& layer = w.layers[i];
    std::vector<Linear*> consumers = {&layer.self_attn.q_proj, &layer.self_attn.k_proj,
                                      &layer.self_attn.v_proj};
    const std::vector<const Linear*> view(consumers.begin(), consumers.end());
    const Equalization e = choose_equalization(view, s.layers[i].qkv);
    EXPECT_LE(e.objective, e.identity_objective);
    for (const float f : e.factors) {
      EXPECT_GE(f, kMinEqualization);
      EXPECT_LE(f, kMaxEqualization);
    }
    equalized |= e.alpha.has_value();
    apply_equalization(e.factors, layer.layer_norm1, consumers, s.layers[i].qkv);
  }
  EXPECT_TRUE(equalized);
  const SiglipOutputs after = run_reference(w, pixels, images);
  double worst = 0.0;
  for (std::size_t k = 0; k < before.pooler_output.size(); ++k) {
    worst = std::max(worst, std::fabs(double{before.pooler_output[k]} - double{after.pooler_output[k]}));
  }
  EXPECT_LT(worst, 1e-4);
}

TEST(Quantizer, NeedsCalibrationForGptqAndEqualizationAndFiniteWeights) {
  const SiglipVisionConfig c = testing::tiny_config();
  SiglipVisionWeights w = random_weights(c, 8);
  QuantizeOptions options;
  options.algorithm = Algorithm::kGptq;
  EXPECT_THROW(quantize(w, std::nullopt, options), UsageError);
  options.algorithm = Algorithm::kNearest;
  options.equalize_layernorm = true;
  EXPECT_THROW(quantize(w, std::nullopt, options), UsageError);
  options.equalize_layernorm = false;
  w.layers[1].mlp.fc2.weight.values[3] = NAN;
  try {
    quantize(w, std::nullopt, options);
    FAIL() << "a NaN weight was quantized";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("vision_model.encoder.layers.1.mlp.fc2.weight: element 3"),
              std::string::npos)
        << error.what();
  }
}

// ---- quantization.json ----------------------------------------------------

class QuantizedModel : public ::testing::Test {
 protected:
  QuantizedModel() {
    const SiglipVisionConfig c = testing::head_dim_72_config();
    weights_ = random_weights(c, 30);
    const auto pixels = calibration_pixels(c, 3, 2);
    QuantizeOptions options;
    record_ = quantize(weights_, Calibration{pixels, 3}, options);
    dir_ = scratch_.path("q");
    save_quantized_model(dir_, testing::config_json(c), weights_, record_);
    original_ = read_text_file(dir_ / "quantization.json", 1 << 26);
  }
  std::string error_after(const std::function<void(std::string&)>& edit) {
    std::string text = original_;  // each case edits the file as written
    edit(text);
    std::ofstream(dir_ / "quantization.json") << text;
    try {
      (void)read_quantization(dir_, load_model(dir_).weights);
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  }
  ScratchDirectory scratch_;
  std::filesystem::path dir_;
  SiglipVisionWeights weights_;
  QuantizationRecord record_;
  std::string original_;
};

TEST_F(QuantizedModel, ReEncodesLosslesslyAtTheRecordedScales) {
  const SiglipModel model = load_model(dir_);
  const auto f143 = read_quantization(dir_, model.weights);
  ASSERT_TRUE(f143.has_value());
  EXPECT_EQ(f143->size(), 12u);
  EXPECT_EQ(f143->size(), quantized_weight_names(model.weights.config).size());
  const auto& fc2 = model.weights.layers[1].mlp.fc2.weight;  // [144, 272]
  const auto& encoded = f143->at("vision_model.encoder.layers.1.mlp.fc2.weight");
  EXPECT_EQ(encoded.scales, record_.tensors.at("vision_model.encoder.layers.1.mlp.fc2.weight").scales);
  EXPECT_EQ(encoded.activation_scale,
            record_.tensors.at("vision_model.encoder.layers.1.mlp.fc2.weight").activation_scale);
  EXPECT_TRUE(encoded.activation_scale.has_value());
  EXPECT_EQ(encoded.scales.inner(), 272u);  // K = in
  EXPECT_EQ(encoded.scales.columns(), 144u);
  const auto decoded = kernels::f143::decode(encoded.codes, encoded.scales);
  for (std::size_t o = 0; o < 144; ++o) {
    for (std::size_t i = 0; i < 272; ++i) ASSERT_EQ(decoded[i * 144 + o], fc2.values[o * 272 + i]);
  }
  // A model without quantization.json has none.
  std::filesystem::remove(dir_ / "quantization.json");
  EXPECT_FALSE(read_quantization(dir_, model.weights).has_value());
}

TEST_F(QuantizedModel, EveryDefectIsAnErrorNamingTheTensor) {
  const std::string q = "vision_model.encoder.layers.0.self_attn.q_proj.weight";
  const auto replace = [](const std::string& from, const std::string& to) {
    return [from, to](std::string& text) {
      const auto at = text.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      text.replace(at, from.size(), to);
    };
  };
  EXPECT_NE(error_after(replace("\"k\": 64", "\"k\": 32")).find("block: is {\"k\":32,\"n\":64}"),
            std::string::npos);
  EXPECT_NE(error_after(replace("\"codec\": \"f143\"", "\"codec\": \"f8e4m3\"")).find("codec: is"),
            std::string::npos);
  EXPECT_NE(error_after(replace(q, "vision_model.head.probe")).find("tensors.vision_model.head.probe: is not a weight the quantizer rewrites"),
            std::string::npos);
  EXPECT_NE(error_after(replace("\"block_scales\": [", "\"block_scales\": [40, "))
                .find(": block_scales: 40 is not an F143 scale"),
            std::string::npos);
  EXPECT_NE(error_after(replace("\"block_scales\": [", "\"block_scales\": [4294967301, "))
                .find(": block_scales: 4294967301 is not an F143 scale"),
            std::string::npos);
  EXPECT_NE(error_after(replace("\"block_scales\": [", "\"block_scales\": [-3.5, "))
                .find(": block_scales: -3.5 is not an F143 scale"),
            std::string::npos);
  EXPECT_NE(error_after(replace("\"activation_scale\": ", "\"activation_scale\": 99, \"x\": "))
                .find("tensors.vision_model.encoder.layers.0.mlp.fc1.weight: activation_scale: 99 "
                      "is not an F143 scale"),
            std::string::npos);
  EXPECT_NE(error_after(replace("\"block_scales\": [", "\"block_scales\": [0, "))
                .find("tensors.vision_model.encoder.layers.0.mlp.fc1.weight: block_scales: has 16 scales, the [272, 144] weight has 15 64 x 64 blocks"),
            std::string::npos);
  // A scale is an exponent: JSON has no NaN, and an infinite one is no number.
  EXPECT_NE(error_after(replace("\"block_scales\": [", "\"block_scales\": [1e999, "))
                .find("is not valid JSON: [json.exception.out_of_range.406] number overflow parsing '1e999'"),
            std::string::npos);
  EXPECT_NE(error_after([](std::string& t) { t.resize(t.size() / 2); }).find("is not valid JSON"),
            std::string::npos);
  // A weight the checkpoint has and the quantizer rewrites, without a record.
  EXPECT_NE(error_after([&](std::string& t) {
              nlohmann::json j = nlohmann::json::parse(t);
              j["tensors"].erase(q);
              t = j.dump();
            }).find("quantization.json: tensors." + q + ": is missing"),
            std::string::npos);
}

// pack_vision_weights at f143 with the record binds the quantizer's own
// scales and codes for the 12 weights it rewrote (the CLI test checks them
// against an encoding of quantization.json written in the test); at f16 the
// record changes nothing.
TEST_F(QuantizedModel, PackingTakesTheRecordedScalesAndRefusesARecordThatDisagrees) {
  const SiglipModel model = load_model(dir_);
  auto recorded = read_quantization(dir_, model.weights);
  ASSERT_TRUE(recorded.has_value());
  const auto packed = pack_vision_weights(model.weights, GraphPrecision::kF143, &*recorded);
  const auto& fc1 = record_.tensors.at("vision_model.encoder.layers.1.mlp.fc1.weight").scales;  // K 144 × N 272
  const std::vector<std::uint8_t>& scales = packed.at("encoder.fc1.weight.scales");
  ASSERT_EQ(scales.size(), 2 * 15 * 4u);
  for (std::size_t b = 0; b < 15; ++b) {
    std::int32_t bound = 0;
    std::memcpy(&bound, scales.data() + (15 + b) * 4, 4);  // layer 1
    EXPECT_EQ(bound, fc1.scales()[b]) << b;
  }
  EXPECT_EQ(pack_vision_weights(model.weights, GraphPrecision::kF16, &*recorded),
            pack_vision_weights(model.weights, GraphPrecision::kF16));

  const std::string q = "vision_model.encoder.layers.1.self_attn.q_proj.weight";
  const auto error_of = [&](const RecordedF143& changed) -> std::string {
    try {
      (void)pack_vision_weights(model.weights, GraphPrecision::kF143, &changed);
    } catch (const InputError& error) {
      return error.what();
    }
    return "no error";
  };
  RecordedF143 missing = *recorded;
  missing.erase(q);
  EXPECT_NE(error_of(missing).find(q + ": has no block scales in the quantization record"),
            std::string::npos)
      << error_of(missing);
  RecordedF143 misshapen = *recorded;
  misshapen.at(q) = recorded->at("vision_model.encoder.layers.1.mlp.fc1.weight");
  EXPECT_NE(error_of(misshapen).find(q + ": its recorded F143 weight is [144, 272] with 39168 codes, "
                                         "the graph's [K, N] is [144, 144]"),
            std::string::npos)
      << error_of(misshapen);
}

TEST_F(QuantizedModel, AWeightOffItsGridIsAnErrorNamingIt) {
  SiglipVisionWeights changed = weights_;
  changed.layers[0].self_attn.v_proj.weight.values[145] *= 1.01F;
  save_model(dir_, testing::config_json(weights_.config), changed, SafeTensorsDType::kF32);
  try {
    (void)read_quantization(dir_, load_model(dir_).weights);
    FAIL() << "an off-grid weight was accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("tensors.vision_model.encoder.layers.0.self_attn.v_proj.weight: element [1, 1]"),
              std::string::npos)
        << error.what();
  }
}

// The activation scales the quantizer writes are the ones the f8 graph
// converts each projection's input at: for each projection the largest of
// its layers' recorded scales (one repeat body for all layers), read from
// quantization.json alone (compile) and with the weights (run) alike.
TEST_F(QuantizedModel, TheF8GraphConvertsEachProjectionsInputAtItsRecordedScale) {
  const SiglipVisionConfig& c = weights_.config;
  const std::pair<const char*, Projection> projections[] = {
      {"self_attn.q_proj", Projection::kQ}, {"self_attn.k_proj", Projection::kK},
      {"self_attn.v_proj", Projection::kV}, {"self_attn.out_proj", Projection::kOut},
      {"mlp.fc1", Projection::kFc1},        {"mlp.fc2", Projection::kFc2}};
  ActivationScales expected;
  for (const auto& [module, projection] : projections) {
    int largest = -100;
    for (std::size_t layer = 0; layer < c.num_hidden_layers; ++layer) {
      const auto& scale =
          record_.tensors
              .at("vision_model.encoder.layers." + std::to_string(layer) + "." + module + ".weight")
              .activation_scale;
      ASSERT_TRUE(scale.has_value()) << module;
      largest = std::max(largest, *scale);
    }
    expected.scales[static_cast<std::size_t>(projection)] = largest;
  }
  const ActivationScales read = read_f8_activation_scales(dir_, c);
  EXPECT_EQ(read, expected);
  EXPECT_EQ(f8_activation_scales(
                c, recorded_activation_scales(*read_quantization(dir_, load_model(dir_).weights))),
            expected);

  // In the graph: the matmul of each projection's weight (the repeat body's
  // sequence argument, after the carried hidden state) takes an f8 input at
  // that projection's scale, converted from f16.
  const compiler::Graph graph = build_vision_graph(c, 1, GraphPrecision::kF8, &read);
  const auto repeats = graph.top_level(compiler::OpKind::kRepeat);
  ASSERT_EQ(repeats.size(), 1u);
  const auto& body = graph.block(
      std::get<compiler::RepeatAttributes>(graph.operation(repeats[0]).attributes).body);
  const std::pair<std::size_t, Projection> weights[] = {
      {2, Projection::kQ},   {4, Projection::kK},    {6, Projection::kV},
      {8, Projection::kOut}, {12, Projection::kFc1}, {14, Projection::kFc2}};
  for (const auto& [sequence, projection] : weights) {
    std::size_t found = 0;
    for (const compiler::OpId id : body.operations) {
      const compiler::Operation& op = graph.operation(id);
      if (op.kind != compiler::OpKind::kMatmul || op.inputs[1] != body.arguments[1 + sequence])
        continue;
      ++found;
      const compiler::TensorType& a = graph.type(op.inputs[0]);
      EXPECT_EQ(a.element, (compiler::ElementType{schema::DType::kF8F143, expected[projection]}))
          << projection_module(projection);
      const compiler::Operation& producer = graph.operation(*graph.value(op.inputs[0]).op);
      EXPECT_EQ(producer.kind, compiler::OpKind::kConvert);
      EXPECT_EQ(graph.type(producer.inputs[0]).dtype(), schema::DType::kF16);
    }
    EXPECT_EQ(found, 1u) << projection_module(projection);
  }
}

// A model without activation scales at f8 is one error naming the weight
// (or the directory) and saying how to get them.
TEST_F(QuantizedModel, F8WithoutActivationScalesSaysToCalibrate) {
  const auto error_of = [&] {
    try {
      (void)read_f8_activation_scales(dir_, weights_.config);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  nlohmann::json record = nlohmann::json::parse(original_);
  const std::string fc2 = "vision_model.encoder.layers.1.mlp.fc2.weight";
  record["tensors"][fc2]["activation_scale"] = nullptr;
  std::ofstream(dir_ / "quantization.json") << record.dump();
  const std::string null_scale = error_of();
  EXPECT_NE(null_scale.find("quantization.json: tensors." + fc2 +
                            ": has no activation scale: "
                            "--precision f8 quantises each projection's input"),
            std::string::npos)
      << null_scale;
  EXPECT_NE(null_scale.find("tessera siglip quantize --model DIR --calibration PIXELS.npy"),
            std::string::npos)
      << null_scale;
  // The quantizer without calibration writes null for every weight: the
  // first in module order is named.
  SiglipVisionWeights plain = random_weights(weights_.config, 30);
  QuantizeOptions options;
  options.algorithm = Algorithm::kNearest;
  save_quantized_model(dir_, testing::config_json(weights_.config), plain,
                       quantize(plain, std::nullopt, options));
  EXPECT_NE(error_of().find("tensors.vision_model.encoder.layers.0.self_attn.q_proj.weight: has no "
                            "activation scale"),
            std::string::npos)
      << error_of();
  std::filesystem::remove(dir_ / "quantization.json");
  EXPECT_NE(error_of().find(dir_.string() + " has no quantization.json, so no activation scales: "
                                            "--precision f8"),
            std::string::npos)
      << error_of();
}

}  // namespace
}  // namespace tessera::models::siglip::quantizer
