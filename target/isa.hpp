#pragma once
// The IPU21 supervisor instruction set, as one table: each instruction is a
// struct whose data members are its operands (in assembly-text order) and
// whose kFields row says where each operand's bits live. Encoder, decoder,
// disassembler and parser (isa.cpp, assembly.cpp) all walk these rows, so they
// cannot disagree; adding an instruction is one struct here plus its place in
// the Instruction variant.
//
// Facts and golden vectors: docs/reference/ipu21-target.md §4.1–§4.3.
//
// Operand units follow the reference's vectors:
//   - counts of words or events are natural (1..64), stored as count − 1;
//   - code targets (call, bri, brz) are byte addresses, stored as word addresses;
//   - ld32/st32 offsets are in words (address = base + delta + 4·offset [INF]);
//   - exchange source addresses and PIC values are in the hardware's units:
//     4-byte words, or 8-byte items when a send's sctl has bit 2 (64-bit) set.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "target/isa_fields.hpp"

namespace tessera::target::isa {

// ---- Supervisor scalar and control instructions (§4.1) --------------------

// nop [HW/SDK]. Its word is also what `setzi $m14, 0` would encode; the
// decoder prefers nop (it is listed first), so that setzi has no encoding:
// the encoder and the assembler refuse it (Setzi::check).
struct Nop {
  static constexpr std::array<FieldSpec, 0> kFields{};
  static constexpr InstructionSpec kSpec{.mnemonic = "nop", .opcode = 0x19E00000, .fields = kFields};
  friend constexpr bool operator==(const Nop&, const Nop&) = default;
};

// setzi $mR, imm20: zero-extended 20-bit immediate.
struct Setzi {
  Reg dst{};
  std::uint32_t value = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("dst", 20),
      unsigned_field("value", 0, 20, Radix::kHex),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "setzi", .opcode = 0x19000000, .fields = kFields};
  friend constexpr bool operator==(const Setzi&, const Setzi&) = default;
  // `setzi $m14, 0` is nop's word, which would leave $m14 as it was.
  static void check(const Setzi& instruction);
};

// call $mR, target: the return address goes to $mR; target < 2 MiB, 4-aligned.
struct Call {
  Reg link{};
  std::uint32_t target = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("link", 20),
      code_address_field("target", 0, 19),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "call", .opcode = 0x18000000, .fields = kFields};
  friend constexpr bool operator==(const Call&, const Call&) = default;
};

// br $mR: `br $m10` (0x43A00000) ends every exchange row and kernel call; a
// branch to address 0 halts the supervisor [INF].
struct Br {
  Reg target{};
  static constexpr auto kFields = std::to_array<FieldSpec>({reg_field("target", 20)});
  static constexpr InstructionSpec kSpec{.mnemonic = "br", .opcode = 0x43000000, .fields = kFields};
  friend constexpr bool operator==(const Br&, const Br&) = default;
};

// bri target: absolute immediate branch [SDK].
struct Bri {
  std::uint32_t target = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({code_address_field("target", 0, 19)});
  static constexpr InstructionSpec kSpec{.mnemonic = "bri", .opcode = 0x40800000, .fields = kFields};
  friend constexpr bool operator==(const Bri&, const Bri&) = default;
};

// brz $mR, target: branch when $mR is zero.
struct Brz {
  Reg condition{};
  std::uint32_t target = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("condition", 20),
      code_address_field("target", 0, 19),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "brz", .opcode = 0x13000000, .fields = kFields};
  friend constexpr bool operator==(const Brz&, const Brz&) = default;
};

// put csr, $mS: the CSR index sits unshifted in the low byte [SDK].
struct Put {
  Csr csr{};
  Reg src{};
  static constexpr auto kFields = std::to_array<FieldSpec>({
      csr_field("csr", 0),
      reg_field("src", 20),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "put", .opcode = 0x43008000, .fields = kFields};
  friend constexpr bool operator==(const Put&, const Put&) = default;
};

// get $mD, csr.
struct Get {
  Reg dst{};
  Csr csr{};
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("dst", 16),
      csr_field("csr", 0),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "get", .opcode = 0x41000000, .fields = kFields};
  friend constexpr bool operator==(const Get&, const Get&) = default;
};

// ld32 $mD, $mB, $mΔ, offset: loads the word at B + Δ + 4·offset [INF].
struct Ld32 {
  Reg dst{};
  Reg base{};
  Reg delta{};
  std::uint32_t offset_words = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("dst", 16),
      reg_field("base", 20),
      reg_field("delta", 12),
      unsigned_field("offset_words", 0, 12),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "ld32", .opcode = 0x01000000, .fields = kFields};
  friend constexpr bool operator==(const Ld32&, const Ld32&) = default;
};

// st32 $mS, $mB, $mΔ, offset: stores $mS at B + Δ + 4·offset [INF].
struct St32 {
  Reg src{};
  Reg base{};
  Reg delta{};
  std::uint32_t offset_words = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("src", 16),
      reg_field("base", 20),
      reg_field("delta", 12),
      unsigned_field("offset_words", 0, 12),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "st32", .opcode = 0x4F000000, .fields = kFields};
  friend constexpr bool operator==(const St32&, const St32&) = default;
};

// add $mD, $mS, simm16.
struct Add {
  Reg dst{};
  Reg src{};
  std::int32_t immediate = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("dst", 16),
      reg_field("src", 20),
      signed_field("immediate", 0, 16),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "add", .opcode = 0x22000000, .fields = kFields};
  friend constexpr bool operator==(const Add&, const Add&) = default;
};

// and $mD, $mS, imm12.
struct And {
  Reg dst{};
  Reg src{};
  std::uint32_t immediate = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("dst", 16),
      reg_field("src", 20),
      unsigned_field("immediate", 0, 12, Radix::kHex),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "and", .opcode = 0x42000000, .fields = kFields};
  friend constexpr bool operator==(const And&, const And&) = default;
};

// shl $mD, $mS, imm12.
struct Shl {
  Reg dst{};
  Reg src{};
  std::uint32_t amount = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      reg_field("dst", 16),
      reg_field("src", 20),
      unsigned_field("amount", 0, 12),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "shl", .opcode = 0x4200A000, .fields = kFields};
  friend constexpr bool operator==(const Shl&, const Shl&) = default;
};

// sync z: wait in sync zone z (§6: 0 host receive, 1 local workers, 3
// device-wide internal, 7 all with host, 15 host entry).
struct Sync {
  std::uint32_t zone = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({unsigned_field("zone", 0, 8)});
  static constexpr InstructionSpec kSpec{.mnemonic = "sync", .opcode = 0x41800000, .fields = kFields};
  friend constexpr bool operator==(const Sync&, const Sync&) = default;
};

// The sync zones emitted programs name (§6): 3 opens and closes an internal
// exchange phase on every tile; 7 is the external sync that includes the host
// (the startup rendezvous and every host phase).
inline constexpr std::uint32_t kInternalSyncZone = 3;
inline constexpr std::uint32_t kHostSyncZone = 7;

// sans z: do not participate in the next sync of zone z [INF].
struct Sans {
  std::uint32_t zone = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({unsigned_field("zone", 0, 8)});
  static constexpr InstructionSpec kSpec{.mnemonic = "sans", .opcode = 0x40C00000, .fields = kFields};
  friend constexpr bool operator==(const Sans&, const Sans&) = default;
};

// trap n: stops the context (n = 0 → PBRK0, n = 1 → PBRK1) [HW/SDK].
struct Trap {
  std::uint32_t code = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({unsigned_field("code", 0, 4)});
  static constexpr InstructionSpec kSpec{.mnemonic = "trap", .opcode = 0x41801000, .fields = kFields};
  friend constexpr bool operator==(const Trap&, const Trap&) = default;
};

// ---- Exchange family (§4.2), executed by the supervisor -------------------

// delay events: 1..0x80000 events (also the processor delay).
struct Delay {
  std::uint32_t events = 1;
  static constexpr auto kFields = std::to_array<FieldSpec>({count_field("events", 0, 19)});
  static constexpr InstructionSpec kSpec{.mnemonic = "delay", .opcode = 0x40A00000, .fields = kFields};
  friend constexpr bool operator==(const Delay&, const Delay&) = default;
};

// delaypic events, selector, value: advance 1..128 events, then set the PIC
// (selector 0: receive pointer as a word address; 1: paired-receive format).
struct DelayPic {
  std::uint32_t events = 1;
  std::uint32_t selector = 0;
  std::uint32_t value = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      count_field("events", 19, 7),
      unsigned_field("selector", 18, 1),
      unsigned_field("value", 0, 18, Radix::kHex),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "delaypic", .opcode = 0x60000000, .fields = kFields};
  friend constexpr bool operator==(const DelayPic&, const DelayPic&) = default;
};

// delayxpic events, paired, source: advance 1..4096 events, then select the
// receive source (a physical tile, 0x600+k host, 0x640 neutral).
struct DelayXpic {
  std::uint32_t events = 1;
  std::uint32_t paired = 0;
  std::uint32_t source = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      count_field("events", 14, 12),
      unsigned_field("paired", 13, 1),
      unsigned_field("source", 0, 13, Radix::kHex),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "delayxpic", .opcode = 0x64000000, .fields = kFields};
  friend constexpr bool operator==(const DelayXpic&, const DelayXpic&) = default;
};

// sendpicp words, source, sctl, pic_selector, xpic_paired, xpic, pic — two
// words, 8-aligned in memory. Restarts the outgoing stream at `source` and
// applies one PIC and one XPIC control at its first event; with sctl = 0 it
// sends nothing and only advances (there is no separate delaypicp) [SDK].
struct SendPicP {
  std::uint32_t words = 1;
  std::uint32_t source = 0;
  std::uint32_t sctl = 0;
  std::uint32_t pic_selector = 0;
  std::uint32_t xpic_paired = 0;
  std::uint32_t xpic = 0;
  std::uint32_t pic = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      count_field("words", 21, 6),
      unsigned_field("source", 3, 18, Radix::kHex),
      unsigned_field("sctl", 0, 3),
      unsigned_field("pic_selector", 27, 1),
      unsigned_field("xpic_paired", 31, 1).in_word(1),
      unsigned_field("xpic", 18, 13, Radix::kHex).in_word(1),
      unsigned_field("pic", 0, 18, Radix::kHex).in_word(1),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "sendpicp",
                                         .opcode = 0xF0000000,
                                         .fields = kFields,
                                         .words = 2,
                                         .alignment = 8};
  friend constexpr bool operator==(const SendPicP&, const SendPicP&) = default;
};

// sendpic words, control, value: continues the outgoing stream with its
// current sctl and applies one control at the first event. control 0/1 is
// the XPIC (13-bit value; 1 = paired stream), 2/3 the PIC (18-bit value;
// control − 2 = PIC selector).
struct SendPic {
  std::uint32_t words = 1;
  std::uint32_t control = 0;
  std::uint32_t value = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      count_field("words", 21, 6),
      unsigned_field("control", 18, 2),
      unsigned_field("value", 0, 18, Radix::kHex),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "sendpic", .opcode = 0x70100000, .fields = kFields};
  friend constexpr bool operator==(const SendPic&, const SendPic&) = default;
  // An XPIC value has 13 bits although the field has 18.
  static void check(const SendPic& instruction);
};

// send words, source, sctl: 1..64 words from absolute `source` (see units
// above). sctl: bit 0 = fabric direction 1, bit 1 = direction 2, bit 2 =
// 64-bit items; 0 advances the stream without a packet.
struct Send {
  std::uint32_t words = 1;
  std::uint32_t source = 0;
  std::uint32_t sctl = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      count_field("words", 21, 6),
      unsigned_field("source", 3, 18, Radix::kHex),
      unsigned_field("sctl", 0, 3),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "send", .opcode = 0x78000000, .fields = kFields};
  friend constexpr bool operator==(const Send&, const Send&) = default;
};

// sendoff words, delta, sctl: 1..4096 words continuing the current outgoing
// stream; the count's low 6 bits are at 26:21 and its high 6 bits at 19:14.
// The source delta's unit is not known; the stack always uses 0 [INF].
struct SendOff {
  std::uint32_t words = 1;
  std::uint32_t delta = 0;
  std::uint32_t sctl = 0;
  static constexpr auto kFields = std::to_array<FieldSpec>({
      count_field("words", 21, 6).with_high_bits(14, 6),
      unsigned_field("delta", 3, 11),
      unsigned_field("sctl", 0, 3),
  });
  static constexpr InstructionSpec kSpec{.mnemonic = "sendoff", .opcode = 0x70000000, .fields = kFields};
  friend constexpr bool operator==(const SendOff&, const SendOff&) = default;
};

// A word that no instruction matches. It is never skipped: the simulator
// raises INVALID_INSTR on it, and the disassembler prints it as `.word`.
struct Unknown {
  std::uint32_t word = 0;
  friend constexpr bool operator==(const Unknown&, const Unknown&) = default;
};

// Every instruction, in decoding precedence (§4.2): the decoder takes the
// first alternative whose opcode matches, so an alternative whose pattern
// overlaps a later one must be listed first and be more specific (nop before
// setzi; checked at compile time in isa.cpp). Unknown is last.
using Instruction =
    std::variant<Nop, Br, Delay, DelayPic, DelayXpic, SendPicP, SendPic, Send, SendOff, Sync,
                 Setzi, Call, Bri, Brz, Put, Get, Ld32, St32, Add, And, Shl, Sans, Trap, Unknown>;

// Well-known words.
inline constexpr std::uint32_t kNopWord = 0x19E00000;
inline constexpr std::uint32_t kReturnWord = 0x43A00000;  // br $m10

// ---- Encoding and decoding -------------------------------------------------

// The one or two words of an encoded instruction.
struct Encoded {
  std::array<std::uint32_t, 2> words{};
  std::uint8_t count = 0;
  std::span<const std::uint32_t> span() const { return {words.data(), count}; }
};

// Encodes one instruction. Every operand is range- and alignment-checked;
// a value that does not fit is an EncodingError naming instruction, field
// and value — never masked.
Encoded encode(const Instruction& instruction);

// Appends the encoding of each instruction to `out`.
void encode_into(const Instruction& instruction, std::vector<std::uint32_t>& out);

struct Decoded {
  Instruction instruction;
  std::size_t words = 1;  // how many words it took (sendpicp: 2)
};

// Decodes the instruction starting at words[0]. Never throws for any input
// words: a word no instruction matches — or a sendpicp missing its second
// word — decodes to Unknown. `words` must not be empty.
Decoded decode(std::span<const std::uint32_t> words);

// The table row of an instruction (nullptr for Unknown).
const InstructionSpec* spec_of(const Instruction& instruction) noexcept;

// ---- Placement -------------------------------------------------------------

// The byte alignment an instruction needs in memory: its table row's
// (sendpicp 8 [SDK], §2.5; every other instruction, and a raw word, 4).
std::uint32_t alignment_of(const Instruction& instruction) noexcept;

// Why `instruction` may not sit at byte address `address` ("sendpicp at
// 0x4c014: the instruction needs an 8-byte boundary"), or nullopt. The one
// rule the simulator applies before executing an instruction and the
// assembler before placing one.
std::optional<std::string> misplacement(const Instruction& instruction, std::uint32_t address);

// encode() for an instruction placed at `address`: also an EncodingError
// when it may not sit there.
Encoded encode_at(const Instruction& instruction, std::uint32_t address);

// The words of `program` placed from `base` on, every instruction encoded
// at its own address; an error names the instruction's index.
std::vector<std::uint32_t> encode_program(std::span<const Instruction> program, std::uint32_t base);

// How many words an instruction occupies.
std::size_t word_count(const Instruction& instruction) noexcept;

// The code address an instruction transfers control to when that address is
// an immediate (call, bri, brz); nullopt otherwise, br $mR included.
std::optional<std::uint32_t> code_target(const Instruction& instruction) noexcept;

// Every table row, in decoding precedence.
std::span<const InstructionSpec* const> all_specs() noexcept;

}  // namespace tessera::target::isa
