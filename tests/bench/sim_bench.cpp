// Simulator benchmark: supervisor instructions per host second on one core,
// and the host time for all 1472 tiles to start and halt. Prints numbers;
// asserts nothing. Run it from a Release build:
//   build-release/tests/bench/tessera_bench_sim [--instructions N]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim/chip.hpp"
#include "tests/sim/program.hpp"
#include "target/isa.hpp"
#include "target/memory_map.hpp"

namespace {

using namespace tessera;
namespace isa = target::isa;
using isa::Reg;
using Clock = std::chrono::steady_clock;
using sim::testing::assemble;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

long peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

// One tile runs a loop of `passes` iterations of eight instructions: loads,
// stores, arithmetic and a back-branch — the mix of emitted glue code.
void instructions_per_second(std::uint64_t passes) {
  const std::uint32_t base = target::kLoadBase;
  const auto counter_high = static_cast<std::uint32_t>(passes >> 12);
  const auto counter_low = static_cast<std::int32_t>(passes & 0xFFF);
  const std::vector<isa::Instruction> program = {
      isa::Setzi{Reg::m1, 0x60000},                // base
      isa::Setzi{Reg::m2, counter_high},           // base + 4
      isa::Shl{Reg::m2, Reg::m2, 12},              // base + 8
      isa::Add{Reg::m2, Reg::m2, counter_low},     // base + 12
      isa::Ld32{Reg::m3, Reg::m1, Reg::m15, 0},    // base + 16: loop
      isa::Add{Reg::m3, Reg::m3, 1},
      isa::St32{Reg::m3, Reg::m1, Reg::m15, 0},
      isa::And{Reg::m4, Reg::m3, 0xFF},
      isa::Shl{Reg::m5, Reg::m4, 2},
      isa::Add{Reg::m2, Reg::m2, -1},
      isa::Brz{Reg::m2, base + 48},                // base + 40
      isa::Bri{base + 16},                         // base + 44
      isa::Setzi{Reg::m0, 0},                      // base + 48
      isa::Br{Reg::m0}};
  sim::SimOptions options;
  options.supervisor_instruction_cycles = 1;  // one cycle each: cycles count instructions
  sim::Chip chip(target::Topology::from_physical({target::PhysicalTile(0)}), options);
  chip.load_segment(target::PhysicalTile(0), base, assemble(program), true);
  chip.load_segment(target::PhysicalTile(0), 0x60000, std::vector<std::uint8_t>(4, 0), false);
  chip.start();
  const auto start = Clock::now();
  const sim::RunResult result = chip.run();
  const double elapsed = seconds_since(start);
  const auto instructions = static_cast<double>(chip.report().total_cycles);
  std::printf("single tile: %s, %.0f instructions in %.3f s = %.1f M instructions/s\n",
              std::string(sim::stop_reason_name(result.reason)).c_str(), instructions, elapsed,
              instructions / elapsed / 1e6);
}

// Every tile of the C600 runs a short program with two device-wide syncs.
void whole_chip_start_to_halt(int repetitions) {
  const std::vector<isa::Instruction> program = {
      isa::Setzi{Reg::m1, 0x60000}, isa::Setzi{Reg::m2, 42},
      isa::St32{Reg::m2, Reg::m1, Reg::m15, 0}, isa::Sync{3},
      isa::Ld32{Reg::m3, Reg::m1, Reg::m15, 0}, isa::Sync{3},
      isa::Setzi{Reg::m0, 0}, isa::Br{Reg::m0}};
  const auto code = assemble(program);
  auto start = Clock::now();
  sim::Chip chip(target::Topology::c600());
  const double construct = seconds_since(start);
  for (int repetition = 0; repetition < repetitions; ++repetition) {
    start = Clock::now();
    chip.reset();
    for (const auto tile : chip.topology().physical_tiles()) {
      chip.load_segment(tile, target::kLoadBase, code, true);
    }
    const double load = seconds_since(start);
    start = Clock::now();
    chip.start();
    const sim::RunResult result = chip.run();
    const double run = seconds_since(start);
    std::printf("1472 tiles: %s after %llu cycles; reset+load %.3f s, start+run %.3f s, total "
                "%.3f s (chip construction %.3f s)\n",
                std::string(sim::stop_reason_name(result.reason)).c_str(),
                static_cast<unsigned long long>(result.cycle), load, run, load + run, construct);
  }
  std::printf("SRAM touched: %llu bytes; peak RSS %ld MB\n",
              static_cast<unsigned long long>(chip.report().sram_bytes_touched), peak_rss_mb());
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t passes = 5'000'000;  // 8 instructions each: 40 M instructions
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--passes") == 0 && i + 1 < argc) {
      passes = std::strtoull(argv[++i], nullptr, 0);
    } else {
      std::fprintf(stderr, "usage: %s [--passes N]   (N loop passes of 8 instructions)\n", argv[0]);
      return 2;
    }
  }
  if (passes == 0 || passes >= (1ull << 32)) {
    std::fprintf(stderr, "--passes must be in 1..2^32-1\n");
    return 2;
  }
  instructions_per_second(passes);
  whole_chip_start_to_halt(3);
  return 0;
}
