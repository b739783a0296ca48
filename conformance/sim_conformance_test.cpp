// The compiled-graph conformance cases (graph_cases.hpp) on the simulator
// backend: each case compiled, run through runtime::Session on a fresh
// SimTransport (the whole C600: 1472 tiles) and compared byte for byte with
// the CPU graph reference.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "backends/sim/sim_transport.hpp"
#include "conformance/graph_cases.hpp"

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
