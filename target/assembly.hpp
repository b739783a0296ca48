#pragma once
// Assembly text for the instruction table in isa.hpp: one instruction per
// line, `mnemonic op, op, ...`, operands in table order and in the units
// isa.hpp documents. Registers print as $m0..$m15, CSRs by name ($INCOMING_MUX;
// the parser also takes $A0..$A7 and plain numbers), hex fields as 0x…, and
// words no instruction matches as `.word 0x…`. parse(disassemble(x)) == x.

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/error.hpp"
#include "target/isa.hpp"

namespace tessera::target::isa {

// Malformed assembly text. The message names the operand and why.
class AssemblyError : public InputError {
 public:
  using InputError::InputError;
};

// One instruction as text, e.g. "send 2, 0x14079, 3".
std::string disassemble(const Instruction& instruction);

// Prints disassemble(instruction); lets tests and logs show instructions.
std::ostream& operator<<(std::ostream& out, const Instruction& instruction);

// Parses one instruction. Operands are checked exactly as the encoder checks
// them; anything wrong is an AssemblyError.
Instruction parse_instruction(std::string_view text);

// One line of a listing: address, the instruction's words, its text.
struct ListingLine {
  std::uint32_t address = 0;
  std::vector<std::uint32_t> words;
  Instruction instruction;
};

// Decodes a run of words loaded at `base` (4-aligned) into listing lines.
std::vector<ListingLine> disassemble_words(std::span<const std::uint32_t> words,
                                           std::uint32_t base);

// "0004c010  19800604           setzi $m8, 0x604"
std::string format_listing_line(const ListingLine& line);

}  // namespace tessera::target::isa
