// Which fault a run reports: the earliest in simulated time, whatever the
// quantum tiles run ahead by and the host threads they run on; with
// keep_going, every fault in simulated-time order (ties by tile id); and a
// faulting tile leaves its exchange phase.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "sim/chip.hpp"
#include "tests/sim/program.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::LogicalTile;
using target::PhysicalTile;

PhysicalTile tile_at(std::uint16_t logical) { return target::c600_physical(LogicalTile(logical)); }

constexpr std::uint64_t kQuanta[] = {1, 7, 1000, 100'000};
constexpr unsigned kThreadCounts[] = {1, 2, 3};

// L0 faults at cycle 6006 (1000 nops, then a word that is no instruction),
// L1 at cycle 6 (at once). Processes start in tile order, so L0 runs first.
void load_a_late_and_an_early_fault(Chip& chip) {
  load_program(chip, tile_at(0),
               std::vector<isa::Instruction>(1000, isa::Nop{}) +
                   std::vector<isa::Instruction>{isa::Unknown{0}});
  load_program(chip, tile_at(1), {isa::Unknown{0}});
}

TEST(FaultOrder, TheEarliestFaultStopsTheRunWhateverTheQuantumAndThreads) {
  for (const std::uint64_t quantum : kQuanta) for (const unsigned threads : kThreadCounts) {
    SCOPED_TRACE(fmt::format("quantum {}, {} threads", quantum, threads));
    SimOptions options;
    options.quantum_cycles = quantum;
    options.threads = threads;
    Chip chip(small_topology(2), options);
    load_a_late_and_an_early_fault(chip);
    chip.start();
    ASSERT_EQ(chip.run().reason, StopReason::kFault);
    const Fault& first = chip.faults().all().at(0);
    EXPECT_EQ(first.tile, tile_at(1));
    EXPECT_EQ(first.cycle, 6u);
  }
}

TEST(FaultOrder, KeepGoingLogsEveryFaultInSimulatedTimeOrder) {
  for (const std::uint64_t quantum : kQuanta) for (const unsigned threads : kThreadCounts) {
    SCOPED_TRACE(fmt::format("quantum {}, {} threads", quantum, threads));
    SimOptions options;
    options.quantum_cycles = quantum;
    options.threads = threads;
    options.keep_going = true;
    Chip chip(small_topology(2), options);
    load_a_late_and_an_early_fault(chip);
    chip.start();
    ASSERT_EQ(chip.run().reason, StopReason::kFault);
    const auto& faults = chip.faults().all();
    ASSERT_EQ(faults.size(), 2u);
    EXPECT_EQ(faults[0].tile, tile_at(1));
    EXPECT_EQ(faults[0].cycle, 6u);
    EXPECT_EQ(faults[1].tile, tile_at(0));
    EXPECT_EQ(faults[1].cycle, 6006u);
  }
}

TEST(FaultOrder, FaultsAtOneCycleAreOrderedByTileId) {
  // p5 is the chip's first tile, p3 its second: both fault at cycle 6.
  for (const bool keep_going : {false, true}) {
    SCOPED_TRACE(keep_going);
    SimOptions options;
    options.keep_going = keep_going;
    Chip chip(target::Topology::from_physical({PhysicalTile(5), PhysicalTile(3)}), options);
    load_program(chip, PhysicalTile(5), {isa::Unknown{0}});
    load_program(chip, PhysicalTile(3), {isa::Unknown{0}});
    chip.start();
    ASSERT_EQ(chip.run().reason, StopReason::kFault);
    const auto& faults = chip.faults().all();
    ASSERT_EQ(faults.size(), 2u);
    EXPECT_EQ(faults[0].tile, PhysicalTile(3));
    EXPECT_EQ(faults[1].tile, PhysicalTile(5));
  }
}

TEST(FaultOrder, ATileThatFaultsAtASyncInsideAPhaseLeavesThePhase) {
  // L0 reaches `sync 0` (a host receive) inside an internal exchange phase,
  // which is not modelled; L1's row waits for the phase's other rows. With
  // keep_going, L0's fault must not leave L1 waiting for a row that will
  // never return, and the fault names the sync, not the instruction after it.
  constexpr std::uint32_t kRow = 0x4D000;
  SimOptions options;
  options.keep_going = true;
  Chip chip(small_topology(2), options);
  load_program(chip, tile_at(0),
               std::vector<isa::Instruction>{isa::Sync{3}, isa::Sync{0}} + halt());
  load_program(chip, tile_at(1),
               std::vector<isa::Instruction>{isa::Sync{3}, isa::Call{Reg::m10, kRow}} + halt());
  load_program(chip, tile_at(1), {isa::Delay{10}, isa::Br{Reg::m10}}, kRow);
  chip.start();
  EXPECT_EQ(chip.run().reason, StopReason::kFault);
  const auto& faults = chip.faults().all();
  ASSERT_EQ(faults.size(), 1u) << describe(faults.back());
  EXPECT_EQ(faults[0].kind, FaultKind::kNotModelled);
  EXPECT_EQ(faults[0].tile, tile_at(0));
  EXPECT_EQ(faults[0].pc, target::kLoadBase + 4) << "the sync 0";
  EXPECT_EQ(chip.tile(tile_at(1)).status(), TileStatus::kHalted);
}

}  // namespace
}  // namespace tessera::sim
