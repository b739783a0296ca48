// Whether a tower's weights fit (models/siglip/fit.hpp), from its config
// alone. The bytes are checked against counts written here from the
// checkpoint's shapes (parameter_count, weights.cpp's owner, and the F143
// layout: one code byte per element, one i32 scale per 64 × 64 block of each
// GEMM weight), and against the bytes pack_vision_weights actually produces;
// the SRAM figure against the memory map's addresses, worked by hand.
#include "models/siglip/fit.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/plan/attention_plan.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/weights.hpp"
#include "support/error.hpp"
#include "tests/models/siglip_testing.hpp"

namespace tessera::models::siglip {
namespace {

using ::testing::HasSubstr;

constexpr std::uint32_t kAllTiles = 1472;

SiglipVisionConfig so400m() {
  SiglipVisionConfig c;
  c.hidden_size = 1152;
  c.intermediate_size = 4304;
  c.num_hidden_layers = 27;
  c.num_attention_heads = 16;
  c.patch_size = 14;
  c.image_size = 384;
  return c;
}

// The acceptance's f16 model: transformers' SiglipVisionConfig defaults are
// SigLIP base (hidden 768, intermediate 3072, 12 layers, 12 heads, patch 16,
// image 224); spelled out so a change of defaults cannot move it.
SiglipVisionConfig base() {
  SiglipVisionConfig c;
  c.hidden_size = 768;
  c.intermediate_size = 3072;
  c.num_hidden_layers = 12;
  c.num_attention_heads = 12;
  c.patch_size = 16;
  c.image_size = 224;
  return c;
}

// 48 layers of hidden 2048: 2.4 G parameters, over 2 GB even at one byte each.
SiglipVisionConfig too_large() {
  SiglipVisionConfig c;
  c.hidden_size = 2048;
  c.intermediate_size = 8192;
  c.num_hidden_layers = 48;
  c.num_attention_heads = 16;
  c.patch_size = 14;
  c.image_size = 224;
  return c;
}

// The tower's GEMM weights as [K, N] with their multiplicity and whether
// they are an encoder layer's projections, from the module list: the patch
// embedding, each layer's q, k, v, out, fc1, fc2, the head's q, k, v (thirds
// of in_proj), out, fc1, fc2.
struct GemmWeights {
  std::uint64_t k, n, count;
  bool encoder;
};
std::vector<GemmWeights> gemm_weights(const SiglipVisionConfig& c) {
  const std::uint64_t h = c.hidden_size, i = c.intermediate_size, l = c.num_hidden_layers;
  std::vector<GemmWeights> w = {
      {std::uint64_t{c.num_channels} * c.patch_size * c.patch_size, h, 1, false},
      {h, h, 4 * l, true},
      {h, i, l, true},
      {i, h, l, true}};
  if (c.vision_use_head) {
    w.push_back({h, h, 4, false});
    w.push_back({h, i, 1, false});
    w.push_back({i, h, 1, false});
  }
  return w;
}

// f143 (panels m = 16), or with m = 32 f8, whose encoder projections feed
// the native FP8 GEMM: the encoder layers' GEMM weights are F143 codes.
std::uint64_t expected_f143_bytes(const SiglipVisionConfig& c, std::uint64_t m = 16) {
  std::uint64_t f143_elements = 0, codes = 0, scales = 0;
  for (const auto& w : gemm_weights(c)) {
    if (!w.encoder) continue;
    f143_elements += w.k * w.n * w.count;
    // The codes come in m × 16 weight panels: K padded to m, N to 16.
    codes += ((w.k + m - 1) / m * m) * ((w.n + 15) / 16 * 16) * w.count;
    scales += ((w.k + 63) / 64) * ((w.n + 63) / 64) * w.count;
  }
  // Every other parameter (the patch embedding, the head's weights, biases,
  // LayerNorms, the position embedding, the probe) stays f16.
  return codes + 4 * scales + 2 * (parameter_count(c) - f143_elements);
}

TEST(SiglipFit, WeightBytesAreEveryParameterAtItsPrecision) {
  for (const SiglipVisionConfig& c :
       {testing::tiny_config(), testing::head_dim_72_config(), base(), so400m()}) {
    SCOPED_TRACE(describe(c));
    EXPECT_EQ(vision_weight_bytes(c, GraphPrecision::kF32), 4 * parameter_count(c));
    EXPECT_EQ(vision_weight_bytes(c, GraphPrecision::kF16), 2 * parameter_count(c));
    EXPECT_EQ(vision_weight_bytes(c, GraphPrecision::kF143), expected_f143_bytes(c));
    EXPECT_EQ(vision_weight_bytes(c, GraphPrecision::kF8), expected_f143_bytes(c, 32));
  }
  // The figures the docs quote.
  EXPECT_EQ(parameter_count(so400m()), 428'225'600u);
  EXPECT_EQ(vision_weight_bytes(so400m(), GraphPrecision::kF16), 856'451'200u);
  EXPECT_EQ(vision_weight_bytes(so400m(), GraphPrecision::kF143), 445'785'088u);
  // (and at f8 fc2's K, 4304, padded to 4320 in the native GEMM's panels.)
  EXPECT_EQ(vision_weight_bytes(so400m(), GraphPrecision::kF8), 445'785'088u + 27u * 16 * 1152);
  EXPECT_EQ(vision_weight_bytes(base(), GraphPrecision::kF16), 185'768'448u);
}

// What the check counts is what the host packs and binds.
TEST(SiglipFit, WeightBytesAreWhatPackingProduces) {
  SiglipVisionConfig no_head = testing::head_dim_72_config();
  no_head.vision_use_head = false;
  for (const SiglipVisionConfig& c : {testing::tiny_config(), no_head}) {
    const SiglipVisionWeights weights = random_weights(c, 3);
    for (const GraphPrecision p :
         {GraphPrecision::kF32, GraphPrecision::kF16, GraphPrecision::kF143, GraphPrecision::kF8}) {
      std::uint64_t packed = 0;
      for (const auto& [name, bytes] : pack_vision_weights(weights, p)) packed += bytes.size();
      EXPECT_EQ(vision_weight_bytes(c, p), packed) << precision_name(p);
    }
  }
}

// Placement offers a tile [0x4C018, 0x50000) and [0x5C000, 0x80000) in
// region 0 and [0x80000, 0xE7BB0) in region 1 (target/memory_map.hpp); all of
// region 0 is kept for code and exchange rows, 64 KiB of region 1 for
// activations.
TEST(SiglipFit, FreeSramIsRegionOneLessTheActivationReserveOnEveryTile) {
  const WeightMemory all = weight_memory(kAllTiles);
  EXPECT_EQ(all.tile_bytes, (0x50000u - 0x4C018u) + (0x80000u - 0x5C000u) + (0xE7BB0u - 0x80000u));
  EXPECT_EQ(all.code_reserve, (0x50000u - 0x4C018u) + (0x80000u - 0x5C000u));
  EXPECT_EQ(all.per_tile(), 0xE7BB0u - 0x80000u - 65536u);
  EXPECT_EQ(all.per_tile(), 359'344u);
  EXPECT_EQ(all.free_bytes(), 528'954'368u);
  EXPECT_EQ(weight_memory(64).free_bytes(), 64u * 359'344u);
  EXPECT_THROW((void)weight_memory(0), UsageError);
  EXPECT_THROW((void)weight_memory(kAllTiles + 1), UsageError);
}

TEST(SiglipFit, So400mFitsAtF143AndF8ButNotAtF16) {
  EXPECT_NO_THROW(require_weights_fit(so400m(), GraphPrecision::kF143, kAllTiles));
  EXPECT_NO_THROW(require_weights_fit(so400m(), GraphPrecision::kF8, kAllTiles));
  EXPECT_EQ(precision_that_fits(so400m(), kAllTiles), GraphPrecision::kF143);
  for (const GraphPrecision p : {GraphPrecision::kF16, GraphPrecision::kF32}) {
    try {
      require_weights_fit(so400m(), p, kAllTiles);
      ADD_FAILURE() << "so400m fitted at " << precision_name(p);
    } catch (const WeightsDoNotFit& error) {
      EXPECT_EQ(error.needed(), p == GraphPrecision::kF16 ? 856'451'200u : 1'712'902'400u);
      EXPECT_EQ(error.free_bytes(), 528'954'368u);
      EXPECT_EQ(error.would_fit(), GraphPrecision::kF143);
      const std::string text = error.what();
      EXPECT_NE(text.find(fmt::format("the weights at {} need {} bytes", precision_name(p),
                                      error.needed())),
                std::string::npos)
          << text;
      EXPECT_NE(text.find("1472 tiles have 528954368 bytes of SRAM free for weights"),
                std::string::npos)
          << text;
      EXPECT_NE(text.find("--precision f143 would fit (445785088 bytes)"), std::string::npos)
          << text;
    }
  }
}

// The acceptance's "f16 for every model whose weights fit": SigLIP base's
// 93 M parameters (86 M without the pooling head) are 186 MB at f16 against
// 529 MB free; even f32 fits.
TEST(SiglipFit, BaseFitsAtF16) {
  EXPECT_NO_THROW(require_weights_fit(base(), GraphPrecision::kF16, kAllTiles));
  EXPECT_NO_THROW(require_weights_fit(base(), GraphPrecision::kF143, kAllTiles));
  EXPECT_EQ(precision_that_fits(base(), kAllTiles), GraphPrecision::kF32);
}

TEST(SiglipFit, AModelThatFitsNowhereSaysSo) {
  const SiglipVisionConfig c = too_large();
  EXPECT_EQ(precision_that_fits(c, kAllTiles), std::nullopt);
  try {
    require_weights_fit(c, GraphPrecision::kF143, kAllTiles);
    ADD_FAILURE() << "a 2.4 G-parameter tower fitted";
  } catch (const WeightsDoNotFit& error) {
    EXPECT_EQ(error.needed(), expected_f143_bytes(c));
    EXPECT_EQ(error.would_fit(), std::nullopt);
    EXPECT_NE(std::string(error.what())
                  .find(fmt::format("no precision fits (f143, the smallest, needs {} bytes)",
                                    expected_f143_bytes(c))),
              std::string::npos)
        << error.what();
  }
}

// The budget is the tiles the compile spreads the model over: the tiny
// tower's 113,408 parameters are 453,632 bytes at f32, more than one tile's
// 359,344, and 226,816 at f16.
TEST(SiglipFit, TheBudgetScalesWithTheTiles) {
  const SiglipVisionConfig c = testing::tiny_config();
  const std::uint64_t f32 = vision_weight_bytes(c, GraphPrecision::kF32);
  const std::uint64_t f16 = vision_weight_bytes(c, GraphPrecision::kF16);
  ASSERT_EQ(f32, 453'632u);
  ASSERT_EQ(f16, 226'816u);
  EXPECT_EQ(precision_that_fits(c, 1), GraphPrecision::kF16);
  EXPECT_THROW(require_weights_fit(c, GraphPrecision::kF32, 1), WeightsDoNotFit);
  EXPECT_NO_THROW(require_weights_fit(c, GraphPrecision::kF32, 2));
}

// Attention's buffers get what a tile's weights and the layer leave: so400m
// at f143 binds 445,785,088 bytes to 1472 tiles, 302,844 per tile rounded
// up, and a tile offers 588,696, so 588,696 − 302,844 − 131,072 = 154,780
// at batch 1. Under it, no batch gets the blocking the planner's own budget
// allows (batch 2's 228 KB one overfilled 60 tiles; batch 1's streams key
// blocks of 92 keys, more than is left). Larger batches hold back what they
// were found to place with (32, 80 and 64 KiB more at batches 2, 3 and 4),
// then 32 KiB more per image: at batch 7 nothing is left, a clear error, not
// the planner's. A tiny tower leaves
// more than the planner's budget.
TEST(SiglipFit, AttentionGetsWhatTheWeightsAndTheLayerLeave) {
  const auto memory = [](std::uint32_t batch) {
    return attention_working_memory(so400m(), GraphPrecision::kF143, kAllTiles, batch);
  };
  EXPECT_EQ(memory(1), 154'780u);
  EXPECT_EQ(memory(2), 122'012u);
  EXPECT_EQ(memory(3), 72'860u);
  EXPECT_EQ(memory(4), 89'244u);
  EXPECT_EQ(memory(5), 56'476u);
  EXPECT_EQ(memory(6), 23'708u);
  try {
    (void)memory(7);
    ADD_FAILURE() << "batch 7 left attention memory";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("batch 7 does not fit on 1472 tiles at f143"));
    EXPECT_THAT(error.what(), HasSubstr("reserved 294912"));
  }
  EXPECT_EQ(layer_reserve_per_tile(1), kLayerReservePerTile);
  EXPECT_EQ(layer_reserve_per_tile(5), layer_reserve_per_tile(4) + kLayerReservePerExtraImage);
  EXPECT_EQ(attention_working_memory(testing::tiny_config(), GraphPrecision::kF16, kAllTiles, 4),
            compiler::plan::kWorkingMemoryBudget);
  const auto plan = [&](std::uint32_t batch, std::optional<std::uint64_t> working_memory) {
    compiler::plan::AttentionPlanOptions options;
    options.working_memory = working_memory;
    return compiler::plan::plan_attention({batch, 16, 729, 729, 72}, kAllTiles, options);
  };
  for (const std::uint32_t batch : {1u, 2u, 3u, 4u}) {
    EXPECT_LE(plan(batch, memory(batch)).buffers.per_tile, memory(batch)) << "batch " << batch;
    EXPECT_GT(plan(batch, std::nullopt).buffers.per_tile, memory(batch)) << "batch " << batch;
  }
  EXPECT_THROW((void)attention_working_memory(so400m(), GraphPrecision::kF143, 0, 1), UsageError);
}

TEST(SiglipFit, AnInvalidConfigIsAnInputError) {
  SiglipVisionConfig c = testing::tiny_config();
  c.num_attention_heads = 3;  // does not divide 64
  EXPECT_THROW((void)vision_weight_bytes(c, GraphPrecision::kF16), InputError);
}

}  // namespace
}  // namespace tessera::models::siglip
