#pragma once
// The vocabulary of the instruction tables in target/isa.hpp: registers, control
// registers, and the description of one operand field (where its bits live, how
// its stored bits map to the operand's value).
//
// Facts: docs/reference/ipu21-target.md §3 (register ABI, CSRs) and §4.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "support/error.hpp"

namespace tessera::target::isa {

// A supervisor register $m0..$m15 (4-bit fields everywhere).
enum class Reg : std::uint8_t {
  m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15,
};
inline constexpr Reg kZeroReg = Reg::m15;        // $mzero: reads as 0
inline constexpr Reg kStackReg = Reg::m11;       // supervisor stack pointer
inline constexpr Reg kReturnReg = Reg::m10;      // kernel and exchange-row calls return through it
inline constexpr Reg kHelperReturnReg = Reg::m9; // host-phase, patch and repeat helpers
inline constexpr Reg kBarrierReturnReg = Reg::m7;
inline constexpr Reg kScratchReg = Reg::m8;      // setzi + put of special registers
inline constexpr Reg kJumpReg = Reg::m0;

// A control/special register index as used by put and get (8 bits). Any
// value is encodable; the named ones are those the reference identifies.
enum class Csr : std::uint8_t {
  kPc = 0x00,
  kStatus = 0x01,          // $SSR / $WSR; ETYPE in bits 4..7
  kDebugData = 0x70,
  kDebugControl = 0x73,
  kDebugExceptionStatus = 0x74,
  kDebugExceptionClear = 0x75,
  kInstructionBreak0 = 0x80,  // [SDK]
  kInstructionBreak1 = 0x81,  // [SDK]
  kIncomingMux = 0xA0,        // A0: receive source (tile, 0x600+k host, 0x640 neutral)
  kIncomingMuxPair = 0xA1,    // A1: source of the borrowed half of a paired receive
  kIncomingFormat = 0xA3,     // A3: 0 = 32-bit, 1 = early half, 2 = waiting half
  kIncomingBase = 0xA4,       // A4: base of relative receives
  kIncomingDcount = 0xA6,     // A6: incoming word counter
  kOutgoingBase = 0xA7,       // A7: base of relative sends
};

// The name a CSR is printed with ("INCOMING_MUX"), if it has one.
std::optional<std::string_view> csr_name(Csr csr) noexcept;
// The CSR of a printed name; also accepts the BRINGUP aliases A0..A7.
std::optional<Csr> csr_from_name(std::string_view name) noexcept;

// How a field's stored bits become an operand value.
enum class FieldKind : std::uint8_t {
  kRegister,  // Reg
  kCsr,       // Csr
  kUnsigned,  // value = stored · scale + bias
  kSigned,    // two's complement in the field's width, then · scale + bias
};

enum class Radix : std::uint8_t { kDecimal, kHex };

// A contiguous run of bits in an instruction word.
struct BitSlice {
  std::uint8_t lsb = 0;
  std::uint8_t width = 0;

  constexpr std::uint32_t mask() const {
    return width == 0 ? 0u
                      : static_cast<std::uint32_t>(((std::uint64_t{1} << width) - 1) << lsb);
  }
};

// One operand field of one instruction: the single description from which
// encoder, decoder, disassembler and parser all work.
struct FieldSpec {
  std::string_view name;
  FieldKind kind = FieldKind::kUnsigned;
  std::uint8_t word = 0;   // which word of the instruction holds it (sendpicp has two)
  BitSlice low{};          // the field's low bits
  BitSlice high{};         // the bits above low.width, where a field is split (sendoff)
  std::uint32_t scale = 1; // the value must be a multiple of scale (an alignment)
  std::int32_t bias = 0;   // e.g. 1 for counts stored as "events − 1"
  Radix radix = Radix::kDecimal;

  constexpr unsigned width() const { return unsigned{low.width} + high.width; }
  constexpr std::uint32_t mask() const { return low.mask() | high.mask(); }

  constexpr std::int64_t min_value() const {
    const std::int64_t stored =
        kind == FieldKind::kSigned ? -(std::int64_t{1} << (width() - 1)) : 0;
    return stored * scale + bias;
  }
  constexpr std::int64_t max_value() const {
    const std::int64_t stored = kind == FieldKind::kSigned
                                    ? (std::int64_t{1} << (width() - 1)) - 1
                                    : (std::int64_t{1} << width()) - 1;
    return stored * scale + bias;
  }

  constexpr FieldSpec in_word(std::uint8_t w) const {
    FieldSpec copy = *this;
    copy.word = w;
    return copy;
  }
  // Adds the slice holding the field's upper bits.
  constexpr FieldSpec with_high_bits(std::uint8_t lsb, std::uint8_t width) const {
    FieldSpec copy = *this;
    copy.high = BitSlice{lsb, width};
    return copy;
  }
};

// Field builders, so that each table row reads like the reference.
constexpr FieldSpec reg_field(std::string_view name, std::uint8_t lsb) {
  return FieldSpec{.name = name, .kind = FieldKind::kRegister, .low = {lsb, 4}};
}
constexpr FieldSpec csr_field(std::string_view name, std::uint8_t lsb) {
  return FieldSpec{.name = name, .kind = FieldKind::kCsr, .low = {lsb, 8}, .radix = Radix::kHex};
}
constexpr FieldSpec unsigned_field(std::string_view name, std::uint8_t lsb, std::uint8_t width,
                                   Radix radix = Radix::kDecimal) {
  return FieldSpec{.name = name, .low = {lsb, width}, .radix = radix};
}
constexpr FieldSpec signed_field(std::string_view name, std::uint8_t lsb, std::uint8_t width) {
  return FieldSpec{.name = name, .kind = FieldKind::kSigned, .low = {lsb, width}};
}
// A count of words or events, stored as count − 1.
constexpr FieldSpec count_field(std::string_view name, std::uint8_t lsb, std::uint8_t width) {
  return FieldSpec{.name = name, .low = {lsb, width}, .bias = 1};
}
// A byte address of code, stored as a word address (4-aligned).
constexpr FieldSpec code_address_field(std::string_view name, std::uint8_t lsb,
                                       std::uint8_t width) {
  return FieldSpec{.name = name, .low = {lsb, width}, .scale = 4, .radix = Radix::kHex};
}

// Everything about one instruction except its operand types.
struct InstructionSpec {
  std::string_view mnemonic;
  std::uint32_t opcode = 0;          // the fixed bits of word 0
  std::span<const FieldSpec> fields; // in operand order (assembly text and struct order)
  std::uint8_t words = 1;
  std::uint8_t alignment = 4;        // byte alignment the instruction needs in memory

  constexpr std::uint32_t field_bits(std::uint8_t word) const {
    std::uint32_t bits = 0;
    for (const auto& field : fields) {
      if (field.word == word) bits |= field.mask();
    }
    return bits;
  }
  // Word 0 matches this instruction when (w & match_mask()) == opcode: every
  // bit that no field owns is part of the opcode.
  constexpr std::uint32_t match_mask() const { return ~field_bits(0); }
};

// An operand does not fit its field (range, alignment), or an instruction
// cannot be encoded as asked. The message names instruction, field and value.
class EncodingError : public Error {
 public:
  using Error::Error;
};

}  // namespace tessera::target::isa
