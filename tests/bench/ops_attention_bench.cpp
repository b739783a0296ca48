// Issue 18 item 7, attention: seq 1024, hidden 1152 (16 heads × 72), batch 1
// and 8, scale 1/√72. For each batch it prints
//   * our plan (compiler/plan/attention_plan.hpp): its modelled cycles, the
//     FLOP-bound cycles at 128 FLOP per tile cycle, planning seconds;
//   * the prior art's plan (12-row query blocks, 11 key blocks of 93/94 keys)
//     modelled the same way, against its measured 524,616 and 1,903,842 cycles;
//   * unless --model-only: the graph compiled (compile seconds) and, with
//     --simulate, run on the simulator (simulated cycles, simulator seconds),
//     with --check compared with the CPU reference within its bound.
// The graph folds the heads into the batch axis (q [B·16, 1, 1024, 72]): the
// same (batch, head) tasks, and inputs the axis-0 layouts can hold (one
// [1, 16, 1024, 72] f16 tensor is 2.36 MB on one tile).
//
// Not a test: nothing asserts on timing. Release build:
//   build-release/tests/bench/tessera_bench_ops_attention [--batch N] [--model-only] [--simulate] [--check]

#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <random>

#include <fmt/format.h>

#include "compiler/compile.hpp"
#include "compiler/plan/attention_plan.hpp"
#include "kernels/half.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/testing/graph_reference.hpp"

namespace {

using namespace tessera;
using namespace tessera::compiler;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kTiles = 1472, kHeads = 16, kSeq = 1024, kHead = 72;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void run(std::uint32_t batch, std::uint64_t measured, bool model_only, bool simulate, bool check) {
  const plan::AttentionShape shape{batch, kHeads, kSeq, kSeq, kHead};
  const std::uint64_t flop_bound = plan::attention_flop_bound_cycles(shape, kTiles);
  auto started = Clock::now();
  const plan::AttentionPlan ours = plan::plan_attention(shape, kTiles);
  const double planning = seconds_since(started);
  const plan::AttentionPlan prior = plan::plan_attention(
      shape, kTiles, {.query_blocks = 86, .key_blocks = 11, .streamed = false, .ignore_memory_budget = true, .key_parts = {}, .working_memory = {}});
  const auto ratio = [](std::uint64_t a, std::uint64_t b) { return static_cast<double>(a) / static_cast<double>(b); };
  fmt::print("batch {}: FLOP bound {} cycles at 128 FLOP/tile/cycle\n", batch, flop_bound);
  fmt::print("  ours   modelled {:>9} cycles ({:.2f}× the FLOP bound, {:.3f}× the prior art's measured {}), "
             "planned in {:.4f} s\n    {}\n",
             ours.cycles.total(), ratio(ours.cycles.total(), flop_bound), ratio(ours.cycles.total(), measured),
             measured, planning, plan::describe(ours));
  fmt::print("  prior  modelled {:>9} cycles ({:+.1f} % against its measured {})\n    {}\n", prior.cycles.total(),
             100.0 * (ratio(prior.cycles.total(), measured) - 1.0), measured, plan::describe(prior));
  if (model_only) return;

  const double scale = 1.0 / std::sqrt(static_cast<double>(kHead));
  Graph g;
  const std::uint32_t streams = batch * kHeads;
  const ValueId q = g.host_input("q", DType::kF16, {streams, 1, kSeq, kHead});
  const ValueId k = g.host_input("k", DType::kF16, {streams, 1, kSeq, kHead});
  const ValueId v = g.host_input("v", DType::kF16, {streams, 1, kSeq, kHead});
  g.host_output("o", g.attention(q, k, v, scale));
  started = Clock::now();
  CompileResult compiled;
  try {
    compiled = compile(g, {.tiles = kTiles});
  } catch (const std::exception& error) {
    fmt::print("  compile: error after {:.2f} s: {}\n", seconds_since(started), error.what());
    return;
  }
  fmt::print("  compile {:.2f} s: {} steps, {} kernel calls, {} exchange phases\n", seconds_since(started),
             compiled.lowered_steps, compiled.report.kernel_calls, compiled.report.phases.size());
  if (!simulate) return;
  std::mt19937 random(1152);
  std::uniform_real_distribution<float> value(-1, 1);
  compiler::testing::TensorBytes bindings;
  for (const char* name : {"q", "k", "v"}) {
    std::vector<std::uint8_t> bytes(std::size_t{streams} * kSeq * kHead * 2);
    for (std::size_t i = 0; i < bytes.size(); i += 2) {
      const std::uint16_t h = kernels::f32_to_f16(value(random));
      bytes[i] = static_cast<std::uint8_t>(h);
      bytes[i + 1] = static_cast<std::uint8_t>(h >> 8);
    }
    bindings[name] = std::move(bytes);
  }
  started = Clock::now();
  const auto result = compiler::testing::run_on_simulator(compiled.application, bindings);
  fmt::print("  simulated {} cycles ({:.3f}× the modelled, {:.3f}× the prior art's measured) in {:.1f} s\n",
             result.cycles, ratio(result.cycles, ours.cycles.total()), ratio(result.cycles, measured),
             seconds_since(started));
  if (!check) return;
  started = Clock::now();
  const auto reference = tessera::testing::evaluate_graph_with_bounds(g, bindings);
  const auto problem = tessera::testing::check_within_bounds(
      g.type(g.operation(g.top_level(OpKind::kHostOutput).at(0)).inputs.at(0)), result.outputs.at("o"),
      reference.outputs.at("o"), reference.bounds.at("o"));
  fmt::print("  reference ({:.1f} s): {}\n", seconds_since(started), problem ? *problem : "within the bound");
}

}  // namespace

int main(int argc, char** argv) {
  bool model_only = false, simulate = false, check = false;
  std::uint32_t only_batch = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--model-only") model_only = true;
    else if (arg == "--simulate") simulate = true;
    else if (arg == "--check") simulate = check = true;
    else if (arg == "--batch" && i + 1 < argc) only_batch = static_cast<std::uint32_t>(std::stoul(argv[++i]));
    else {
      fmt::print(stderr, "usage: {} [--batch N] [--model-only] [--simulate] [--check]\n", argv[0]);
      return 2;
    }
  }
  // The prior art's measured whole-graph cycles (compiler-prior-art.md §6, issue 18).
  if (only_batch == 0 || only_batch == 1) run(1, 524616, model_only, simulate, check);
  if (only_batch == 0 || only_batch == 8) run(8, 1903842, model_only, simulate, check);
  return 0;
}
