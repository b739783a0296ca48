// Compiler benchmark (issue 8): wall time of `compile()` for
//   * a full-chip permutation of 4 KiB per tile (f32[1472, 1024] rotated by
//     737 rows: 1472 transfers; target < 2 s in Release),
//   * ten such permutations (10× the transfers),
//   * the demo graph (the permutation plus a two-level column-sum tree), with
//     every tensor spread over all tiles and with shards of at least 1 KiB,
// with every exchange phase's horizon against the bandwidth bound (a tile
// moves 4 bytes per cycle each way: the busiest tile's words). With
// --simulate each package also runs on the simulator through the runtime and
// the simulated cycles are printed.
//
// Not a test: nothing asserts on timing. Run it from a Release build:
//
//   build-release/tests/bench/tessera_bench_compile [--repeat K] [--simulate]

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include <fmt/format.h>

#include "compiler/compile.hpp"
#include "tests/compiler/demo_graphs.hpp"
#include "tests/compiler/graph_runner.hpp"

namespace {

using namespace tessera;
using namespace tessera::compiler;
using Clock = std::chrono::steady_clock;

void bench(std::string_view name, const Graph& graph, int repeat, bool simulate,
           std::uint64_t min_shard_bytes = 0) {
  double best = 1e9;
  CompileResult result;
  for (int r = 0; r < repeat; ++r) {
    const auto started = Clock::now();
    result = compile(graph, {.min_shard_bytes = min_shard_bytes});
    best = std::min(best, std::chrono::duration<double>(Clock::now() - started).count());
  }
  std::uint64_t transfers = 0, horizon = 0, bound = 0;
  for (const auto& phase : result.report.phases) {
    transfers += phase.transfers;
    horizon += phase.horizon;
    bound += phase.lower_bound;
  }
  fmt::print("{}: compile {:.3f} s (best of {}), {} tiles, {} exchange phases, {} transfers, "
             "horizons {} events vs bound {} ({:.3f}×), {} kernel calls\n",
             name, best, repeat, result.report.package_tiles, result.report.phases.size(), transfers,
             horizon, bound, bound == 0 ? 0.0 : static_cast<double>(horizon) / static_cast<double>(bound),
             result.report.kernel_calls);
  if (!simulate) return;
  compiler::testing::TensorBytes inputs;
  for (const auto& binding : result.application.inputs) {
    std::uint64_t bytes = 4;
    for (const auto extent : binding.shape) bytes *= extent;
    inputs[binding.name] = std::vector<std::uint8_t>(bytes, 0x3F);
  }
  const auto started = Clock::now();
  const auto run = compiler::testing::run_on_simulator(result.application, inputs);
  fmt::print("  simulated: {} cycles, {:.2f} s host time\n", run.cycles,
             std::chrono::duration<double>(Clock::now() - started).count());
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  bool simulate = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--simulate") == 0) {
      simulate = true;
    } else {
      std::fprintf(stderr, "usage: %s [--repeat K] [--simulate]\n", argv[0]);
      return 2;
    }
  }
  try {
    bench("permutation 1472 x 4 KiB", compiler::testing::rotation_graph(1472, 1024, 737), repeat, simulate);
    bench("ten permutations", compiler::testing::rotations_graph(1472, 1024, 10), repeat, simulate);
    bench("demo: permutation + column-sum tree", compiler::testing::permutation_and_reduction_graph(), repeat,
          simulate);
    bench("demo, --min-shard-bytes 1024 (as make demo)", compiler::testing::permutation_and_reduction_graph(),
          repeat, simulate, 1024);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}
