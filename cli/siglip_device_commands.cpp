#include "cli/siglip_device_commands.hpp"

#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "backends/sim/sim_transport.hpp"
#include "cli/compile_threads_option.hpp"
#include "cli/device_build.hpp"
#include "cli/number_options.hpp"
#include "cli/profile_samples_option.hpp"
#include "cli/siglip_common.hpp"
#include "cli/transport_options.hpp"
#include "compiler/compile.hpp"
#include "models/siglip/activation_scales.hpp"
#include "models/siglip/compare.hpp"
#include "models/siglip/fit.hpp"
#include "models/siglip/graph.hpp"
#include "models/siglip/quantizer/quantize.hpp"
#include "models/siglip/weights.hpp"
#include "runtime/session.hpp"
#include "schema/profile.hpp"
#include "schema/reader.hpp"
#include "schema/writer.hpp"
#include "sim/options.hpp"
#include "support/error.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

namespace siglip = models::siglip;

siglip::GraphPrecision parse_precision(const std::string& text) {
  if (text == "f32") return siglip::GraphPrecision::kF32;
  if (text == "f16") return siglip::GraphPrecision::kF16;
  if (text == "f143") return siglip::GraphPrecision::kF143;
  if (text == "f8") return siglip::GraphPrecision::kF8;
  throw UsageError(fmt::format("--precision '{}' is not one of f32, f16, f143, f8", text));
}

void add_graph_options(CommandSyntax& syntax) {
  syntax.options.add_options()("model", po::value<std::string>()->required()->value_name("DIR"),
                               "the Hugging Face model directory (config.json + SafeTensors)")(
      "precision", po::value<std::string>()->default_value("f143")->value_name("P"),
      "f16 (f16 weights and activations), f143 (the encoder layers' GEMM weights F143 with "
      "64 x 64 block scales, the rest f16), f8 (f143's weights, and the encoder projections' "
      "inputs F143 at the "
      "activation scales in the model's quantization.json: the native FP8 GEMM) or f32")(
      "tiles", po::value<std::string>()->default_value("1472")->value_name("N"),
      "spread the model over logical tiles 0 … N − 1")(
      "min-shard-bytes", po::value<std::string>()->default_value("1024")->value_name("B"),
      "cut no tensor into shards smaller than B bytes (0: as many tiles as row blocks); "
      "smaller shards make one-word messages whose exchange rows fill the tiles' code memory")(
      "gemm-a-gather", po::value<std::string>()->default_value("homes")->value_name("HOW"),
      "how the GEMMs' tasks get their rows of the left operand: homes (gathered once per row "
      "block onto a home tile, then multicast whole panels), direct (a message per row and "
      "16-wide panel straight from the operand's rows) or auto (the cheaper by the planner's "
      "cycle model); homes by default: direct receives cost exchange-row code for the whole "
      "program and simulation time, for at most a few per cent of cycles");
  add_sdk_option(syntax);
  add_profile_samples_option(syntax);
}

compiler::CompileOptions compile_options(const po::variables_map& values) {
  compiler::CompileOptions options;
  options.tiles = *unsigned_option<std::uint32_t>(values, "tiles");
  // A layer's biases and LayerNorm scales ([H] each) cut as far as their row
  // blocks go lie one word per tile: added to a [1, T, H] activation (all on
  // tile 0, its axis 0 being the batch) that makes T × H / 2 one-word
  // messages into tile 0 per operation, whose exchange rows outgrow the
  // code memory below 0x80000 (head dim 72: 157 KB of rows on tile 0).
  options.min_shard_bytes = *unsigned_option<std::uint64_t>(values, "min-shard-bytes");
  // Measured on one so400m-width layer at f143 (the projections' A blocks):
  // direct 1,397,207 simulated cycles in 17.7 s of host time, homes
  // 1,417,381 cycles in 10.5 s, with fewer exchange rows in region 0.
  const std::string& gather = values["gemm-a-gather"].as<std::string>();
  if (gather == "homes") {
    options.gemm_a_homes = true;
  } else if (gather == "direct") {
    options.gemm_a_homes = false;
  } else if (gather != "auto") {
    throw UsageError(fmt::format("--gemm-a-gather '{}' is not one of homes, direct, auto", gather));
  }
  options.profile_samples = profile_samples_option(values);
  return options;
}

// At f8, the activation scales the quantizer recorded in the model
// directory's quantization.json (an InputError saying to quantize with
// calibration inputs when there are none); nullopt at the other precisions.
std::optional<siglip::ActivationScales> activation_scales(const std::string& directory,
                                                          const siglip::SiglipVisionConfig& config,
                                                          siglip::GraphPrecision precision) {
  if (precision != siglip::GraphPrecision::kF8) return std::nullopt;
  return siglip::read_f8_activation_scales(directory, config);
}

// Compiles the tower for `batch` images, saying how long it took.
compiler::CompileResult compile_tower(const siglip::SiglipVisionConfig& config, std::uint32_t batch,
                                      siglip::GraphPrecision precision,
                                      const std::optional<siglip::ActivationScales>& activations,
                                      const compiler::CompileOptions& options,
                                      const siglip::Progress& progress) {
  progress(fmt::format("compiling {} for batch {} on {} tiles", siglip::describe(config), batch,
                       options.tiles));
  const auto started = Clock::now();
  const compiler::Graph graph =
      siglip::build_vision_graph(config, batch, precision, activations ? &*activations : nullptr);
  // Attention's buffers get what the tiles' weights and the layer's other
  // data leave them (so400m at batch 2 overfilled 60 tiles otherwise).
  compiler::CompileOptions tower = options;
  if (!tower.attention.working_memory) {
    tower.attention.working_memory =
        siglip::attention_working_memory(config, precision, options.tiles, batch);
  }
  compiler::CompileResult result = compiler::compile(graph, tower);
  progress(fmt::format("compiled in {:.2f} s", seconds_since(started)));
  return result;
}

// A package given with --package must have been built from this config at
// this precision and batch: its bindings are exactly the graph's.
void check_package_matches(const schema::Application& app, const compiler::Graph& graph,
                           const std::string& path) {
  std::map<std::string, compiler::TensorType> expected;
  for (const auto kind : {compiler::OpKind::kParameter, compiler::OpKind::kHostInput}) {
    for (const compiler::OpId op : graph.top_level(kind)) {
      const auto& name = std::get<compiler::BindingAttributes>(graph.operation(op).attributes).name;
      expected.emplace(name, graph.type(graph.operation(op).results[0]));
    }
  }
  std::size_t seen = 0;
  for (const auto* list : {&app.weights, &app.inputs}) {
    for (const schema::Binding& binding : *list) {
      const auto it = expected.find(binding.name);
      const std::vector<std::uint64_t> shape(binding.shape.begin(), binding.shape.end());
      if (it == expected.end() || it->second.dtype() != binding.dtype ||
          std::vector<std::uint64_t>(it->second.shape.begin(), it->second.shape.end()) != shape) {
        throw UsageError(fmt::format(
            "{}: its binding '{}' {} is not what this model needs at this precision and batch{} — "
            "was it compiled from another config, precision or batch?",
            path, binding.name, runtime::describe_shape(binding),
            it == expected.end() ? " (no such parameter)"
                                 : fmt::format(" ({})", compiler::format_type(it->second))));
      }
      ++seen;
    }
  }
  if (seen != expected.size()) {
    throw UsageError(fmt::format("{}: it binds {} tensors, this model needs {}", path, seen,
                                 expected.size()));
  }
}

std::vector<float> floats_of(const runtime::HostTensor& tensor) {
  std::vector<float> values(tensor.byte_size() / sizeof(float));
  std::memcpy(values.data(), tensor.bytes().data(), values.size() * sizeof(float));
  return values;
}

}  // namespace

int siglip_compile(const std::vector<std::string>& args, Streams& io) {
  CommandSyntax syntax;
  syntax.name = "siglip compile";
  syntax.summary =
      "Compiles a SigLIP vision tower (its config.json) into a package for one C600: the patch\n"
      "embedding, every encoder layer in one loop, post-LayerNorm and the pooling head.";
  syntax.usage =
      "--model DIR [--precision f16|f143|f8|f32] [--batch B] [--tiles N] [--min-shard-bytes B]\n"
      "       [--gemm-a-gather homes|direct|auto] [--profile-samples[=RECORDS]] [--threads N]\n"
      "       -o PACKAGE [--report]";
  syntax.details =
      "The package takes pixel_values f32[B, C, S, S] and returns last_hidden_state f32[B, T, H]\n"
      "and pooler_output f32[B, H]; its weights are bound when it runs (tessera siglip run\n"
      "--package), packed from the model directory. First, from config.json alone, it checks\n"
      "that the weights fit in the SRAM the tiles leave for them at this precision, and says\n"
      "which precision would fit when they do not. At f8 the activation scales are compiled in,\n"
      "from the model's quantization.json (`tessera siglip quantize --calibration ...` writes\n"
      "them); no weight is read.";
  add_graph_options(syntax);
  syntax.options.add_options()("batch", po::value<std::string>()->default_value("1")->value_name("B"),
                               "images per run")(
      "output,o", po::value<std::string>()->required()->value_name("PACKAGE"), "the .ipuexe to write")(
      "report", "print the compile report (phases, GEMM and attention plans, memory)");
  add_compile_threads_option(syntax);
  const auto values = parse_command_line(syntax, args, io);
  if (!values) return kExitSuccess;
  const siglip::GraphPrecision precision = parse_precision((*values)["precision"].as<std::string>());
  const auto batch = *unsigned_option<std::uint32_t>(*values, "batch");
  compiler::CompileOptions options = compile_options(*values);
  options.threads = compile_threads_option(*values);
  const auto device = DeviceBuild::open(*values);
  if (device) options.device = device->code();
  const std::string directory = (*values)["model"].as<std::string>();
  const siglip::SiglipVisionConfig config =
      siglip::read_siglip_config(std::filesystem::path(directory) / "config.json");
  with_context(directory, [&] { siglip::require_weights_fit(config, precision, options.tiles); });
  const auto activations = activation_scales(directory, config, precision);
  const auto progress = progress_to(io, "compile", /*uses_blas=*/false);
  const auto started = Clock::now();
  const compiler::CompileResult result =
      compile_tower(config, batch, precision, activations, options, progress);
  const std::string path = (*values)["output"].as<std::string>();
  schema::write_package(result.application, path);
  progress({});
  io.out << fmt::format("{}: {} ({}), batch {}, {} tiles, compiled in {:.2f} s\n", path,
                        siglip::describe(config), (*values)["precision"].as<std::string>(), batch,
                        result.application.tiles.size(), seconds_since(started));
  if (device) io.out << device->summary(result.application) << "\n";
  if (values->count("report")) io.out << compiler::format_report(result);
  return kExitSuccess;
}

int siglip_run(const std::vector<std::string>& args, Streams& io) {
  CommandSyntax syntax;
  syntax.name = "siglip run";
  syntax.summary =
      "Runs images through a SigLIP vision tower on a backend (the simulated C600 by default):\n"
      "compiles it for the batch the input has, or runs a package from `tessera siglip compile`.";
  syntax.usage =
      "--model DIR [--precision P] [--package PACKAGE] (--pixels PIXELS.npy | --image FILE...)\n"
      "       [-o POOLED.npy] [--hidden HIDDEN.npy] [--reference] [--profile FILE]\n"
      "       [--backend sim|c600] [--profile-samples[=RECORDS]]";
  syntax.details =
      "PIXELS.npy is float32 [B, 3, S, S] as transformers' SiglipImageProcessor produces it;\n"
      "--image decodes PNG or JPEG files and preprocesses them the same way. It prints the\n"
      "simulated cycles, the modelled ms per image at 1.5 GHz and the host wall time; with\n"
      "--reference also the cosine similarity and max abs error of both outputs against the\n"
      "FP32 CPU reference. f8 needs a model quantized with calibration inputs (tessera siglip\n"
      "quantize --calibration ...): its quantization.json holds the activation scales.";
  add_graph_options(syntax);
  syntax.options.add_options()("package", po::value<std::string>()->value_name("PACKAGE"),
                               "a package compiled from this model, precision and batch")(
      "pixels", po::value<std::string>()->value_name("PIXELS.npy"), "pixel values, f32[B, 3, S, S]")(
      "image", po::value<std::vector<std::string>>()->multitoken()->value_name("FILE..."),
      "PNG or JPEG images, one batch entry each")(
      "output,o", po::value<std::string>()->value_name("POOLED.npy"), "write pooler_output, f32[B, H]")(
      "hidden", po::value<std::string>()->value_name("HIDDEN.npy"),
      "write last_hidden_state, f32[B, T, H]")(
      "reference", "compare both outputs with the FP32 CPU reference")(
      "profile", po::value<std::string>()->value_name("FILE"),
      "write the run's cycle profile (schema/profile.capnp; read it with `tessera profile`)")(
      "backend", po::value<std::string>()->default_value("sim")->value_name("NAME"),
      "sim (the simulated C600) or c600 (the device)")(
      "timeout", po::value<std::string>()->default_value("3600")->value_name("SECONDS"),
      "give up when the device (or the simulator) does not reach the next host rendezvous in "
      "this long (a whole tower on the simulator takes minutes on a small host)");
  add_transport_options(syntax);
  const auto values = parse_command_line(syntax, args, io);
  if (!values) return kExitSuccess;
  const std::string precision_name = (*values)["precision"].as<std::string>();
  const siglip::GraphPrecision precision = parse_precision(precision_name);
  compiler::CompileOptions options = compile_options(*values);
  if (values->count("package") && options.profile_samples) {
    throw UsageError(
        "--profile-samples builds the tower compiled here; a --package was built already (give "
        "`tessera siglip compile` the option instead)");
  }
  // Compiled here (no --package), a tower for --backend c600 needs its
  // device kernels too.
  const auto device = DeviceBuild::open(*values);
  if (device) options.device = device->code();
  const bool has_pixels = values->count("pixels") != 0, has_images = values->count("image") != 0;
  if (has_pixels == has_images) throw UsageError("give exactly one of --pixels and --image");
  TransportRequest request;
  request.backend = (*values)["backend"].as<std::string>();
  read_transport_options(*values, request);
  const bool want_profile = values->count("profile") != 0;
  request.trace = want_profile;
  runtime::SessionOptions session_options;
  session_options.rendezvous_timeout =
      parse_seconds((*values)["timeout"].as<std::string>(), "--timeout", runtime::kMinWaitTimeout,
                    runtime::kMaxWaitTimeout);
  session_options.halt_timeout = session_options.rendezvous_timeout;

  // Whether the weights fit, and at f8 the activation scales, are known
  // from config.json and quantization.json: say so before reading the
  // weights. A --package was compiled, so its weights were placed.
  const std::string directory = (*values)["model"].as<std::string>();
  {
    const siglip::SiglipVisionConfig config =
        siglip::read_siglip_config(std::filesystem::path(directory) / "config.json");
    if (!values->count("package")) {
      with_context(directory,
                   [&] { siglip::require_weights_fit(config, precision, options.tiles); });
    }
    (void)activation_scales(directory, config, precision);
  }
  const auto progress = progress_to(io, "run", values->count("reference") != 0);
  const ModelInput input = load_model_input(*values, progress);
  // A quantized model (quantization.json beside its weights) is packed at
  // its recorded block scales, so the package holds the quantizer's codes;
  // at f8 it also gives the activation scales, read with the weights they
  // belong to.
  const auto recorded =
      precision == siglip::GraphPrecision::kF143 || precision == siglip::GraphPrecision::kF8
          ? siglip::quantizer::read_quantization(directory, input.model.weights)
          : std::nullopt;
  const siglip::SiglipModel& model = input.model;
  const auto& config = model.weights.config;
  const Pixels& pixels = input.pixels;
  std::optional<siglip::ActivationScales> activations;
  if (precision == siglip::GraphPrecision::kF8) {
    // read_f8_activation_scales found the record above; this is the same
    // file, now checked against the weights.
    activations =
        recorded
            ? with_context((std::filesystem::path(directory) / siglip::quantizer::kQuantizationFile)
                               .string(),
                           [&] {
                             return siglip::f8_activation_scales(
                                 config, siglip::recorded_activation_scales(*recorded));
                           })
            : siglip::read_f8_activation_scales(directory, config);
  }

  schema::Application app;
  if (values->count("package")) {
    const std::string path = (*values)["package"].as<std::string>();
    app = schema::read_package_file(path);
    check_package_matches(app,
                          siglip::build_vision_graph(config, pixels.batch, precision,
                                                     activations ? &*activations : nullptr),
                          path);
  } else {
    app =
        compile_tower(config, pixels.batch, precision, activations, options, progress).application;
  }

  // The host tensors: the packed weights and the pixels, by binding name.
  runtime::TensorMap tensors;
  for (auto& [name, bytes] : siglip::pack_vision_weights(model.weights, precision,
                                                                 recorded ? &*recorded : nullptr)) {
    const schema::Binding* binding = nullptr;
    for (const auto& b : app.weights) {
      if (b.name == name) binding = &b;
    }
    if (binding == nullptr) throw UsageError(fmt::format("the package has no weight '{}'", name));
    tensors.emplace(name, runtime::HostTensor(binding->dtype,
                                              {binding->shape.begin(), binding->shape.end()},
                                              std::move(bytes)));
  }
  std::vector<std::uint8_t> pixel_bytes(pixels.values.size() * sizeof(float));
  std::memcpy(pixel_bytes.data(), pixels.values.data(), pixel_bytes.size());
  tensors.emplace(std::string(siglip::kPixelValues),
                  runtime::HostTensor(schema::DType::kF32,
                                      {pixels.batch, config.num_channels, config.image_size,
                                       config.image_size},
                                      std::move(pixel_bytes)));

  const auto transport = open_transport(request);
  progress(fmt::format("running on {}", transport->description()));
  const auto started = Clock::now();
  // The session keeps the package's records; moved, not copied.
  runtime::Session session(*transport, std::move(app), session_options);
  runtime::TensorMap outputs;
  for (const auto& call : session.application().host_exchange.calls) {
    runtime::TensorMap inputs;
    for (const auto& name : call.input_bindings) inputs.emplace(name, tensors.at(name));
    for (auto& [name, tensor] : session.invoke(call.name, inputs)) {
      outputs.insert_or_assign(name, std::move(tensor));
    }
  }
  session.finish();
  const double wall = seconds_since(started);

  const std::uint64_t b = pixels.batch;
  const std::vector<float> hidden = floats_of(outputs.at(std::string(siglip::kLastHiddenState)));
  std::vector<float> pooled;
  if (model.weights.head) pooled = floats_of(outputs.at(std::string(siglip::kPoolerOutput)));
  progress({});
  if (auto* sim = dynamic_cast<backends::SimTransport*>(transport.get())) {
    const std::uint64_t cycles = sim->chip().now();
    const double ms = 1e3 * static_cast<double>(cycles) / static_cast<double>(sim::SimOptions{}.clock_hz);
    io.out << fmt::format("simulated: {} cycles, {:.3f} ms for {} image{} ({:.3f} ms/image at "
                          "1.5 GHz), host {:.2f} s\n",
                          cycles, ms, b, b == 1 ? "" : "s", ms / static_cast<double>(b), wall);
  } else {
    io.out << fmt::format("{}: {} image{} in {:.3f} s\n", transport->description(), b,
                          b == 1 ? "" : "s", wall);
  }
  write_outputs(*values, config, pixels.batch, pooled, hidden, io);
  if (want_profile) {
    const auto profile = session.profile();
    if (!profile) throw UsageError("this backend records no cycle profile");
    schema::write_profile((*values)["profile"].as<std::string>(), *profile);
    io.out << fmt::format("wrote the cycle profile to {}\n", (*values)["profile"].as<std::string>());
  }
  if (values->count("reference")) {
    progress("running the FP32 CPU reference");
    const siglip::SiglipOutputs expected =
        siglip::run_reference(model.weights, pixels.values, pixels.batch, nullptr, progress);
    progress({});
    const auto report = [&](std::string_view name, const std::vector<float>& got,
                            const std::vector<float>& want) {
      const siglip::Agreement a = siglip::compare_outputs(got, want);
      io.out << fmt::format("{} against the reference: cosine {:.6f}, max abs error {:.4g}{}\n", name,
                            a.cosine, a.max_abs_error, a.finite ? "" : ", NOT all finite");
    };
    if (!pooled.empty()) report(siglip::kPoolerOutput, pooled, expected.pooler_output);
    report(siglip::kLastHiddenState, hidden, expected.last_hidden_state);
  }
  return kExitSuccess;
}

}  // namespace tessera::cli
