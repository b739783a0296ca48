#pragma once
// One exchange phase on a set of tiles, for simulator tests: every tile
// syncs, calls its row (if it has one), syncs again and halts. With
// `sampled`, each tile also samples its cycle counter before the phase and
// after its row (the prior art's measurement, reference §5.6), through the
// real cycle-sample helper.

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "kernels/registry.hpp"
#include "schema/model.hpp"
#include "sim/chip.hpp"
#include "support/little_endian.hpp"
#include "tests/sim/program.hpp"

namespace tessera::sim::testing {

using target::PhysicalTile;

constexpr std::uint32_t kRow = 0x4D000;
constexpr std::uint32_t kSource = 0x60000;       // element 5
constexpr std::uint32_t kDestination = 0x70000;  // element 9
constexpr std::uint32_t kGuardWords = 4;
constexpr std::uint32_t kGuard = 0xEEEEEEEE;

inline std::uint32_t source_word(PhysicalTile tile, std::uint32_t i) {
  return (std::uint32_t{tile.value} << 16) | i;
}

// One phase: every tile syncs, calls its row (if any), syncs again, halts.
class Phase {
 public:
  explicit Phase(std::vector<PhysicalTile> tiles, SimOptions options = {}, bool sampled = false)
      : tiles_(tiles), chip_(target::Topology::from_physical(std::move(tiles)), options),
        sampled_(sampled) {}

  // The tile's row, placed at `address` (8-aligned, as rows are placed).
  void row(PhysicalTile tile, std::vector<isa::Instruction> instructions,
           std::uint32_t address = kRow) {
    rows_.push_back(Row{tile, std::move(instructions), address});
  }
  // Source words source_word(tile, i) for i < words at kSource.
  void source(PhysicalTile tile, std::uint32_t words) {
    std::vector<std::uint8_t> bytes;
    for (std::uint32_t i = 0; i < words; ++i) append(bytes, source_word(tile, i));
    data_.emplace_back(tile, kSource, bytes);
  }
  // Guard words around [address, address + 4·words).
  void guarded_destination(PhysicalTile tile, std::uint32_t address, std::uint32_t words) {
    std::vector<std::uint8_t> bytes;
    for (std::uint32_t i = 0; i < words + 2 * kGuardWords; ++i) append(bytes, kGuard);
    data_.emplace_back(tile, address - 4 * kGuardWords, bytes);
  }
  void plan(schema::ExchangePhase planned) { planned_ = std::move(planned); }
  // The package's plannedRounds (docs/FORMAT.md, "Planned exchange phases").
  void plan_rounds(std::uint64_t rounds) { planned_rounds_ = rounds; }

  RunResult run() {
    schema::Application app;
    app.compiler_version = "exchange test";
    std::map<std::uint16_t, Row> rows;
    for (auto& row : rows_) rows[row.tile.value] = row;
    for (const auto tile : tiles_) {
      schema::TileImage image{tile, target::kEntryPoint, {}};
      const bool has_row = rows.contains(tile.value);
      std::vector<isa::Instruction> program;
      if (sampled_) program = program + sample_into(kSampleBefore);
      program = program + std::vector<isa::Instruction>{isa::Sync{3}};
      if (has_row) {
        program =
            program + std::vector<isa::Instruction>{isa::Call{Reg::m10, rows[tile.value].address}};
      }
      if (sampled_) program = program + sample_into(kSampleAfter);
      program = program + std::vector<isa::Instruction>{isa::Sync{3}} + halt();
      add_segment(app, image, target::kLoadBase, assemble(program), true);
      if (sampled_) {
        add_segment(app, image, kSampleCode, assemble({isa::Br{Reg::m10}}), true);
        add_segment(app, image, kSampleBefore, std::vector<std::uint8_t>(8, 0), false);
        app.debug.tiles.push_back(sample_debug(tile, program));
      }
      if (has_row) {
        const Row& row = rows[tile.value];
        add_segment(app, image, row.address, assemble(row.instructions), true);
      }
      for (const auto& [data_tile, address, bytes] : data_) {
        if (data_tile == tile) add_segment(app, image, address, bytes, false);
      }
      std::sort(image.segments.begin(), image.segments.end(),
                [](const auto& a, const auto& b) { return a.address < b.address; });
      app.tiles.push_back(image);
    }
    if (planned_) app.debug.exchange_phases.push_back(*planned_);
    app.debug.planned_rounds = planned_rounds_;
    chip_.load(app);
    chip_.start();
    return chip_.run();
  }

  Chip& chip() { return chip_; }
  // The cycles between the two samples of a sampled phase.
  std::uint32_t sampled_interval(PhysicalTile tile) {
    return word(tile, kSampleAfter) - word(tile, kSampleBefore);
  }
  std::uint32_t word(PhysicalTile tile, std::uint32_t address) {
    return chip_.tile(tile).sram().read_u32(address);
  }
  // The destination holds the sender's words and its guards are intact.
  void expect_received(PhysicalTile receiver, std::uint32_t address, PhysicalTile sender,
                       std::uint32_t words) {
    for (std::uint32_t i = 0; i < kGuardWords; ++i) {
      ASSERT_EQ(word(receiver, address - 4 * (i + 1)), kGuard) << "guard before, " << receiver;
      ASSERT_EQ(word(receiver, address + 4 * (words + i)), kGuard) << "guard after, " << receiver;
    }
    for (std::uint32_t i = 0; i < words; ++i) {
      ASSERT_EQ(word(receiver, address + 4 * i), source_word(sender, i))
          << "word " << i << " of " << words << " at " << receiver;
    }
  }

 private:
  static void append(std::vector<std::uint8_t>& bytes, std::uint32_t word) {
    append_u32_le(bytes, word);
  }

  static constexpr std::uint32_t kSampleCode = 0x4E000;
  static constexpr std::uint32_t kSampleBefore = 0x7E000;
  static constexpr std::uint32_t kSampleAfter = kSampleBefore + 4;

  static std::vector<isa::Instruction> sample_into(std::uint32_t address) {
    return {isa::Setzi{Reg::m2, address}, isa::Call{Reg::m10, kSampleCode}};
  }
  // The sample helper's symbol, the two sample words and the call sites.
  static schema::TileDebug sample_debug(PhysicalTile tile, const std::vector<isa::Instruction>& program) {
    schema::TileDebug debug;
    debug.tile = tile;
    debug.symbols = {schema::Symbol{std::string(kernels::kSampleCycles), kSampleCode, 4,
                                    schema::SymbolKind::kRuntimeHelper}};
    debug.allocations = {schema::Allocation{0, "before", "", kSampleBefore, 4, 0,
                                            schema::kLiveToEnd, schema::AllocationKind::kRuntime,
                                            schema::kNoProvenance},
                         schema::Allocation{1, "after", "", kSampleAfter, 4, 0,
                                            schema::kLiveToEnd, schema::AllocationKind::kRuntime,
                                            schema::kNoProvenance}};
    std::uint32_t pc = target::kLoadBase;
    std::uint32_t sample = 0;
    for (const auto& instruction : program) {
      if (const auto* call = std::get_if<isa::Call>(&instruction); call && call->target == kSampleCode) {
        const std::uint32_t address = sample == 0 ? kSampleBefore : kSampleAfter;
        debug.call_sites.push_back(schema::CallSite{
            pc, std::string(kernels::kSampleCycles),
            {schema::CallOperand{2, sample, address, 4, true}}, schema::kNoProvenance});
        ++sample;
      }
      pc += 4 * static_cast<std::uint32_t>(isa::word_count(instruction));
    }
    return debug;
  }

  std::vector<PhysicalTile> tiles_;
  Chip chip_;
  bool sampled_ = false;
  struct Row {
    PhysicalTile tile;
    std::vector<isa::Instruction> instructions;
    std::uint32_t address = kRow;
  };
  std::vector<Row> rows_;
  std::vector<std::tuple<PhysicalTile, std::uint32_t, std::vector<std::uint8_t>>> data_;
  std::optional<schema::ExchangePhase> planned_;
  std::uint64_t planned_rounds_ = 0;
};


}  // namespace tessera::sim::testing
