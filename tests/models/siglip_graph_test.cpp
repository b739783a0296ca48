// The SigLIP graph (models/siglip/graph.hpp) evaluated by the compiler's CPU
// reference interpreter (tests/testing/graph_reference) against the
// independent FP32 reference of the tower (models/siglip/reference): two
// implementations that share nothing but the weights, so a wrong patch
// order, transpose, head split, residual or head wiring shows here before
// the graph is ever compiled.
#include "models/siglip/graph.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "compiler/ir/verifier.hpp"
#include "kernels/f143.hpp"
#include "kernels/half.hpp"
#include "models/checkpoint.hpp"
#include "models/siglip/activation_scales.hpp"
#include "models/siglip/compare.hpp"
#include "models/siglip/quantizer/quantize.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/reference.hpp"
#include "support/error.hpp"
#include "tests/models/siglip_testing.hpp"
#include "tests/testing/graph_reference.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::models::siglip {
namespace {

std::vector<float> random_pixels(const SiglipVisionConfig& c, std::uint32_t batch, std::uint64_t seed) {
  NormalStream stream(seed);
  std::vector<float> pixels(std::size_t{batch} * c.num_channels * c.image_size * c.image_size);
  for (float& p : pixels) p = static_cast<float>(std::tanh(stream.normal()));  // in (−1, 1)
  return pixels;
}

std::vector<float> as_floats(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

struct Outputs {
  std::vector<float> hidden, pooled;
};

Outputs evaluate(const SiglipVisionWeights& weights, const std::vector<float>& pixels,
                 std::uint32_t batch, GraphPrecision precision,
                 const RecordedF143* recorded = nullptr,
                 const ActivationScales* activations = nullptr) {
  const compiler::Graph graph = build_vision_graph(weights.config, batch, precision, activations);
  compiler::verify(graph);
  tessera::testing::TensorBytes bindings;
  for (auto& [name, bytes] : pack_vision_weights(weights, precision, recorded))
    bindings[name] = std::move(bytes);
  std::vector<std::uint8_t> pixel_bytes(pixels.size() * 4);
  std::memcpy(pixel_bytes.data(), pixels.data(), pixel_bytes.size());
  bindings[std::string(kPixelValues)] = std::move(pixel_bytes);
  const tessera::testing::TensorBytes out = tessera::testing::evaluate_graph(graph, bindings);
  Outputs result{as_floats(out.at(std::string(kLastHiddenState))), {}};
  if (out.contains(std::string(kPoolerOutput))) result.pooled = as_floats(out.at(std::string(kPoolerOutput)));
  return result;
}

void expect_matches_reference(const SiglipVisionConfig& config, std::uint32_t batch,
                              GraphPrecision precision, double min_cosine, double max_error) {
  const SiglipVisionWeights weights = random_weights(config, 7);
  const std::vector<float> pixels = random_pixels(config, batch, 11);
  const SiglipOutputs expected = run_reference(weights, pixels, batch);
  const Outputs got = evaluate(weights, pixels, batch, precision);
  const Agreement hidden = compare_outputs(got.hidden, expected.last_hidden_state);
  EXPECT_TRUE(hidden.finite);
  EXPECT_GE(hidden.cosine, min_cosine);
  EXPECT_LE(hidden.max_abs_error, max_error);
  ASSERT_EQ(got.pooled.size(), expected.pooler_output.size());
  if (!got.pooled.empty()) {
    const Agreement pooled = compare_outputs(got.pooled, expected.pooler_output);
    EXPECT_TRUE(pooled.finite);
    EXPECT_GE(pooled.cosine, min_cosine);
    EXPECT_LE(pooled.max_abs_error, max_error);
  }
}

// f32: the interpreter computes matmul, attention, LayerNorm and GeLU in f64
// rounded once, the reference in f32 with BLAS; over two layers they agree
// to < 1e-5 of the O(1) activations (measured), bounded here at 1e-4.
TEST(SiglipGraph, F32GraphEqualsTheCpuReference) {
  expect_matches_reference(testing::tiny_config(), 2, GraphPrecision::kF32, 0.999999, 1e-4);
}

TEST(SiglipGraph, F32GraphWithHeadDim72EqualsTheCpuReference) {
  expect_matches_reference(testing::head_dim_72_config(), 1, GraphPrecision::kF32, 0.999999, 1e-4);
}

TEST(SiglipGraph, WithoutTheHeadThereIsNoPooledOutput) {
  SiglipVisionConfig config = testing::tiny_config();
  config.vision_use_head = false;
  expect_matches_reference(config, 1, GraphPrecision::kF32, 0.999999, 1e-4);
}

// f16 weights and activations (every op rounds to f16): the bar for
// a model that fits at f16 is pooled cosine ≥ 0.999 (measured here 0.9999992,
// max error 0.005).
TEST(SiglipGraph, F16GraphIsWithinF16OfTheCpuReference) {
  expect_matches_reference(testing::tiny_config(), 1, GraphPrecision::kF16, 0.9999, 0.02);
}

// F143 encoder weights (one scale per 64 × 64 block) with f16 activations:
// the bars for so400m at f143 are pooled cosine ≥ 0.995 and hidden
// ≥ 0.99; the tiny towers here meet the pooled bar on both outputs
// (measured 0.9985–0.9994, max error ≤ 0.25).
TEST(SiglipGraph, F143GraphIsWithinTheQuantizationBoundsOfTheCpuReference) {
  expect_matches_reference(testing::tiny_config(), 1, GraphPrecision::kF143, 0.995, 0.5);
  expect_matches_reference(testing::head_dim_72_config(), 1, GraphPrecision::kF143, 0.995, 0.5);
}

// f8: a model quantized with calibration inputs (nearest, 4 images other
// than the evaluated ones), its record read back from the directory the
// quantizer writes, evaluated against the FP32 reference of the quantized
// weights — so what is measured is the f8 graph's own cost: F143 inputs to
// the six encoder projections at the recorded activation scales (the
// largest over the layers), f16 elsewhere. The prior art's bar for its
// native mode, and the for so400m at f8, is pooled cosine ≥ 0.99:
// measured 0.99938 and 0.99956 pooled, 0.99849 and 0.99905 hidden (max
// error 0.09 and 0.08) — F143 activations cost little beyond F143 weights.
// Scales 4 too small (inputs saturating) measure 0.70 and 0.33.
TEST(SiglipGraph, F8GraphIsWithinTheQuantizationBoundsOfTheCpuReference) {
  for (const SiglipVisionConfig& config : {testing::tiny_config(), testing::head_dim_72_config()}) {
    SCOPED_TRACE(config.hidden_size);
    SiglipVisionWeights weights = random_weights(config, 7);
    const std::vector<float> calibration = random_pixels(config, 4, 3);
    quantizer::QuantizeOptions options;
    options.algorithm = quantizer::Algorithm::kNearest;
    const auto record =
        quantizer::quantize(weights, quantizer::Calibration{calibration, 4}, options);
    const tessera::testing::ScratchDirectory scratch;
    quantizer::save_quantized_model(scratch.path("q"), testing::config_json(config), weights,
                                    record);
    const SiglipModel model = load_model(scratch.path("q"));
    const auto recorded = quantizer::read_quantization(scratch.path("q"), model.weights);
    ASSERT_TRUE(recorded.has_value());
    const ActivationScales activations =
        f8_activation_scales(config, recorded_activation_scales(*recorded));

    const std::vector<float> pixels = random_pixels(config, 1, 11);
    const SiglipOutputs expected = run_reference(model.weights, pixels, 1);
    const Outputs got =
        evaluate(model.weights, pixels, 1, GraphPrecision::kF8, &*recorded, &activations);
    const Agreement hidden = compare_outputs(got.hidden, expected.last_hidden_state);
    const Agreement pooled = compare_outputs(got.pooled, expected.pooler_output);
    EXPECT_TRUE(hidden.finite);
    EXPECT_TRUE(pooled.finite);
    EXPECT_GE(hidden.cosine, 0.99);
    EXPECT_GE(pooled.cosine, 0.99);
    EXPECT_LE(pooled.max_abs_error, 0.5);
  }
}

// At f143 and f8 the encoder layers' linear weights — the quantizer's set —
// are F143 codes and block scales; the patch embedding's and the head's
// GEMM weights stay f16 (graph.cpp, f143_encoded: F143 on them cost so400m's
// pooled cosine as much as on all its layers).
TEST(SiglipGraph, F143AndF8EncodeTheEncoderProjectionsOnly) {
  const SiglipVisionConfig config = testing::tiny_config();
  const SiglipVisionWeights weights = random_weights(config, 7);
  for (const GraphPrecision precision : {GraphPrecision::kF143, GraphPrecision::kF8}) {
    SCOPED_TRACE(static_cast<int>(precision));
    const auto packed = pack_vision_weights(weights, precision);
    // Hidden 64, a whole scale block: q, k and v are one weight (fuses_qkv).
    for (const char* name : {"encoder.qkv_proj.weight", "encoder.out_proj.weight", "encoder.fc1.weight",
                             "encoder.fc2.weight"}) {
      EXPECT_TRUE(packed.contains(std::string(name) + ".codes")) << name;
      EXPECT_TRUE(packed.contains(std::string(name) + ".scales")) << name;
      EXPECT_FALSE(packed.contains(name)) << name;
    }
    const std::uint64_t h = config.hidden_size, i = config.intermediate_size;
    const std::uint64_t patch = std::uint64_t{config.num_channels} * config.patch_size * config.patch_size;
    const std::pair<const char*, std::uint64_t> f16_weights[] = {
        {"embeddings.patch_embedding.weight", patch * h},
        {"head.q_proj.weight", h * h}, {"head.k_proj.weight", h * h}, {"head.v_proj.weight", h * h},
        {"head.out_proj.weight", h * h}, {"head.fc1.weight", h * i}, {"head.fc2.weight", i * h}};
    for (const auto& [name, elements] : f16_weights) {
      ASSERT_TRUE(packed.contains(name)) << name;
      EXPECT_EQ(packed.at(name).size(), 2 * elements) << name;
      EXPECT_FALSE(packed.contains(std::string(name) + ".codes")) << name;
    }
  }
}

// Fused (hidden 64: fuses_qkv), q, k and v are one [H, 3H] weight. A
// quantized model's record holds each projection's codes and scales on its
// own; packed with the record, the fused weight must be exactly what F143
// chosen afresh on the fused values gives (each 64 × 64 block lies in one
// projection, and a block's scale depends on its values alone) — a wrong
// interleaving of the three records' rows or scale rows fails. And a
// record whose q, k, v activation scales differ cannot build the f8 graph.
TEST(SiglipGraph, FusedQkvPacksTheThreeRecordsSideBySide) {
  const SiglipVisionConfig config = testing::tiny_config();
  const SiglipVisionWeights weights = random_weights(config, 11);
  RecordedF143 recorded;
  for_each_tensor(weights, [&](const std::string& name, const FloatTensor& tensor) {
    if (name.find("vision_model.encoder.layers.") != 0 || tensor.shape.size() != 2) return;
    const auto out = static_cast<std::uint32_t>(tensor.shape[0]), in = static_cast<std::uint32_t>(tensor.shape[1]);
    std::vector<float> kn(tensor.values.size());  // [in, out]: the GEMM's [K, N]
    for (std::uint32_t r = 0; r < out; ++r) {
      for (std::uint32_t c = 0; c < in; ++c) kn[std::size_t{c} * out + r] = tensor.values[std::size_t{r} * in + c];
    }
    const auto scales = kernels::f143::BlockScales::choose(kn, in, out);
    recorded.emplace(name, quantizer::F143Weight{scales, kernels::f143::encode(kn, scales), std::nullopt});
  });
  for (const GraphPrecision precision : {GraphPrecision::kF143, GraphPrecision::kF8}) {
    const auto bound = pack_vision_weights(weights, precision, &recorded);
    const auto fresh = pack_vision_weights(weights, precision);
    for (const char* name : {"encoder.qkv_proj.weight.codes", "encoder.qkv_proj.weight.scales"}) {
      ASSERT_TRUE(bound.contains(name)) << name;
      EXPECT_EQ(bound.at(name), fresh.at(name)) << name;
    }
  }
  ActivationScales scales;
  scales.scales.fill(0);
  scales.scales[static_cast<std::size_t>(Projection::kV)] = 1;
  try {
    (void)build_vision_graph(config, 1, GraphPrecision::kF8, &scales);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("the activation scales of q, k and v are 0, 0 and 1"),
              std::string::npos)
        << error.what();
  }
}

// f8 needs its activation scales, in the F143 range.
TEST(SiglipGraph, F8NeedsValidActivationScales) {
  const SiglipVisionConfig config = testing::tiny_config();
  EXPECT_THROW(build_vision_graph(config, 1, GraphPrecision::kF8), UsageError);
  ActivationScales scales;
  scales.scales[static_cast<std::size_t>(Projection::kFc2)] = 32;
  try {
    (void)build_vision_graph(config, 1, GraphPrecision::kF8, &scales);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("the activation scale of mlp.fc2 is 32, outside the F143 range"),
              std::string::npos)
        << error.what();
  }
  scales.scales[static_cast<std::size_t>(Projection::kFc2)] = 31;
  compiler::verify(build_vision_graph(config, 1, GraphPrecision::kF8, &scales));
}

// The encoder is ONE repeat whose weights are sequence values [L, …]: the
// graph does not grow with the layer count.
TEST(SiglipGraph, AllLayersAreOneRepeatOverSequenceWeights) {
  SiglipVisionConfig config = testing::tiny_config();
  const compiler::Graph two = build_vision_graph(config, 1, GraphPrecision::kF16);
  config.num_hidden_layers = 27;
  const compiler::Graph many = build_vision_graph(config, 1, GraphPrecision::kF16);
  const auto repeats = many.top_level(compiler::OpKind::kRepeat);
  ASSERT_EQ(repeats.size(), 1u);
  const auto& attributes = std::get<compiler::RepeatAttributes>(many.operation(repeats[0]).attributes);
  EXPECT_EQ(attributes.count, 27u);
  // 2 LayerNorms, q/k/v fused and out (hidden 64: fuses_qkv), 2 MLP linears:
  // weight + bias each.
  EXPECT_EQ(attributes.sequence, 12u);
  EXPECT_EQ(two.top().operations.size(), many.top().operations.size());
  EXPECT_THROW(build_vision_graph(config, 0, GraphPrecision::kF16), UsageError);
  // Hidden 144 is not whole scale blocks: q, k and v stay three projections.
  const compiler::Graph apart = build_vision_graph(testing::head_dim_72_config(), 1, GraphPrecision::kF16);
  const auto& unfused = std::get<compiler::RepeatAttributes>(
      apart.operation(apart.top_level(compiler::OpKind::kRepeat)[0]).attributes);
  EXPECT_EQ(unfused.sequence, 16u);
}

}  // namespace
}  // namespace tessera::models::siglip
