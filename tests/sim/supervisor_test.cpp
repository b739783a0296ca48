// The supervisor interpreter: arithmetic, branches, memory, faults, traps,
// on hand-assembled programs.
#include <gtest/gtest.h>

#include <optional>

#include "sim/chip.hpp"
#include "tests/sim/program.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::PhysicalTile;

constexpr std::uint32_t kData = 0x60000;
const PhysicalTile kTile0 = target::c600_physical(target::LogicalTile(0));

// Runs `program` on one tile to its end.
struct OneTile {
  explicit OneTile(const std::vector<isa::Instruction>& program, SimOptions options = {})
      : chip(small_topology(1), options) {
    load_program(chip, kTile0, program);
    chip.start();
    result = chip.run();
  }
  std::uint32_t word(std::uint32_t address) { return chip.tile(kTile0).sram().read_u32(address); }
  Chip chip;
  RunResult result;
};

TEST(Supervisor, ArithmeticAndStores) {
  // 5 + (-3) = 2; 0xF0F & 0x0FF = 0x00F; 3 << 4 = 48; a 32-bit constant.
  OneTile run(load_constant(Reg::m1, kData) +
              std::vector<isa::Instruction>{
                  isa::Setzi{Reg::m2, 5},  isa::Add{Reg::m2, Reg::m2, -3},
                  isa::St32{Reg::m2, Reg::m1, Reg::m15, 0},
                  isa::Setzi{Reg::m3, 0xF0F}, isa::And{Reg::m3, Reg::m3, 0x0FF},
                  isa::St32{Reg::m3, Reg::m1, Reg::m15, 1},
                  isa::Setzi{Reg::m4, 3},  isa::Shl{Reg::m4, Reg::m4, 4},
                  isa::St32{Reg::m4, Reg::m1, Reg::m15, 2}} +
              load_constant(Reg::m5, 0xDEADBEEF) +
              std::vector<isa::Instruction>{isa::St32{Reg::m5, Reg::m1, Reg::m15, 3}} + halt());
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted) << describe(run.chip.faults().all().at(0));
  EXPECT_EQ(run.word(kData), 2u);
  EXPECT_EQ(run.word(kData + 4), 0x00Fu);
  EXPECT_EQ(run.word(kData + 8), 48u);
  EXPECT_EQ(run.word(kData + 12), 0xDEADBEEFu);
}

TEST(Supervisor, LoadingZeroIntoM14ZeroesIt) {
  // `setzi $m14, 0` would be nop's word; load_constant writes it another way.
  OneTile run(load_constant(Reg::m1, kData) +
              std::vector<isa::Instruction>{isa::Setzi{Reg::m14, 5}} + load_constant(Reg::m14, 0) +
              std::vector<isa::Instruction>{isa::St32{Reg::m14, Reg::m1, Reg::m15, 0}} + halt());
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted) << describe(run.chip.faults().all().at(0));
  EXPECT_EQ(run.word(kData), 0u);
}

TEST(Supervisor, ZeroRegisterIgnoresWrites) {
  OneTile run(load_constant(Reg::m1, kData) +
              std::vector<isa::Instruction>{isa::Setzi{Reg::m15, 7},
                                            isa::St32{Reg::m15, Reg::m1, Reg::m15, 0}} +
              halt());
  EXPECT_EQ(run.word(kData), 0u);
}

TEST(Supervisor, LoopRunsTenTimes) {
  const std::uint32_t base = target::kLoadBase;
  OneTile run({isa::Setzi{Reg::m1, kData},            // base
               isa::Setzi{Reg::m2, 10},               // base + 4: counter
               isa::Setzi{Reg::m3, 0},                // base + 8: passes
               isa::Add{Reg::m3, Reg::m3, 1},         // base + 12: loop
               isa::Add{Reg::m2, Reg::m2, -1},        // base + 16
               isa::Brz{Reg::m2, base + 28},          // base + 20
               isa::Bri{base + 12},                   // base + 24
               isa::St32{Reg::m3, Reg::m1, Reg::m15, 0},  // base + 28: done
               isa::Setzi{Reg::m0, 0}, isa::Br{Reg::m0}});
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted);
  EXPECT_EQ(run.word(kData), 10u);
  // 3 set-up + 10 × 3 + 9 back-branches + store + 2 halt instructions.
  EXPECT_EQ(run.chip.report().total_cycles, (3u + 30 + 9 + 1 + 2) * 6);
}

TEST(Supervisor, CostsSixCyclesPerInstructionByDefault) {
  {
    OneTile run(halt());
    EXPECT_EQ(run.chip.report().total_cycles, 2u * 6);
  }
  SimOptions fast;
  fast.supervisor_instruction_cycles = 1;
  OneTile quick(halt(), fast);
  EXPECT_EQ(quick.chip.report().total_cycles, 2u);
}

TEST(Supervisor, GetReadsThePcAndPutWritesExchangeRegisters) {
  OneTile run(load_constant(Reg::m1, kData) +
              std::vector<isa::Instruction>{
                  isa::Get{Reg::m2, isa::Csr::kPc},
                  isa::St32{Reg::m2, Reg::m1, Reg::m15, 0},
                  isa::Setzi{Reg::m8, 0x640},
                  isa::Put{isa::Csr::kIncomingMux, Reg::m8},
                  isa::Get{Reg::m3, isa::Csr::kIncomingMux},
                  isa::St32{Reg::m3, Reg::m1, Reg::m15, 1}} +
              halt());
  EXPECT_EQ(run.word(kData), target::kLoadBase + 4);
  EXPECT_EQ(run.word(kData + 4), 0x640u);
}

TEST(Supervisor, UnknownInstructionFaultsWithTileAndPc) {
  Chip chip(small_topology(1));
  chip.load_segment(kTile0, target::kLoadBase, assemble({isa::Nop{}}), true);
  chip.load_segment(kTile0, target::kLoadBase + 4, std::vector<std::uint8_t>{0, 0, 0, 0}, true);
  chip.start();
  const RunResult result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kFault);
  const Fault& fault = chip.faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kInvalidInstruction);
  EXPECT_EQ(fault.tile, kTile0);
  EXPECT_EQ(fault.pc, target::kLoadBase + 4);
  EXPECT_EQ(chip.tile(kTile0).exception(), ExceptionType::kInvalidInstruction);
  EXPECT_EQ(describe(fault),
            "InvalidInstruction on p0 (supervisor) at pc 0x4c014, cycle 12: 0x00000000 is not an "
            "instruction");
}

TEST(Supervisor, FetchOfNeverWrittenCodeFaults) {
  OneTile run({isa::Nop{}});  // runs off the end of its code
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.chip.faults().all().at(0).kind, FaultKind::kInvalidInstruction);
  EXPECT_NE(run.chip.faults().all().at(0).message.find("nothing ever wrote"), std::string::npos);
}

TEST(Supervisor, FetchOutsideExecutableMemoryFaults) {
  OneTile run(load_constant(Reg::m0, 0x80000) + std::vector<isa::Instruction>{isa::Br{Reg::m0}});
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  const Fault& fault = run.chip.faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kInvalidAddress);
  EXPECT_EQ(fault.pc, 0x80000u);
}

TEST(Supervisor, StoreOutsideSramFaults) {
  OneTile store(load_constant(Reg::m1, 0x40000) +
                std::vector<isa::Instruction>{isa::St32{Reg::m1, Reg::m1, Reg::m15, 0}} + halt());
  ASSERT_EQ(store.result.reason, StopReason::kFault);
  EXPECT_EQ(store.chip.faults().all().at(0).kind, FaultKind::kInvalidAddress);
  EXPECT_NE(store.chip.faults().all().at(0).message.find("st32 to 0x40000"), std::string::npos);
}

TEST(Supervisor, UnalignedLoadFaults) {
  OneTile unaligned(load_constant(Reg::m1, kData + 2) +
                    std::vector<isa::Instruction>{isa::Ld32{Reg::m2, Reg::m1, Reg::m15, 0}} +
                    halt());
  ASSERT_EQ(unaligned.result.reason, StopReason::kFault);
  EXPECT_NE(unaligned.chip.faults().all().at(0).message.find("ld32 from 0x60002"),
            std::string::npos);
}

TEST(Supervisor, ExchangeInstructionsAreNotModelledYet) {
  OneTile run({isa::Send{1, 0x14000, 3}});
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.chip.faults().all().at(0).kind, FaultKind::kNotModelled);
  EXPECT_NE(run.chip.faults().all().at(0).message.find("'send 1, 0x14000, 3'"), std::string::npos);
}

TEST(Supervisor, TrapStopsAndResumesAfterThePatch) {
  Chip chip(small_topology(1));
  load_program(chip, kTile0,
               load_constant(Reg::m1, kData) +
                   std::vector<isa::Instruction>{isa::Setzi{Reg::m2, 1},
                                                 isa::Trap{0},
                                                 isa::St32{Reg::m2, Reg::m1, Reg::m15, 0}} +
                   halt());
  chip.start();
  RunResult result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kTrapped);
  Tile& tile = chip.tile(kTile0);
  EXPECT_EQ(tile.status(), TileStatus::kTrapped);
  EXPECT_EQ(tile.exception(), ExceptionType::kPbrk0);
  EXPECT_EQ(tile.csr(1), 0x20u) << "PBRK0 shows $SSR = 0x20 [HW]";
  const std::uint32_t trap_pc = tile.pc();
  EXPECT_EQ(trap_pc, target::kLoadBase + 8);
  EXPECT_NE(tile.sram().read_u32(kData), 1u) << "nothing after the trap ran";

  // Resuming without patching re-traps (reference §3).
  chip.resume(kTile0);
  result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kTrapped);
  EXPECT_EQ(tile.pc(), trap_pc);

  // Overwrite the trap with nop, then resume: the program completes.
  tile.sram().write_u32(trap_pc, isa::kNopWord);
  chip.resume(kTile0);
  result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kAllHalted);
  EXPECT_EQ(tile.sram().read_u32(kData), 1u);
}

TEST(Supervisor, CycleLimitStopsARunawayTile) {
  Chip chip(small_topology(1));
  load_program(chip, kTile0, {isa::Bri{target::kLoadBase}});
  chip.start();
  const RunResult result = chip.run(1'000'000);
  EXPECT_EQ(result.reason, StopReason::kCycleLimit);
  EXPECT_GE(result.cycle, 1'000'000u);
  EXPECT_EQ(chip.tile(kTile0).status(), TileStatus::kRunning);
  // The run can continue.
  EXPECT_EQ(chip.run(2'000'000).reason, StopReason::kCycleLimit);
  EXPECT_GE(chip.tile(kTile0).cycle(), 2'000'000u);
}

TEST(Supervisor, ABranchPastTheTopOfTheAddressSpaceIsAFetchFault) {
  // $m1 = 0 − 4 = 0xFFFFFFFC: its fetch range would wrap past 2^32.
  std::optional<OneTile> run;
  ASSERT_NO_THROW(run.emplace(
      std::vector<isa::Instruction>{isa::Add{Reg::m1, Reg::m15, -4}, isa::Br{Reg::m1}}));
  ASSERT_EQ(run->result.reason, StopReason::kFault);
  const Fault& fault = run->chip.faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kInvalidAddress);
  EXPECT_EQ(fault.tile, kTile0);
  EXPECT_EQ(fault.pc, 0xFFFFFFFCu);
  EXPECT_EQ(fault.cycle, 12u);
}

TEST(Supervisor, ARowThatLoopsIsAFaultNotAnInternalError) {
  // The row's bri jumps back to its sendoff, so the outgoing stream's item
  // would grow past 32 bits; the bri itself has no place inside a row.
  std::optional<OneTile> run;
  ASSERT_NO_THROW(run.emplace(std::vector<isa::Instruction>{
      isa::Sync{3}, isa::SendOff{4096, 2047, 0}, isa::Bri{target::kLoadBase + 4}}));
  ASSERT_EQ(run->result.reason, StopReason::kFault);
  const Fault& fault = run->chip.faults().all().at(0);
  EXPECT_EQ(fault.tile, kTile0);
  ASSERT_TRUE(fault.pc.has_value());
  EXPECT_EQ(*fault.pc, target::kLoadBase + 8);
  EXPECT_GT(fault.cycle, 0u);
}

}  // namespace
}  // namespace tessera::sim
