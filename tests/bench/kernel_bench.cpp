// Kernel-model benchmark (ARCHITECTURE.md decision 11): for each kernel
// family, the host throughput of its model called through the simulator
// (spans checked once per call against the call site's allocations) and of
// the same model on unchecked memory, and a whole-chip compute step on one
// host thread and on several. Prints numbers; asserts nothing. Run it from a
// Release build:
//   build-release/tests/bench/tessera_bench_kernels [--calls N] [--threads N]...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "sim/checked_memory.hpp"
#include "sim/chip.hpp"
#include "sim/tile.hpp"
#include "support/thread_pool.hpp"
#include "tests/sim/program.hpp"

namespace {

using namespace tessera;
using namespace tessera::sim::testing;
using kernels::Registers;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kKernelEntry = 0x4D000;  // the kernel symbol; its code never runs
constexpr std::uint32_t kBufferBase = 0x60000;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds of the calling thread: single-thread figures on a shared
// machine, where other processes steal wall time.
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// One operand buffer of a call: its register, size and initial contents.
struct Operand {
  unsigned reg;
  std::uint32_t bytes;
  std::vector<std::uint8_t> contents;  // empty: written by the kernel
};

// A kernel call to benchmark: the kernel, its operands (laid out one after
// another from kBufferBase), its scalar registers and the bytes one call
// reads and writes.
struct Workload {
  std::string label;
  std::string_view kernel;
  std::vector<Operand> operands;
  std::vector<std::pair<unsigned, std::uint32_t>> scalars;
  std::uint64_t moved_bytes = 0;

  Registers registers() const {
    Registers r{};
    std::uint32_t address = kBufferBase;
    for (const Operand& operand : operands) {
      r[operand.reg] = address;
      address += (operand.bytes + 63) / 64 * 64;
    }
    for (const auto& [reg, value] : scalars) r[reg] = value;
    return r;
  }
};

std::vector<std::uint8_t> random_f32(std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-4.0F, 4.0F);
  std::vector<std::uint8_t> bytes(count * 4);
  for (std::size_t i = 0; i < count; ++i) {
    const float f = value(rng);
    std::memcpy(bytes.data() + 4 * i, &f, 4);
  }
  return bytes;
}

std::vector<std::uint8_t> random_f16(std::size_t count, std::mt19937& rng) {
  // Finite halves with exponents in a normal range: sign, exponent 10..20, mantissa.
  std::uniform_int_distribution<unsigned> mantissa(0, 0x3FF), exponent(10, 20), sign(0, 1);
  std::vector<std::uint8_t> bytes(count * 2);
  for (std::size_t i = 0; i < count; ++i) {
    const auto h =
        static_cast<std::uint16_t>(sign(rng) << 15 | exponent(rng) << 10 | mantissa(rng));
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

std::vector<std::uint8_t> permutation_table(std::uint32_t n, std::mt19937& rng) {
  std::vector<std::uint32_t> sources(n);
  for (std::uint32_t i = 0; i < n; ++i) sources[i] = i;
  std::shuffle(sources.begin(), sources.end(), rng);
  std::vector<std::uint8_t> table(8 * std::size_t{n});
  for (std::uint32_t i = 0; i < n; ++i) {
    std::memcpy(table.data() + 8 * i, &i, 4);
    std::memcpy(table.data() + 8 * i + 4, &sources[i], 4);
  }
  return table;
}

// The families at `bytes` per primary operand.
std::vector<Workload> workloads(std::uint32_t bytes) {
  std::mt19937 rng(bytes);
  const std::uint32_t words = bytes / 4, halves = bytes / 2;
  const std::string size =
      bytes >= 1024 ? std::to_string(bytes / 1024) + " KiB" : std::to_string(bytes) + " B";
  std::vector<Workload> all;
  all.push_back({"copy_words " + size,
                 kernels::kCopyWords,
                 {{2, bytes, {}}, {3, bytes, random_f32(words, rng)}},
                 {{4, words}},
                 2ull * bytes});
  all.push_back({"fill_words " + size,
                 kernels::kFillWords,
                 {{2, bytes, {}}},
                 {{3, 0x3F800000}, {4, words}},
                 bytes});
  all.push_back(
      {"add_f32 " + size,
       kernels::kAddF32,
       {{2, bytes, {}}, {3, bytes, random_f32(words, rng)}, {4, bytes, random_f32(words, rng)}},
       {{5, words}},
       3ull * bytes});
  all.push_back(
      {"add_f16 " + size,
       kernels::kAddF16,
       {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}, {4, bytes, random_f16(halves, rng)}},
       {{5, halves}},
       3ull * bytes});
  const std::uint32_t cols = 256, rows = words / cols;
  all.push_back(
      {"add_row_broadcast_f32 " + size,
       kernels::kAddRowBroadcastF32,
       {{2, bytes, {}}, {3, bytes, random_f32(words, rng)}, {4, cols * 4, random_f32(cols, rng)}},
       {{5, rows}, {6, cols}},
       2ull * bytes + cols * 4});
  constexpr std::uint32_t kPartials = 4;
  all.push_back({"sum_f32 (4 partials) " + size,
                 kernels::kSumF32,
                 {{2, bytes, {}}, {3, kPartials * bytes, random_f32(kPartials * words, rng)}},
                 {{4, words}, {5, kPartials}, {6, bytes}},
                 (kPartials + 1ull) * bytes});
  all.push_back({"sum_f16 (4 partials) " + size,
                 kernels::kSumF16,
                 {{2, bytes, {}}, {3, kPartials * bytes, random_f16(kPartials * halves, rng)}},
                 {{4, halves}, {5, kPartials}, {6, bytes}},
                 (kPartials + 1ull) * bytes});
  all.push_back({"move_elements_b32 " + size,
                 kernels::kMoveElementsB32,
                 {{2, bytes, {}},
                  {3, bytes, random_f32(words, rng)},
                  {4, 8 * words, permutation_table(words, rng)}},
                 {{5, words}, {6, words}, {7, words}},
                 4ull * bytes});
  return all;
}

// Loads `workload` onto `tiles` tiles of a chip, each calling the kernel
// `calls` times in a supervisor loop, with allocations and a call site so
// that every span is checked.
// The debug records of one call site at `call_pc`: the kernel's symbol, one
// allocation per operand (exactly its buffer), the call site naming them.
schema::TileDebug debug_for(const Workload& workload, std::uint32_t call_pc) {
  const Registers r = workload.registers();
  schema::TileDebug debug;
  debug.symbols = {
      schema::Symbol{std::string(workload.kernel), kKernelEntry, 4, schema::SymbolKind::kKernel}};
  schema::CallSite site{call_pc, std::string(workload.kernel), {}, 0};
  for (std::size_t i = 0; i < workload.operands.size(); ++i) {
    const Operand& operand = workload.operands[i];
    const auto id = static_cast<std::uint32_t>(i + 1);
    debug.allocations.push_back(schema::Allocation{id, "buffer", "%b", r[operand.reg],
                                                   operand.bytes, 0, schema::kLiveToEnd,
                                                   schema::AllocationKind::kTensor, 0});
    site.operands.push_back(schema::CallOperand{static_cast<std::uint8_t>(operand.reg), id,
                                                r[operand.reg], operand.bytes, i == 0});
  }
  debug.call_sites = {site};
  return debug;
}

// Loads `workload` onto every tile of a chip, each calling the kernel `calls`
// times in a supervisor loop, with allocations and a call site so that every
// span is checked.
void load(sim::Chip& chip, const Workload& workload, std::uint32_t calls) {
  const Registers r = workload.registers();
  std::vector<isa::Instruction> program = load_constant(Reg::m1, calls);
  for (unsigned reg = 2; reg <= 9; ++reg)
    program = program + load_constant(static_cast<Reg>(reg), r[reg]);
  const auto loop = target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size());
  const std::uint32_t done = loop + 16;
  program = program +
            std::vector<isa::Instruction>{isa::Call{Reg::m10, kKernelEntry},
                                          isa::Add{Reg::m1, Reg::m1, -1}, isa::Brz{Reg::m1, done},
                                          isa::Bri{loop}} +
            halt();
  schema::TileDebug debug = debug_for(workload, loop);
  for (const auto tile : chip.topology().physical_tiles()) {
    load_program(chip, tile, program);
    load_program(chip, tile, {isa::Br{Reg::m10}}, kKernelEntry);
    for (const Operand& operand : workload.operands) {
      if (!operand.contents.empty())
        chip.load_segment(tile, r[operand.reg], operand.contents, false);
    }
    debug.tile = tile;
    chip.set_debug(tile, debug);
  }
}

// Tile memory with no checks at all: the same model on a plain buffer.
class UncheckedMemory final : public kernels::KernelMemory {
 public:
  std::span<std::uint8_t> acquire(unsigned, std::uint64_t address, std::uint64_t size,
                                  kernels::Access, kernels::SpanUse, unsigned) override {
    return {sram_.data() + (address - target::kSramBase), static_cast<std::size_t>(size)};
  }
  void note_read(unsigned, std::uint64_t, std::uint64_t) override {}
  void note_written(unsigned, std::uint64_t, std::uint64_t) override {}
  void load(std::uint32_t address, const std::vector<std::uint8_t>& bytes) {
    std::memcpy(sram_.data() + (address - target::kSramBase), bytes.data(), bytes.size());
  }

 private:
  std::vector<std::uint8_t> sram_ = std::vector<std::uint8_t>(target::kSramSize, 0xFF);
};

// The whole simulated call: the supervisor loop, the call, the checks and
// the model (wall time of the run).
double simulated_seconds(const Workload& workload, std::uint32_t calls) {
  sim::Chip chip(target::Topology::from_physical({target::PhysicalTile(0)}));
  load(chip, workload, calls);
  chip.start();
  const auto start = Clock::now();
  const sim::RunResult result = chip.run();
  const double elapsed = seconds_since(start);
  if (result.reason != sim::StopReason::kAllHalted) {
    std::fprintf(
        stderr, "%s: %s\n", workload.label.c_str(),
        chip.faults().empty() ? "did not halt" : sim::describe(chip.faults().all()[0]).c_str());
    std::exit(1);
  }
  return elapsed;
}

// The model behind the simulator's checked memory, called directly: the
// precondition, every span checked against the call site's allocations,
// the commit — what checking costs, without the supervisor around it.
double checked_seconds(const Workload& workload, std::uint32_t calls) {
  const kernels::KernelSpec& spec = *kernels::KernelRegistry::standard().find(workload.kernel);
  const sim::SimOptions options;
  sim::Tile tile(target::PhysicalTile(0), options, kernels::KernelRegistry::standard());
  const Registers r = workload.registers();
  for (const Operand& operand : workload.operands) {
    if (!operand.contents.empty()) tile.load_segment(r[operand.reg], operand.contents, false);
  }
  const std::uint32_t call_pc = target::kLoadBase;
  const schema::TileDebug debug = debug_for(workload, call_pc);
  const sim::TileDebugIndex index(debug, std::vector<std::string>{});
  const sim::ResolvedCallSite site =
      sim::ResolvedCallSite::resolve(spec, &debug.call_sites[0], call_pc, index);
  tile.set_debug(index);
  const auto call_once = [&] {
    if (spec.precondition && spec.precondition(r)) {
      std::fprintf(stderr, "%s: precondition failed\n", workload.label.c_str());
      std::exit(1);
    }
    sim::CheckedKernelMemory memory(tile, site, 0);
    kernels::KernelCall call{r, memory, 0, 0};
    spec.model(call);
    memory.commit();
  };
  call_once();  // first touch of the tile's pages, outside the timing
  const double start = thread_cpu_seconds();
  for (std::uint32_t i = 0; i < calls; ++i) call_once();
  return thread_cpu_seconds() - start;
}

double unchecked_seconds(const Workload& workload, std::uint32_t calls) {
  const kernels::KernelSpec& spec = *kernels::KernelRegistry::standard().find(workload.kernel);
  UncheckedMemory memory;
  const Registers r = workload.registers();
  for (const Operand& operand : workload.operands) {
    if (!operand.contents.empty()) memory.load(r[operand.reg], operand.contents);
  }
  const double start = thread_cpu_seconds();
  for (std::uint32_t i = 0; i < calls; ++i) {
    kernels::KernelCall call{r, memory, 0, 0};
    spec.model(call);
  }
  return thread_cpu_seconds() - start;
}

void families(std::uint32_t calls, const std::string& only) {
  std::printf(
      "Kernel models on one tile, %u calls each (1 host thread, best of 3). checked: the model\n"
      "behind the simulator's checked memory; unchecked: the same model on plain memory (both\n"
      "thread CPU time); simulated: the whole call as a tile runs it (supervisor loop, call,\n"
      "checks, model; wall time)\n",
      calls);
  std::printf("%-34s %10s %12s %14s %9s %14s\n", "kernel", "moved/call", "checked GB/s",
              "unchecked GB/s", "checking", "simulated GB/s");
  for (const std::uint32_t bytes : {4096u, 65536u}) {
    for (const Workload& workload : workloads(bytes)) {
      if (workload.label.find(only) == std::string::npos) continue;
      double checked = 1e30, unchecked = 1e30, simulated = 1e30;
      for (int i = 0; i < 3; ++i) {
        checked = std::min(checked, checked_seconds(workload, calls));
        unchecked = std::min(unchecked, unchecked_seconds(workload, calls));
        simulated = std::min(simulated, simulated_seconds(workload, calls));
      }
      const double moved = static_cast<double>(workload.moved_bytes) * calls;
      std::printf("%-34s %10llu %12.2f %14.2f %8.1f%% %14.2f\n", workload.label.c_str(),
                  static_cast<unsigned long long>(workload.moved_bytes), moved / checked / 1e9,
                  moved / unchecked / 1e9, 100.0 * (checked - unchecked) / checked,
                  moved / simulated / 1e9);
    }
  }
}

// Every tile of the C600 runs the same kernel loop: the compute step the
// host pool runs in parallel (wall time: it uses several threads).
void whole_chip(std::uint32_t calls, const std::vector<unsigned>& thread_counts) {
  const Workload workload = workloads(16384)[2];  // add_f32 on 16 KiB operands
  std::printf("\nWhole-chip compute step: 1472 tiles x %u calls of %s (wall time, best of 3)\n",
              calls, workload.label.c_str());
  double one_thread = 0;
  for (const unsigned threads : thread_counts) {
    sim::SimOptions options;
    options.threads = threads;
    sim::Chip chip(target::Topology::c600(), options);
    double best = 1e30;
    std::uint64_t cycles = 0;
    for (int repetition = 0; repetition < 3; ++repetition) {
      load(chip, workload, calls);
      chip.start();
      const auto start = Clock::now();
      const sim::RunResult result = chip.run();
      best = std::min(best, seconds_since(start));
      if (result.reason != sim::StopReason::kAllHalted) {
        std::fprintf(stderr, "whole chip did not halt\n");
        std::exit(1);
      }
      cycles = chip.report().total_cycles;
    }
    if (one_thread == 0) one_thread = best;
    const double moved = static_cast<double>(workload.moved_bytes) * calls * 1472;
    std::printf("  %u thread%s: %.3f s, %.2f GB/s, %llu simulated cycles, speed-up %.2fx\n",
                threads, threads == 1 ? " " : "s", best, moved / best / 1e9,
                static_cast<unsigned long long>(cycles), one_thread / best);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint32_t calls = 2000;
  std::string only;
  std::uint32_t chip_calls = 20;
  std::vector<unsigned> thread_counts;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 0));
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (std::strcmp(argv[i], "--chip-calls") == 0 && i + 1 < argc) {
      chip_calls = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 0));
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      thread_counts.push_back(static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 0)));
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--calls N] [--only TEXT] [--chip-calls N] [--threads N]...\n"
          "  --calls N       calls per kernel family on one tile (default 2000)\n"
          "  --only TEXT     only the families whose label contains TEXT\n"
          "  --chip-calls N  calls per tile in the whole-chip step (default 20; 0 skips it)\n"
          "  --threads N     host threads for the whole-chip step (repeatable;\n"
          "                  default: 1 and the machine's cores)\n",
          argv[0]);
      return 2;
    }
  }
  if (calls == 0) {
    std::fprintf(stderr, "--calls must be at least 1\n");
    return 2;
  }
  if (thread_counts.empty()) thread_counts = {1, ThreadPool::machine_threads()};
  families(calls, only);
  if (chip_calls != 0) whole_chip(chip_calls, thread_counts);
  return 0;
}
