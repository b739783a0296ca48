#include "tests/sim/program.hpp"

#include "support/little_endian.hpp"

namespace tessera::sim::testing {

std::vector<std::uint8_t> assemble(const std::vector<isa::Instruction>& program) {
  std::vector<std::uint32_t> words;
  for (const auto& instruction : program) isa::encode_into(instruction, words);
  return words_to_bytes(words);
}

void load_program(Chip& chip, target::PhysicalTile tile,
                  const std::vector<isa::Instruction>& program, std::uint32_t address) {
  chip.load_segment(tile, address, assemble(program), true);
}

std::vector<isa::Instruction> load_constant(Reg reg, std::uint32_t value) {
  if (value < (1u << 20)) return {isa::Setzi{reg, value}};
  return {isa::Setzi{reg, value >> 12}, isa::Shl{reg, reg, 12},
          isa::Add{reg, reg, static_cast<std::int32_t>(value & 0xFFF)}};
}

std::vector<isa::Instruction> halt() { return {isa::Setzi{Reg::m0, 0}, isa::Br{Reg::m0}}; }

std::vector<isa::Instruction> operator+(std::vector<isa::Instruction> a,
                                        const std::vector<isa::Instruction>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void add_segment(schema::Application& app, schema::TileImage& image, std::uint32_t address,
                 const std::vector<std::uint8_t>& bytes, bool executable) {
  const std::uint32_t blob = app.blobs.add(bytes);
  const auto size = static_cast<std::uint32_t>(bytes.size());
  image.segments.push_back(schema::Segment{
      address, size, blob, 0, size,
      schema::kSegmentRead | (executable ? schema::kSegmentExecute : schema::kSegmentWrite)});
}

target::Topology small_topology(std::size_t count) {
  std::vector<target::PhysicalTile> tiles;
  for (std::size_t i = 0; i < count; ++i) {
    tiles.push_back(target::c600_physical(target::LogicalTile(static_cast<std::uint16_t>(i))));
  }
  return target::Topology::from_physical(tiles);
}

}  // namespace tessera::sim::testing
