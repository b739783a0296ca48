// Linking schedules the exchange phases on a thread pool
// (emit::LinkOptions::threads): each phase is scheduled on its own and the
// results are collected in program order, so the package is the same bytes
// whatever the thread count — the oracle here is the one-thread package,
// which schedules the phases one after another as linking always did.
#include <gtest/gtest.h>

#include <vector>

#include "compiler/compile.hpp"
#include "schema/writer.hpp"
#include "tests/compiler/demo_graphs.hpp"

namespace tessera::compiler {
namespace {

TEST(LinkThreads, ThePackageIsTheSameBytesOnAnyThreadCount) {
  // The whole-chip permutation (one phase of 1472 rows), then the column
  // sums' two levels of partials: phases of different sizes, so the pool's
  // largest-first order is not program order.
  const Graph graph = testing::permutation_and_reduction_graph();
  std::vector<std::vector<std::uint8_t>> packages;
  std::vector<CompileResult> results;
  for (const unsigned threads : {1u, 2u, 4u}) {
    CompileOptions options;
    options.min_shard_bytes = 1024;
    options.threads = threads;
    results.push_back(compile(graph, options));
    packages.push_back(schema::serialize_package(results.back().application));
  }
  ASSERT_GE(results[0].report.phases.size(), 3u);
  for (std::size_t i = 1; i < packages.size(); ++i) {
    EXPECT_TRUE(packages[i] == packages[0]) << "run " << i;
    EXPECT_EQ(format_report(results[i]), format_report(results[0])) << "run " << i;
  }
}

TEST(LinkThreads, MoreThanTheMaximumIsAUsageError) {
  CompileOptions options;
  options.threads = emit::kMaxLinkThreads + 1;
  EXPECT_THROW(compile(testing::rotation_graph(4, 4, 1), options), UsageError);
}

}  // namespace
}  // namespace tessera::compiler
