// An 11-round binary-tree reduction over all 1472 tiles, as the prior art ran
// on a C600 (ipu21-target.md §5.6): tile i starts with i + 1; in round r each
// tile i with i mod 2^(r+1) = 2^r sends its partial sum to tile i − 2^r, which
// adds it with the tessera_add_u32 kernel. The root ends with 1,084,128.
#include <gtest/gtest.h>

#include "kernels/registry.hpp"
#include "schema/model.hpp"
#include "sim/chip.hpp"
#include "support/little_endian.hpp"
#include "tests/sim/program.hpp"
#include "tests/sim/rows.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using target::LogicalTile;
using target::PhysicalTile;
using Kind = RowAction::Kind;

constexpr std::uint32_t kRows = 0x4D000;  // row r at kRows + r · 0x100
constexpr std::uint32_t kAdd = 0x4E000;
constexpr std::uint32_t kSum = 0x60000;
constexpr std::uint32_t kIncoming = 0x60010;
constexpr int kRounds = 11;

std::vector<std::uint8_t> word_bytes(std::uint32_t value) {
  std::vector<std::uint8_t> bytes;
  append_u32_le(bytes, value);
  return bytes;
}

TEST(Reduction, ElevenRoundsOverAllTilesSumOneToN) {
  const auto topology = target::Topology::c600();
  const std::uint32_t n = target::kTileCount;
  schema::Application app;
  app.compiler_version = "reduction test";
  for (std::uint32_t i = 0; i < n; ++i) {
    const PhysicalTile tile = topology.physical(LogicalTile(static_cast<std::uint16_t>(i)));
    schema::TileImage image{tile, target::kEntryPoint, {}};
    std::vector<isa::Instruction> program = {isa::Setzi{Reg::m2, kSum}, isa::Setzi{Reg::m3, kSum},
                                             isa::Setzi{Reg::m4, kIncoming}, isa::Setzi{Reg::m5, 1}};
    schema::TileDebug debug;
    debug.tile = tile;
    debug.symbols = {schema::Symbol{std::string(kernels::kAddU32), kAdd, 4, schema::SymbolKind::kKernel}};
    debug.allocations = {
        schema::Allocation{0, "sum", "%sum", kSum, 4, 0, schema::kLiveToEnd,
                           schema::AllocationKind::kTensor, schema::kNoProvenance},
        schema::Allocation{1, "incoming", "%partial", kIncoming, 4, 0, schema::kLiveToEnd,
                           schema::AllocationKind::kStaging, schema::kNoProvenance}};
    for (int r = 0; r < kRounds; ++r) {
      const std::uint32_t stride = 1u << r;
      const std::uint32_t row_address = kRows + 0x100 * static_cast<std::uint32_t>(r);
      program.push_back(isa::Sync{3});
      const bool sends = i % (2 * stride) == stride;
      const bool receives = i % (2 * stride) == 0 && i + stride < n;
      if (sends || receives) {
        const std::uint32_t partner = sends ? i - stride : i + stride;
        const PhysicalTile other = topology.physical(LogicalTile(static_cast<std::uint16_t>(partner)));
        const PhysicalTile sender = sends ? tile : other;
        const PhysicalTile receiver = sends ? other : tile;
        const auto start = target::earliest_send_start(sender, receiver);
        const auto timing = target::word32_transfer(sender, receiver, start, 1);
        const std::vector<PhysicalTile> to{receiver};
        const auto row =
            sends ? build_row({{Kind::kSend, start, kSum / 4, 1, target::word32_sctl(sender, to)}},
                              start + 1, row_address)
                  : build_row(receive_actions(timing, sender.value, kIncoming / 4), timing.horizon,
                              row_address);
        add_segment(app, image, row_address, assemble(row), true);
        program.push_back(isa::Call{Reg::m10, row_address});
      }
      if (receives) {
        debug.call_sites.push_back(schema::CallSite{
            target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size()),
            std::string(kernels::kAddU32),
            {schema::CallOperand{2, 0, kSum, 4, true}, schema::CallOperand{3, 0, kSum, 4, false},
             schema::CallOperand{4, 1, kIncoming, 4, false}},
            schema::kNoProvenance});
        program.push_back(isa::Call{Reg::m10, kAdd});
      }
    }
    program = program + std::vector<isa::Instruction>{isa::Sync{3}} + halt();
    add_segment(app, image, target::kLoadBase, assemble(program), true);
    add_segment(app, image, kAdd, assemble({isa::Br{Reg::m10}}), true);
    add_segment(app, image, kSum, word_bytes(i + 1), false);
    add_segment(app, image, kIncoming, word_bytes(0), false);
    std::sort(image.segments.begin(), image.segments.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    app.tiles.push_back(image);
    app.debug.tiles.push_back(debug);
  }

  Chip chip(topology);
  chip.load(app);
  chip.start();
  const RunResult result = chip.run();
  ASSERT_EQ(result.reason, StopReason::kAllHalted) << describe(chip.faults().all().at(0));
  const PhysicalTile root = topology.physical(LogicalTile(0));
  EXPECT_EQ(chip.tile(root).sram().read_u32(kSum), 1'084'128u);
  EXPECT_EQ(chip.exchange_stats().words_delivered, n - 1) << "one word per edge of the tree";
}

}  // namespace
}  // namespace tessera::sim
