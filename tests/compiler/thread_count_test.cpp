// The simulator's host thread pool changes nothing a user can see
// (ARCHITECTURE.md decision 11): a compiled whole-chip graph gives the same
// outputs, cycles, per-tile report and trace on 1, 2 and 4 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "compiler/compile.hpp"
#include "tests/compiler/demo_graphs.hpp"
#include "tests/compiler/graph_runner.hpp"

namespace tessera::compiler {
namespace {

TEST(ThreadCount, ACompiledWholeChipGraphRunsTheSameOnAnyThreadCount) {
  const Graph graph = testing::permutation_and_reduction_graph();
  CompileOptions options;
  options.min_shard_bytes = 1024;
  const CompileResult compiled = compile(graph, options);
  std::vector<std::uint8_t> x(std::size_t{1472} * 1024 * 4);
  for (std::size_t i = 0; i < x.size() / 4; ++i) {
    const float value = static_cast<float>(i % 1013) * 0.25F - 17.0F;
    std::memcpy(x.data() + 4 * i, &value, 4);
  }
  std::vector<testing::GraphRun> runs;
  for (const unsigned threads : {1u, 2u, 4u}) {
    sim::SimOptions sim;
    sim.threads = threads;
    sim.trace = true;
    runs.push_back(testing::run_on_simulator(compiled.application, {{"x", x}}, sim));
  }
  for (std::size_t i = 1; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].outputs, runs[0].outputs) << "run " << i;
    EXPECT_EQ(runs[i].cycles, runs[0].cycles) << "run " << i;
    EXPECT_EQ(runs[i].report, runs[0].report) << "run " << i;
    EXPECT_EQ(runs[i].trace, runs[0].trace) << "run " << i;
  }
  EXPECT_GT(runs[0].cycles, 0u);
}

}  // namespace
}  // namespace tessera::compiler
