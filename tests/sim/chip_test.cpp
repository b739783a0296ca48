// The chip: syncs between tiles, deadlock, host syncs, whole-chip runs,
// determinism, packages, reports and traces.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schema/model.hpp"
#include "sim/chip.hpp"
#include "target/config_space.hpp"
#include "tests/sim/program.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::LogicalTile;
using target::PhysicalTile;

PhysicalTile tile_at(std::uint16_t logical) { return target::c600_physical(LogicalTile(logical)); }

// Busy work of `n` supervisor instructions.
std::vector<isa::Instruction> work(std::size_t n) { return std::vector<isa::Instruction>(n, isa::Nop{}); }

TEST(Sync, DeviceSyncReleasesEveryoneAtTheLastArrivalPlusLatency) {
  Chip chip(small_topology(3));
  // Tile L(i) does 10·i instructions, syncs, then one more instruction and halts.
  for (std::uint16_t i = 0; i < 3; ++i) {
    load_program(chip, tile_at(i), work(10u * i) + std::vector<isa::Instruction>{isa::Sync{3}} + halt());
  }
  chip.start();
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted);
  // The last arrival is tile 2 after 21 instructions (20 nops + sync).
  const std::uint64_t release = 21u * 6 + 600;
  const RunReport report = chip.report();
  EXPECT_EQ(report.total_cycles, release + 2 * 6);
  for (const auto& tile : report.tiles) {
    EXPECT_EQ(tile.end_cycle, release + 2 * 6) << tile.tile;
    EXPECT_EQ(tile.busy + tile.sync_wait, tile.end_cycle) << tile.tile;
  }
  EXPECT_EQ(report.tiles[0].sync_wait, release - 6);  // tile 0 arrived after its sync issued
}

TEST(Sync, SansSkipsTheInternalSyncRound) {
  Chip chip(small_topology(2));
  // Tile 0 takes part; tile 1 declares non-participation and goes on (§6:
  // `sans 0; sync 1`), then halts long before the release.
  load_program(chip, tile_at(0), work(50) + std::vector<isa::Instruction>{isa::Sync{3}} + halt());
  load_program(chip, tile_at(1), std::vector<isa::Instruction>{isa::Sans{0}, isa::Sync{1}} + halt());
  chip.start();
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted);
  EXPECT_EQ(chip.tile(tile_at(0)).cycle(), 51u * 6 + 600 + 2 * 6);
  EXPECT_LT(chip.tile(tile_at(1)).cycle(), 100u);
}

TEST(Sync, ATileThatHaltsLeavesTheOthersDeadlocked) {
  Chip chip(small_topology(2));
  load_program(chip, tile_at(0), std::vector<isa::Instruction>{isa::Sync{3}} + halt());
  load_program(chip, tile_at(1), halt());
  chip.start();
  const RunResult result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kDeadlock);
  const Fault& fault = chip.faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kDeadlock);
  EXPECT_EQ(fault.message,
            "no tile can make progress: p0 waits at sync 3 (pc 0x4c010, cycle 6, round 0: 1 of 2 "
            "tiles present); p2 halted (pc 0x4c014, cycle 12)");
}

TEST(Sync, DeadlockIsFoundUnderACycleLimitToo) {
  Chip chip(small_topology(2));
  load_program(chip, tile_at(0), std::vector<isa::Instruction>{isa::Sync{3}} + halt());
  load_program(chip, tile_at(1), halt());
  chip.start();
  EXPECT_EQ(chip.run(1'000'000).reason, StopReason::kDeadlock);
}

TEST(Sync, ManyRoundsStayInStep) {
  Chip chip(small_topology(4));
  for (std::uint16_t i = 0; i < 4; ++i) {
    std::vector<isa::Instruction> program;
    for (int round = 0; round < 20; ++round) {
      program = program + work((i * 7u + static_cast<unsigned>(round)) % 5) +
                std::vector<isa::Instruction>{isa::Sync{3}};
    }
    load_program(chip, tile_at(i), program + halt());
  }
  chip.start();
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted);
  const RunReport report = chip.report();
  for (const auto& tile : report.tiles) EXPECT_EQ(tile.end_cycle, report.total_cycles);
}

TEST(HostSync, TilesWaitForAnHspCreditAndTakeOneEach) {
  Chip chip(small_topology(3));
  // One host phase of two rounds (entry: sync 15 from the owner, sync 7 from
  // the target; exit: sync 7). Tile 2 has no part: `sans 1; sync 1` keeps it
  // out of both rounds (§4.5 "Inactive").
  load_program(chip, tile_at(0), std::vector<isa::Instruction>{isa::Sync{15}, isa::Sync{7}} + halt());
  load_program(chip, tile_at(1), std::vector<isa::Instruction>{isa::Sync{7}, isa::Sync{7}} + halt());
  load_program(chip, tile_at(2), std::vector<isa::Instruction>{isa::Sans{1}, isa::Sync{1}} + halt());
  chip.start();
  RunResult result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kHostSync);
  EXPECT_EQ(chip.tiles_waiting_at_host_sync().size(), 2u);
  EXPECT_EQ(chip.tile(tile_at(2)).status(), TileStatus::kHalted);
  // Without a credit the device makes no progress (driver-host-protocol §8.6).
  EXPECT_EQ(chip.run().reason, StopReason::kHostSync);
  EXPECT_EQ(chip.tile(tile_at(0)).pc(), target::kLoadBase + 4) << "still at its first sync";

  chip.write_hsp_mark(target::kHspGs2Control, 1);
  result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kHostSync) << "one credit, one round";
  EXPECT_EQ(chip.read_hsp_mark(target::kHspGs2Control), 0u) << "the round took the credit";

  chip.write_hsp_mark(target::kHspGs2Control, 1);
  result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kAllHalted);
  EXPECT_EQ(chip.read_hsp_mark(target::kHspGs2Control), 0u);
  EXPECT_EQ(chip.read_hsp_mark(target::kHspGs1Control), 0u);
  EXPECT_THROW(chip.write_hsp_mark(0x2000, 1), UsageError);
}

TEST(HostSync, CreditsWrittenAheadAreTakenWithoutStopping) {
  Chip chip(small_topology(2));
  for (std::uint16_t i = 0; i < 2; ++i) {
    load_program(chip, tile_at(i), std::vector<isa::Instruction>{isa::Sync{7}, isa::Sync{7}} + halt());
  }
  chip.start();
  chip.write_hsp_mark(target::kHspGs2Control, 2);
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted);
  // Each round: arrival after one instruction, release 600 later.
  EXPECT_EQ(chip.report().total_cycles, 6u + 600 + 6 + 600 + 2 * 6);
}

TEST(Chip, AllTilesRunToCompletion) {
  Chip chip(target::Topology::c600());
  for (const auto tile : chip.topology().physical_tiles()) {
    load_program(chip, tile, work(tile.value % 13) + std::vector<isa::Instruction>{isa::Sync{3}} +
                                 work(3) + halt());
  }
  chip.start();
  const RunResult result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kAllHalted);
  const RunReport report = chip.report();
  EXPECT_EQ(report.tiles.size(), 1472u);
  const std::uint64_t release = 13u * 6 + 600;  // the slowest tile did 12 nops and the sync
  EXPECT_EQ(report.total_cycles, release + 5 * 6);
}

TEST(Chip, SameProgramSameCyclesAcrossRunsAndResets) {
  const auto run_once = [](Chip& chip) {
    chip.reset();
    for (std::uint16_t i = 0; i < 8; ++i) {
      load_program(chip, tile_at(i), work(i * 3u) + std::vector<isa::Instruction>{isa::Sync{3}} +
                                         work(i) + std::vector<isa::Instruction>{isa::Sync{3}} +
                                         halt());
    }
    chip.start();
    EXPECT_EQ(chip.run().reason, StopReason::kAllHalted);
    return chip.report().to_json();
  };
  Chip chip(small_topology(8));
  const auto first = run_once(chip);
  const auto second = run_once(chip);
  EXPECT_EQ(first, second);
  EXPECT_GT(first["totalCycles"].get<std::uint64_t>(), 1200u);
}

TEST(Chip, KeepGoingCollectsFaultsAndRunsTheOthers) {
  SimOptions options;
  options.keep_going = true;
  Chip chip(small_topology(3), options);
  load_program(chip, tile_at(0), {isa::Unknown{0}});
  load_program(chip, tile_at(1), {isa::Trap{3}});
  load_program(chip, tile_at(2), work(5) + halt());
  chip.start();
  const RunResult result = chip.run();
  EXPECT_EQ(result.reason, StopReason::kFault);
  EXPECT_EQ(chip.faults().all().size(), 2u);
  EXPECT_EQ(chip.tile(tile_at(2)).status(), TileStatus::kHalted);
  const auto json = chip.faults().to_json();
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["kind"], "InvalidInstruction");
  EXPECT_EQ(json[1]["kind"], "NotModelled");
  EXPECT_EQ(json[1]["tile"], tile_at(1).value);
}

TEST(Chip, OnlyOneChipAtATime) {
  Chip chip(small_topology(1));
  EXPECT_THROW(Chip(small_topology(1)), Error);
}

TEST(Chip, LoadsAPackageAndRunsItsTiles) {
  schema::Application app;
  app.compiler_version = "test";
  const auto code = assemble(std::vector<isa::Instruction>{isa::Setzi{Reg::m1, 0x60000},
                                                           isa::Setzi{Reg::m2, 42},
                                                           isa::St32{Reg::m2, Reg::m1, Reg::m15, 0},
                                                           isa::Sync{3}} +
                             halt());
  const std::uint32_t blob = app.blobs.add(code);
  for (std::uint16_t i = 0; i < 2; ++i) {
    app.tiles.push_back(schema::TileImage{
        tile_at(i),
        target::kEntryPoint,
        {schema::Segment{target::kLoadBase, static_cast<std::uint32_t>(code.size()), blob, 0,
                         static_cast<std::uint32_t>(code.size()),
                         schema::kSegmentRead | schema::kSegmentExecute}}});
  }
  Chip chip(small_topology(4));
  chip.load(app);
  chip.start();
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted);
  EXPECT_EQ(chip.report().tiles.size(), 2u) << "only the package's tiles start";
  EXPECT_EQ(chip.tile(tile_at(1)).sram().read_u32(0x60000), 42u);
  EXPECT_EQ(chip.tile(tile_at(2)).status(), TileStatus::kIdle);
}

TEST(Chip, PackageTileOutsideTheTopologyIsAnError) {
  schema::Application app;
  app.tiles.push_back(schema::TileImage{PhysicalTile(1471), target::kEntryPoint, {}});
  Chip chip(small_topology(1));
  EXPECT_THROW(chip.load(app), UsageError);
}

TEST(Chip, TraceHasComputeAndSyncWaitSpans) {
  SimOptions options;
  options.trace = true;
  Chip chip(small_topology(2), options);
  load_program(chip, tile_at(0), work(10) + std::vector<isa::Instruction>{isa::Sync{3}} + halt());
  load_program(chip, tile_at(1), std::vector<isa::Instruction>{isa::Sync{3}} + halt());
  chip.start();
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted);
  const auto trace = chip.trace();
  std::size_t computes = 0, waits = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["name"] == "compute") ++computes;
    if (event["name"] == "sync wait") ++waits;
  }
  EXPECT_EQ(computes, 4u);  // before and after the sync, per tile
  EXPECT_EQ(waits, 2u);
}

TEST(Chip, MemoryGrowsOnlyWithWhatIsTouched) {
  Chip chip(target::Topology::c600());
  EXPECT_EQ(chip.report().sram_bytes_touched, 0u);
  load_program(chip, tile_at(0), halt());
  EXPECT_EQ(chip.report().sram_bytes_touched, 4096u);
}

TEST(HostSync, ARoundEveryTileSkipsCompletesWithoutTheHost) {
  // Every tile runs `sans 1; sync 1` (no part in the host phase), then joins
  // the next phase's two rounds. The skipped rounds involve no host sync, so
  // they take no credit [INF].
  Chip chip(small_topology(2));
  for (std::uint16_t i = 0; i < 2; ++i) {
    load_program(
        chip, tile_at(i),
        std::vector<isa::Instruction>{isa::Sans{1}, isa::Sync{1}, isa::Sync{7}, isa::Sync{7}} +
            halt());
  }
  chip.start();
  chip.write_hsp_mark(target::kHspGs2Control, 2);
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted);
  EXPECT_EQ(chip.read_hsp_mark(target::kHspGs2Control), 0u);
}

TEST(HostSync, WaitingForTilesThatHaltedIsADeadlockWhateverTheCredits) {
  Chip chip(small_topology(2));
  load_program(chip, tile_at(0), std::vector<isa::Instruction>{isa::Sync{7}} + halt());
  load_program(chip, tile_at(1), halt());
  chip.start();
  chip.write_hsp_mark(target::kHspGs2Control, 5);
  const RunResult result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kDeadlock);
  const Fault& fault = chip.faults().all().at(0);
  EXPECT_EQ(fault.kind, FaultKind::kDeadlock);
  EXPECT_EQ(fault.message,
            "no tile can make progress: p0 waits at sync 7 (pc 0x4c010, cycle 6, host round 0: 1 "
            "of 2 tiles present); p2 halted (pc 0x4c014, cycle 12)");
  EXPECT_EQ(chip.read_hsp_mark(target::kHspGs2Control), 5u) << "no round completed";
}

}  // namespace
}  // namespace tessera::sim
