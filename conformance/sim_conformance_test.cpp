// The compiled-graph conformance cases (graph_cases.hpp) on the simulator
// backend: each case compiled, run through runtime::Session on a fresh
// SimTransport (the whole C600: 1472 tiles) and compared byte for byte with
// the CPU graph reference. Then the device-kernel cases (device_cases.hpp):
// the graph cases, one case per kernel family and a tiny SigLIP tower,
// compiled with device kernels from the fake popc (tests/compiler/elf/
// fake_sdk: CI has no SDK), the linked package run on the simulator and
// compared with the reference and, bit for bit, with the host models.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <stdlib.h>

#include <memory>

#include "backends/sim/sim_transport.hpp"
#include "conformance/device_cases.hpp"
#include "conformance/graph_cases.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::conformance {
namespace {

class SimGraphConformance : public ::testing::TestWithParam<GraphCase> {};

TEST_P(SimGraphConformance, MatchesTheGraphReference) {
  const GraphCase& graph_case = GetParam();
  SCOPED_TRACE(graph_case.exercises);
  backends::SimTransport transport;
  const GraphCaseRun run = run_graph_case(transport, graph_case);
  const std::string timing =
      fmt::format("compile {:.3f} s, run {:.3f} s, package {} bytes, {} simulated cycles",
                  run.compile_seconds, run.run_seconds, run.compiled_bytes, transport.chip().now());
  RecordProperty("timing", timing);
  std::cout << graph_case.name << ": " << timing << "\n";
}

INSTANTIATE_TEST_SUITE_P(GraphCases, SimGraphConformance, ::testing::ValuesIn(graph_cases()),
                         [](const ::testing::TestParamInfo<GraphCase>& case_info) {
                           return case_info.param.name;
                         });

// The fake popc's build, shared by every device case of the run (one cache:
// each kernels/device/ source is "compiled" once).
DeviceKernelBuild& fake_device_build() {
  static const std::unique_ptr<tessera::testing::ScratchDirectory> scratch = [] {
    ::setenv("FAKE_POPC_HELPER", TESSERA_FAKE_POPC_HELPER, 1);
    ::unsetenv("TESSERA_DEVICE_SOURCES");  // this tree's sources
    return std::make_unique<tessera::testing::ScratchDirectory>();
  }();
  static DeviceKernelBuild build(TESSERA_FAKE_SDK, scratch->path("kernels"));
  return build;
}

std::unique_ptr<runtime::Transport> open_sim() { return std::make_unique<backends::SimTransport>(); }

void print_device_run(const std::string& name, const DeviceCaseRun& run) {
  std::cout << name << ": package " << run.compiled_bytes << " bytes, families called: "
            << fmt::format("{}", fmt::join(run.families_called, " ")) << "\n";
}

class SimDeviceGraphConformance : public ::testing::TestWithParam<GraphCase> {};

TEST_P(SimDeviceGraphConformance, LinkedMatchesTheHostModelsAndTheReference) {
  const GraphCase& graph_case = GetParam();
  SCOPED_TRACE(graph_case.exercises);
  print_device_run(graph_case.name,
                   run_device_graph_case(open_sim, open_sim, fake_device_build(), graph_case,
                                         HostModelMatch::kBitwise));
}

INSTANTIATE_TEST_SUITE_P(GraphCases, SimDeviceGraphConformance, ::testing::ValuesIn(graph_cases()),
                         [](const ::testing::TestParamInfo<GraphCase>& case_info) {
                           return case_info.param.name;
                         });

class SimKernelFamilyConformance : public ::testing::TestWithParam<KernelFamilyCase> {};

TEST_P(SimKernelFamilyConformance, LinkedMatchesTheHostModelsAndTheReference) {
  const KernelFamilyCase& family_case = GetParam();
  SCOPED_TRACE(family_case.graph.exercises);
  print_device_run(family_case.graph.name,
                   run_device_graph_case(open_sim, open_sim, fake_device_build(),
                                         family_case.graph, HostModelMatch::kBitwise,
                                         family_case.family, !family_case.unreachable.empty()));
  if (!family_case.unreachable.empty()) {
    std::cout << family_case.graph.name << ": the family " << family_case.family
              << " is not called: " << family_case.unreachable << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(KernelFamilies, SimKernelFamilyConformance,
                         ::testing::ValuesIn(kernel_family_cases()),
                         [](const ::testing::TestParamInfo<KernelFamilyCase>& case_info) {
                           return case_info.param.graph.name;
                         });

TEST(KernelFamilyCases, EveryFamilyOfTheDeviceSourcesHasOneCase) {
  std::set<std::string> cased;
  for (const auto& c : kernel_family_cases()) {
    EXPECT_TRUE(cased.insert(c.family).second) << c.family << " has two cases";
  }
  EXPECT_EQ(cased, fake_device_build().families());
}

TEST(SimDeviceConformance, TinySiglipLinkedMatchesTheHostModelsAndTheReference) {
  const DeviceCaseRun run =
      run_device_siglip_case(open_sim, open_sim, fake_device_build(), HostModelMatch::kBitwise);
  print_device_run("TinySiglip", run);
  for (const char* family : {"gemm", "attention", "layer_norm", "activation"}) {
    EXPECT_TRUE(run.families_called.contains(family)) << family;
  }
}

// The silicon mode (kWithinReference), exercised here with the simulator as the
// device: it runs the same checks, and the simulator differs from the host models nowhere.
TEST(SimDeviceConformance, TheSiliconComparisonModeFindsNoDifferenceOnTheSimulator) {
  for (const auto& c : kernel_family_cases()) {
    if (c.family != "gemm" && c.family != "activation") continue;
    const DeviceCaseRun run = run_device_graph_case(open_sim, open_sim, fake_device_build(),
                                                    c.graph, HostModelMatch::kWithinReference,
                                                    c.family);
    EXPECT_EQ(run.differing_from_host_models, 0u) << c.graph.name;
  }
}

TEST(GraphCases, NamesAreUniqueAndLookedUp) {
  for (const auto& c : graph_cases()) EXPECT_EQ(&graph_case(c.name), &c);
  EXPECT_THROW(graph_case("NoSuchCase"), UsageError);
}

TEST(GraphCases, FirstDifferenceNamesTheElement) {
  const compiler::TensorType type{{compiler::DType::kF32}, {2, 3}};
  std::vector<std::uint8_t> expected(24, 0);
  std::vector<std::uint8_t> actual = expected;
  EXPECT_EQ(first_difference("y", type, expected, actual), "");
  actual[4 * 4 + 3] = 0x3F;  // element 4 = y[1, 1], its top byte
  actual[5 * 4] = 1;
  EXPECT_EQ(first_difference("y", type, expected, actual),
            "y[1, 1] (element 4 of 6, f32): expected 0x00000000, got 0x3f000000; "
            "2 elements differ");
  EXPECT_EQ(first_difference("y", type, expected, std::vector<std::uint8_t>(20)),
            "y: expected 24 bytes, got 20");
}

TEST(GraphCases, BindingsAreDeterministicAndFiniteWhenAsked) {
  const GraphCase& c = graph_case("TreeReductionF3264x256");
  const compiler::Graph g = c.build();
  const TensorBytes a = graph_case_bindings(g, GraphInputs::kFiniteValues, 7);
  EXPECT_EQ(a, graph_case_bindings(g, GraphInputs::kFiniteValues, 7));
  EXPECT_NE(a, graph_case_bindings(g, GraphInputs::kFiniteValues, 8));
  const auto& x = a.at("x");
  ASSERT_EQ(x.size(), 64u * 256u * 4u);
  for (std::size_t i = 0; i < x.size(); i += 4) {
    const std::uint32_t exponent = (x[i + 3] & 0x7Fu) << 1 | x[i + 2] >> 7;
    EXPECT_LT(exponent, 0xFFu) << i;
  }
}

}  // namespace
}  // namespace tessera::conformance
