#include "conformance/cases.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "support/little_endian.hpp"
#include "target/isa.hpp"
#include "target/memory_map.hpp"

namespace tessera::conformance {

namespace isa = target::isa;
using runtime::HspMark;
using runtime::WaitOutcome;

schema::Application halting_application(const target::Topology& topology) {
  schema::Application app;
  app.compiler_version = "tessera-conformance";
  std::vector<std::uint32_t> words;
  isa::encode_into(isa::Setzi{isa::kJumpReg, 0}, words);
  isa::encode_into(isa::Br{isa::kJumpReg}, words);
  const std::uint32_t code = app.blobs.add(words_to_bytes(words));
  for (const target::PhysicalTile tile : topology.physical_tiles()) {
    schema::TileImage image;
    image.tile = tile;
    image.entry_point = target::kEntryPoint;
    image.segments.push_back(schema::Segment{target::kLoadBase, 8, code, 0, 8,
                                             schema::kSegmentRead | schema::kSegmentExecute});
    app.tiles.push_back(image);
  }
  std::sort(app.tiles.begin(), app.tiles.end(),
            [](const auto& a, const auto& b) { return a.tile < b.tile; });
  app.host_exchange.startup_mark = 0;  // tiles / 64
  app.hardware_loadable = true;
  app.not_loadable_reason.clear();
  return app;
}

void marks_read_zero_after_open(runtime::Transport& transport) {
  EXPECT_EQ(transport.read_mark(HspMark::kGs1), 0);
  EXPECT_EQ(transport.read_mark(HspMark::kGs2), 0);
}

void halting_program_halts(runtime::Transport& transport) {
  transport.load(halting_application(transport.topology()));
  transport.start();
  const WaitOutcome outcome = transport.wait_halted(std::chrono::seconds(10));
  EXPECT_EQ(outcome, WaitOutcome::kReached) << runtime::wait_outcome_name(outcome);
  for (const auto& fault : transport.faults()) ADD_FAILURE() << runtime::describe(fault);
  const auto tiles = transport.topology().physical_tiles();
  for (const auto tile : {tiles.front(), tiles[tiles.size() / 2], tiles.back()}) {
    EXPECT_TRUE(transport.tile_state(tile).halted()) << tile;
  }
}

void sram_round_trip(runtime::Transport& transport) {
  const auto tiles = transport.topology().physical_tiles();
  std::uint8_t seed = 1;
  for (const auto tile : {tiles.front(), tiles[tiles.size() / 2], tiles.back()}) {
    SCOPED_TRACE(fmt::format("{}", tile));
    std::vector<std::uint8_t> bytes(64);
    for (auto& b : bytes) b = seed += 37;
    transport.write_sram(tile, 0x60000, bytes);
    std::vector<std::uint8_t> back(64);
    transport.read_sram(tile, 0x60000, back);
    EXPECT_EQ(back, bytes);
    // Seven bytes from an odd address leave their neighbours alone.
    const std::vector<std::uint8_t> odd{0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7};
    transport.write_sram(tile, 0x60003, odd);
    std::vector<std::uint8_t> around(12);
    transport.read_sram(tile, 0x60000, around);
    std::vector<std::uint8_t> expected(bytes.begin(), bytes.begin() + 12);
    std::copy(odd.begin(), odd.end(), expected.begin() + 3);
    EXPECT_EQ(around, expected);
    // The loaded trampoline is where the loader put it.
    std::vector<std::uint8_t> entry(8);
    transport.read_sram(tile, target::kLoadBase, entry);
    EXPECT_EQ(load_u32_le(entry.data()), isa::encode(isa::Setzi{isa::kJumpReg, 0}).words[0]);
    EXPECT_EQ(load_u32_le(entry.data() + 4), isa::encode(isa::Br{isa::kJumpReg}).words[0]);
  }
}

void refuses_emulated_package(runtime::Transport& transport) {
  schema::Application app = halting_application(transport.topology());
  app.hardware_loadable = false;
  app.not_loadable_reason = "kernels are emulated only";
  try {
    transport.load(app);
    ADD_FAILURE() << "a package that is not hardware-loadable was loaded";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("not hardware-loadable: kernels are emulated only"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace tessera::conformance
