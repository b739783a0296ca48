// Operator benchmarks (issue 18 item 7): for each transformer operator, the
// plan's modelled cycles against the FLOP bound (128 FLOP per tile cycle on
// 1472 tiles), the prior art's measured figure, the model applied to the
// prior art's own blocking (its figure within ±10 % is the model's goal),
// and a compiled graph's compile seconds, simulator seconds and simulated
// cycles, checked against the CPU reference within graph_bounds.
//
// Sections (one function each; add a section to kSections):
//   gemm   f16 GEMM 4096³ (prior art: 2,262,696 cycles on a C600). The full
//          size is modelled only; the compiled and simulated GEMM is
//          --gemm-size (default 256³: 4096³ would move 2·10^9 elements
//          through the per-element move lowering), followed by the same
//          bindings and output without the GEMM (c = a), so the GEMM's own
//          simulated cycles are the difference.
//   mlp    the SigLIP MLP 729 × 1152 → 4304 → 1152 (prior art: 1.269 ms at
//          1.5 GHz) as matmul + bias add, twice: GeLU is not lowered on this
//          branch, so it is left out of the compiled graph (and of the
//          model). Compiled at --mlp-rows tokens (default 24).
//
//   build-release/tests/bench/tessera_bench_ops [--only SECTION] [--gemm-size N] [--mlp-rows M]
//                                               [--no-simulate]

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <string_view>

#include <fmt/format.h>

#include "compiler/compile.hpp"
#include "compiler/plan/gemm_plan.hpp"
#include "kernels/half.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/testing/graph_reference.hpp"

namespace {

using namespace tessera;
using namespace tessera::compiler;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kTiles = 1472;
constexpr double kClockHz = 1.5e9;  // the prior art's C600 figures

struct Options {
  std::uint32_t gemm_size = 256;
  std::uint32_t mlp_rows = 24;
  bool simulate = true;
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::uint8_t> random_f16(const TensorType& type, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> grid(-64, 64);
  std::vector<std::uint8_t> bytes;
  for (std::uint64_t i = 0; i < element_count(type.shape); ++i) {
    const std::uint16_t h = kernels::f32_to_f16(static_cast<float>(grid(random)) / 256.0f);
    bytes.push_back(static_cast<std::uint8_t>(h));
    bytes.push_back(static_cast<std::uint8_t>(h >> 8));
  }
  return bytes;
}

void print_model(std::string_view what, const plan::GemmProblem& problem) {
  const plan::GemmPlan ours = plan::plan_gemm(problem);
  const plan::GemmPlan prior = plan::plan_gemm_prior_art(problem);
  plan::GemmProblem packed = problem;
  packed.pack_weights = false;
  fmt::print("  {} ours:       {}\n", what, plan::format_gemm_plan(ours));
  fmt::print("  {} ours, packed weights (not lowered yet): {}\n", what,
             plan::format_gemm_plan(plan::plan_gemm(packed)));
  fmt::print("  {} prior art's blocking: {}\n", what, plan::format_gemm_plan(prior));
}

// Compiles `graph`, runs it on the simulator and checks every output against
// the reference; prints the seconds and the cycles.
// Returns the simulated cycles (0 when not simulated or on an error).
std::uint64_t compile_and_run(std::string_view what, const Graph& graph, const Options& options,
                              std::uint64_t modelled) {
  const auto started = Clock::now();
  CompileResult compiled;
  try {
    compiled = compile(graph, {.tiles = kTiles});
  } catch (const std::exception& error) {
    fmt::print("  {}: compile error after {:.2f} s: {}\n", what, seconds_since(started), error.what());
    return 0;
  }
  const double compile_seconds = seconds_since(started);
  for (const auto& line : compiled.plans) fmt::print("    {}\n", line);
  fmt::print("  {}: compile {:.2f} s, {} exchange phases, {} kernel calls\n", what, compile_seconds,
             compiled.report.phases.size(), compiled.report.kernel_calls);
  if (!options.simulate) return 0;
  tessera::testing::TensorBytes bindings;
  std::uint32_t seed = 1;
  for (const OpKind kind : {OpKind::kHostInput, OpKind::kParameter}) {
    for (const OpId op : graph.top_level(kind)) {
      const auto& binding = std::get<BindingAttributes>(graph.operation(op).attributes);
      bindings[binding.name] = random_f16(graph.type(graph.operation(op).results[0]), seed++);
    }
  }
  const auto simulated = Clock::now();
  const auto run = compiler::testing::run_on_simulator(compiled.application, bindings);
  const double simulator_seconds = seconds_since(simulated);
  const auto reference = tessera::testing::evaluate_graph_with_bounds(graph, bindings);
  std::string verdict = "matches the reference";
  for (const OpId op : graph.top_level(OpKind::kHostOutput)) {
    const auto& name = std::get<BindingAttributes>(graph.operation(op).attributes).name;
    const auto problem = tessera::testing::check_within_bounds(
        graph.type(graph.operation(op).inputs[0]), run.outputs.at(name), reference.outputs.at(name),
        reference.bounds.at(name));
    if (problem) verdict = fmt::format("DIFFERS from the reference: {}", *problem);
  }
  fmt::print("  {}: simulator {:.2f} s, {} simulated cycles (modelled {}, {:+.1f} %); {}\n", what,
             simulator_seconds, run.cycles, modelled,
             modelled == 0 ? 0.0 : 100.0 * (static_cast<double>(modelled) - static_cast<double>(run.cycles)) /
                                       static_cast<double>(run.cycles),
             verdict);
  return run.cycles;
}

void gemm_section(const Options& options) {
  fmt::print("== f16 GEMM 4096³ on {} tiles\n", kTiles);
  const plan::GemmProblem full{kernels::GemmFamily::kF16, 1, 4096, 4096, 4096, kTiles};
  print_model("4096³", full);
  const plan::GemmPlan ours = plan::plan_gemm(full);
  plan::GemmProblem packed = full;
  packed.pack_weights = false;
  const plan::GemmPlan ours_packed = plan::plan_gemm(packed);
  const plan::GemmPlan prior = plan::plan_gemm_prior_art(full);
  constexpr std::uint64_t kMeasured = 2'262'696;
  fmt::print("  prior art measured {} cycles; ours modelled {} ({:.2f}× the prior art's speed), with packed "
             "weights {} ({:.2f}×); the model on the prior art's blocking {} ({:+.1f} % of measured)\n",
             kMeasured, ours.cycles, static_cast<double>(kMeasured) / static_cast<double>(ours.cycles),
             ours_packed.cycles, static_cast<double>(kMeasured) / static_cast<double>(ours_packed.cycles),
             prior.cycles,
             100.0 * (static_cast<double>(prior.cycles) - kMeasured) / static_cast<double>(kMeasured));
  const std::uint32_t n = options.gemm_size;
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, {n, n});
  const ValueId b = g.parameter("b", DType::kF16, {n, n});
  g.host_output("c", g.matmul(a, b));
  const plan::GemmPlan small = plan::plan_gemm({kernels::GemmFamily::kF16, 1, n, n, n, kTiles});
  const std::uint64_t total = compile_and_run(fmt::format("compiled {}³", n), g, options, small.cycles);
  // The same bindings and an output of the same shape without the GEMM
  // (c = a): what the run costs besides the GEMM (host I/O, the startup).
  Graph baseline;
  const ValueId a0 = baseline.host_input("a", DType::kF16, {n, n});
  (void)baseline.parameter("b", DType::kF16, {n, n});
  baseline.host_output("c", baseline.copy(a0));
  const std::uint64_t rest = compile_and_run("the same I/O without the GEMM (c = a)", baseline, options, 0);
  if (total > rest && rest > 0) {
    fmt::print("  the GEMM's own simulated cycles ≈ {} − {} = {} (modelled {}, {:+.1f} %)\n", total, rest,
               total - rest, small.cycles,
               100.0 * (static_cast<double>(small.cycles) - static_cast<double>(total - rest)) /
                   static_cast<double>(total - rest));
  }
}

void mlp_section(const Options& options) {
  fmt::print("== SigLIP MLP 729 × 1152 → 4304 → 1152 (matmul + bias, GeLU not lowered here) on {} tiles\n",
             kTiles);
  const plan::GemmProblem up{kernels::GemmFamily::kF16, 1, 729, 1152, 4304, kTiles};
  const plan::GemmProblem down{kernels::GemmFamily::kF16, 1, 729, 4304, 1152, kTiles};
  print_model("fc1", up);
  print_model("fc2", down);
  const std::uint64_t ours = plan::plan_gemm(up).cycles + plan::plan_gemm(down).cycles;
  plan::GemmProblem up_packed = up, down_packed = down;
  up_packed.pack_weights = down_packed.pack_weights = false;
  const std::uint64_t ours_packed = plan::plan_gemm(up_packed).cycles + plan::plan_gemm(down_packed).cycles;
  const std::uint64_t prior = plan::plan_gemm_prior_art(up).cycles + plan::plan_gemm_prior_art(down).cycles;
  const std::uint64_t bound = plan::gemm_flop_bound_cycles(up) + plan::gemm_flop_bound_cycles(down);
  const double measured = 1.269e-3 * kClockHz;
  fmt::print("  GEMMs only: ours modelled {} cycles ({:.3f} ms), with packed weights {} ({:.3f} ms), FLOP "
             "bound {}; prior art measured {:.0f} cycles (1.269 ms, the whole MLP); the model on the prior "
             "art's blocking {} ({:+.1f} % of measured)\n",
             ours, static_cast<double>(ours) / kClockHz * 1e3, ours_packed,
             static_cast<double>(ours_packed) / kClockHz * 1e3, bound, measured, prior,
             100.0 * (static_cast<double>(prior) - measured) / measured);
  const std::uint32_t m = options.mlp_rows;
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {m, 1152});
  const ValueId w1 = g.parameter("w1", DType::kF16, {1152, 4304});
  const ValueId b1 = g.parameter("b1", DType::kF16, {4304});
  const ValueId w2 = g.parameter("w2", DType::kF16, {4304, 1152});
  const ValueId b2 = g.parameter("b2", DType::kF16, {1152});
  const ValueId h = g.add(g.matmul(x, w1), b1);
  g.host_output("y", g.add(g.matmul(h, w2), b2));
  const std::uint64_t modelled = plan::plan_gemm({kernels::GemmFamily::kF16, 1, m, 1152, 4304, kTiles}).cycles +
                                 plan::plan_gemm({kernels::GemmFamily::kF16, 1, m, 4304, 1152, kTiles}).cycles;
  compile_and_run(fmt::format("compiled MLP at {} tokens (modelled: GEMMs only)", m), g, options, modelled);
}

struct Section {
  std::string_view name;
  std::function<void(const Options&)> run;
};

const std::vector<Section> kSections = {{"gemm", gemm_section}, {"mlp", mlp_section}};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string_view only;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--gemm-size" && i + 1 < argc) {
      options.gemm_size = static_cast<std::uint32_t>(std::stoul(argv[++i]));
    } else if (arg == "--mlp-rows" && i + 1 < argc) {
      options.mlp_rows = static_cast<std::uint32_t>(std::stoul(argv[++i]));
    } else if (arg == "--no-simulate") {
      options.simulate = false;
    } else {
      std::fprintf(stderr,
                   "usage: tessera_bench_ops [--only SECTION] [--gemm-size N] [--mlp-rows M] [--no-simulate]\n");
      return 2;
    }
  }
  for (const Section& section : kSections) {
    if (only.empty() || section.name == only) section.run(options);
  }
  return 0;
}
