// Model directories: one model.safetensors or a sharded index, and the
// weights of the vision tower loaded from them in F32, F16 and BF16, with
// every missing or misshapen tensor one error naming it.
#include "models/checkpoint.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "models/siglip/weights.hpp"
#include "support/error.hpp"
#include "tests/models/siglip_testing.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::models::siglip {
namespace {

using tessera::testing::ScratchDirectory;

std::string load_error(const std::filesystem::path& directory) {
  try {
    (void)load_model(directory);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

// Writes the weights as safetensors in `directory`, through `edit` first.
void write_tensors(const std::filesystem::path& directory, const SiglipVisionWeights& weights,
                   const std::function<void(std::vector<SafeTensorsEntry>&)>& edit,
                   const std::string& file = "model.safetensors") {
  std::vector<SafeTensorsEntry> entries;
  for_each_tensor(weights, [&](const std::string& name, const FloatTensor& tensor) {
    entries.push_back(
        {name,
         SafeTensorsDType::kF32,
         tensor.shape,
         {reinterpret_cast<const std::uint8_t*>(tensor.values.data()), tensor.values.size() * 4}});
  });
  edit(entries);
  write_safetensors(directory / file, entries);
}

TEST(SiglipWeights, LoadF32F16AndBf16CheckpointsExactly) {
  const SiglipVisionConfig config = testing::head_dim_72_config();
  for (const auto dtype :
       {SafeTensorsDType::kF32, SafeTensorsDType::kF16, SafeTensorsDType::kBF16}) {
    ScratchDirectory scratch;
    const SiglipVisionWeights written =
        testing::write_random_model(scratch.path("m"), config, 7, dtype);
    const SiglipModel model = load_model(scratch.path("m"));
    EXPECT_EQ(model.weights.config, config);
    EXPECT_EQ(model.dtype, dtype);
    std::size_t tensors = 0;
    // Every value is the written one rounded to the dtype, widened back exactly.
    for_each_tensor(written, [&](const std::string& name, const FloatTensor& tensor) {
      ++tensors;
      std::vector<float> expected(tensor.values.size());
      convert_to_f32(dtype, convert_from_f32(dtype, tensor.values), expected);
      const FloatTensor* loaded = nullptr;
      for_each_tensor(model.weights, [&](const std::string& n, const FloatTensor& t) {
        if (n == name) loaded = &t;
      });
      ASSERT_NE(loaded, nullptr) << name;
      EXPECT_EQ(loaded->shape, tensor.shape) << name;
      EXPECT_EQ(loaded->values, expected) << name;
    });
    // 3 embeddings + 16 per layer + 2 post-LN + 11 head tensors.
    EXPECT_EQ(tensors, 3u + 16u * 2u + 2u + 11u);
  }
}

TEST(SiglipWeights, AFullSiglipCheckpointsTextTowerIsIgnored) {
  ScratchDirectory scratch;
  const std::filesystem::path dir = scratch.path("full");
  std::filesystem::create_directories(dir);
  const SiglipVisionWeights weights = random_weights(testing::tiny_config(), 1);
  const std::vector<float> text(10, 1.0F);
  write_tensors(dir, weights, [&](std::vector<SafeTensorsEntry>& entries) {
    entries.push_back({"text_model.embeddings.token_embedding.weight",
                       SafeTensorsDType::kI32,
                       {10},
                       {reinterpret_cast<const std::uint8_t*>(text.data()), 40}});
    entries.push_back({"logit_scale",
                       SafeTensorsDType::kF32,
                       {1},
                       {reinterpret_cast<const std::uint8_t*>(text.data()), 4}});
  });
  std::ofstream(dir / "config.json") << R"({"model_type": "siglip", "text_config": {},
    "vision_config": )" << testing::config_json(testing::tiny_config())
                                     << "}";
  const SiglipModel model = load_model(dir);
  EXPECT_EQ(model.weights.config, testing::tiny_config());
  EXPECT_EQ(model.weights.layers[1].mlp.fc2.weight.values, weights.layers[1].mlp.fc2.weight.values);
}

TEST(SiglipWeights, AMissingMisshapenOrMistypedTensorIsOneErrorNamingIt) {
  const SiglipVisionConfig config = testing::tiny_config();
  const SiglipVisionWeights weights = random_weights(config, 3);
  const std::vector<float> filler(64 * 200, 0.5F);
  const auto bytes = [&](std::size_t count) {
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(filler.data()),
                                         count * 4);
  };
  struct Case {
    std::function<void(std::vector<SafeTensorsEntry>&)> edit;
    std::string expected;
  };
  const std::string fc1 = "vision_model.encoder.layers.1.mlp.fc1.weight";
  const Case cases[] = {
      {[&](auto& e) { std::erase_if(e, [&](auto& t) { return t.name == fc1; }); },
       fc1 + ": missing from the checkpoint (expected shape [128, 64])"},
      {[&](auto& e) {
         for (auto& t : e) {
           if (t.name == fc1) t = {fc1, SafeTensorsDType::kF32, {128, 50}, bytes(128 * 50)};
         }
       },
       fc1 + ": shape [128, 50], expected [128, 64]"},
      {[&](auto& e) {
         for (auto& t : e) {
           if (t.name == fc1) t = {fc1, SafeTensorsDType::kI32, {128, 64}, bytes(128 * 64)};
         }
       },
       fc1 + ": dtype I32, expected F32, F16 or BF16"},
      {[&](auto& e) {
         std::erase_if(e, [&](auto& t) { return t.name.starts_with("vision_model.head."); });
       },
       "vision_model.head.probe: missing from the checkpoint (expected shape [1, 1, 64]) (and 10 "
       "more tensors missing or misshapen)"},
  };
  for (const auto& c : cases) {
    ScratchDirectory scratch;
    const std::filesystem::path dir = scratch.path("m");
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json") << testing::config_json(config);
    write_tensors(dir, weights, c.edit);
    EXPECT_EQ(load_error(dir), dir.string() + ": " + c.expected);
  }
}

TEST(SiglipWeights, ATruncatedCheckpointNamesTheTensorCut) {
  ScratchDirectory scratch;
  const std::filesystem::path dir = scratch.path("m");
  testing::write_random_model(dir, testing::tiny_config(), 5);
  const auto file = dir / "model.safetensors";
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 100);
  const std::string message = load_error(dir);
  // The last tensor written is the head's fc2 bias (module order).
  EXPECT_NE(message.find(file.string() + ": vision_model.head.mlp.fc2.bias: data_offsets"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the file is truncated"), std::string::npos) << message;
}

TEST(SiglipWeights, ABadConfigIsAnErrorNamingTheFile) {
  ScratchDirectory scratch;
  const std::filesystem::path dir = scratch.path("m");
  testing::write_random_model(dir, testing::tiny_config(), 5);
  std::ofstream(dir / "config.json") << R"({"hidden_size": 64, "num_attention_heads": 3})";
  EXPECT_EQ(load_error(dir),
            (dir / "config.json").string() +
                ": config: num_attention_heads: 3 heads do not divide hidden_size 64");
  std::filesystem::remove(dir / "config.json");
  EXPECT_NE(load_error(dir).find("config.json: cannot read"), std::string::npos);
}

TEST(Checkpoint, ReadsAShardedIndex) {
  ScratchDirectory scratch;
  const std::filesystem::path dir = scratch.path("sharded");
  std::filesystem::create_directories(dir);
  const SiglipVisionConfig config = testing::tiny_config();
  const SiglipVisionWeights weights = random_weights(config, 11);
  // Shard 1: the embeddings and layer 0; shard 2: the rest.
  std::string weight_map;
  const auto in_first = [](const std::string& name) {
    return name.find("embeddings") != std::string::npos ||
           name.find("layers.0.") != std::string::npos;
  };
  for_each_tensor(weights, [&](const std::string& name, const FloatTensor&) {
    weight_map += (weight_map.empty() ? "" : ", ") + ("\"" + name + "\": \"") +
                  (in_first(name) ? "model-00001-of-00002.safetensors\""
                                  : "model-00002-of-00002.safetensors\"");
  });
  write_tensors(
      dir, weights, [&](auto& e) { std::erase_if(e, [&](auto& t) { return !in_first(t.name); }); },
      "model-00001-of-00002.safetensors");
  write_tensors(
      dir, weights, [&](auto& e) { std::erase_if(e, [&](auto& t) { return in_first(t.name); }); },
      "model-00002-of-00002.safetensors");
  std::ofstream(dir / "config.json") << testing::config_json(config);
  const std::string index =
      R"({"metadata": {"total_size": 1}, "weight_map": {)" + weight_map + "}}";
  std::ofstream(dir / "model.safetensors.index.json") << index;

  const SiglipModel model = load_model(dir);
  EXPECT_EQ(model.weights.layers[0].self_attn.q_proj.weight.values,
            weights.layers[0].self_attn.q_proj.weight.values);
  EXPECT_EQ(model.weights.head->mlp.fc2.bias.values, weights.head->mlp.fc2.bias.values);
  EXPECT_EQ(Checkpoint::open(dir).files().size(), 2u);

  // An index naming a shard that is not there.
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {"vision_model.post_layernorm.weight": "model-00003-of-00003.safetensors"}})";
  EXPECT_EQ(load_error(dir), (dir / "model.safetensors.index.json").string() +
                                 ": weight_map.vision_model.post_layernorm.weight: names the shard "
                                 "model-00003-of-00003.safetensors, which does not exist");
  // A shard outside the directory.
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {"vision_model.post_layernorm.weight": "../model-00001-of-00002.safetensors"}})";
  EXPECT_NE(load_error(dir).find("shard '../model-00001-of-00002.safetensors' is not a plain file "
                                 "name in the model directory"),
            std::string::npos);
  // A tensor the index places in a shard that does not hold it.
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {"vision_model.post_layernorm.weight": "model-00001-of-00002.safetensors"}})";
  EXPECT_NE(load_error(dir).find("vision_model.post_layernorm.weight: the shard "
                                 "model-00001-of-00002.safetensors has no tensor of that name"),
            std::string::npos);
  // A tensor named twice: the parser would keep one of the two shards silently.
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {"vision_model.post_layernorm.weight": "model-00001-of-00002.safetensors", )"
         R"("vision_model.post_layernorm.weight": "model-00002-of-00002.safetensors"}})";
  EXPECT_EQ(load_error(dir), (dir / "model.safetensors.index.json").string() +
                                 ": the key 'vision_model.post_layernorm.weight' appears twice");
  std::ofstream(dir / "model.safetensors.index.json") << R"({"weight_map": []})";
  EXPECT_NE(load_error(dir).find("weight_map: is missing or not an object"), std::string::npos);
  std::filesystem::remove(dir / "model.safetensors.index.json");
  EXPECT_NE(load_error(dir).find("no model.safetensors or model.safetensors.index.json"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::models::siglip
