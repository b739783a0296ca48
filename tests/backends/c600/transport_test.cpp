// The c600 runtime::Transport over the fake device: open, load, start, a full
// host session by the protocol's own handshakes, debug reads and faults.

#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>

#include <thread>

#include "backends/c600/c600_transport.hpp"
#include "backends/c600/device_lock.hpp"
#include "conformance/cases.hpp"
#include "conformance/graph_cases.hpp"
#include "driver/errors.hpp"
#include "driver/ioctl.hpp"
#include "driver/ipucfg.hpp"
#include "driver/registers.hpp"
#include "support/host_buffer.hpp"
#include "target/isa.hpp"
#include "target/memory_map.hpp"
#include "tests/backends/c600/fixture.hpp"
#include "tests/testing/sample_package.hpp"

namespace tessera::backends::c600 {
namespace {

using runtime::HspMark;
using runtime::WaitOutcome;
using target::PhysicalTile;
using testing::FakeDevice;
namespace reg = driver::reg;
namespace io = driver::ioctl;

constexpr std::uint32_t kData = 0x60000;

std::vector<std::uint8_t> data_for(std::uint16_t tile) {
  std::vector<std::uint8_t> bytes(256);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(tile + 3 * i);
  return bytes;
}

// `count` tiles from physical 0: the halting trampoline plus a data segment.
schema::Application application(std::uint16_t count) {
  schema::Application app =
      conformance::halting_application(target::Topology::from_physical([&] {
        std::vector<PhysicalTile> tiles;
        for (std::uint16_t t = 0; t < count; ++t) tiles.push_back(PhysicalTile(t));
        return tiles;
      }()));
  for (auto& tile : app.tiles) {
    const std::uint32_t blob = app.blobs.add(data_for(tile.tile.value));
    tile.segments.push_back(schema::Segment{kData, 512, blob, 0, 256, schema::kSegmentRead});
  }
  app.host_exchange.pages = {schema::HostPage{0, 4096}, schema::HostPage{1, 8192}};
  app.host_exchange.attach_order = {0, 1};
  app.device_config_writes = {schema::DeviceConfigWrite{0x2004, 0x8D}};
  return app;
}

class C600Transport : public ::testing::Test {
 protected:
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  C600Options options = testing::fake_options(scratch);
  std::unique_ptr<runtime::Transport> transport = open_c600(options, fake);
};

TEST_F(C600Transport, OpenLocksInitializesAndReplays) {
  EXPECT_EQ(transport->description(), "C600 at /dev/fake-ipu0");
  EXPECT_EQ(transport->topology().size(), 1472u);
  EXPECT_EQ(fake.ioctl_requests(),
            (std::vector<unsigned long>{io::kUserAttach.number, io::kSetIpuId.number,
                                        io::kStopMonitoring.number, io::kMailboxWriteRead.number,
                                        io::kStartMonitoring.number, io::kAccumulateErrors.number,
                                        io::kResetDevice.number, io::kSetSecondaryIpuId.number}));
  EXPECT_EQ(fake.register_value(0x403C), 0x212503Du);  // replayed
  conformance::marks_read_zero_after_open(*transport);
  EXPECT_TRUE(std::filesystem::exists(lock_file_path(options.device, options.lock_directory)));
  EXPECT_THROW(transport->write_config(reg::kHspGs1, 1), UsageError);
}

TEST_F(C600Transport, RefusesAPackageThatIsNotHardwareLoadable) {
  fake.clear_records();
  schema::Application app = testing::sample_application();
  try {
    transport->load(app);
    FAIL();
  } catch (const PackageRefused& error) {
    EXPECT_STREQ(error.what(),
                 "C600 at /dev/fake-ipu0: the package is not hardware-loadable: kernels are "
                 "emulated only");
  }
  EXPECT_TRUE(fake.accesses().empty());
  conformance::refuses_emulated_package(*transport);
}

TEST_F(C600Transport, LoadStartAndHalt) {
  const auto app = application(64);
  transport->load(app);
  EXPECT_TRUE(fake.sentinel_seen());
  EXPECT_FALSE(fake.started());
  EXPECT_THROW(transport->load(app), UsageError);  // a load is pending
  const std::size_t writes_before_start = fake.writes_to(0x2004).size();
  transport->start();
  EXPECT_EQ(fake.final_mark(), 1u);  // 64 tiles / 64
  // The package's configuration writes come after the load.
  EXPECT_EQ(fake.writes_to(0x2004).size(), writes_before_start + 1);
  EXPECT_EQ(fake.register_value(0x2004), 0x8Du);
  for (std::uint16_t t = 0; t < 64; ++t) {
    EXPECT_EQ(fake.sram(t, kData, 256), data_for(t)) << t;
    EXPECT_EQ(fake.sram(t, kData + 256, 256), std::vector<std::uint8_t>(256, 0)) << t;
  }
  EXPECT_EQ(transport->wait_halted(std::chrono::seconds(1)), WaitOutcome::kReached);
  EXPECT_TRUE(transport->faults().empty());
  EXPECT_TRUE(fake.violations().empty());
}

TEST_F(C600Transport, FullHostSessionByTheHandshakes) {
  // §5.3 start, then one call with one input and one output batch: phases
  // 2(I+O) − 1 = 3 and the caller's close (§5.4). The fake's script is the
  // device side: each sync releases on one credit; the H2D copy happens
  // inside the input batch, the D2H copy before the close releases.
  constexpr std::uint16_t kTile = 3;
  const std::uint64_t input_host = 4096;       // page 1, offset 0
  const std::uint64_t output_host = 4096 + 4096;  // page 1, offset 4096
  bool attached_at_ack = false;
  fake.halt_when_script_done = true;
  fake.expect_sync(reg::kHspGs1, "session start");
  fake.expect_sync(reg::kHspGs2, "start acknowledge",
                   [&](FakeDevice& f) { attached_at_ack = f.attached().size() == 2; });
  fake.expect_sync(reg::kHspGs2, "input batch 0 entry");
  fake.expect_sync(reg::kHspGs2, "input batch 0 completion", [&](FakeDevice& f) {
    f.h2d(kTile, kData, input_host, 64);
    auto bytes = f.sram(kTile, kData, 64);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(b + 1);  // the "computation"
    f.write_sram(kTile, kData + 1024, bytes);
  });
  fake.expect_sync(reg::kHspGs2, "output batch 0 entry");
  fake.expect_sync(reg::kHspGs2, "close: output batch 0 completion",
                   [&](FakeDevice& f) { f.d2h(kTile, kData + 1024, output_host, 64); });

  transport->load(application(64));
  transport->start();
  runtime::HostBuffer page0(4096), page1(8192);
  std::vector<std::uint8_t> input(64);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<std::uint8_t>(i * 5);

  const auto ack = [&] {
    transport->write_mark(HspMark::kGs2, 1);
    return transport->wait_mark_zero(HspMark::kGs2, std::chrono::seconds(1));
  };
  transport->write_mark(HspMark::kGs1, 1);
  ASSERT_EQ(transport->wait_mark_zero(HspMark::kGs2, std::chrono::seconds(1)), WaitOutcome::kReached);
  transport->detach_all();
  const std::size_t hexopt_writes = fake.writes_to(reg::kExchangeWindowBase).size();
  transport->attach(0, page0);
  transport->attach(1, page1);
  EXPECT_EQ(fake.writes_to(reg::kExchangeWindowBase).size(), hexopt_writes + 2);
  ASSERT_EQ(ack(), WaitOutcome::kReached);
  EXPECT_TRUE(attached_at_ack);

  page1.fill(4096, 64, 0xA5);  // poison the output
  for (unsigned phase = 0; phase < 3; ++phase) {
    SCOPED_TRACE(phase);
    ASSERT_EQ(transport->wait_mark_zero(HspMark::kGs2, std::chrono::seconds(1)), WaitOutcome::kReached);
    if (phase == 0) page1.copy_in(0, input);
    ASSERT_EQ(ack(), WaitOutcome::kReached);
  }
  // The device has not been released past the output entry: nothing arrived.
  std::vector<std::uint8_t> output(64);
  page1.copy_out(4096, output);
  EXPECT_EQ(output, std::vector<std::uint8_t>(64, 0xA5));
  ASSERT_EQ(ack(), WaitOutcome::kReached);  // the close
  ASSERT_EQ(transport->wait_halted(std::chrono::seconds(1)), WaitOutcome::kReached);
  page1.copy_out(4096, output);
  for (std::size_t i = 0; i < output.size(); ++i) {
    EXPECT_EQ(output[i], static_cast<std::uint8_t>(input[i] + 1)) << i;
  }
  EXPECT_EQ(fake.pending_syncs(), 0u);
  EXPECT_EQ(fake.credits_consumed(reg::kHspGs2), 5u);
  EXPECT_TRUE(fake.violations().empty());
  transport->detach_all();
  EXPECT_TRUE(fake.attached().empty());
}

TEST_F(C600Transport, AMarkNobodyTakesTimesOut) {
  fake.halt_when_script_done = false;
  fake.expect_sync(reg::kHspGs1, "session start");
  transport->load(application(64));
  transport->start();
  transport->write_mark(HspMark::kGs2, 1);  // the device waits on GS1, not GS2
  EXPECT_EQ(transport->wait_mark_zero(HspMark::kGs2, std::chrono::milliseconds(5)),
            WaitOutcome::kTimedOut);
  EXPECT_EQ(transport->wait_halted(std::chrono::milliseconds(5)), WaitOutcome::kTimedOut);
}

TEST_F(C600Transport, FaultsAndTileStatesAreClassified) {
  fake.halt_when_script_done = false;
  fake.expect_sync(reg::kHspGs1, "never released");
  transport->load(application(64));
  transport->start();
  auto running = transport->tile_state(PhysicalTile(9));
  EXPECT_EQ(running.contexts[0], runtime::ContextState::kRunning);
  EXPECT_EQ(running.detail, "pc not read: the supervisor is not stopped");
  // Tile 5's supervisor faults with TEXCPT_INVALID_ADDR at 0x4c100; tile 7
  // stops at a PBRK0 trap ($SSR = 0x20) with an exchange receive error.
  fake.set_context_state(5, 0, 3);
  fake.set_pc(5, 0, 0x4C100);
  fake.set_status_csr(5, 0, 8u << 4);
  fake.set_context_state(7, 0, 2);
  fake.set_pc(7, 0, 0x4C0F8);
  fake.set_status_csr(7, 0, 0x20);
  fake.set_ererr(7, 3);
  EXPECT_EQ(transport->wait_mark_zero(HspMark::kGs2, std::chrono::milliseconds(1)),
            WaitOutcome::kReached);  // GS2 holds no credit
  EXPECT_EQ(transport->wait_halted(std::chrono::milliseconds(5)), WaitOutcome::kFaulted);
  const auto faults = transport->faults();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(runtime::describe(faults[0]),
            "TEXCPT_INVALID_ADDR on p5 (supervisor) at pc 0x4c100: non-debug exception");
  const auto stopped = transport->tile_state(PhysicalTile(7));
  EXPECT_EQ(stopped.contexts[0], runtime::ContextState::kDebugException);
  EXPECT_EQ(stopped.pc, 0x4C0F8u);
  EXPECT_EQ(stopped.detail,
            "supervisor stopped with TEXCPT_PBRK0; exchange receive error TEXCH_RERR_ADDR");
  fake.set_context_state(5, 0, 1);
  EXPECT_EQ(transport->wait_halted(std::chrono::milliseconds(5)), WaitOutcome::kStopped);
}

TEST_F(C600Transport, SramThroughTheDebugWindow) {
  transport->load(application(64));
  transport->start();
  ASSERT_EQ(transport->wait_halted(std::chrono::seconds(1)), WaitOutcome::kReached);
  std::vector<std::uint8_t> bytes(5);
  transport->read_sram(PhysicalTile(2), kData + 1, bytes);
  const auto expected = data_for(2);
  EXPECT_EQ(bytes, std::vector<std::uint8_t>(expected.begin() + 1, expected.begin() + 6));
  transport->write_sram(PhysicalTile(2), kData + 1, std::vector<std::uint8_t>{9, 9, 9, 9, 9});
  auto now = fake.sram(2, kData, 8);
  EXPECT_EQ(now, (std::vector<std::uint8_t>{expected[0], 9, 9, 9, 9, 9, expected[6], expected[7]}));
  EXPECT_THROW(transport->read_sram(PhysicalTile(2), 0xE7FFE, bytes), ArithmeticError);
  EXPECT_THROW(transport->read_sram(PhysicalTile(2), 0x40000, bytes), UsageError);
  EXPECT_THROW(transport->read_sram(PhysicalTile(1472), kData, bytes), UsageError);
  conformance::sram_round_trip(*transport);
}

TEST_F(C600Transport, ResetReinitializes) {
  transport->load(application(64));
  transport->start();
  fake.clear_records();
  transport->reset();
  EXPECT_EQ(fake.ioctl_requests().front(), io::kBufferDetachAll.number);
  EXPECT_EQ(fake.loaded_tiles().size(), 0u);  // RESET_DEVICE cleared the tiles
  std::vector<std::uint32_t> replayed;
  for (const auto& write : driver::read_ipucfg(options.ipucfg)) {
    if (write.offset == 0x403C) replayed.push_back(write.value);
  }
  EXPECT_EQ(fake.writes_to(0x403C), replayed);
  EXPECT_THROW(transport->start(), UsageError);
}

TEST(C600TileImages, SegmentsBecomeOneImageFrom0x4C010) {
  schema::Application app = application(64);
  const auto images = tile_load_images(app);
  ASSERT_EQ(images.size(), 64u);
  EXPECT_EQ(images[1].image.size(), kData + 512 - target::kLoadBase);
  EXPECT_EQ(std::vector<std::uint8_t>(images[1].image.begin() + (kData - target::kLoadBase),
                                      images[1].image.begin() + (kData - target::kLoadBase) + 256),
            data_for(1));
  app.tiles[3].segments[0].address = target::kLoadBase + 16;
  app.tiles[3].entry_point = target::kLoadBase + 16;
  try {
    tile_load_images(app);
    FAIL();
  } catch (const driver::ImageError& error) {
    EXPECT_STREQ(error.what(),
                 "tiles[3] (p3): entry point 0x4c020; the bootloader starts every supervisor at "
                 "0x4c010");
  }
  app.tiles[3].entry_point = target::kLoadBase;
  try {
    tile_load_images(app);
    FAIL();
  } catch (const driver::ImageError& error) {
    EXPECT_STREQ(error.what(),
                 "tiles[3] (p3): lowest segment at 0x4c020; the loader writes images from 0x4c010");
  }
}

TEST(C600Options, MissingFilesAreNamed) {
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  C600Options options = testing::fake_options(scratch);
  options.ipucfg.clear();
  try {
    open_c600(options, fake);
    FAIL();
  } catch (const UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "opening the C600 at /dev/fake-ipu0: /dev/fake-ipu0: no configuration capture "
                 "given (C600Options::ipucfg, e.g. c600-init.ipucfg)");
  }
  options = testing::fake_options(scratch);
  options.bootloader = scratch.path("missing.elf");
  EXPECT_THROW(open_c600(options, fake), IoError);
  options = testing::fake_options(scratch);
  options.bootloader.clear();
  auto transport = open_c600(options, fake);
  EXPECT_THROW(transport->load(application(64)), UsageError);
}

TEST(C600Options, OpeningBlocksSignalsOnTheCallingThread) {
  testing::ScratchDirectory scratch;
  bool blocked = false;
  std::thread([&] {
    FakeDevice fake;
    C600Options options = testing::fake_options(scratch);
    options.block_signals = true;
    auto transport = open_c600(options, fake);
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    blocked = sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGUSR1) == 1;
  }).join();
  EXPECT_TRUE(blocked);
}

TEST(C600ConformanceOnFake, EveryTile) {
  // The hardware suite's cases, on a fake with all 1472 tiles: 23 batches.
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  auto transport = open_c600(testing::fake_options(scratch), fake);
  conformance::marks_read_zero_after_open(*transport);
  conformance::refuses_emulated_package(*transport);
  conformance::halting_program_halts(*transport);
  EXPECT_EQ(fake.batches_loaded(), 23u);
  EXPECT_EQ(fake.final_mark(), 23u);
  EXPECT_EQ(fake.loaded_tiles().size(), 1472u);
  conformance::sram_round_trip(*transport);
  EXPECT_TRUE(fake.violations().empty());
}

TEST(C600ConformanceOnFake, CompiledGraphCasesAreRefusedAsEmulated) {
  // What conformance_c600_tests expects of every compiled-graph case today,
  // on the fake: the Session is refused at load, before any tile is loaded.
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  auto transport = open_c600(testing::fake_options(scratch), fake);
  for (const char* name : {"PointToPoint4148Words", "Multicast1To4Tiles1024Words",
                           "RelayChain3Tiles1024Words", "TreeReductionF1664x256"}) {
    SCOPED_TRACE(name);
    const std::string refusal =
        conformance::expect_graph_case_refused(*transport, conformance::graph_case(name));
    EXPECT_NE(refusal.find("C600 at /dev/fake-ipu0: the package is not hardware-loadable: "
                           "kernels are emulated only"),
              std::string::npos)
        << refusal;
    EXPECT_EQ(fake.batches_loaded(), 0u);
  }
  EXPECT_TRUE(fake.violations().empty());
}

}  // namespace
}  // namespace tessera::backends::c600
