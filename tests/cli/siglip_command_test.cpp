// `tessera siglip` as a user runs it: random-weights → reference (--pixels
// and --image) → quantize, each output checked against the library run in
// this process; every subcommand's --help; bad files and bad command lines
// are one clear line and a non-zero status, never a crash.
#include <png.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "kernels/weight_panels.hpp"
#include "models/siglip/compare.hpp"
#include "models/siglip/graph.hpp"
#include "models/siglip/image_processor.hpp"
#include "models/siglip/quantizer/quantize.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/reference.hpp"
#include "models/siglip/weights.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/models/f143_oracle.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

namespace siglip = models::siglip;
using runtime::HostTensor;
using testing::run_tessera;

// A full SiglipConfig as transformers writes it, text tower included: head
// dim 72 (2 × 72 = 144), a 4 × 4 grid of 8-pixel patches.
constexpr const char* kConfig = R"({
  "architectures": ["SiglipModel"],
  "model_type": "siglip",
  "text_config": {"hidden_size": 64, "num_hidden_layers": 1, "model_type": "siglip_text_model"},
  "vision_config": {"hidden_size": 144, "intermediate_size": 272, "num_hidden_layers": 2,
                    "num_attention_heads": 2, "image_size": 32, "patch_size": 8,
                    "model_type": "siglip_vision_model"},
  "torch_dtype": "float32"
})";

std::vector<float> floats_of(const HostTensor& tensor) {
  std::vector<float> values(tensor.byte_size() / 4);
  std::memcpy(values.data(), tensor.bytes().data(), tensor.byte_size());
  return values;
}

void write_pixels(const std::string& path, std::vector<std::uint64_t> shape,
                  const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  runtime::write_tensor_file(path, HostTensor(schema::DType::kF32, std::move(shape), std::move(bytes)));
}

std::vector<float> smooth_pixels(std::uint32_t images, std::size_t side = 32) {
  siglip::NormalStream stream(4);
  const std::size_t plane = side * side;
  std::vector<float> pixels(std::size_t{images} * 3 * plane);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    pixels[i] = static_cast<float>(0.7 * std::sin(0.11 * static_cast<double>(i % plane) +
                                                  static_cast<double>(i / plane)) +
                                   0.1 * stream.normal());
  }
  return pixels;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::fabs(double{a[i]} - double{b[i]}));
  }
  return worst;
}

class SiglipCommand : public ::testing::Test {
 protected:
  SiglipCommand() {
    config_ = scratch_.write("config.json", kConfig);
    model_ = scratch_.path("model");
    pixels_ = scratch_.path("pixels.npy");
    write_pixels(pixels_, {3, 3, 32, 32}, smooth_pixels(3));
  }
  testing::ProcessResult make_model(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"siglip", "random-weights", "--config", config_, "-o", model_,
                                     "--seed", "5"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_tessera(args);
  }

  // Writes `json` as NAME.json and random weights for it into the scratch
  // directory NAME, which `model` is set to.
  void random_tower(const std::string& name, const std::string& json, std::string* model) {
    const std::string config = scratch_.write(name + ".json", json);
    *model = scratch_.path(name);
    ASSERT_EQ(run_tessera({"siglip", "random-weights", "--config", config, "-o", *model}).exit_status, 0);
  }

  tessera::testing::ScratchDirectory scratch_;
  std::string config_, model_, pixels_;
};

// A 2-layer tower the simulator runs in seconds at every precision.
constexpr const char* kTinyTower = R"({
    "model_type": "siglip_vision_model", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 32, "patch_size": 8})";

TEST_F(SiglipCommand, EverySubcommandHasHelp) {
  const auto group = run_tessera({"siglip", "--help"});
  EXPECT_EQ(group.exit_status, 0);
  for (const char* sub : {"random-weights", "reference", "quantize", "compile", "run"}) {
    EXPECT_NE(group.out.find(sub), std::string::npos) << group.out;
    const auto help = run_tessera({"siglip", sub, "--help"});
    EXPECT_EQ(help.exit_status, 0) << sub << help.err;
    EXPECT_NE(help.out.find(std::string("Usage: tessera siglip ") + sub), std::string::npos)
        << help.out;
  }
  EXPECT_NE(run_tessera({"--help"}).out.find("siglip"), std::string::npos);
  EXPECT_EQ(run_tessera({"siglip"}).exit_status, 2);
  const auto unknown = run_tessera({"siglip", "train"});
  EXPECT_EQ(unknown.exit_status, 2);
  EXPECT_NE(unknown.err.find("unknown subcommand 'train'"), std::string::npos) << unknown.err;
}

// Precisions are checked before any file is read.
TEST_F(SiglipCommand, CompileAndRunRefuseAnUnknownPrecisionClearly) {
  for (const char* sub : {"compile", "run"}) {
    const auto bad = run_tessera({"siglip", sub, "--model", model_, "--precision", "f64", "-o",
                                  scratch_.path("out")});
    EXPECT_EQ(bad.exit_status, 2) << sub;
    EXPECT_NE(bad.err.find("--precision 'f64' is not one of f32, f16, f143, f8"), std::string::npos)
        << bad.err;
  }
}

// f8 takes its activation scales from the model's quantization.json: a
// model without one (or quantized without calibration) is one line naming
// what is missing and how to get it, from compile before the compiler
// starts and from run before a weight is read.
TEST_F(SiglipCommand, F8WithoutActivationScalesSaysToQuantizeWithCalibration) {
  ASSERT_EQ(make_model().exit_status, 0);
  const std::vector<std::vector<std::string>> commands = {
      {"siglip", "compile", "--model", model_, "--precision", "f8", "-o",
       scratch_.path("x.ipuexe")},
      {"siglip", "run", "--model", model_, "--precision", "f8", "--pixels", pixels_}};
  for (const auto& command : commands) {
    const auto refused = run_tessera(command);
    EXPECT_EQ(refused.exit_status, 1) << refused.err;
    EXPECT_NE(refused.err.find(model_ +
                               " has no quantization.json, so no activation scales: "
                               "--precision f8 quantises each projection's input at the scale "
                               "the quantizer chose from calibration inputs: run `tessera siglip "
                               "quantize --model DIR --calibration PIXELS.npy`"),
              std::string::npos)
        << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  }
  const std::string q = scratch_.path("q");
  ASSERT_EQ(
      run_tessera({"siglip", "quantize", "--model", model_, "--algorithm", "nearest", "-o", q})
          .exit_status,
      0);
  for (auto command : commands) {
    command[3] = q;
    const auto refused = run_tessera(command);
    EXPECT_EQ(refused.exit_status, 1) << refused.err;
    EXPECT_NE(
        refused.err.find(q + "/quantization.json: tensors.vision_model.encoder.layers.0."
                             "self_attn.q_proj.weight: has no activation scale: --precision f8"),
        std::string::npos)
        << refused.err;
  }
}

TEST_F(SiglipCommand, RandomWeightsWritesTheModelTheLibraryDraws) {
  const auto made = make_model();
  ASSERT_EQ(made.exit_status, 0) << made.err;
  EXPECT_NE(made.out.find("head dim 72"), std::string::npos) << made.out;
  EXPECT_EQ(made.err.find("random-weights: writing"), std::string::npos) << made.err;  // no tty: quiet
  const siglip::SiglipModel model = siglip::load_model(model_);
  EXPECT_EQ(model.config_json, kConfig);  // copied as is
  const siglip::SiglipVisionWeights expected = siglip::random_weights(model.weights.config, 5);
  siglip::for_each_tensor(expected, [&](const std::string& name, const siglip::FloatTensor& t) {
    const siglip::FloatTensor* got = nullptr;
    siglip::for_each_tensor(model.weights, [&](const std::string& n, const siglip::FloatTensor& g) {
      if (n == name) got = &g;
    });
    ASSERT_NE(got, nullptr) << name;
    EXPECT_EQ(got->values, t.values) << name;
  });

  const auto bf16 = run_tessera({"siglip", "random-weights", "--config", config_, "-o",
                                 scratch_.path("bf16"), "--dtype", "bf16"});
  ASSERT_EQ(bf16.exit_status, 0) << bf16.err;
  EXPECT_EQ(siglip::load_model(scratch_.path("bf16")).dtype, models::SafeTensorsDType::kBF16);
}

TEST_F(SiglipCommand, ReferenceWritesBothOutputsOfPixels) {
  ASSERT_EQ(make_model().exit_status, 0);
  const auto pooled = scratch_.path("pooled.npy"), hidden = scratch_.path("hidden.npy");
  const auto ran = run_tessera({"siglip", "reference", "--model", model_, "--pixels", pixels_, "-o",
                                pooled, "--hidden", hidden});
  ASSERT_EQ(ran.exit_status, 0) << ran.err;
  EXPECT_NE(ran.out.find("pooler_output f32[3, 144]"), std::string::npos) << ran.out;
  // Progress goes to a terminal only: through a pipe stderr stays quiet.
  EXPECT_EQ(ran.err.find("encoder layer"), std::string::npos) << ran.err;
  const HostTensor p = runtime::read_npy_file(pooled), h = runtime::read_npy_file(hidden);
  EXPECT_EQ(p.shape(), (runtime::TensorShape{3, 144}));
  EXPECT_EQ(h.shape(), (runtime::TensorShape{3, 16, 144}));
  const auto model = siglip::load_model(model_);
  const auto expected = siglip::run_reference(model.weights, smooth_pixels(3), 3);
  EXPECT_LT(max_difference(floats_of(p), expected.pooler_output), 1e-5);
  EXPECT_LT(max_difference(floats_of(h), expected.last_hidden_state), 1e-5);
}

void write_png(const std::string& path, std::uint32_t width, std::uint32_t height) {
  std::vector<std::uint8_t> rgb(std::size_t{width} * height * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<std::uint8_t>((i * 37) % 251);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = PNG_FORMAT_RGB;
  ASSERT_NE(png_image_write_to_file(&image, path.c_str(), 0, rgb.data(), 0, nullptr), 0);
}

TEST_F(SiglipCommand, ReferencePreprocessesImagesAsTheLibraryDoes) {
  ASSERT_EQ(make_model().exit_status, 0);
  const auto a = scratch_.path("a.png"), b = scratch_.path("b.png");
  write_png(a, 50, 40);
  write_png(b, 20, 33);
  const auto pooled = scratch_.path("pooled.npy");
  const auto ran =
      run_tessera({"siglip", "reference", "--model", model_, "--image", a, b, "-o", pooled});
  ASSERT_EQ(ran.exit_status, 0) << ran.err;
  const auto model = siglip::load_model(model_);
  const std::vector<std::filesystem::path> files = {a, b};
  const auto expected = siglip::run_reference(
      model.weights, siglip::pixel_values_from_files(files, model.weights.config), 2);
  EXPECT_LT(max_difference(floats_of(runtime::read_npy_file(pooled)), expected.pooler_output), 1e-5);
}

TEST_F(SiglipCommand, QuantizeWritesAModelTheReferenceRunsAndTheScalesReEncode) {
  ASSERT_EQ(make_model().exit_status, 0);
  const auto pooled = scratch_.path("pooled.npy");
  ASSERT_EQ(run_tessera({"siglip", "reference", "--model", model_, "--pixels", pixels_, "-o", pooled})
                .exit_status,
            0);
  const std::vector<float> fp32 = floats_of(runtime::read_npy_file(pooled));
  for (const char* algorithm : {"nearest", "gptq"}) {
    const auto out = scratch_.path(std::string("q-") + algorithm);
    std::vector<std::string> args = {"siglip", "quantize", "--model", model_, "--calibration",
                                     pixels_, "--algorithm", algorithm, "-o", out};
    if (std::string(algorithm) == "gptq") {
      args.push_back("--equalize-layernorm");
      args.push_back("--sequential-layers");
    }
    const auto quantized = run_tessera(args);
    ASSERT_EQ(quantized.exit_status, 0) << quantized.err;
    EXPECT_NE(quantized.out.find("12 weights of"), std::string::npos) << quantized.out;
    EXPECT_NE(quantized.out.find("calibration: 3 images, 48 tokens"), std::string::npos)
        << quantized.out;
    EXPECT_EQ(quantized.err.find("quantizing encoder layer"), std::string::npos);
    const auto model = siglip::load_model(out);
    const auto f143 = siglip::quantizer::read_quantization(out, model.weights);
    ASSERT_TRUE(f143.has_value());
    EXPECT_EQ(f143->size(), 12u);

    const auto q_pooled = scratch_.path(std::string("pooled-") + algorithm + ".npy");
    ASSERT_EQ(run_tessera({"siglip", "reference", "--model", out, "--pixels", pixels_, "-o", q_pooled})
                  .exit_status,
              0);
    const std::vector<float> quantized_output = floats_of(runtime::read_npy_file(q_pooled));
    double dot = 0, a2 = 0, b2 = 0;
    for (std::size_t i = 0; i < fp32.size(); ++i) {
      dot += double{fp32[i]} * double{quantized_output[i]};
      a2 += double{fp32[i]} * double{fp32[i]};
      b2 += double{quantized_output[i]} * double{quantized_output[i]};
    }
    EXPECT_GT(dot / std::sqrt(a2 * b2), 0.99) << algorithm;
  }
  // Calibration images go through the same preprocessing as --image.
  const auto a = scratch_.path("a.png"), b = scratch_.path("b.png");
  write_png(a, 40, 50);
  write_png(b, 64, 64);
  const auto from_images = scratch_.path("q-images");
  const auto imaged = run_tessera({"siglip", "quantize", "--model", model_, "--calibration-image", a,
                                   b, "--algorithm", "gptq", "-o", from_images});
  ASSERT_EQ(imaged.exit_status, 0) << imaged.err;
  EXPECT_NE(imaged.out.find("calibration: 2 images, 32 tokens"), std::string::npos) << imaged.out;
  {
    const std::vector<std::filesystem::path> files = {a, b};
    auto weights = siglip::load_model(model_).weights;
    const auto pixels = siglip::pixel_values_from_files(files, weights.config);
    siglip::quantizer::QuantizeOptions options;
    (void)siglip::quantizer::quantize(weights, siglip::quantizer::Calibration{pixels, 2}, options);
    const auto written = siglip::load_model(from_images).weights;
    EXPECT_EQ(written.layers[1].mlp.fc2.weight.values, weights.layers[1].mlp.fc2.weight.values);
    EXPECT_EQ(written.layers[0].self_attn.q_proj.bias.values,
              weights.layers[0].self_attn.q_proj.bias.values);
  }
  // nearest needs no calibration.
  const auto plain = run_tessera({"siglip", "quantize", "--model", model_, "--algorithm", "nearest",
                                  "-o", scratch_.path("q-plain")});
  ASSERT_EQ(plain.exit_status, 0) << plain.err;
}

// A tiny tower end to end on the simulated C600 (issue 19): compiled at f16,
// run with its packed weights, both outputs checked here against the FP32
// CPU reference computed in the test (not the command's own comparison);
// then the same through a package from `siglip compile`, and a package built
// for another batch refused by name.
TEST_F(SiglipCommand, RunsATinyTowerOnTheSimulatorAtF143WithinTheReference) {
  std::string model;
  ASSERT_NO_FATAL_FAILURE(random_tower("tiny", kTinyTower, &model));
  const auto pooled = scratch_.path("pooled.npy");
  const auto ran = run_tessera({"siglip", "run", "--model", model, "--precision", "f143", "--tiles", "64",
                                "--pixels", pixels_, "-o", pooled, "--reference"});
  ASSERT_EQ(ran.exit_status, 0) << ran.err;
  const auto weights = siglip::load_model(model).weights;
  const auto expected = siglip::run_reference(weights, smooth_pixels(3), 3);
  const siglip::Agreement p =
      siglip::compare_outputs(floats_of(runtime::read_npy_file(pooled)), expected.pooler_output);
  // Block-scaled F143 encoder weights, f16 activations. The issue's bar is
  // pooled cosine ≥ 0.995: measured 0.99671 (max error 0.216). With the
  // patch embedding and the head F143 too (before graph.cpp's
  // f143_encoded), the compiler's CPU interpreter of the graph measured
  // 0.99036 and the simulated tower 0.99030: the lowering agrees with the
  // graph, the quantization is what costs. Bound at 0.99, which
  // another draw of weights or images should not break.
  EXPECT_TRUE(p.finite);
  EXPECT_GE(p.cosine, 0.99) << ran.out;
}

TEST_F(SiglipCommand, RunsATinyTowerOnTheSimulatorAtF16WithinTheReference) {
  std::string model;
  ASSERT_NO_FATAL_FAILURE(random_tower("tiny", kTinyTower, &model));
  const auto pooled = scratch_.path("pooled.npy"), hidden = scratch_.path("hidden.npy");
  const auto ran = run_tessera({"siglip", "run", "--model", model, "--precision", "f16", "--tiles", "64",
                                "--pixels", pixels_, "-o", pooled, "--hidden", hidden, "--reference"});
  ASSERT_EQ(ran.exit_status, 0) << ran.err;
  EXPECT_NE(ran.out.find("simulated: "), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("ms/image at 1.5 GHz"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("pooler_output against the reference: cosine 0.99"), std::string::npos) << ran.out;

  const auto weights = siglip::load_model(model).weights;
  const auto expected = siglip::run_reference(weights, smooth_pixels(3), 3);
  const siglip::Agreement p =
      siglip::compare_outputs(floats_of(runtime::read_npy_file(pooled)), expected.pooler_output);
  const siglip::Agreement h =
      siglip::compare_outputs(floats_of(runtime::read_npy_file(hidden)), expected.last_hidden_state);
  // f16 weights and activations: the issue's bar for a model that fits at
  // f16 is pooled cosine ≥ 0.999 (measured 0.99999).
  EXPECT_TRUE(p.finite && h.finite);
  EXPECT_GE(p.cosine, 0.999);
  EXPECT_GE(h.cosine, 0.999);

  const auto package = scratch_.path("tiny.ipuexe");
  const auto compiled = run_tessera({"siglip", "compile", "--model", model, "--precision", "f16",
                                     "--tiles", "64", "--batch", "3", "-o", package});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;
  const auto again = scratch_.path("again.npy"), profile = scratch_.path("tiny.profile");
  const auto from_package = run_tessera({"siglip", "run", "--model", model, "--precision", "f16",
                                         "--package", package, "--pixels", pixels_, "-o", again,
                                         "--profile", profile});
  ASSERT_EQ(from_package.exit_status, 0) << from_package.err;
  EXPECT_EQ(runtime::read_npy_file(again).bytes().size(), runtime::read_npy_file(pooled).bytes().size());
  EXPECT_EQ(floats_of(runtime::read_npy_file(again)), floats_of(runtime::read_npy_file(pooled)));
  // The run's profile, read back by `tessera profile`: it lasts at least
  // until the halt the run reports (tiles run ahead of the SystemC clock)
  // and names the operation of nearly every step cycle (measured 98.5 %:
  // tile 0's steps outside any operation — its host calls' bookkeeping —
  // are the rest).
  std::smatch simulated;
  ASSERT_TRUE(std::regex_search(from_package.out, simulated, std::regex(R"(simulated: (\d+) cycles)")))
      << from_package.out;
  const auto read = run_tessera({"profile", profile, "--package", package, "--json"});
  ASSERT_EQ(read.exit_status, 0) << read.err;
  const auto summary = nlohmann::json::parse(read.out)["summary"];
  EXPECT_GE(summary["totalCycles"].get<std::uint64_t>(), std::stoull(simulated[1].str()));
  EXPECT_GE(static_cast<double>(summary["namedOperationCycles"].get<std::uint64_t>()),
            0.95 * static_cast<double>(summary["stepCycles"].get<std::uint64_t>()));

  const auto one = scratch_.path("one.ipuexe");
  ASSERT_EQ(run_tessera({"siglip", "compile", "--model", model, "--precision", "f16", "--tiles", "64",
                         "-o", one})
                .exit_status,
            0);
  const auto mismatch = run_tessera({"siglip", "run", "--model", model, "--precision", "f16",
                                     "--package", one, "--pixels", pixels_, "-o", again});
  EXPECT_EQ(mismatch.exit_status, 2) << mismatch.err;
  EXPECT_NE(mismatch.err.find("pixel_values"), std::string::npos) << mismatch.err;
  EXPECT_NE(mismatch.err.find("another config, precision or batch"), std::string::npos) << mismatch.err;
}

// Head dim 72 (hidden 144): each layer's biases and LayerNorm scales,
// added to [1, 9, 144] activations that lie whole on tile 0, once made
// 9 × 72 one-word messages into tile 0 per operation when cut one word per
// tile, and the exchange rows outgrew tile 0's code memory below 0x80000.
// The tower's default --min-shard-bytes keeps them whole: it compiles on 128
// and 1472 tiles and runs within the f16 bar of the reference.
TEST_F(SiglipCommand, RunsAHeadDim72TowerOnTheSimulatorAtF16WithinTheReference) {
  std::string model;
  ASSERT_NO_FATAL_FAILURE(random_tower("c72", R"({
    "model_type": "siglip_vision_model", "hidden_size": 144, "intermediate_size": 272,
    "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 30, "patch_size": 8})", &model));
  const auto pixels = scratch_.path("pixels30.npy");
  write_pixels(pixels, {1, 3, 30, 30}, smooth_pixels(1, 30));
  const auto pooled = scratch_.path("pooled72.npy"), hidden = scratch_.path("hidden72.npy");
  const auto ran = run_tessera({"siglip", "run", "--model", model, "--precision", "f16", "--tiles", "128",
                                "--pixels", pixels, "-o", pooled, "--hidden", hidden, "--reference"});
  ASSERT_EQ(ran.exit_status, 0) << ran.err;
  const auto weights = siglip::load_model(model).weights;
  const auto expected = siglip::run_reference(weights, smooth_pixels(1, 30), 1);
  const siglip::Agreement p =
      siglip::compare_outputs(floats_of(runtime::read_npy_file(pooled)), expected.pooler_output);
  const siglip::Agreement h =
      siglip::compare_outputs(floats_of(runtime::read_npy_file(hidden)), expected.last_hidden_state);
  EXPECT_TRUE(p.finite && h.finite);
  EXPECT_GE(p.cosine, 0.999);  // measured 0.999996
  EXPECT_GE(h.cosine, 0.999);

  const auto package = scratch_.path("c72.ipuexe");
  const auto compiled = run_tessera({"siglip", "compile", "--model", model, "--precision", "f16",
                                     "--tiles", "1472", "-o", package});
  EXPECT_EQ(compiled.exit_status, 0) << compiled.err;
}

// --gemm-a-gather decides how the GEMMs' tasks get their left operand's
// rows, as each plan in the report says: through homes by default (every
// projection of this tower has five column blocks of whole 16-wide panels;
// the planner's own choice, auto, is direct here), straight from the rows
// with direct.
TEST_F(SiglipCommand, GemmAGatherChoosesHowThePlansGatherTheirRows) {
  std::string model;
  ASSERT_NO_FATAL_FAILURE(random_tower("c144", R"({
    "model_type": "siglip_vision_model", "hidden_size": 144, "intermediate_size": 272,
    "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 32, "patch_size": 8})", &model));
  const auto plans_of = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"siglip", "compile", "--model", model, "--precision", "f16",
                                     "--tiles", "64", "-o", scratch_.path("c144.ipuexe"), "--report"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto compiled = run_tessera(args);
    EXPECT_EQ(compiled.exit_status, 0) << compiled.err;
    return compiled.out;
  };
  // The encoder's q projection, [16, 144] · [144, 144]: op names differ
  // between towers, its shape does not.
  const auto q_plan = [](const std::string& report) {
    const auto at = report.find("GEMM 16×144·144×144");
    return at == std::string::npos ? std::string() : report.substr(at, report.find('\n', at) - at);
  };
  const std::string homes = q_plan(plans_of({}));
  const std::string direct = q_plan(plans_of({"--gemm-a-gather", "direct"}));
  EXPECT_NE(homes.find("A via homes"), std::string::npos) << homes;
  EXPECT_NE(direct.find("A gathered directly"), std::string::npos) << direct;
}

// Whether the weights fit is decided from config.json alone, before the
// compiler runs and before any weight or pixel is read: these model
// directories hold nothing but a config.json, and `run` is given pixels of
// the wrong size. The figures are models/siglip/fit.hpp's (856,451,200 =
// 2 bytes × so400m's 428,225,600 parameters; 1472 tiles × 359,344 bytes).
TEST_F(SiglipCommand, WeightsThatDoNotFitAreOneLineWithTheBytesNeededAndFree) {
  const std::string so400m = scratch_.path("so400m"), huge = scratch_.path("huge");
  std::filesystem::create_directory(so400m);
  std::filesystem::create_directory(huge);
  scratch_.write("so400m/config.json", R"({
    "architectures": ["SiglipModel"], "model_type": "siglip",
    "text_config": {"hidden_size": 1152, "intermediate_size": 4304, "model_type": "siglip_text_model",
                    "num_attention_heads": 16, "num_hidden_layers": 27},
    "vision_config": {"hidden_size": 1152, "image_size": 384, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16,
                      "num_hidden_layers": 27, "patch_size": 14}})");
  // 48 layers of hidden 2048: 2.4 G parameters, more than 2 GB at any precision.
  scratch_.write("huge/config.json", R"({"model_type": "siglip_vision_model", "hidden_size": 2048,
    "intermediate_size": 8192, "num_hidden_layers": 48, "num_attention_heads": 16,
    "patch_size": 14, "image_size": 224})");
  const std::string so400m_f16 =
      so400m + ": the weights at f16 need 856451200 bytes, but 1472 tiles have 528954368 bytes of "
               "SRAM free for weights (359344 per tile after code, exchange rows and activations): "
               "--precision f143 would fit (445785088 bytes)\n";
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const Case cases[] = {
      {{"compile", "--model", so400m, "--precision", "f16", "-o", scratch_.path("x.ipuexe")},
       so400m_f16},
      {{"run", "--model", so400m, "--precision", "f16", "--pixels", pixels_}, so400m_f16},
      {{"compile", "--model", huge, "--precision", "f143", "-o", scratch_.path("x.ipuexe")},
       "no precision fits (f143, the smallest, needs "},
      // The budget is the tiles the model is spread over.
      {{"compile", "--model", so400m, "--precision", "f143", "--tiles", "1000", "-o",
        scratch_.path("x.ipuexe")},
       "the weights at f143 need 445785088 bytes, but 1000 tiles have 359344000 bytes"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"siglip"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto result = run_tessera(args);
    EXPECT_EQ(result.exit_status, 1) << c.expected << ": " << result.err;
    EXPECT_NE(result.err.find(c.expected), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("tessera siglip: error: "), 0u) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_FALSE(std::filesystem::exists(scratch_.path("x.ipuexe")));
  }
}

// A quantized model's package carries exactly the quantizer's F143 codes
// (review #19: the compiler re-encodes losslessly, same block grid, one
// block-scale type). random-weights → quantize gptq → pack_vision_weights at
// f143, checked against an encoding written here from quantization.json's
// own block_scales (the F143 rules of tests/models/f143_oracle.hpp, nothing
// from kernels/f143.cpp); and every code decodes to the checkpoint's value.
TEST_F(SiglipCommand, PackingAQuantizedModelAtF143GivesTheQuantizersCodesAndScales) {
  ASSERT_EQ(make_model().exit_status, 0);
  const std::string q = scratch_.path("q-gptq");
  const auto quantized = run_tessera({"siglip", "quantize", "--model", model_, "--calibration",
                                      pixels_, "--algorithm", "gptq", "-o", q});
  ASSERT_EQ(quantized.exit_status, 0) << quantized.err;
  const siglip::SiglipModel model = siglip::load_model(q);
  const auto recorded = siglip::quantizer::read_quantization(q, model.weights);
  ASSERT_TRUE(recorded.has_value());
  const auto packed =
      siglip::pack_vision_weights(model.weights, siglip::GraphPrecision::kF143, &*recorded);
  const auto rederived = siglip::pack_vision_weights(model.weights, siglip::GraphPrecision::kF143);

  std::ifstream file(q + "/quantization.json");
  const nlohmann::json record = nlohmann::json::parse(file);
  const auto& c = model.weights.config;
  using Layer = siglip::SiglipEncoderLayer;
  using Get = const siglip::Linear& (*)(const Layer&);
  const std::tuple<std::string, std::string, Get> weights[] = {
      {"encoder.q_proj.weight", "self_attn.q_proj.weight",
       [](const Layer& l) -> const siglip::Linear& { return l.self_attn.q_proj; }},
      {"encoder.k_proj.weight", "self_attn.k_proj.weight",
       [](const Layer& l) -> const siglip::Linear& { return l.self_attn.k_proj; }},
      {"encoder.v_proj.weight", "self_attn.v_proj.weight",
       [](const Layer& l) -> const siglip::Linear& { return l.self_attn.v_proj; }},
      {"encoder.out_proj.weight", "self_attn.out_proj.weight",
       [](const Layer& l) -> const siglip::Linear& { return l.self_attn.out_proj; }},
      {"encoder.fc1.weight", "mlp.fc1.weight",
       [](const Layer& l) -> const siglip::Linear& { return l.mlp.fc1; }},
      {"encoder.fc2.weight", "mlp.fc2.weight",
       [](const Layer& l) -> const siglip::Linear& { return l.mlp.fc2; }},
  };
  std::size_t blocks = 0, rescaled = 0, recoded = 0;
  for (const auto& [graph_name, suffix, get] : weights) {
    const std::vector<std::uint8_t>& codes = packed.at(graph_name + ".codes");
    const std::vector<std::uint8_t>& chosen_codes = rederived.at(graph_name + ".codes");
    const std::vector<std::uint8_t>& scales = packed.at(graph_name + ".scales");
    const std::vector<std::uint8_t>& chosen = rederived.at(graph_name + ".scales");
    std::size_t code_at = 0, scale_at = 0;
    for (std::uint32_t layer = 0; layer < c.num_hidden_layers; ++layer) {
      const std::string name =
          "vision_model.encoder.layers." + std::to_string(layer) + "." + suffix;
      SCOPED_TRACE(name);
      const siglip::FloatTensor& w = get(model.weights.layers[layer]).weight;  // [out, in]
      const std::size_t out = w.shape[0], in = w.shape[1];  // the GEMM's N, K
      const std::vector<int> block_scales = record.at("tensors").at(name).at("block_scales");
      const std::size_t n_blocks = (out + 63) / 64;
      ASSERT_EQ(block_scales.size(), ((in + 63) / 64) * n_blocks);
      std::vector<int> chosen_scales;
      for (std::size_t b = 0; b < block_scales.size(); ++b, scale_at += 4, ++blocks) {
        std::int32_t bound = 0, free_choice = 0;
        std::memcpy(&bound, scales.data() + scale_at, 4);
        std::memcpy(&free_choice, chosen.data() + scale_at, 4);
        ASSERT_EQ(bound, block_scales[b]) << "block " << b;
        if (free_choice != bound) ++rescaled;
        chosen_scales.push_back(free_choice);
      }
      // The package's codes are [K, N] in 16-deep weight panels
      // (kernels/weight_panels.hpp), padding zero.
      const std::uint64_t inner = kernels::amp::padded_inner(in, 16);
      const std::uint64_t layer_codes = kernels::amp::weight_panels_elements(in, out, 16);
      for (std::size_t k = 0; k < in; ++k) {
        for (std::size_t n = 0; n < out; ++n) {
          const std::size_t at = code_at + kernels::amp::weight_offset(k, n, inner, 16);
          const int scale = block_scales[(k / 64) * n_blocks + n / 64];
          const float value = w.values[n * in + k];
          ASSERT_EQ(codes.at(at), siglip::testing::naive_encode(value, scale)) << k << ", " << n;
          ASSERT_EQ(siglip::testing::naive_decode(codes[at], scale), value) << k << ", " << n;
          const int chosen_scale = chosen_scales[(k / 64) * n_blocks + n / 64];
          ASSERT_EQ(siglip::testing::naive_decode(chosen_codes.at(at), chosen_scale), value);
          if (chosen_codes[at] != codes[at]) ++recoded;
        }
      }
      code_at += layer_codes;
    }
    EXPECT_EQ(code_at, codes.size());
    EXPECT_EQ(scale_at, scales.size());
  }
  EXPECT_EQ(blocks, 132u);  // per layer: 4 × 3 × 3 for [144, 144], 2 × 3 × 5 for fc1 and fc2
  // Choosing the scales afresh from the quantized values is not the same
  // encoding: a block whose largest weight GPTQ left at or below 120·2^s
  // (half the code range) gets 2^(s−1): 3 of these 132 blocks (measured).
  // Its values survive (the grid at s − 1 holds every value of the grid at
  // s up to 120·2^s), but its codes and scale are not the quantizer's.
  EXPECT_GT(rescaled, 0u) << "of " << blocks << " blocks";
  EXPECT_GT(recoded, 0u);
}

// `siglip run --precision f143` on a quantized model reads its
// quantization.json and packs at the recorded scales: the tower runs within
// the FP32 reference of the quantized weights (measured pooled cosine
// 0.999998, max error 0.005: f16 activations; the patch embedding and head,
// which the quantizer leaves alone, f16 too; bound at 0.99 as the
// unquantized tiny tower's test is), and a record that
// disagrees with the checkpoint is one line naming the tensor, before
// anything compiles.
TEST_F(SiglipCommand, RunAtF143PacksAQuantizedModelAtItsRecordAndRefusesABadOne) {
  std::string model;
  ASSERT_NO_FATAL_FAILURE(random_tower("tiny", kTinyTower, &model));
  const std::string q = scratch_.path("tiny-q");
  const auto quantized = run_tessera({"siglip", "quantize", "--model", model, "--calibration", pixels_,
                                      "--algorithm", "gptq", "-o", q});
  ASSERT_EQ(quantized.exit_status, 0) << quantized.err;
  const auto pooled = scratch_.path("pooled.npy");
  const auto ran = run_tessera({"siglip", "run", "--model", q, "--precision", "f143", "--tiles", "64",
                                "--pixels", pixels_, "-o", pooled});
  ASSERT_EQ(ran.exit_status, 0) << ran.err;
  const auto expected = siglip::run_reference(siglip::load_model(q).weights, smooth_pixels(3), 3);
  const siglip::Agreement p =
      siglip::compare_outputs(floats_of(runtime::read_npy_file(pooled)), expected.pooler_output);
  EXPECT_TRUE(p.finite);
  EXPECT_GE(p.cosine, 0.99) << ran.out;

  const std::string fc1 = "vision_model.encoder.layers.1.mlp.fc1.weight";
  nlohmann::json record = nlohmann::json::parse(std::ifstream(q + "/quantization.json"));
  record["tensors"].erase(fc1);
  std::ofstream(q + "/quantization.json") << record.dump();
  const auto refused = run_tessera({"siglip", "run", "--model", q, "--precision", "f143", "--tiles",
                                    "64", "--pixels", pixels_, "-o", pooled});
  EXPECT_EQ(refused.exit_status, 1) << refused.err;
  EXPECT_NE(refused.err.find("quantization.json: tensors." + fc1 + ": is missing"), std::string::npos)
      << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
}

// `siglip run --precision f8` end to end on the simulator (issue 19 item 4):
// a model quantized with calibration inputs other than the evaluated ones
// (nearest), its encoder projections compiled to the native FP8 GEMM (F143
// activations at the recorded scales times 32-deep weight panels; the
// report's plans say so), both outputs checked here against the FP32 CPU
// reference of the quantized weights. The issue's bar for so400m at f8 is
// pooled cosine ≥ 0.99; measured on these towers (head dim 32 and 72)
// pooled 0.99826 and 0.99947, hidden 0.99889 and 0.99863, max error 0.19
// and 0.24.
TEST_F(SiglipCommand, RunsTinyTowersOnTheSimulatorAtF8WithinTheReference) {
  const std::string tiny = scratch_.write("tiny.json", kTinyTower);
  // Calibration pixels in (−1, 1), not the evaluated smooth ones.
  siglip::NormalStream stream(3);
  std::vector<float> calibration(std::size_t{4} * 3 * 32 * 32);
  for (float& p : calibration) p = static_cast<float>(std::tanh(stream.normal()));
  const std::string calibration_file = scratch_.path("calibration.npy");
  write_pixels(calibration_file, {4, 3, 32, 32}, calibration);
  for (const auto& [config, seed] : {std::pair{tiny, "0"}, std::pair{config_, "5"}}) {
    SCOPED_TRACE(config);
    const std::string model = scratch_.path("m" + std::string(seed)), q = model + "-q";
    ASSERT_EQ(run_tessera({"siglip", "random-weights", "--config", config, "-o", model, "--seed", seed})
                  .exit_status,
              0);
    const auto quantized = run_tessera({"siglip", "quantize", "--model", model, "--calibration",
                                        calibration_file, "--algorithm", "nearest", "-o", q});
    ASSERT_EQ(quantized.exit_status, 0) << quantized.err;

    const auto package = scratch_.path("f8.ipuexe");
    const auto compiled = run_tessera({"siglip", "compile", "--model", q, "--precision", "f8", "--tiles",
                                       "64", "--batch", "3", "-o", package, "--report"});
    ASSERT_EQ(compiled.exit_status, 0) << compiled.err;
    // The layer body's projections on the native GEMM: q, k and v fused
    // (hidden 64, whole scale blocks), out, fc1, fc2 — four; at hidden 144
    // q, k and v apart — six. The patch embedding and the head are f16.
    std::size_t native = 0;
    for (std::size_t at = compiled.out.find("F143 GEMM"); at != std::string::npos;
         at = compiled.out.find("F143 GEMM", at + 1)) {
      ++native;
    }
    EXPECT_EQ(native, config == tiny ? 4u : 6u) << compiled.out;

    const auto pooled = scratch_.path("pooled.npy"), hidden = scratch_.path("hidden.npy");
    const auto ran = run_tessera({"siglip", "run", "--model", q, "--precision", "f8", "--package", package,
                                  "--pixels", pixels_, "-o", pooled, "--hidden", hidden});
    ASSERT_EQ(ran.exit_status, 0) << ran.err;
    const auto expected = siglip::run_reference(siglip::load_model(q).weights, smooth_pixels(3), 3);
    const siglip::Agreement p =
        siglip::compare_outputs(floats_of(runtime::read_npy_file(pooled)), expected.pooler_output);
    const siglip::Agreement h =
        siglip::compare_outputs(floats_of(runtime::read_npy_file(hidden)), expected.last_hidden_state);
    EXPECT_TRUE(p.finite && h.finite);
    EXPECT_GE(p.cosine, 0.99) << ran.out;
    EXPECT_GE(h.cosine, 0.99) << ran.out;
  }
}

TEST_F(SiglipCommand, BadCommandLinesAreUsageErrors) {
  ASSERT_EQ(make_model().exit_status, 0);
  const std::string out = scratch_.path("x");
  struct Case {
    std::vector<std::string> args;
    const char* expected;
  };
  const Case cases[] = {
      {{"quantize", "--model", model_, "--algorithm", "gptq", "-o", out},
       "--algorithm gptq needs --calibration PIXELS.npy"},
      {{"quantize", "--model", model_, "--calibration", pixels_, "--calibration-image", config_,
        "--algorithm", "gptq", "-o", out},
       "give --calibration or --calibration-image, not both"},
      {{"quantize", "--model", model_, "--algorithm", "nearest", "--sequential-layers", "-o", out},
       "--sequential-layers needs --calibration PIXELS.npy or --calibration-image FILE..."},
      {{"quantize", "--model", model_, "--algorithm", "round", "-o", out},
       "--algorithm 'round' is not nearest or gptq"},
      {{"quantize", "--model", model_, "--algorithm", "nearest", "-o", model_},
       "-o names the model directory itself"},
      {{"quantize", "--model", model_, "--calibration", pixels_, "--algorithm", "gptq", "--damp",
        "-1", "-o", out},
       "--damp -1 is outside [0, 1]"},
      {{"reference", "--model", model_, "-o", out}, "give exactly one of --pixels and --image"},
      {{"reference", "--model", model_, "--pixels", pixels_}, "nothing to write"},
      {{"random-weights", "--config", config_, "-o", out, "--dtype", "f64"},
       "--dtype 'f64' is not one of f32, f16, bf16"},
      {{"random-weights", "--config", config_, "-o", out, "--seed", "-3"}, "--seed"},
      {{"random-weights", "-o", out}, "config"},
      {{"run", "--model", model_, "--package", out, "--pixels", pixels_, "--profile-samples"},
       "--profile-samples builds the tower compiled here; a --package was built already"},
      {{"compile", "--model", model_, "-o", out, "--profile-samples=0"},
       "--profile-samples: a buffer needs room for at least 1 record"},
      {{"compile", "--model", model_, "-o", out, "--gemm-a-gather", "sideways"},
       "--gemm-a-gather 'sideways' is not one of homes, direct, auto"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"siglip"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto result = run_tessera(args);
    EXPECT_EQ(result.exit_status, 2) << c.expected << ": " << result.err;
    EXPECT_NE(result.err.find(c.expected), std::string::npos) << result.err;
  }
}

TEST_F(SiglipCommand, BadFilesAreOneLineErrorsNamingThem) {
  ASSERT_EQ(make_model().exit_status, 0);
  const std::string relu = scratch_.write(
      "relu.json", R"({"model_type": "siglip_vision_model", "hidden_act": "relu"})");
  const std::string wrong_shape = scratch_.path("wrong.npy");
  write_pixels(wrong_shape, {1, 3, 30, 32}, std::vector<float>(3 * 30 * 32, 0.0F));
  const std::string nan_pixels = scratch_.path("nan.npy");
  std::vector<float> nan_values(3 * 32 * 32, 0.0F);
  nan_values[7] = NAN;
  write_pixels(nan_pixels, {1, 3, 32, 32}, nan_values);
  const std::string truncated = scratch_.path("truncated");
  std::filesystem::copy(model_, truncated);
  std::filesystem::resize_file(truncated + "/model.safetensors",
                               std::filesystem::file_size(truncated + "/model.safetensors") - 10);
  const std::string out = scratch_.path("x.npy");
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const Case cases[] = {
      {{"random-weights", "--config", relu, "-o", scratch_.path("r")},
       relu + ": config: hidden_act: 'relu' is not supported"},
      {{"random-weights", "--config", scratch_.path("absent.json"), "-o", scratch_.path("r")},
       "absent.json: cannot read"},
      {{"reference", "--model", model_, "--pixels", wrong_shape, "-o", out},
       wrong_shape + ": is f32[1, 3, 30, 32], but the model takes pixel values f32[B, 3, 32, 32]"},
      {{"reference", "--model", model_, "--pixels", nan_pixels, "-o", out},
       nan_pixels + ": element 7 is nan"},
      {{"reference", "--model", truncated, "--pixels", pixels_, "-o", out},
       "vision_model.head.mlp.fc2.bias: data_offsets"},
      {{"reference", "--model", scratch_.path("nowhere"), "--pixels", pixels_, "-o", out},
       "nowhere/config.json: cannot read"},
      {{"reference", "--model", model_, "--image", config_, "-o", out}, config_},
      {{"quantize", "--model", model_, "--calibration", wrong_shape, "--algorithm", "gptq", "-o",
        scratch_.path("q")},
       wrong_shape + ": is f32[1, 3, 30, 32]"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"siglip"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto result = run_tessera(args);
    EXPECT_EQ(result.exit_status, 1) << c.expected << ": " << result.err;
    EXPECT_NE(result.err.find(c.expected), std::string::npos) << result.err;
    EXPECT_NE(result.err.find(": error: "), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("internal error"), std::string::npos) << result.err;
  }
}

}  // namespace
}  // namespace tessera
