#include "tests/compiler/exchange_harness.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "sim/fault.hpp"
#include "support/little_endian.hpp"
#include "tests/sim/program.hpp"

namespace tessera::compiler::exchange::testing {

namespace isa = target::isa;
using sim::testing::add_segment;
using sim::testing::assemble;
using sim::testing::halt;

std::uint32_t pattern(PhysicalTile tile, std::uint32_t address, std::uint32_t salt) {
  std::uint32_t x = (std::uint32_t{tile.value} << 20) ^ address ^ (salt * 0x9E3779B1u);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return x;
}

namespace {

// The buffer holding [address, address + 4·words) on `tile`.
Buffer& buffer_of(std::vector<Buffer>& buffers, PhysicalTile tile, std::uint32_t address,
                  std::uint32_t words) {
  for (Buffer& buffer : buffers) {
    if (buffer.tile == tile && buffer.address <= address &&
        std::uint64_t{address} + 4ull * words <=
            buffer.address + 4ull * buffer.words.size()) {
      return buffer;
    }
  }
  throw std::out_of_range(fmt::format("no buffer holds {} words at {} {:#x}", words, tile, address));
}

}  // namespace

std::vector<Buffer> expected_memory(std::vector<Buffer> buffers,
                                    const std::vector<LogicalTransfer>& transfers) {
  for (const LogicalTransfer& transfer : transfers) {
    const Buffer& source =
        buffer_of(buffers, transfer.source, transfer.source_address, transfer.words);
    const auto first = source.words.begin() + (transfer.source_address - source.address) / 4;
    const std::vector<std::uint32_t> words(first, first + transfer.words);
    for (const auto& destination : transfer.destinations) {
      Buffer& buffer = buffer_of(buffers, destination.tile, destination.address, transfer.words);
      std::copy(words.begin(), words.end(),
                buffer.words.begin() + (destination.address - buffer.address) / 4);
    }
  }
  return buffers;
}

std::string first_difference(const std::vector<Buffer>& expected,
                             const std::vector<Buffer>& actual) {
  for (std::size_t b = 0; b < expected.size(); ++b) {
    for (std::size_t i = 0; i < expected[b].words.size(); ++i) {
      if (expected[b].words[i] != actual.at(b).words.at(i)) {
        return fmt::format("{} {:#x} holds {:#010x}, expected {:#010x}", expected[b].tile,
                           expected[b].address + 4 * i, actual[b].words[i], expected[b].words[i]);
      }
    }
  }
  return "";
}

SimulatedPhase simulate(const std::vector<PhysicalTile>& tiles, const PhaseSchedule& schedule,
                        const std::vector<Buffer>& buffers) {
  schema::Application app;
  app.compiler_version = "exchange scheduler test";
  std::map<PhysicalTile, const ExchangeRow*> rows;
  for (const ExchangeRow& row : schedule.rows) rows[row.tile] = &row;
  for (const PhysicalTile tile : tiles) {
    schema::TileImage image{tile, target::kEntryPoint, {}};
    const auto row = rows.find(tile);
    std::vector<isa::Instruction> program{isa::Sync{3}};
    if (row != rows.end()) program.push_back(isa::Call{isa::Reg::m10, row->second->address});
    program.push_back(isa::Sync{3});
    const auto end = halt();
    program.insert(program.end(), end.begin(), end.end());
    add_segment(app, image, target::kLoadBase, assemble(program), true);
    if (row != rows.end()) {
      add_segment(app, image, row->second->address, assemble(row->second->instructions), true);
    }
    for (const Buffer& buffer : buffers) {
      if (buffer.tile != tile) continue;
      std::vector<std::uint8_t> bytes;
      for (const std::uint32_t word : buffer.words) append_u32_le(bytes, word);
      add_segment(app, image, buffer.address, bytes, false);
    }
    std::sort(image.segments.begin(), image.segments.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    app.tiles.push_back(image);
  }
  app.debug.exchange_phases.push_back(schema::ExchangePhase{0, schedule.planned});

  sim::Chip chip(target::Topology::from_physical(tiles));
  chip.load(app);
  chip.start();
  SimulatedPhase simulated;
  simulated.result = chip.run();
  if (!chip.faults().all().empty()) simulated.fault = sim::describe(chip.faults().all().front());
  for (const Buffer& buffer : buffers) {
    Buffer after{buffer.tile, buffer.address, {}};
    for (std::size_t i = 0; i < buffer.words.size(); ++i) {
      after.words.push_back(
          chip.tile(buffer.tile).sram().read_u32(buffer.address + 4 * static_cast<std::uint32_t>(i)));
    }
    simulated.after.push_back(std::move(after));
  }
  simulated.words_delivered = chip.exchange_stats().words_delivered;
  return simulated;
}

}  // namespace tessera::compiler::exchange::testing
