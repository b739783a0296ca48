// The simulator's host thread pool (ARCHITECTURE.md decision 11): tiles run
// between interactions on any number of host threads, and the run — faults
// and their order included — is the same for every count.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/chip.hpp"
#include "tests/sim/program.hpp"

namespace tessera::sim {
namespace {

using namespace testing;

constexpr std::uint32_t kFill = 0x4D000;  // the fill helper's symbol
constexpr std::uint32_t kBuffer = 0x60000;

struct Outcome {
  StopReason reason;
  std::uint64_t cycle;
  std::string faults;
  std::string report;
  std::string trace;
};

// 64 tiles; each fills its 64-byte buffer after a sync, with a word count
// that depends on the tile: every fourth tile overruns its buffer (a
// KernelOverrun), the others run a loop of a length that differs per tile and
// halt. The faults all happen in the same phase, at different cycles.
Outcome run(unsigned threads, bool keep_going) {
  SimOptions options;
  options.threads = threads;
  options.keep_going = keep_going;
  options.trace = true;
  options.quantum_cycles = 500;  // many yields, many batches
  Chip chip(small_topology(64), options);
  for (std::uint16_t logical = 0; logical < 64; ++logical) {
    const auto tile = target::c600_physical(target::LogicalTile(logical));
    const std::uint32_t words = logical % 4 == 3 ? 17u + logical : 16u;
    const std::uint32_t spin = 10u + 37u * (logical % 7u);
    const std::uint32_t loop = target::kLoadBase + 4 * 3;
    auto program = load_constant(Reg::m1, spin) + std::vector<isa::Instruction>{isa::Sync{3}};
    // Pad the constant load to exactly three instructions before the loop.
    while (program.size() < 3) program.insert(program.begin(), isa::Nop{});
    program = program +
              std::vector<isa::Instruction>{isa::Add{Reg::m1, Reg::m1, -1},
                                            isa::Brz{Reg::m1, loop + 12}, isa::Bri{loop}} +
              load_constant(Reg::m2, kBuffer) + load_constant(Reg::m3, 0xAB) +
              load_constant(Reg::m4, words);
    const auto call_pc = target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size());
    program = program + std::vector<isa::Instruction>{isa::Call{Reg::m10, kFill}} + halt();
    load_program(chip, tile, program);
    load_program(chip, tile, {isa::Br{Reg::m10}}, kFill);
    schema::TileDebug debug;
    debug.tile = tile;
    debug.symbols = {
        schema::Symbol{"tessera_fill_words", kFill, 4, schema::SymbolKind::kRuntimeHelper}};
    debug.allocations = {schema::Allocation{1, "buffer", "%b", kBuffer, 64, 0, schema::kLiveToEnd,
                                            schema::AllocationKind::kTensor, 0}};
    debug.call_sites = {
        schema::CallSite{call_pc, "fill", {schema::CallOperand{2, 1, kBuffer, 64, true}}, 0}};
    chip.set_debug(tile, debug);
  }
  chip.start();
  const RunResult result = chip.run();
  return {result.reason, result.cycle, chip.faults().to_json().dump(),
          chip.report().to_json().dump(), chip.trace().dump()};
}

TEST(ThreadCount, FaultsOnManyTilesComeOutTheSameOnAnyThreadCount) {
  for (const bool keep_going : {true, false}) {
    const Outcome one = run(1, keep_going);
    EXPECT_EQ(one.reason, StopReason::kFault);
    const auto faults = nlohmann::json::parse(one.faults);
    if (keep_going) {
      EXPECT_EQ(faults.size(), 16u) << one.faults;
    } else {
      EXPECT_GE(faults.size(), 1u);
    }
    for (const unsigned threads : {2u, 4u}) {
      const Outcome many = run(threads, keep_going);
      EXPECT_EQ(many.reason, one.reason) << threads;
      EXPECT_EQ(many.cycle, one.cycle) << threads;
      EXPECT_EQ(many.faults, one.faults) << threads << " threads, keep_going " << keep_going;
      EXPECT_EQ(many.report, one.report) << threads;
      EXPECT_EQ(many.trace, one.trace) << threads;
    }
  }
}

}  // namespace
}  // namespace tessera::sim
