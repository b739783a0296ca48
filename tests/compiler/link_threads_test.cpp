// Linking schedules the exchange phases on a thread pool
// (emit::LinkOptions::threads): each phase is scheduled on its own and the
// results are collected in program order, so the package is the same bytes
// whatever the thread count — the oracle here is the one-thread package,
// which schedules the phases one after another as linking always did.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/compile.hpp"
#include "compiler/lower/lower.hpp"
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

TEST(LinkThreads, TheFirstFailingPhaseInProgramOrderIsTheError) {
  // Two broken phases: the first exchange step cut to one transfer of no
  // words, and the last one's first transfer without destinations. The pool
  // takes the larger, later phase first, so an error collected in the pool's
  // order would be the second one.
  lower::Program program = lower::lower_graph(testing::permutation_and_reduction_graph(),
                                              {.tiles = 1472, .min_shard_bytes = 1024});
  std::vector<lower::Step*> exchanges;
  for (auto& step : program.steps) {
    if (step.kind == lower::StepKind::kExchange) exchanges.push_back(&step);
  }
  ASSERT_GE(exchanges.size(), 2u);
  ASSERT_GE(exchanges.back()->transfers.size(), 2u);
  exchanges.front()->transfers.resize(1);
  exchanges.front()->transfers[0].words = 0;
  exchanges.back()->transfers[0].destinations.clear();
  for (const unsigned threads : {1u, 4u}) {
    emit::LinkOptions options;
    options.threads = threads;
    try {
      emit::link_program(program, options);
      FAIL() << "linked broken phases on " << threads << " threads";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("it has no words"), std::string::npos) << threads << ": " << message;
    }
  }
}

TEST(LinkThreads, MoreThanTheMaximumIsAUsageError) {
  CompileOptions options;
  options.threads = emit::kMaxLinkThreads + 1;
  EXPECT_THROW(compile(testing::rotation_graph(4, 4, 1), options), UsageError);
}

}  // namespace
}  // namespace tessera::compiler
