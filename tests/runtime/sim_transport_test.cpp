// The simulator transport's primitives, below the session: the register
// file, HSP credits gating a host sync, debug reads and writes, tile states.
#include <gtest/gtest.h>

#include "backends/sim/sim_transport.hpp"
#include "support/error.hpp"
#include "target/config_space.hpp"
#include "tests/sim/program.hpp"

namespace tessera::backends {
namespace {

using namespace sim::testing;
using runtime::ContextState;
using runtime::HspMark;
using runtime::WaitOutcome;
using target::PhysicalTile;

const PhysicalTile kTile(0);

// One tile: two host syncs (a startup-style round each), then halt.
schema::Application two_host_syncs() {
  schema::Application app;
  app.compiler_version = "sim transport test";
  schema::TileImage image{kTile, target::kEntryPoint, {}};
  add_segment(app, image, target::kLoadBase,
              assemble(std::vector<isa::Instruction>{isa::Sync{7}, isa::Sync{7}} + halt()), true);
  app.tiles.push_back(image);
  return app;
}

TEST(SimTransport, ConfigurationWritesReadBackButMarksHaveTheirOwnDoor) {
  SimTransport transport(small_topology(1));
  transport.write_config(0x1000, 0xDEADBEEF);
  EXPECT_EQ(transport.read_config(0x1000), 0xDEADBEEFu);
  EXPECT_EQ(transport.read_config(0x2000), 0u);
  EXPECT_THROW(transport.write_config(target::kHspGs2Control, 1), UsageError);
  EXPECT_THROW(transport.write_config(0x1002, 1), UsageError);
  EXPECT_THROW(transport.write_config(target::kConfigSpaceSize, 1), UsageError);
  transport.reset();
  EXPECT_EQ(transport.read_config(0x1000), 0u);
}

TEST(SimTransport, EachHostSyncTakesOneCreditAndWaitsWithoutOne) {
  SimTransport transport(small_topology(1));
  transport.load(two_host_syncs());
  transport.start();
  // No credit: the device cannot pass its first host sync.
  EXPECT_EQ(transport.wait_halted(std::chrono::seconds(5)), WaitOutcome::kStalled);
  EXPECT_EQ(transport.tile_state(kTile).contexts[0], ContextState::kRunning);
  EXPECT_NE(transport.tile_state(kTile).detail.find("waits at sync 7"), std::string::npos);
  transport.idle(std::chrono::microseconds(100));  // time passes; still waiting
  // The supervisor's pc is past the sync it waits at.
  EXPECT_EQ(transport.tile_state(kTile).pc, target::kLoadBase + 4);
  transport.write_mark(HspMark::kGs2, 1);
  EXPECT_EQ(transport.wait_mark_zero(HspMark::kGs2, std::chrono::seconds(5)), WaitOutcome::kReached);
  // The round is granted; the tile goes on after the sync latency.
  transport.idle(std::chrono::microseconds(10));
  EXPECT_EQ(transport.tile_state(kTile).pc, target::kLoadBase + 8) << "at the second sync";
  transport.write_mark(HspMark::kGs2, 1);
  EXPECT_EQ(transport.wait_halted(std::chrono::seconds(5)), WaitOutcome::kReached);
  EXPECT_TRUE(transport.tile_state(kTile).halted());
  // A credit nobody takes stays: the mark never reads 0.
  transport.write_mark(HspMark::kGs2, 1);
  EXPECT_EQ(transport.wait_mark_zero(HspMark::kGs2, std::chrono::seconds(5)), WaitOutcome::kHalted);
  EXPECT_EQ(transport.read_mark(HspMark::kGs2), 1u);
}

TEST(SimTransport, ACycleLimitEndsAWaitAsATimeout) {
  SimTransportOptions options;
  options.max_cycles = 1000;
  SimTransport transport(small_topology(1), options);
  schema::Application app;
  app.compiler_version = "sim transport test";
  schema::TileImage image{kTile, target::kEntryPoint, {}};
  // An endless loop: br to itself.
  add_segment(app, image, target::kLoadBase,
              assemble(load_constant(isa::Reg::m1, target::kLoadBase) +
                       std::vector<isa::Instruction>{isa::Br{isa::Reg::m1}}),
              true);
  app.tiles.push_back(image);
  transport.load(app);
  transport.start();
  EXPECT_EQ(transport.wait_halted(std::chrono::seconds(5)), WaitOutcome::kTimedOut);
}

TEST(SimTransport, DebugReadsAndWritesReachTileSram) {
  SimTransport transport(small_topology(1));
  transport.load(two_host_syncs());
  const std::vector<std::uint8_t> bytes{1, 2, 3, 4, 5};
  transport.write_sram(kTile, 0x60001, bytes);
  std::vector<std::uint8_t> back(5);
  transport.read_sram(kTile, 0x60001, back);
  EXPECT_EQ(back, bytes);
  EXPECT_THROW(transport.read_sram(kTile, target::kSram.end - 2, back), UsageError);
  EXPECT_THROW(transport.write_sram(kTile, 0x1000, bytes), UsageError);
}

}  // namespace
}  // namespace tessera::backends
