#pragma once
// Small pieces of supervisor code the emitter strings together, built with
// target/'s encoders.

#include <cstdint>
#include <vector>

#include "schema/model.hpp"
#include "target/isa.hpp"

namespace tessera::compiler::emit {

namespace isa = target::isa;
using Code = std::vector<isa::Instruction>;

// Little-endian bytes of the encoded instructions.
std::vector<std::uint8_t> assemble(const Code& code);

// Loads a 32-bit constant: one setzi below 2^20, else setzi/shl/add.
Code load_constant(isa::Reg reg, std::uint32_t value);
// The same, appended to `code` (a main program loads millions of registers:
// no vector each).
void load_constant(Code& code, isa::Reg reg, std::uint32_t value);

// The end of every tile program: a branch to address 0 halts the supervisor.
Code halt();

void append(Code& code, const Code& more);

// Adds `bytes` at `address` to a tile image (R-X when executable, RW-
// otherwise), stored as a blob of `blobs`; nothing for no bytes.
void add_segment(schema::BlobStore& blobs, schema::TileImage& image, std::uint32_t address,
                 std::vector<std::uint8_t> bytes, bool executable);
// The same, stored as a blob of `app`.
void add_segment(schema::Application& app, schema::TileImage& image, std::uint32_t address,
                 std::vector<std::uint8_t> bytes, bool executable);

}  // namespace tessera::compiler::emit
