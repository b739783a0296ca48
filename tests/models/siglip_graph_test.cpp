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
#include "kernels/half.hpp"
#include "models/siglip/compare.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/reference.hpp"
#include "support/error.hpp"
#include "tests/models/siglip_testing.hpp"
#include "tests/testing/graph_reference.hpp"

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
                 std::uint32_t batch, GraphPrecision precision) {
  const compiler::Graph graph = build_vision_graph(weights.config, batch, precision);
  compiler::verify(graph);
  tessera::testing::TensorBytes bindings;
  for (auto& [name, bytes] : pack_vision_weights(weights, precision)) bindings[name] = std::move(bytes);
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

// F143 GEMM weights (one scale per 64 × 64 block) with f16 activations: the
// issue's bars for so400m at f143 are pooled cosine ≥ 0.995 and hidden
// ≥ 0.99; the tiny towers here meet the pooled bar on both outputs
// (measured 0.9963–0.9984, max error ≤ 0.23).
TEST(SiglipGraph, F143GraphIsWithinTheQuantizationBoundsOfTheCpuReference) {
  expect_matches_reference(testing::tiny_config(), 1, GraphPrecision::kF143, 0.995, 0.5);
  expect_matches_reference(testing::head_dim_72_config(), 1, GraphPrecision::kF143, 0.995, 0.5);
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
  EXPECT_EQ(attributes.sequence, 16u);  // 2 LayerNorms, 4 projections, 2 MLP linears: weight + bias each
  EXPECT_EQ(two.top().operations.size(), many.top().operations.size());
  EXPECT_THROW(build_vision_graph(config, 0, GraphPrecision::kF16), UsageError);
}

}  // namespace
}  // namespace tessera::models::siglip
