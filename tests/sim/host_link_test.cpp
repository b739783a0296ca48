// The host link: HSP-gated host phases in which XREQ owners request service
// and targets move data between host buffers and their packet window, with
// target/'s host programs (the t260 oracle's shapes, §4.5).
#include <gtest/gtest.h>

#include <numeric>

#include "schema/model.hpp"
#include "sim/chip.hpp"
#include "support/little_endian.hpp"
#include "target/config_space.hpp"
#include "target/host_exchange.hpp"
#include "tests/sim/program.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::HostProgram;
using target::LogicalTile;
using target::PhysicalTile;
using target::XreqBitmap;

constexpr std::uint32_t kPhaseOne = 0x4D000;
constexpr std::uint32_t kPhaseTwo = 0x4E000;
constexpr std::uint32_t kStaging = target::kH2dStaging;  // 0x50180
constexpr std::uint32_t kD2hPackets = 0x51200;            // past the staging buffer
constexpr std::uint32_t kTileData = 0x60000;

// A package whose tiles each call their host programs in order, then halt.
class HostRun {
 public:
  explicit HostRun(std::vector<PhysicalTile> tiles)
      : tiles_(tiles), chip_(target::Topology::from_physical(std::move(tiles))) {}

  void programs(PhysicalTile tile, std::vector<HostProgram> phases) {
    programs_[tile.value] = std::move(phases);
  }
  void data(PhysicalTile tile, std::uint32_t address, std::vector<std::uint8_t> bytes) {
    data_[tile.value].emplace_back(address, std::move(bytes));
  }

  RunResult run(std::span<std::uint8_t> host, std::uint16_t credits) {
    schema::Application app;
    app.compiler_version = "host link test";
    for (const auto tile : tiles_) {
      schema::TileImage image{tile, target::kEntryPoint, {}};
      std::vector<isa::Instruction> main;
      const std::uint32_t bases[] = {kPhaseOne, kPhaseTwo};
      const auto& phases = programs_[tile.value];
      for (std::size_t i = 0; i < phases.size(); ++i) {
        main.push_back(isa::Call{Reg::m10, bases[i]});
        add_segment(app, image, bases[i], assemble(phases[i].instructions), true);
        for (const auto& block : phases[i].packets) {
          add_segment(app, image, block.address, words_to_bytes(block.words), false);
        }
      }
      add_segment(app, image, target::kLoadBase, assemble(main + halt()), true);
      for (const auto& [address, bytes] : data_[tile.value]) add_segment(app, image, address, bytes, false);
      std::sort(image.segments.begin(), image.segments.end(),
                [](const auto& a, const auto& b) { return a.address < b.address; });
      app.tiles.push_back(image);
    }
    chip_.load(app);
    chip_.attach_host_buffer(0, host);
    chip_.start();
    chip_.write_hsp_mark(target::kHspGs2Control, credits);
    return chip_.run();
  }

  Chip& chip() { return chip_; }

 private:
  std::vector<PhysicalTile> tiles_;
  Chip chip_;
  std::map<std::uint16_t, std::vector<HostProgram>> programs_;
  std::map<std::uint16_t, std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>>> data_;
};

std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(seed + 13 * i);
  return bytes;
}

const PhysicalTile kTarget(260);
const PhysicalTile kOwner = target::xreq_owner(kTarget);  // p4, the t260 oracle's owner

TEST(HostLink, H2dRequestFillsThePacketWindow) {
  // The t260 oracle's transfer: 64 bytes from host offset 0x40 to 0x50120.
  HostRun run({kOwner, kTarget});
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(kTarget))});
  run.programs(kTarget, {target::target_only_program(target::h2d_target_code(
                            {kTarget, 0x50120, 0x40, 64, 0x50170}))});
  auto host = pattern(8192, 7);
  const RunResult result = run.run(host, 2);
  ASSERT_EQ(result.reason, StopReason::kAllHalted) << describe(run.chip().faults().all().at(0));
  std::vector<std::uint8_t> arrived(64);
  run.chip().tile(kTarget).sram().read(0x50120, arrived);
  EXPECT_EQ(arrived, std::vector<std::uint8_t>(host.begin() + 0x40, host.begin() + 0x80));
  EXPECT_EQ(run.chip().host_stats().h2d_bytes, 64u);
  EXPECT_EQ(run.chip().read_hsp_mark(target::kHspGs2Control), 0u) << "two rounds, two credits";
}

TEST(HostLink, D2hWritesTheHostBuffer) {
  HostRun run({kOwner, kTarget});
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(kTarget))});
  run.programs(kTarget, {target::target_only_program(
                            target::d2h_target_code({kTarget, kTileData, 0x1000, 512}))});
  run.data(kTarget, kTileData, pattern(512, 99));
  std::vector<std::uint8_t> host(16384, 0);
  ASSERT_EQ(run.run(host, 2).reason, StopReason::kAllHalted)
      << describe(run.chip().faults().all().at(0));
  const auto expected = pattern(512, 99);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), host.begin() + 0x1000));
  EXPECT_EQ(host[0x0FFF], 0u);
  EXPECT_EQ(host[0x1200], 0u);
  EXPECT_EQ(run.chip().host_stats().d2h_bytes, 512u);
}

TEST(HostLink, ATargetNobodyRequestedIsAFault) {
  HostRun run({kOwner, kTarget});
  // The owner's bitmap names another of its targets, not 260.
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(PhysicalTile(68)))});
  run.programs(kTarget, {target::target_only_program(target::h2d_target_code(
                            {kTarget, 0x50120, 0x40, 64, 0x50170}))});
  auto host = pattern(4096, 1);
  ASSERT_EQ(run.run(host, 2).reason, StopReason::kFault);
  EXPECT_NE(run.chip().faults().all().at(0).message.find("did not request service"),
            std::string::npos)
      << run.chip().faults().all().at(0).message;
}

TEST(HostLink, ReadingPastTheHostBuffersIsAFault) {
  HostRun run({kOwner, kTarget});
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(kTarget))});
  run.programs(kTarget, {target::target_only_program(target::h2d_target_code(
                            {kTarget, 0x50120, 0x2000, 64, 0x50170}))});
  auto host = pattern(4096, 1);
  ASSERT_EQ(run.run(host, 2).reason, StopReason::kFault);
  EXPECT_NE(run.chip().faults().all().at(0).message.find("outside the attached buffers"),
            std::string::npos);
}

TEST(HostLink, AWrongDcountWouldHangAndIsReported) {
  HostRun run({kOwner, kTarget});
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(kTarget))});
  auto code = target::h2d_target_code({kTarget, 0x50120, 0x40, 64, 0x50170});
  code.dcount_setup[0] = isa::Setzi{Reg::m8, 15};  // one word short of the 16 the host returns
  run.programs(kTarget, {target::target_only_program(code)});
  auto host = pattern(4096, 1);
  ASSERT_EQ(run.run(host, 2).reason, StopReason::kFault);
  EXPECT_NE(run.chip().faults().all().at(0).message.find("INCOMING_DCOUNT = 15 words, but the "
                                                          "host returned 16"),
            std::string::npos);
}

TEST(HostLink, APacketAcrossAHostPageIsAFault) {
  // 128 bytes from 0xFC0 cross the 4 KiB page at 0x1000; target/'s splitter
  // never makes such a packet, so forge the header.
  HostRun run({kOwner, kTarget});
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(kTarget))});
  auto code = target::h2d_target_code({kTarget, 0x50120, 0xF80, 128, 0x50200});
  const auto forged = target::encode_packet_header(target::h2d_request(kTarget, 0x50120, 0xFC0, 128));
  code.packets.words = {forged[0], forged[1]};
  run.programs(kTarget, {target::target_only_program(code)});
  auto host = pattern(8192, 1);
  ASSERT_EQ(run.run(host, 2).reason, StopReason::kFault);
  EXPECT_NE(run.chip().faults().all().at(0).message.find("crosses a 4096-byte host page"),
            std::string::npos)
      << run.chip().faults().all().at(0).message;
}

TEST(HostLink, AMalformedHeaderIsAFaultNotACrash) {
  HostRun run({kOwner, kTarget});
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(kTarget))});
  auto code = target::h2d_target_code({kTarget, 0x50120, 0x40, 64, 0x50170});
  code.packets.words = {0xFFFFFFFF, 0xFFFFFFFF};
  run.programs(kTarget, {target::target_only_program(code)});
  auto host = pattern(4096, 1);
  ASSERT_EQ(run.run(host, 2).reason, StopReason::kFault);
  EXPECT_NE(run.chip().faults().all().at(0).message.find("malformed host packet"), std::string::npos)
      << run.chip().faults().all().at(0).message;
}

TEST(HostLink, WithoutCreditsNothingMoves) {
  HostRun run({kOwner, kTarget});
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(kTarget))});
  run.programs(kTarget, {target::target_only_program(target::h2d_target_code(
                            {kTarget, 0x50120, 0x40, 64, 0x50170}))});
  auto host = pattern(4096, 1);
  EXPECT_EQ(run.run(host, 0).reason, StopReason::kHostSync);
  EXPECT_EQ(run.chip().host_stats().h2d_bytes, 0u);
}

// §5.6 [HW]: all-tile 4 KiB H2D/D2H round trips. Every tile fetches its own
// 4 KiB page into its staging buffer, then writes it back to a second page;
// the owners request service for all 46 of their targets, themselves included.
TEST(HostLink, FourKibRoundTripsOnAllTilesAtOnce) {
  const auto topology = target::Topology::c600();
  const std::vector<PhysicalTile> tiles(topology.physical_tiles().begin(),
                                        topology.physical_tiles().end());
  HostRun run(tiles);
  std::map<std::uint16_t, XreqBitmap> bitmaps;
  for (const auto tile : tiles) {
    const auto owner = target::xreq_owner(tile);
    bitmaps.try_emplace(owner.value, owner).first->second.add(tile);
  }
  constexpr std::uint64_t kPage = 4096;
  const std::uint64_t tile_count = tiles.size();
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const PhysicalTile tile = tiles[i];
    const auto h2d = target::h2d_target_code({tile, kStaging, kPage * (1 + i), 4096});
    const auto d2h = target::d2h_target_code(
        {tile, kStaging, kPage * (1 + tile_count + i), 4096, kD2hPackets});
    const auto wrap = [&](const target::TargetCode& code) {
      return target::is_xreq_owner(tile)
                 ? target::owner_target_program(bitmaps.at(tile.value), code)
                 : target::target_only_program(code);
    };
    run.programs(tile, {wrap(h2d), wrap(d2h)});
  }
  std::vector<std::uint8_t> host(kPage * (1 + 2 * tile_count), 0);
  for (std::size_t i = 0; i < tile_count * kPage; ++i) {
    host[kPage + i] = static_cast<std::uint8_t>(i * 7 + i / 4096);
  }
  const RunResult result = run.run(host, 4);  // two host phases of two rounds
  ASSERT_EQ(result.reason, StopReason::kAllHalted) << describe(run.chip().faults().all().at(0));
  const auto out = host.begin() + static_cast<std::ptrdiff_t>(kPage * (1 + tile_count));
  EXPECT_TRUE(std::equal(host.begin() + kPage, out, out));
  EXPECT_EQ(run.chip().host_stats().h2d_bytes, tile_count * kPage);
  EXPECT_EQ(run.chip().host_stats().d2h_bytes, tile_count * kPage);
}

TEST(HostLink, HostWordsArriveOnlyThroughTheTargetsHostMux) {
  // The target leaves its INCOMING_MUX neutral instead of selecting its host
  // endpoint: the host's reply never reaches it, so its `sync 0` would wait
  // for ever, and nothing lands in its packet window.
  HostRun run({kOwner, kTarget});
  run.programs(kOwner, {target::xreq_only_program(XreqBitmap(kOwner).add(kTarget))});
  auto program =
      target::target_only_program(target::h2d_target_code({kTarget, 0x50120, 0x40, 64, 0x50170}));
  ASSERT_EQ(program.instructions.at(0),
            (isa::Instruction{isa::Setzi{Reg::m8, target::host_mux(kTarget)}}));
  program.instructions[0] = isa::Setzi{Reg::m8, target::kNeutralMux};
  run.programs(kTarget, {program});
  auto host = pattern(8192, 7);
  ASSERT_EQ(run.run(host, 2).reason, StopReason::kFault);
  const Fault& fault = run.chip().faults().all().at(0);
  EXPECT_EQ(fault.tile, kTarget);
  EXPECT_NE(fault.message.find("INCOMING_MUX is 0x640, not its host endpoint 0x604"),
            std::string::npos)
      << fault.message;
  std::vector<std::uint8_t> window(64);
  run.chip().tile(kTarget).sram().read(0x50120, window);
  EXPECT_NE(window, std::vector<std::uint8_t>(host.begin() + 0x40, host.begin() + 0x80));
  EXPECT_EQ(run.chip().host_stats().h2d_bytes, 0u);
}

}  // namespace
}  // namespace tessera::sim
