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
// Then the graphs of issue 15's compiler items ("[hardening]", 12–16), each
// with its package size: repeats with and without exchange (work and size
// must not grow with the count), a concat of 8000 inputs against the
// equivalent broadcast_to, 1000 scalar bindings, an odd u8 copy. A graph the
// compiler refuses prints its error and the next one runs.
//
// Then issue 18 item 6's transposes, one one-word message per element:
// f32[n, n] over 1472 tiles for n = 64 … 1024 (4 k … 1 M transfers) and
// u32[n, 6] on 5 tiles for n = 250 … 2000.
//
// Then issue 18's compile-speed graphs, the operators of SigLIP so400m at
// its sizes (hidden 1152, MLP 4304, 16 heads × 72, 729 tokens): an f16
// matmul 512³, the MLP's f16 [729, 1152] · [1152, 4304], f16 attention
// [1, 16, 729, 72] (and [16, 1, 729, 72], the same work with axis 0 split
// over tiles), and the SigLIP towers themselves (models/siglip/graph.hpp):
// the demo's tiny one at f16 and f143 on 64 tiles, and so400m (27 layers in
// one repeat, batch 1) at f143 — the goal is ≤ 10 s.
//
// --growth prints issue 18 item 6's growth table instead: whole compiles
// (lowering, placement, scheduling with validation, emission; the package
// serialized, not written) of transposes of f32[n, n] spread over the chip,
// one one-word transfer per element — n = 128 … 1024, 16 k … 1 M planned word
// runs — with CPU seconds, ns per n·log2 n in the transfers (flat when compile
// time grows as n log n) and the package's bytes. --size N (repeatable)
// picks the sizes.
//
// --threads N links on N host threads (CompileOptions::threads; default the
// machine's cores): the digests are the same for every N, the wall times
// not. --only TEXT runs only the graphs whose name contains TEXT; --graph FILE
// compiles a JSON graph file (docs/GRAPH_FORMAT.md) instead of the built-in
// ones (--tiles N, default 1472). Every line ends with the SHA-256 of the
// package bytes (compile() sets no compiler version, so the digest depends
// only on what was compiled): a change that should not alter the packages
// must leave every digest as it was.
//
// Not a test: nothing asserts on timing. Run it from a Release build:
//
//   build-release/tests/bench/tessera_bench_compile [--threads N] [--repeat K] [--simulate] [--only TEXT]
//   build-release/tests/bench/tessera_bench_compile [--threads N] [--repeat K] --graph FILE.json [--tiles N]
//   build-release/tests/bench/tessera_bench_compile [--threads N] --growth [--size N]...

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "compiler/compile.hpp"
#include "compiler/ir/graph_json.hpp"
#include "models/siglip/graph.hpp"
#include "schema/sha256.hpp"
#include "schema/writer.hpp"
#include "tests/compiler/demo_graphs.hpp"
#include "tests/compiler/graph_runner.hpp"

namespace {

using namespace tessera;
using namespace tessera::compiler;
using Clock = std::chrono::steady_clock;

std::string_view g_only;
unsigned g_threads = 0;  // CompileOptions::threads

void bench(std::string_view name, const Graph& graph, int repeat, bool simulate,
           std::uint64_t min_shard_bytes = 0, std::uint32_t tiles = 1472) {
  if (!g_only.empty() && name.find(g_only) == std::string_view::npos) return;
  double best = 1e9;
  CompileResult result;
  for (int r = 0; r < repeat; ++r) {
    const auto started = Clock::now();
    try {
      result = compile(graph,
                       {.tiles = tiles, .min_shard_bytes = min_shard_bytes, .threads = g_threads});
    } catch (const std::exception& error) {
      fmt::print("{}: error after {:.3f} s: {}\n", name,
                 std::chrono::duration<double>(Clock::now() - started).count(), error.what());
      return;
    }
    best = std::min(best, std::chrono::duration<double>(Clock::now() - started).count());
  }
  std::uint64_t transfers = 0, horizon = 0, bound = 0;
  for (const auto& phase : result.report.phases) {
    transfers += phase.transfers;
    horizon += phase.horizon;
    bound += phase.lower_bound;
  }
  const std::vector<std::uint8_t> package = schema::serialize_package(result.application);
  fmt::print(
      "{}: compile {:.3f} s (best of {}), {} tiles, {} exchange phases, {} transfers, "
      "horizons {} events vs bound {} ({:.3f}×), {} kernel calls, {} host batches, package {} "
      "bytes, sha256 {}\n",
      name, best, repeat, result.report.package_tiles, result.report.phases.size(), transfers,
      horizon, bound, bound == 0 ? 0.0 : static_cast<double>(horizon) / static_cast<double>(bound),
      result.report.kernel_calls, result.report.host_batches, package.size(),
      schema::to_hex(schema::sha256(package)));
  std::fflush(stdout);
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

// x f32[n, n]; repeat `count` { transpose }; then one more transpose.
Graph transposes_in_a_repeat(std::uint32_t count, std::uint32_t n) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {n, n});
  const auto h = g.repeat(count, {x}, {},
                          [](Graph& body, std::span<const ValueId> c, std::span<const ValueId>) {
                            return std::vector<ValueId>{body.transpose(c[0], {1, 0})};
                          });
  g.host_output("y", g.transpose(h[0], {1, 0}));
  return g;
}

Graph nested_adds(std::uint32_t outer, std::uint32_t inner) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4});
  const auto h = g.repeat(
      outer, {x}, {}, [inner](Graph& body, std::span<const ValueId> c, std::span<const ValueId>) {
        return body.repeat(inner, {c[0]}, {},
                           [](Graph& in, std::span<const ValueId> d, std::span<const ValueId>) {
                             return std::vector<ValueId>{in.add(d[0], d[0])};
                           });
      });
  g.host_output("y", h[0]);
  return g;
}

// 8000 copies of one f32[1, 64] row, as a concat or as a broadcast_to.
Graph rows_of_one(bool as_concat) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {1, 64});
  g.host_output(
      "y", as_concat ? g.concat(std::vector<ValueId>(8000, x), 0) : g.broadcast_to(x, {8000, 64}));
  return g;
}

Graph scalar_bindings(int count) {
  Graph g;
  for (int i = 0; i < count; ++i) {
    g.host_output(fmt::format("y{}", i), g.host_input(fmt::format("x{}", i), DType::kF32, {}));
  }
  return g;
}

Graph transpose_graph(DType dtype, std::uint32_t rows, std::uint32_t columns) {
  Graph g;
  g.host_output("y", g.transpose(g.host_input("x", dtype, {rows, columns}), {1, 0}));
  return g;
}

// a [m, k] · b [k, n], f16, b a parameter (a weight).
Graph matmul_graph(std::uint32_t m, std::uint32_t k, std::uint32_t n) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, {m, k});
  const ValueId b = g.parameter("b", DType::kF16, {k, n});
  g.host_output("c", g.matmul(a, b));
  return g;
}

// f16 attention over q, k, v of `shape` [B, H, S, D], scale 1/√D.
Graph attention_graph(const Shape& shape) {
  Graph g;
  const ValueId q = g.host_input("q", DType::kF16, shape);
  const ValueId k = g.host_input("k", DType::kF16, shape);
  const ValueId v = g.host_input("v", DType::kF16, shape);
  g.host_output("o", g.attention(q, k, v, 1.0 / std::sqrt(static_cast<double>(shape[3]))));
  return g;
}

// `tessera siglip compile`'s default --min-shard-bytes.
constexpr std::uint64_t kSiglipMinShardBytes = 1024;

Graph siglip_graph(const models::siglip::SiglipVisionConfig& config,
                   models::siglip::GraphPrecision precision) {
  return models::siglip::build_vision_graph(config, 1, precision);
}

// The demo's tower (scripts/demo) and so400m (google/siglip-so400m-patch14-384).
models::siglip::SiglipVisionConfig tiny_siglip() {
  models::siglip::SiglipVisionConfig config;
  config.hidden_size = 64;
  config.intermediate_size = 128;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 2;
  config.image_size = 32;
  config.patch_size = 8;
  return config;
}
models::siglip::SiglipVisionConfig so400m() {
  models::siglip::SiglipVisionConfig config;
  config.hidden_size = 1152;
  config.intermediate_size = 4304;
  config.num_hidden_layers = 27;
  config.num_attention_heads = 16;
  config.image_size = 384;
  config.patch_size = 14;
  return config;
}

Graph odd_u8_copy() {
  Graph g;
  g.host_output("y", g.copy(g.host_input("x", DType::kU8, {1, 50001})));
  return g;
}

// Process CPU seconds (every thread; the compiler runs on one).
double cpu_seconds() {
  return static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
}

// The growth table: one compile per size, CPU time against n log n in the
// planned transfers (each a run of words one exchange message carries).
void growth(std::vector<std::uint32_t> sizes) {
  if (sizes.empty()) sizes = {128, 256, 362, 512, 724, 1024};
  fmt::print("{:>24} {:>10} {:>9} {:>9} {:>14} {:>12} {:>12}\n", "graph", "transfers", "CPU s",
             "wall s", "ns/(n log2 n)", "package MB", "horizons");
  for (const std::uint32_t n : sizes) {
    const Graph graph = transpose_graph(DType::kF32, n, n);
    const double cpu0 = cpu_seconds();
    const auto wall0 = Clock::now();
    const CompileResult result = compile(graph, {.tiles = 1472, .threads = g_threads});
    const std::vector<std::uint8_t> package = schema::serialize_package(result.application);
    const double cpu = cpu_seconds() - cpu0;
    const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
    std::uint64_t transfers = 0, horizon = 0;
    for (const auto& phase : result.report.phases) {
      transfers += phase.transfers;
      horizon += phase.horizon;
    }
    const auto n_transfers = static_cast<double>(transfers);
    fmt::print("{:>24} {:>10} {:>9.2f} {:>9.2f} {:>14.0f} {:>12.1f} {:>12}\n",
               fmt::format("transpose f32[{0}, {0}]", n), transfers, cpu, wall,
               1e9 * cpu / (n_transfers * std::log2(n_transfers)),
               static_cast<double>(package.size()) / 1e6, horizon);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  bool simulate = false;
  const char* graph_file = nullptr;
  std::uint32_t tiles = 1472;
  bool growth_table = false;
  std::vector<std::uint32_t> sizes;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--growth") == 0) {
      growth_table = true;
    } else if (std::strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      sizes.push_back(static_cast<std::uint32_t>(std::max(2, std::atoi(argv[++i]))));
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      g_threads = static_cast<unsigned>(std::max(1, std::atoi(argv[++i])));
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      g_only = argv[++i];
    } else if (std::strcmp(argv[i], "--graph") == 0 && i + 1 < argc) {
      graph_file = argv[++i];
    } else if (std::strcmp(argv[i], "--tiles") == 0 && i + 1 < argc) {
      tiles = static_cast<std::uint32_t>(std::max(1, std::atoi(argv[++i])));
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--simulate") == 0) {
      simulate = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--repeat K] [--simulate] [--only TEXT | --graph FILE.json "
                   "[--tiles N]]\n"
                   "       %s [--threads N] --growth [--size N]...\n",
                   argv[0], argv[0]);
      return 2;
    }
  }
  try {
    if (growth_table) {
      growth(sizes);
      return 0;
    }
    if (graph_file != nullptr) {
      bench(graph_file, read_graph_json_file(graph_file), repeat, simulate, 0, tiles);
      return 0;
    }
    bench("permutation 1472 x 4 KiB", compiler::testing::rotation_graph(1472, 1024, 737), repeat, simulate);
    bench("ten permutations", compiler::testing::rotations_graph(1472, 1024, 10), repeat, simulate);
    bench("demo: permutation + column-sum tree", compiler::testing::permutation_and_reduction_graph(), repeat,
          simulate);
    bench("demo, --min-shard-bytes 1024 (as make demo)", compiler::testing::permutation_and_reduction_graph(),
          repeat, simulate, 1024);
    bench("repeat 2 { transpose f32[64, 64] }, 64 tiles", transposes_in_a_repeat(2, 64), repeat,
          false, 0, 64);
    bench("repeat 1000 { transpose f32[64, 64] }, 64 tiles", transposes_in_a_repeat(1000, 64),
          repeat, false, 0, 64);
    bench("repeat 20000 { transpose f32[4, 4] }, 4 tiles", transposes_in_a_repeat(20000, 4), repeat,
          false, 0, 4);
    bench("repeat 2^32 - 1 { transpose f32[4, 4] }, 4 tiles", transposes_in_a_repeat(0xFFFFFFFF, 4),
          repeat, false, 0, 4);
    bench("repeat 100000 { repeat 100000 { add } }, 1 tile", nested_adds(100000, 100000), repeat,
          false, 0, 1);
    bench("concat of 8000 f32[1, 64]", rows_of_one(true), repeat, false);
    bench("broadcast_to of f32[1, 64] to [8000, 64]", rows_of_one(false), repeat, false);
    bench("1000 scalar bindings", scalar_bindings(1000), repeat, false);
    bench("1000 scalar bindings, 4 tiles", scalar_bindings(1000), repeat, false, 0, 4);
    bench("copy u8[1, 50001], 1 tile", odd_u8_copy(), repeat, false, 0, 1);
    for (const std::uint32_t n : {64u, 96u, 128u, 192u, 256u, 362u, 512u, 724u, 1024u}) {
      bench(fmt::format("transpose f32[{}, {}]", n, n), transpose_graph(DType::kF32, n, n), repeat,
            false);
    }
    for (const std::uint32_t n : {250u, 500u, 1000u, 2000u}) {
      bench(fmt::format("transpose u32[{}, 6], 5 tiles", n), transpose_graph(DType::kU32, n, 6),
            repeat, false, 0, 5);
    }
    bench("f16 matmul [512, 512] · [512, 512]", matmul_graph(512, 512, 512), repeat, false);
    bench("f16 matmul [729, 1152] · [1152, 4304] (SigLIP so400m MLP up)",
          matmul_graph(729, 1152, 4304), repeat, false);
    bench("f16 attention [1, 16, 729, 72] (SigLIP so400m)", attention_graph({1, 16, 729, 72}),
          repeat, false);
    bench("f16 attention [16, 1, 729, 72]", attention_graph({16, 1, 729, 72}), repeat, false);
    using models::siglip::GraphPrecision;
    bench("SigLIP tiny f16, 64 tiles", siglip_graph(tiny_siglip(), GraphPrecision::kF16), repeat,
          false, kSiglipMinShardBytes, 64);
    bench("SigLIP tiny f143, 64 tiles", siglip_graph(tiny_siglip(), GraphPrecision::kF143), repeat,
          false, kSiglipMinShardBytes, 64);
    bench("SigLIP so400m f143 (27 layers), batch 1", siglip_graph(so400m(), GraphPrecision::kF143),
          repeat, false, kSiglipMinShardBytes);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}
