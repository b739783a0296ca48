#pragma once
// Hand-assembled tile programs for simulator tests, built with target/'s
// encoders; assemble, load_constant and halt are the compiler's own
// (compiler/emit/code.hpp).

#include <cstdint>
#include <vector>

#include "schema/model.hpp"
#include "sim/chip.hpp"
#include "target/isa.hpp"
#include "target/memory_map.hpp"

namespace tessera::sim::testing {

namespace isa = target::isa;
using isa::Reg;

// Little-endian bytes of the encoded instructions.
std::vector<std::uint8_t> assemble(const std::vector<isa::Instruction>& program);

// Loads a program as an executable segment at `address` of `tile`.
void load_program(Chip& chip, target::PhysicalTile tile,
                  const std::vector<isa::Instruction>& program,
                  std::uint32_t address = target::kLoadBase);

// setzi/shl/add: loads any 32-bit constant into a register.
std::vector<isa::Instruction> load_constant(Reg reg, std::uint32_t value);

// The closing sequence of every test program: branch to 0 (halt).
std::vector<isa::Instruction> halt();

std::vector<isa::Instruction> operator+(std::vector<isa::Instruction> a,
                                        const std::vector<isa::Instruction>& b);

// Adds `bytes` at `address` to a package tile image (R-X when executable,
// RW- otherwise), storing the bytes as a blob of `app`.
void add_segment(schema::Application& app, schema::TileImage& image, std::uint32_t address,
                 const std::vector<std::uint8_t>& bytes, bool executable);

// A topology of the first `count` C600 tiles in logical order.
target::Topology small_topology(std::size_t count);

}  // namespace tessera::sim::testing
