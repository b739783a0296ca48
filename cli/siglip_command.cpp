// tessera siglip: SigLIP vision towers as Hugging Face ships them —
// random-weights, the FP32 CPU reference and the F143 quantizer
// (models/README.md), and `compile` / `run` (siglip_device_commands.hpp).
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/number_options.hpp"
#include "cli/siglip_common.hpp"
#include "cli/siglip_device_commands.hpp"
#include "models/siglip/config.hpp"
#include "models/siglip/image_processor.hpp"
#include "models/siglip/quantizer/quantize.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/reference.hpp"
#include "models/siglip/weights.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

namespace siglip = models::siglip;
namespace quantizer = models::siglip::quantizer;

models::SafeTensorsDType parse_dtype_option(const std::string& text) {
  if (text == "f32") return models::SafeTensorsDType::kF32;
  if (text == "f16") return models::SafeTensorsDType::kF16;
  if (text == "bf16") return models::SafeTensorsDType::kBF16;
  throw UsageError(fmt::format("--dtype '{}' is not one of f32, f16, bf16", text));
}

int random_weights(const std::vector<std::string>& args, Streams& io) {
  CommandSyntax syntax;
  syntax.name = "siglip random-weights";
  syntax.summary =
      "Writes a Hugging Face model directory (config.json, model.safetensors) for a SigLIP\n"
      "vision tower with random weights of realistic scale, so tests and the demo need no\n"
      "download.";
  syntax.usage = "--config CONFIG.json -o DIR [--seed N] [--dtype f32|f16|bf16]";
  syntax.details =
      "CONFIG.json is a config.json as transformers writes it: a SiglipConfig (its\n"
      "vision_config is used) or a SiglipVisionConfig; absent keys take transformers'\n"
      "defaults. It is copied into DIR as is. The weights are deterministic for a seed:\n"
      "matrices N(0, 1/fan_in), biases N(0, 0.02^2), LayerNorm weights N(1, 0.1^2), the\n"
      "position embedding N(0, 1/hidden), the probe N(0, 1) (models/siglip/random_weights.hpp).";
  syntax.options.add_options()(
      "config", po::value<std::string>()->required()->value_name("CONFIG.json"),
      "the model's config.json")("output,o", po::value<std::string>()->required()->value_name("DIR"),
                                 "the model directory to write (created if needed)")(
      "seed", po::value<std::string>()->default_value("0")->value_name("N"),
      "the random seed")("dtype", po::value<std::string>()->default_value("f32")->value_name("DTYPE"),
                         "the tensors' dtype in model.safetensors: f32, f16 or bf16");
  const auto values = parse_command_line(syntax, args, io);
  if (!values) return kExitSuccess;
  const auto seed = *unsigned_option<std::uint64_t>(*values, "seed");
  const auto dtype = parse_dtype_option((*values)["dtype"].as<std::string>());
  const std::string config_path = (*values)["config"].as<std::string>();
  const std::string output = (*values)["output"].as<std::string>();

  const auto started = Clock::now();
  const std::string config_json = models::read_text_file(config_path, siglip::kMaxConfigBytes);
  const siglip::SiglipVisionConfig config =
      with_context(config_path, [&] { return siglip::parse_siglip_config(config_json); });
  const std::uint64_t parameters = siglip::parameter_count(config);
  const auto progress = progress_to(io, "random-weights", /*uses_blas=*/false);
  progress(fmt::format("drawing {} random parameters", parameters));
  const siglip::SiglipVisionWeights weights = siglip::random_weights(config, seed);
  progress(fmt::format("writing {}", (std::filesystem::path(output) / models::kSafeTensorsFile).string()));
  siglip::save_model(output, config_json, weights, dtype);
  progress({});
  io.out << fmt::format("{}: SigLIP vision tower, {}; {} parameters, {}, seed {}, in {:.2f} s\n",
                        output, siglip::describe(config), parameters, models::dtype_name(dtype),
                        seed, seconds_since(started));
  return kExitSuccess;
}

int reference(const std::vector<std::string>& args, Streams& io) {
  CommandSyntax syntax;
  syntax.name = "siglip reference";
  syntax.summary =
      "Runs a SigLIP vision tower in FP32 on the CPU (models/siglip/reference.hpp) and writes\n"
      "its pooler_output and last_hidden_state: what compiled models are checked against.";
  syntax.usage =
      "--model DIR (--pixels PIXELS.npy | --image FILE...) [-o POOLED.npy] [--hidden HIDDEN.npy]";
  syntax.details =
      "DIR is a Hugging Face model directory: config.json and model.safetensors (or a sharded\n"
      "model.safetensors.index.json). PIXELS.npy is float32 [B, 3, S, S] as transformers'\n"
      "SiglipImageProcessor produces it; --image decodes PNG or JPEG files and preprocesses\n"
      "them as it does (PIL bicubic resize to S x S, rescale 1/255, normalise mean 0.5, std\n"
      "0.5). POOLED.npy is float32 [B, H] (the attention-pooling head's output), HIDDEN.npy\n"
      "float32 [B, T, H] (after post_layernorm). At least one of -o and --hidden is needed.";
  syntax.options.add_options()("model", po::value<std::string>()->required()->value_name("DIR"),
                               "the model directory")(
      "pixels", po::value<std::string>()->value_name("PIXELS.npy"), "pixel values, f32[B, 3, S, S]")(
      "image", po::value<std::vector<std::string>>()->multitoken()->value_name("FILE..."),
      "PNG or JPEG images, one batch entry each")(
      "output,o", po::value<std::string>()->value_name("POOLED.npy"),
      "where to write pooler_output, f32[B, H]")(
      "hidden", po::value<std::string>()->value_name("HIDDEN.npy"),
      "where to write last_hidden_state, f32[B, T, H]");
  const auto values = parse_command_line(syntax, args, io);
  if (!values) return kExitSuccess;
  const bool has_pixels = values->count("pixels") != 0, has_images = values->count("image") != 0;
  if (has_pixels == has_images) throw UsageError("give exactly one of --pixels and --image");
  if (!values->count("output") && !values->count("hidden")) {
    throw UsageError("nothing to write: give -o POOLED.npy and/or --hidden HIDDEN.npy");
  }
  const std::string directory = (*values)["model"].as<std::string>();
  const auto progress = progress_to(io, "reference");
  const auto started = Clock::now();
  const ModelInput input = load_model_input(*values, progress);
  const auto& config = input.model.weights.config;
  const Pixels& pixels = input.pixels;
  const auto loaded = Clock::now();
  const siglip::SiglipOutputs outputs =
      siglip::run_reference(input.model.weights, pixels.values, pixels.batch, nullptr, progress);
  const double run_seconds = seconds_since(loaded);
  const std::uint64_t b = pixels.batch;
  progress({});
  write_outputs(*values, config, pixels.batch, outputs.pooler_output, outputs.last_hidden_state, io);
  io.out << fmt::format("reference: {} image{} through {} ({}) in {:.2f} s ({:.2f} s with loading)\n",
                        b, b == 1 ? "" : "s", directory, siglip::describe(config), run_seconds,
                        seconds_since(started));
  return kExitSuccess;
}

int quantize(const std::vector<std::string>& args, Streams& io) {
  CommandSyntax syntax;
  syntax.name = "siglip quantize";
  syntax.summary =
      "Puts the q, k, v, out, fc1 and fc2 weights of every encoder layer onto the F143 grid\n"
      "(one power-of-two scale per 64 x 64 block of the GEMM weight) and writes a Hugging Face\n"
      "model directory plus quantization.json, which records each weight's block scales.";
  syntax.usage =
      "--model DIR [--calibration PIXELS.npy | --calibration-image FILE...]\n"
      "       --algorithm nearest|gptq [--equalize-layernorm] [--damp D] [--no-bias-correction]\n"
      "       [--sequential-layers] -o DIR";
  syntax.details =
      "nearest rounds every weight to its nearest F143 value at its block's scale. gptq is\n"
      "block-diagonal GPTQ: per 64-wide slice of input columns, H = sum of x x^T over the\n"
      "calibration tokens, damped by D times its mean diagonal, and each column's rounding\n"
      "error fed into the slice's later columns. --equalize-layernorm moves per-column factors\n"
      "from layer_norm1 and layer_norm2 into the weights they feed when that lowers the\n"
      "calibration-weighted error. With calibration, each bias is corrected by\n"
      "(W - W_quantized) . mean(x). gptq and --equalize-layernorm need --calibration:\n"
      "float32 [N, 3, S, S] pixel values, as for `tessera siglip reference --pixels`, or PNG/JPEG\n"
      "files preprocessed as SiglipImageProcessor does (--calibration-image).\n"
      "The error figures printed are sum(e^T H e) / tokens, the quantity GPTQ minimises.";
  syntax.options.add_options()("model", po::value<std::string>()->required()->value_name("DIR"),
                               "the model directory to quantize")(
      "calibration", po::value<std::string>()->value_name("PIXELS.npy"),
      "calibration pixel values, f32[N, 3, S, S]")(
      "calibration-image", po::value<std::vector<std::string>>()->multitoken()->value_name("FILE..."),
      "calibration images (PNG or JPEG) instead of --calibration")(
      "algorithm", po::value<std::string>()->required()->value_name("ALGORITHM"),
      "nearest or gptq")("equalize-layernorm", po::bool_switch(),
                         "equalize layer_norm1 -> q, k, v and layer_norm2 -> fc1")(
      "damp", po::value<std::string>()->default_value("0.01")->value_name("D"),
      "GPTQ's damping, a fraction of the mean diagonal of H")(
      "no-bias-correction", po::bool_switch(), "leave the biases as they are")(
      "sequential-layers", po::bool_switch(),
      "gather each layer's statistics with the layers before it already quantized (about\n"
      "twice the calibration time)")(
      "output,o", po::value<std::string>()->required()->value_name("DIR"),
      "the quantized model directory to write");
  const auto values = parse_command_line(syntax, args, io);
  if (!values) return kExitSuccess;

  quantizer::QuantizeOptions options;
  const std::string algorithm = (*values)["algorithm"].as<std::string>();
  if (algorithm == "nearest") {
    options.algorithm = quantizer::Algorithm::kNearest;
  } else if (algorithm == "gptq") {
    options.algorithm = quantizer::Algorithm::kGptq;
  } else {
    throw UsageError(fmt::format("--algorithm '{}' is not nearest or gptq", algorithm));
  }
  const std::string damp_text = (*values)["damp"].as<std::string>();
  try {
    std::size_t used = 0;
    options.damp = std::stod(damp_text, &used);
    if (used != damp_text.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--damp '{}' is not a number", damp_text));
  }
  if (!std::isfinite(options.damp) || options.damp < 0.0 || options.damp > 1.0) {
    throw UsageError(fmt::format("--damp {} is outside [0, 1]", damp_text));
  }
  options.equalize_layernorm = (*values)["equalize-layernorm"].as<bool>();
  options.bias_correction = !(*values)["no-bias-correction"].as<bool>();
  options.sequential_layers = (*values)["sequential-layers"].as<bool>();
  const std::string directory = (*values)["model"].as<std::string>();
  const std::string output = (*values)["output"].as<std::string>();
  std::error_code same_error;
  if (std::filesystem::equivalent(directory, output, same_error)) {
    throw UsageError("-o names the model directory itself: write the quantized model elsewhere");
  }
  const bool has_calibration = values->count("calibration") != 0;
  const bool has_calibration_images = values->count("calibration-image") != 0;
  if (has_calibration && has_calibration_images) {
    throw UsageError("give --calibration or --calibration-image, not both");
  }
  if (!has_calibration && !has_calibration_images &&
      (options.algorithm == quantizer::Algorithm::kGptq || options.equalize_layernorm ||
       options.sequential_layers)) {
    throw UsageError(fmt::format("{} needs --calibration PIXELS.npy or --calibration-image FILE...",
                                 options.algorithm == quantizer::Algorithm::kGptq
                                     ? "--algorithm gptq"
                                     : options.equalize_layernorm ? "--equalize-layernorm"
                                                                  : "--sequential-layers"));
  }

  const auto progress = progress_to(io, "quantize");
  const auto started = Clock::now();
  progress(fmt::format("loading {}", directory));
  siglip::SiglipModel model = siglip::load_model(directory);
  std::optional<Pixels> pixels;
  std::optional<quantizer::Calibration> calibration;
  if (has_calibration) {
    pixels = read_pixels((*values)["calibration"].as<std::string>(), model.weights.config);
  } else if (has_calibration_images) {
    const auto& names = (*values)["calibration-image"].as<std::vector<std::string>>();
    const std::vector<std::filesystem::path> files(names.begin(), names.end());
    progress(fmt::format("preprocessing {} calibration image{}", files.size(),
                         files.size() == 1 ? "" : "s"));
    pixels = Pixels{siglip::pixel_values_from_files(files, model.weights.config),
                    checked_cast<std::uint32_t>(files.size(), "images")};
  }
  if (pixels) calibration = quantizer::Calibration{pixels->values, pixels->batch};
  const quantizer::QuantizationRecord record =
      quantizer::quantize(model.weights, calibration, options, progress);
  progress(fmt::format("writing {}", output));
  quantizer::save_quantized_model(output, model.config_json, model.weights, record);

  progress({});
  io.out << fmt::format("{}: {} weights of {} on the F143 grid ({}{}{}), in {:.2f} s\n", output,
                        record.tensors.size(), directory, algorithm,
                        options.equalize_layernorm ? ", LayerNorm equalization" : "",
                        record.bias_correction ? ", bias correction" : "", seconds_since(started));
  if (record.calibration_images) {
    io.out << fmt::format("calibration: {} images, {} tokens; error sum(e^T H e)/tokens per layer:\n",
                          *record.calibration_images, record.calibration_tokens);
    double nearest_total = 0.0, total = 0.0;
    for (std::size_t i = 0; i < model.weights.config.num_hidden_layers; ++i) {
      double nearest = 0.0, error = 0.0;
      const std::string prefix = fmt::format("{}encoder.layers.{}.", siglip::kPrefix, i);
      for (const auto& [name, tensor] : record.tensors) {
        if (!name.starts_with(prefix)) continue;
        nearest += tensor.error_nearest;
        error += tensor.error;
      }
      nearest_total += nearest;
      total += error;
      io.out << fmt::format("  layer {:>3}: nearest {:.6g}, {} {:.6g}\n", i, nearest, algorithm, error);
    }
    io.out << fmt::format("  all      : nearest {:.6g}, {} {:.6g}\n", nearest_total, algorithm, total);
  }
  return kExitSuccess;
}

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  int (*run)(const std::vector<std::string>&, Streams&);
};

constexpr Subcommand kSubcommands[] = {
    {"random-weights", "write a model directory with random weights for a config.json",
     random_weights},
    {"reference", "run the FP32 CPU reference: pooler_output and last_hidden_state", reference},
    {"quantize", "put the encoder's weights on the F143 grid (nearest or GPTQ)", quantize},
    {"compile", "compile the tower into a package for one C600", siglip_compile},
    {"run", "run images through the tower on the simulator (or a C600)", siglip_run},
};

void print_help(std::ostream& out) {
  out << "Usage: tessera siglip SUBCOMMAND [ARGS...]\n\n"
         "SigLIP vision towers as Hugging Face ships them (config.json + SafeTensors).\n\n"
         "Subcommands:\n";
  for (const auto& sub : kSubcommands) out << fmt::format("  {:<16}{}\n", sub.name, sub.summary);
  out << "\nRun 'tessera siglip SUBCOMMAND --help' for a subcommand's options.\n";
}

}  // namespace

Command siglip_command() {
  return Command{
      "siglip", "SigLIP vision towers: random weights, the CPU reference, the F143 quantizer, compile, run",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        if (args.empty()) {
          print_help(io.out);
          return kExitUsage;
        }
        if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
          print_help(io.out);
          return kExitSuccess;
        }
        for (const auto& sub : kSubcommands) {
          if (args[0] == sub.name) return sub.run({args.begin() + 1, args.end()}, io);
        }
        throw UsageError(fmt::format("unknown subcommand '{}' (random-weights, reference, quantize, compile, run)",
                                     args[0]));
      }};
}

}  // namespace tessera::cli
