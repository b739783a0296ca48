#include "conformance/device_cases.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "compiler/compile.hpp"
#include "models/siglip/compare.hpp"
#include "models/siglip/graph.hpp"
#include "models/siglip/random_weights.hpp"
#include "models/siglip/reference.hpp"
#include "schema/writer.hpp"
#include "tests/models/siglip_testing.hpp"

namespace tessera::conformance {
namespace {

using compiler::DType;
using compiler::Graph;
using compiler::OpKind;
using compiler::ValueId;

GraphCase model_case(std::string name, std::string exercises, std::uint32_t tiles,
                     std::function<Graph()> build, std::uint64_t seed) {
  return GraphCase{std::move(name), std::move(exercises), tiles, std::move(build),
                   GraphInputs::kModelValues, seed};
}

// u8 codes [k, n] and their i32 scales, block-scaled: an F143 GEMM weight.
ValueId f143_weight(Graph& g, std::uint32_t k, std::uint32_t n) {
  const ValueId codes = g.parameter("codes", DType::kU8, {k, n});
  const ValueId scales = g.parameter("scales", DType::kI32, {(k + 63) / 64, (n + 63) / 64});
  return g.block_scale(codes, scales);
}

std::vector<KernelFamilyCase> make_family_cases() {
  std::vector<KernelFamilyCase> cases;
  cases.push_back({"elementwise", model_case("FamilyElementwise",
                                             "add f32 and f16, mul f32 and f16, a row-broadcast "
                                             "add, [8, 96] on 4 tiles",
                                             4,
                                             [] {
                                               Graph g;
                                               const auto a = g.host_input("a", DType::kF32, {8, 96});
                                               const auto b = g.host_input("b", DType::kF32, {8, 96});
                                               const auto c = g.host_input("c", DType::kF16, {8, 96});
                                               const auto d = g.host_input("d", DType::kF16, {8, 96});
                                               const auto r = g.host_input("r", DType::kF32, {96});
                                               g.host_output("sum32", g.add(a, b));
                                               g.host_output("sum16", g.add(c, d));
                                               g.host_output("product32", g.mul(a, b));
                                               g.host_output("product16", g.mul(c, d));
                                               g.host_output("row", g.add(a, r));
                                               return g;
                                             },
                                             1001)});
  cases.push_back({"reduction", model_case("FamilyReduction",
                                           "reduce_sum f32 [16, 200] and f16 [16, 200] over "
                                           "axis 1 on 4 tiles",
                                           4,
                                           [] {
                                             Graph g;
                                             const auto x = g.host_input("x", DType::kF32, {16, 200});
                                             const auto h = g.host_input("h", DType::kF16, {16, 200});
                                             g.host_output("s32", g.reduce_sum(x, {1}));
                                             g.host_output("s16", g.reduce_sum(h, {1}));
                                             return g;
                                           },
                                           1002)});
  cases.push_back({"convert", model_case("FamilyConvert",
                                         "convert f32 → f16 and f16 → f32, [8, 100] on 4 tiles", 4,
                                         [] {
                                           Graph g;
                                           const auto x = g.host_input("x", DType::kF32, {8, 100});
                                           const auto h = g.host_input("h", DType::kF16, {8, 100});
                                           g.host_output("to16", g.convert(x, DType::kF16));
                                           g.host_output("to32", g.convert(h, DType::kF32));
                                           return g;
                                         },
                                         1003)});
  cases.push_back({"activation", model_case("FamilyActivation",
                                            "gelu (tanh) f32 and f16, [8, 128] on 4 tiles", 4,
                                            [] {
                                              Graph g;
                                              const auto x = g.host_input("x", DType::kF32, {8, 128});
                                              const auto h = g.host_input("h", DType::kF16, {8, 128});
                                              g.host_output("g32", g.gelu(x));
                                              g.host_output("g16", g.gelu(h));
                                              return g;
                                            },
                                            1004)});
  cases.push_back({"row_normalisation",
                   model_case("FamilyRowNormalisation",
                              "softmax f32 and f16 over rows of 100, layer_norm f32 [8, 64], "
                              "on 4 tiles",
                              4,
                              [] {
                                Graph g;
                                const auto x = g.host_input("x", DType::kF32, {8, 100});
                                const auto h = g.host_input("h", DType::kF16, {8, 100});
                                const auto n = g.host_input("n", DType::kF32, {8, 64});
                                const auto gamma = g.parameter("gamma", DType::kF32, {64});
                                const auto beta = g.parameter("beta", DType::kF32, {64});
                                g.host_output("p32", g.softmax(x, 1));
                                g.host_output("p16", g.softmax(h, 1));
                                g.host_output("ln32", g.layer_norm(n, gamma, beta, 1e-6));
                                return g;
                              },
                              1005)});
  cases.push_back({"layer_norm", model_case("FamilyLayerNorm",
                                            "layer_norm f16 [16, 64] (ε 1e-6) on 4 tiles", 4,
                                            [] {
                                              Graph g;
                                              const auto x = g.host_input("x", DType::kF16, {16, 64});
                                              const auto gamma = g.parameter("gamma", DType::kF16, {64});
                                              const auto beta = g.parameter("beta", DType::kF16, {64});
                                              g.host_output("y", g.layer_norm(x, gamma, beta, 1e-6));
                                              return g;
                                            },
                                            1006)});
  cases.push_back({"gemm", model_case("FamilyGemm",
                                      "matmul f32 and f16 [32, 64] · [64, 48] on 8 tiles", 8,
                                      [] {
                                        Graph g;
                                        const auto a = g.host_input("a", DType::kF32, {32, 64});
                                        const auto b = g.parameter("b", DType::kF32, {64, 48});
                                        const auto c = g.host_input("c", DType::kF16, {32, 64});
                                        const auto d = g.parameter("d", DType::kF16, {64, 48});
                                        g.host_output("m32", g.matmul(a, b));
                                        g.host_output("m16", g.matmul(c, d));
                                        return g;
                                      },
                                      1007)});
  cases.push_back({"rearrange", model_case("FamilyRearrange",
                                           "matmul f16 [72, 96] · [96, 80] on 16 tiles: operands "
                                           "rearranged into GEMM blocks and the result unpacked",
                                           16,
                                           [] {
                                             Graph g;
                                             const auto a = g.host_input("a", DType::kF16, {72, 96});
                                             const auto b = g.host_input("b", DType::kF16, {96, 80});
                                             g.host_output("m", g.matmul(a, b));
                                             return g;
                                           },
                                           1008)});
  cases.push_back({"layout", model_case("FamilyLayout",
                                        "gelu(matmul f16 [64, 64] · [64, 128] + bias): the bias "
                                        "and GeLU on the GEMM's blocked result, on 8 tiles",
                                        8,
                                        [] {
                                          Graph g;
                                          const auto x = g.host_input("x", DType::kF16, {64, 64});
                                          const auto w = g.parameter("w", DType::kF16, {64, 128});
                                          const auto bias = g.parameter("bias", DType::kF16, {128});
                                          g.host_output("y", g.gelu(g.add(g.matmul(x, w), bias)));
                                          return g;
                                        },
                                        1009),
                   "no lowering calls the C16 bias adds, relayout or reblocks yet: the GEMM's "
                   "result is unpacked to row-major and the bias add and GeLU run there"});
  cases.push_back({"f143", model_case("FamilyF143",
                                      "matmul f16 [32, 128] · block-scaled F143 [128, 64], and "
                                      "convert f16 → f8f143 → f16, on 8 tiles",
                                      8,
                                      [] {
                                        Graph g;
                                        const auto a = g.host_input("a", DType::kF16, {32, 128});
                                        g.host_output("m", g.matmul(a, f143_weight(g, 128, 64)));
                                        const auto codes = g.convert(
                                            a, compiler::ElementType{DType::kF8F143, -2});
                                        g.host_output("round_trip", g.convert(codes, DType::kF16));
                                        return g;
                                      },
                                      1010)});
  cases.push_back({"attention", model_case("FamilyAttention",
                                           "attention f16 q [1, 2, 16, 32], k, v [1, 2, 24, 32], "
                                           "scale 32^-0.5, on 8 tiles",
                                           8,
                                           [] {
                                             Graph g;
                                             const auto q = g.host_input("q", DType::kF16, {1, 2, 16, 32});
                                             const auto k = g.host_input("k", DType::kF16, {1, 2, 24, 32});
                                             const auto v = g.host_input("v", DType::kF16, {1, 2, 24, 32});
                                             g.host_output("o", g.attention(q, k, v, 0.17677669529663687));
                                             return g;
                                           },
                                           1011)});
  cases.push_back({"move_elements", GraphCase{"FamilyMoveElements",
                                              "transpose f16 [6, 10] and u8 [6, 10] (sub-word "
                                              "elements) on 2 tiles",
                                              2,
                                              [] {
                                                Graph g;
                                                const auto h = g.host_input("h", DType::kF16, {6, 10});
                                                const auto u = g.host_input("u", DType::kU8, {6, 10});
                                                g.host_output("ht", g.transpose(h, {1, 0}));
                                                g.host_output("ut", g.transpose(u, {1, 0}));
                                                return g;
                                              },
                                              GraphInputs::kAnyBits, 1012}});
  cases.push_back({"runtime_helpers", GraphCase{"FamilyRuntimeHelpers",
                                                "f32 [2, 3000] halves swapped within each row "
                                                "(long local word runs), on 2 tiles",
                                                2,
                                                [] {
                                                  Graph g;
                                                  const auto x = g.host_input("x", DType::kF32, {2, 3000});
                                                  const auto left = g.slice(x, {0, 0}, {2, 1500});
                                                  const auto right = g.slice(x, {0, 1500}, {2, 3000});
                                                  g.host_output("y", g.concat({right, left}, 1));
                                                  return g;
                                                },
                                                GraphInputs::kAnyBits, 1013}});
  return cases;
}

// The families the package's kernel calls belong to.
std::set<std::string> families_called(const schema::Application& application,
                                      const DeviceKernelBuild& device) {
  std::set<std::string> families;
  for (const auto& tile : application.debug.tiles) {
    for (const auto& site : tile.call_sites) {
      const std::string family = device.family_of(site.kernel);
      if (!family.empty()) families.insert(family);
    }
  }
  return families;
}

compiler::CompileResult compile_linked(const Graph& graph, std::uint32_t tiles,
                                       DeviceKernelBuild& device, const std::string& name) {
  compiler::CompileResult linked =
      compiler::compile(graph, {.tiles = tiles, .device = device.code()});
  EXPECT_TRUE(linked.application.hardware_loadable)
      << name << ": the package built with device kernels is not hardware-loadable: "
      << linked.application.not_loadable_reason;
  return linked;
}

// The device's outputs against the host models' (see HostModelMatch).
void compare_with_host_models(const std::string& name, const Graph& graph,
                              const TensorBytes& device, const TensorBytes& host,
                              const testing::ReferenceResult* reference, HostModelMatch match,
                              DeviceCaseRun& run) {
  for (const compiler::OpId op : graph.top_level(OpKind::kHostOutput)) {
    const std::string binding =
        std::get<compiler::BindingAttributes>(graph.operation(op).attributes).name;
    const auto& type = graph.type(graph.operation(op).inputs.at(0));
    const auto got = device.find(binding);
    const auto want = host.find(binding);
    if (got == device.end() || want == host.end()) {
      ADD_FAILURE() << name << ": output '" << binding << "' missing on the "
                    << (got == device.end() ? "device" : "host models");
      continue;
    }
    const std::string difference = first_difference(binding, type, want->second, got->second);
    if (difference.empty()) continue;
    if (match == HostModelMatch::kBitwise) {
      ADD_FAILURE() << name << ": the device differs from the host models: " << difference;
      continue;
    }
    // Silicon: the same bits where the semantics is exact; elsewhere count what differs
    // (the reference's bounds or bar were checked already).
    const std::size_t size = schema::dtype_size(type.dtype());
    for (std::size_t e = 0; (e + 1) * size <= got->second.size() &&
                            (e + 1) * size <= want->second.size();
         ++e) {
      if (std::memcmp(got->second.data() + e * size, want->second.data() + e * size, size) == 0)
        continue;
      ++run.differing_from_host_models;
      if (reference == nullptr) continue;
      EXPECT_NE(reference->bounds.at(binding).at(e).kind, testing::ElementBound::Kind::kExact)
          << name << ": " << binding << " element " << e
          << " is exact by the semantics but differs from the host models";
    }
  }
  if (run.differing_from_host_models > 0) {
    std::cout << name << ": " << run.differing_from_host_models
              << " elements differ from the host models (within the reference's bounds)\n";
  }
}

// Opens a backend, runs the package on it, expects no fault, closes it.
TensorBytes run_on(const OpenTransport& open, const schema::Application& application,
                   const TensorBytes& bindings, std::string* description = nullptr) {
  const std::unique_ptr<runtime::Transport> transport = open();
  if (description != nullptr) *description = transport->description();
  TensorBytes outputs = run_package(*transport, application, bindings);
  for (const auto& fault : transport->faults()) {
    ADD_FAILURE() << transport->description() << ": " << runtime::describe(fault);
  }
  return outputs;
}

std::vector<float> as_floats(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

}  // namespace

void PrintTo(const KernelFamilyCase& family_case, std::ostream* os) {
  *os << family_case.graph.name << " (" << family_case.family << ", " << family_case.graph.tiles
      << " tiles)";
}

DeviceKernelBuild::DeviceKernelBuild(const std::filesystem::path& sdk,
                                     const std::filesystem::path& cache)
    : cache_(cache, compiler::elf::find_poplar_tools(sdk)),
      sources_(compiler::elf::default_device_source_root(), cache_) {
  for (const auto& [kernel, source] :
       compiler::elf::scan_device_sources(compiler::elf::default_device_source_root())) {
    families_.emplace(kernel, source.stem().string());
  }
}

std::string DeviceKernelBuild::family_of(std::string_view kernel) const {
  const auto it = families_.find(kernel);
  return it == families_.end() ? std::string() : it->second;
}

std::set<std::string> DeviceKernelBuild::families() const {
  std::set<std::string> families;
  for (const auto& entry : families_) families.insert(entry.second);
  return families;
}

const std::vector<KernelFamilyCase>& kernel_family_cases() {
  static const std::vector<KernelFamilyCase> cases = make_family_cases();
  return cases;
}

DeviceCaseRun run_device_graph_case(const OpenTransport& open_device,
                                    const OpenTransport& open_host_models, DeviceKernelBuild& device,
                                    const GraphCase& graph_case, HostModelMatch match,
                                    std::string_view family, bool family_unreachable) {
  DeviceCaseRun run;
  const Graph graph = graph_case.build();
  const compiler::CompileResult linked =
      compile_linked(graph, graph_case.tiles, device, graph_case.name);
  run.compiled_bytes = schema::serialize_package(linked.application).size();
  run.families_called = families_called(linked.application, device);
  if (!family.empty() && !family_unreachable) {
    EXPECT_TRUE(run.families_called.contains(std::string(family)))
        << graph_case.name << " calls no kernel of the family " << family;
  }
  if (!family.empty() && family_unreachable) {
    EXPECT_FALSE(run.families_called.contains(std::string(family)))
        << graph_case.name << " calls the family " << family
        << " now: clear the case's `unreachable` so the family is required";
  }
  const compiler::CompileResult emulated = compiler::compile(graph, {.tiles = graph_case.tiles});

  const TensorBytes bindings = graph_case_bindings(graph, graph_case.inputs, graph_case.seed);
  const testing::ReferenceResult reference = testing::evaluate_graph_with_bounds(graph, bindings);
  std::string device_name;
  const TensorBytes on_device = run_on(open_device, linked.application, bindings, &device_name);
  const TensorBytes on_host_models = run_on(open_host_models, emulated.application, bindings);

  for (const compiler::OpId op : graph.top_level(OpKind::kHostOutput)) {
    const std::string binding =
        std::get<compiler::BindingAttributes>(graph.operation(op).attributes).name;
    const auto got = on_device.find(binding);
    if (got == on_device.end()) continue;  // compare_with_host_models names it
    const auto& type = graph.type(graph.operation(op).inputs.at(0));
    const auto outside = testing::check_within_bounds(type, got->second,
                                                      reference.outputs.at(binding),
                                                      reference.bounds.at(binding));
    EXPECT_FALSE(outside.has_value())
        << graph_case.name << " on " << device_name << ": " << binding
        << " is outside the reference's bound: " << outside.value_or("");
  }
  compare_with_host_models(graph_case.name, graph, on_device, on_host_models, &reference, match,
                           run);
  return run;
}

DeviceCaseRun run_device_siglip_case(const OpenTransport& open_device,
                                     const OpenTransport& open_host_models,
                                     DeviceKernelBuild& device,
                                     HostModelMatch match, std::uint32_t tiles) {
  namespace siglip = models::siglip;
  DeviceCaseRun run;
  const siglip::SiglipVisionConfig config = siglip::testing::tiny_config();
  const siglip::SiglipVisionWeights weights = siglip::random_weights(config, 7);
  const auto precision = siglip::GraphPrecision::kF16;
  const Graph graph = siglip::build_vision_graph(config, 1, precision);

  std::vector<float> pixels(std::size_t{config.num_channels} * config.image_size *
                            config.image_size);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    pixels[i] = static_cast<float>(0.9 * std::sin(0.37 * static_cast<double>(i)));
  }
  TensorBytes bindings;
  for (auto& [name, bytes] : siglip::pack_vision_weights(weights, precision)) {
    bindings[name] = std::move(bytes);
  }
  std::vector<std::uint8_t> pixel_bytes(pixels.size() * 4);
  std::memcpy(pixel_bytes.data(), pixels.data(), pixel_bytes.size());
  bindings[std::string(siglip::kPixelValues)] = std::move(pixel_bytes);

  const compiler::CompileResult linked = compile_linked(graph, tiles, device, "TinySiglip");
  run.compiled_bytes = schema::serialize_package(linked.application).size();
  run.families_called = families_called(linked.application, device);
  const compiler::CompileResult emulated = compiler::compile(graph, {.tiles = tiles});
  std::string device_name;
  const TensorBytes on_device = run_on(open_device, linked.application, bindings, &device_name);
  const TensorBytes on_host_models = run_on(open_host_models, emulated.application, bindings);

  // The FP32 tower: the f16 bar of tests/models/siglip_graph_test.cpp.
  const siglip::SiglipOutputs expected = siglip::run_reference(weights, pixels, 1);
  const std::pair<std::string_view, const std::vector<float>*> outputs[] = {
      {siglip::kLastHiddenState, &expected.last_hidden_state},
      {siglip::kPoolerOutput, &expected.pooler_output}};
  for (const auto& [name, want] : outputs) {
    const auto got = on_device.find(std::string(name));
    if (got == on_device.end()) continue;  // compare_with_host_models names it
    const siglip::Agreement agreement = siglip::compare_outputs(as_floats(got->second), *want);
    EXPECT_TRUE(agreement.finite) << name;
    EXPECT_GE(agreement.cosine, 0.9999) << name;
    EXPECT_LE(agreement.max_abs_error, 0.02) << name;
  }
  // No per-element bounds for the whole tower: on silicon, differences from the
  // host models are counted, and the reference's bar above is what must hold.
  compare_with_host_models("TinySiglip", graph, on_device, on_host_models, nullptr, match, run);
  return run;
}

}  // namespace tessera::conformance
