#include "tests/sim/program.hpp"

#include "compiler/emit/code.hpp"

#include "support/little_endian.hpp"

namespace tessera::sim::testing {

std::vector<std::uint8_t> assemble(const std::vector<isa::Instruction>& program) {
  return compiler::emit::assemble(program);
}

void load_program(Chip& chip, target::PhysicalTile tile,
                  const std::vector<isa::Instruction>& program, std::uint32_t address) {
  chip.load_segment(tile, address, assemble(program), true);
}

std::vector<isa::Instruction> load_constant(Reg reg, std::uint32_t value) {
  return compiler::emit::load_constant(reg, value);
}

std::vector<isa::Instruction> halt() { return compiler::emit::halt(); }

std::vector<isa::Instruction> operator+(std::vector<isa::Instruction> a,
                                        const std::vector<isa::Instruction>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void add_segment(schema::Application& app, schema::TileImage& image, std::uint32_t address,
                 const std::vector<std::uint8_t>& bytes, bool executable) {
  compiler::emit::add_segment(app, image, address, bytes, executable);
}

target::Topology small_topology(std::size_t count) {
  std::vector<target::PhysicalTile> tiles;
  for (std::size_t i = 0; i < count; ++i) {
    tiles.push_back(target::c600_physical(target::LogicalTile(static_cast<std::uint16_t>(i))));
  }
  return target::Topology::from_physical(tiles);
}

}  // namespace tessera::sim::testing
