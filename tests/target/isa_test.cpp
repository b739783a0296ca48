// Golden vectors for the instruction table (docs/reference/ipu21-target.md
// §4.1, §4.3, §4.5, §5.4) through all four directions: encode, decode,
// disassemble, parse.
#include "target/isa.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "target/assembly.hpp"

namespace tessera::target::isa {
namespace {

struct Vector {
  std::string text;                 // our assembly syntax
  std::vector<std::uint32_t> words; // the reference's words
  Instruction instruction;
  const char* source;               // where the vector comes from
};

// clang-format off
const std::vector<Vector> kVectors = {
    // §4.1 scalar vectors [T], HEAD and OLD.
    {"ld32 $m8, $m11, $m15, 1", {0x01B8F001}, Ld32{Reg::m8, Reg::m11, Reg::m15, 1}, "4.1 ld32(8,11,15,1)"},
    {"st32 $m2, $m11, $m15, 0", {0x4FB2F000}, St32{Reg::m2, Reg::m11, Reg::m15, 0}, "4.1 st32(2,11,15,0)"},
    {"add $m11, $m11, -32", {0x22BBFFE0}, Add{Reg::m11, Reg::m11, -32}, "4.1 add(11,11,-32)"},
    {"and $m0, $m8, 0x1", {0x42800001}, And{Reg::m0, Reg::m8, 1}, "4.1 and(0,8,1)"},
    {"shl $m10, $m7, 2", {0x427AA002}, Shl{Reg::m10, Reg::m7, 2}, "4.1 shl(10,7,2)"},
    {"brz $m0, 0x4c100", {0x13013040}, Brz{Reg::m0, 0x4C100}, "4.1 brz(0,0x4C100)"},
    {"call $m10, 0x4c100", {0x18A13040}, Call{Reg::m10, 0x4C100}, "4.1 call(10,0x4C100)"},
    {"put $INCOMING_DCOUNT, $m8", {0x438080A6}, Put{Csr::kIncomingDcount, Reg::m8}, "4.1 put(0xA6,$m8)"},
    {"put $INCOMING_MUX, $m8", {0x438080A0}, Put{Csr::kIncomingMux, Reg::m8}, "4.1 put 0xA0,$m8"},
    {"setzi $m8, 0x604", {0x19800604}, Setzi{Reg::m8, 0x604}, "4.1 setzi $m8,0x604"},
    {"setzi $m8, 0x1", {0x19800001}, Setzi{Reg::m8, 1}, "4.1 setzi $m8,1"},
    {"setzi $m8, 0x10", {0x19800010}, Setzi{Reg::m8, 0x10}, "4.1 setzi $m8,0x10"},
    {"setzi $m8, 0x640", {0x19800640}, Setzi{Reg::m8, 0x640}, "4.1 setzi $m8,0x640"},
    {"nop", {0x19E00000}, Nop{}, "4.1 nop [HW/SDK]"},
    {"br $m10", {0x43A00000}, Br{Reg::m10}, "4.1 br $m10, the row return"},
    {"get $m0, $PC", {0x41000000}, Get{Reg::m0, Csr::kPc}, "4.1 get $m0,$PC"},
    {"trap 0", {0x41801000}, Trap{0}, "3 trap n = 0x41801000|n"},
    {"trap 1", {0x41801001}, Trap{1}, "3 trap 1 = PBRK1"},
    {"sync 3", {0x41800003}, Sync{3}, "6 sync 3"},
    {"sync 15", {0x4180000F}, Sync{15}, "6 sync 15"},
    {"sans 1", {0x40C00001}, Sans{1}, "4.1 sans z = 0x40C00000|z"},
    {"bri 0x4c100", {0x40813040}, Bri{0x4C100}, "4.1 bri = 0x40800000|tgt>>2"},
    // §4.3 exchange vectors [T][SDK].
    {"send 2, 0x14079, 3", {0x782A03CB}, Send{2, 82041, 3}, "4.3 send(1,3,82041)"},
    {"send 2, 0x1407b, 3", {0x782A03DB}, Send{2, 82043, 3}, "4.3 send(1,3,82043)"},
    {"sendpicp 43, 0x14021, 1, 0, 0, 0x640, 0x15000", {0xF54A0109, 0x19015000},
     SendPicP{43, 0x14021, 1, 0, 0, 0x640, 0x15000}, "4.3 SDK full-duplex sendpicp"},
    // §4.3 SDK receiver row for four 52-word messages.
    {"delayxpic 1, 0, 0x82", {0x64000082}, DelayXpic{1, 0, 0x82}, "4.3 receiver row word 0"},
    {"delay 51", {0x40A00032}, Delay{51}, "4.3 receiver row word 1"},
    {"sendpicp 52, 0x0, 0, 0, 0, 0xc0, 0x14048", {0xF6600000, 0x03014048},
     SendPicP{52, 0, 0, 0, 0, 192, 0x14048}, "4.3 receiver row, XPIC 192"},
    {"sendpicp 52, 0x0, 0, 0, 0, 0xc2, 0x15000", {0xF6600000, 0x03095000},
     SendPicP{52, 0, 0, 0, 0, 194, 0x15000}, "4.3 receiver row, XPIC 194"},
    {"sendpicp 52, 0x0, 0, 0, 0, 0x100, 0x16000", {0xF6600000, 0x04016000},
     SendPicP{52, 0, 0, 0, 0, 256, 0x16000}, "4.3 receiver row, XPIC 256"},
    {"sendpicp 58, 0x0, 0, 0, 0, 0x640, 0x17000", {0xF7200000, 0x19017000},
     SendPicP{58, 0, 0, 0, 0, 0x640, 0x17000}, "4.3 receiver row, XPIC neutral"},
    // §4.5 host-exchange target programs (t260 oracle) [SDK][T].
    {"send 2, 0x1405c, 3", {0x782A02E3}, Send{2, 0x50170 / 4, 3}, "4.5 H2D request from 0x50170"},
    {"send 2, 0x14058, 3", {0x782A02C3}, Send{2, 0x50160 / 4, 3}, "4.5 D2H header from 0x50160"},
    {"send 16, 0x14048, 3", {0x79EA0243}, Send{16, 0x50120 / 4, 3}, "4.5 D2H payload from 0x50120"},
    {"delay 2", {0x40A00001}, Delay{2}, "4.5 D2H pad"},
    {"send 2, 0x1405a, 3", {0x782A02D3}, Send{2, 0x50168 / 4, 3}, "4.5 D2H close packet"},
    {"sync 0", {0x41800000}, Sync{0}, "4.5 sync 0"},
    {"sync 7", {0x41800007}, Sync{7}, "4.5 wrapper sync 7"},
    {"setzi $m8, 0x600", {0x19800600}, Setzi{Reg::m8, 0x600}, "4.5 wrapper, combined tile 0"},
    {"setzi $m8, 0x609", {0x19800609}, Setzi{Reg::m8, 0x609}, "4.5 wrapper, tile 9"},
    // §5.4 paired 64-bit receive rows [T].
    {"delay 31", {0x40A0001E}, Delay{31}, "5.4 sender delay"},
    {"send 64, 0xa000, 5", {0x7FE50005}, Send{64, 0x50000 / 8, 5}, "5.4 sender, 64-bit items"},
    {"delayxpic 1, 1, 0x0", {0x64002000}, DelayXpic{1, 1, 0}, "5.4 early receiver paired XPIC"},
    {"delaypic 53, 1, 0x1", {0x61A40001}, DelayPic{53, 1, 1}, "5.4 early receiver format start"},
    {"delaypic 2, 0, 0x18000", {0x60098000}, DelayPic{2, 0, 0x60000 / 4}, "5.4 receive pointer"},
    {"delayxpic 9, 1, 0x640", {0x64022640}, DelayXpic{9, 1, 0x640}, "5.4 paired teardown"},
    {"delaypic 53, 1, 0x0", {0x61A40000}, DelayPic{53, 1, 0}, "5.4 format end"},
    {"delay 7", {0x40A00006}, Delay{7}, "5.4 guard"},
    {"delaypic 54, 1, 0x1", {0x61AC0001}, DelayPic{54, 1, 1}, "5.4 other receiver format"},
    {"delaypic 62, 1, 0x0", {0x61EC0000}, DelayPic{62, 1, 0}, "5.4 other receiver format end"},
};
// clang-format on

TEST(IsaGolden, EncodeGivesTheReferenceWords) {
  for (const auto& v : kVectors) {
    const Encoded encoded = encode(v.instruction);
    EXPECT_EQ(std::vector<std::uint32_t>(encoded.span().begin(), encoded.span().end()), v.words)
        << v.source;
  }
}

TEST(IsaGolden, DecodeGivesTheInstruction) {
  for (const auto& v : kVectors) {
    const Decoded decoded = decode(v.words);
    EXPECT_EQ(decoded.instruction, v.instruction) << v.source;
    EXPECT_EQ(decoded.words, v.words.size()) << v.source;
  }
}

TEST(IsaGolden, DisassemblyAndParsing) {
  for (const auto& v : kVectors) {
    EXPECT_EQ(disassemble(v.instruction), v.text) << v.source;
    EXPECT_EQ(parse_instruction(v.text), v.instruction) << v.source;
  }
}

TEST(IsaGolden, SdkReceiverRowDecodesToSevenInstructionsFourOfThemSendpicp) {
  // §4.3: "It decodes to 7 instructions, 4 of them sendpicp (the first at
  // byte +8 from a 0x60000 base)".
  const std::vector<std::uint32_t> row = {0x64000082, 0x40A00032, 0xF6600000, 0x03014048,
                                          0xF6600000, 0x03095000, 0xF6600000, 0x04016000,
                                          0xF7200000, 0x19017000, 0x43A00000};
  const auto lines = disassemble_words(row, 0x60000);
  ASSERT_EQ(lines.size(), 7u);
  int sendpicps = 0;
  for (const auto& line : lines) {
    if (std::holds_alternative<SendPicP>(line.instruction)) {
      ++sendpicps;
      EXPECT_EQ(line.address % 8, 0u) << "sendpicp must be 8-aligned";
    }
  }
  EXPECT_EQ(sendpicps, 4);
  EXPECT_EQ(lines[2].address, 0x60008u);
  EXPECT_EQ(lines.back().instruction, Instruction{Br{Reg::m10}});
}

TEST(IsaGolden, PairedControlRoundTrip) {
  // §4.3 [T]: a sendpicp with PIC selector 1, value 1 round-trips; the
  // prior art read its PIC control back as 0x40001 (selector at bit 18).
  const SendPicP paired{1, 0, 0, 1, 0, 0x640, 1};
  const auto decoded = std::get<SendPicP>(decode(encode(paired).span()).instruction);
  EXPECT_EQ(decoded, paired);
  EXPECT_EQ((decoded.pic_selector << 18) | decoded.pic, 0x40001u);
}

TEST(IsaGolden, DirectionAtBit3WouldBeWrong) {
  // §4.3: encoding the direction at bit 3 "silently sets addr = 1 and sctl = 0".
  const auto sendpicp = std::get<SendPicP>(decode(std::vector<std::uint32_t>{0xF54A0109, 0x19015000}).instruction);
  EXPECT_EQ(sendpicp.sctl, 1u);
  EXPECT_EQ(sendpicp.source, 0x14021u);
}

TEST(IsaGolden, ReferenceMatchPatternsAreTheTablesOpcodes) {
  // §4.2: the match rules the prior art's decoder used.
  EXPECT_EQ(Delay::kSpec.match_mask(), 0xFFF80000u);
  EXPECT_EQ(Delay::kSpec.opcode, 0x40A00000u);
  EXPECT_EQ(DelayPic::kSpec.match_mask(), 0xFC000000u);
  EXPECT_EQ(DelayXpic::kSpec.match_mask(), 0xFC000000u);
  EXPECT_EQ(Send::kSpec.match_mask(), 0xF8000000u);
  EXPECT_EQ(SendOff::kSpec.match_mask(), 0xF8100000u);
  EXPECT_EQ(SendPic::kSpec.match_mask(), 0xF8100000u);
  EXPECT_EQ(SendPicP::kSpec.match_mask(), 0xF0000000u);
  EXPECT_EQ(Sync::kSpec.match_mask(), ~0xFFu);
}

TEST(IsaDecode, NopWinsOverSetziOfM14) {
  EXPECT_EQ(decode(std::vector<std::uint32_t>{kNopWord}).instruction, Instruction{Nop{}});
  EXPECT_EQ(decode(std::vector<std::uint32_t>{0x19E00001}).instruction,
            Instruction(Setzi{Reg::m14, 1}));
}

TEST(IsaDecode, UnknownWordsStayUnknown) {
  for (const std::uint32_t word : {0x00000000u, 0xFFFFFFFFu - 0xF0000000u, 0x43A00001u}) {
    const Decoded decoded = decode(std::vector<std::uint32_t>{word});
    EXPECT_EQ(decoded.instruction, Instruction{Unknown{word}}) << std::hex << word;
    EXPECT_EQ(disassemble(decoded.instruction), fmt::format(".word {:#010x}", word));
  }
}

TEST(IsaDecode, TruncatedSendpicpIsUnknown) {
  const Decoded decoded = decode(std::vector<std::uint32_t>{0xF54A0109});
  EXPECT_EQ(decoded.instruction, Instruction{Unknown{0xF54A0109}});
  EXPECT_EQ(decoded.words, 1u);
}

TEST(IsaDecode, SendpicWithAnOversizedXpicValueIsUnknown) {
  // control 0 (XPIC) with bit 13 of the value set: the encoder refuses it,
  // so the decoder must not produce it.
  const std::uint32_t word = 0x70100000 | (1u << 21) | 0x2000;
  EXPECT_EQ(decode(std::vector<std::uint32_t>{word}).instruction, Instruction{Unknown{word}});
  EXPECT_THROW(encode(SendPic{2, 0, 0x2000}), EncodingError);
  EXPECT_NO_THROW(encode(SendPic{2, 2, 0x2000}));
}

TEST(IsaDecode, SendoffCountIsSplitAcrossTwoSlices) {
  // 4096 words: count − 1 = 0xFFF, low 6 bits at 26:21, high 6 bits at 19:14.
  const Encoded encoded = encode(SendOff{4096, 0, 3});
  EXPECT_EQ(encoded.words[0], 0x70000000u | (0x3Fu << 21) | (0x3Fu << 14) | 3u);
  EXPECT_EQ(encode(SendOff{65, 0, 3}).words[0], 0x70000000u | (1u << 14) | 3u);
  EXPECT_EQ(decode(encoded.span()).instruction, (Instruction{SendOff{4096, 0, 3}}));
}

TEST(IsaEncode, OutOfRangeFieldsAreErrorsNamingInstructionFieldAndValue) {
  // §4.3 [T]: send rejects n−1 > 63, sctl > 7, word address > 0x3FFFF.
  const auto message = [](const Instruction& instruction) -> std::string {
    try {
      (void)encode(instruction);
    } catch (const EncodingError& error) {
      return error.what();
    }
    return "no error";
  };
  EXPECT_EQ(message(Send{65, 0, 3}), "send: field 'words' = 65 is out of range [1, 64]");
  EXPECT_EQ(message(Send{0, 0, 3}), "send: field 'words' = 0 is out of range [1, 64]");
  EXPECT_EQ(message(Send{1, 0, 8}), "send: field 'sctl' = 8 is out of range [0, 7]");
  EXPECT_EQ(message(Send{1, 0x40000, 3}),
            "send: field 'source' = 0x40000 is out of range [0x0, 0x3ffff]");
  EXPECT_EQ(message(Setzi{Reg::m1, 1u << 20}),
            "setzi: field 'value' = 0x100000 is out of range [0x0, 0xfffff]");
  EXPECT_EQ(message(Call{Reg::m10, 0x4C102}), "call: field 'target' = 0x4c102 is not a multiple of 4");
  EXPECT_EQ(message(Call{Reg::m10, 0x200000}),
            "call: field 'target' = 0x200000 is out of range [0x0, 0x1ffffc]");
  EXPECT_EQ(message(Add{Reg::m1, Reg::m1, 32768}),
            "add: field 'immediate' = 32768 is out of range [-32768, 32767]");
  EXPECT_EQ(message(Delay{0x80001}), "delay: field 'events' = 524289 is out of range [1, 524288]");
  EXPECT_EQ(message(DelayPic{129, 0, 0}), "delaypic: field 'events' = 129 is out of range [1, 128]");
  EXPECT_EQ(message(DelayXpic{4097, 0, 0}),
            "delayxpic: field 'events' = 4097 is out of range [1, 4096]");
  EXPECT_EQ(message(SendOff{4097, 0, 0}),
            "sendoff: field 'words' = 4097 is out of range [1, 4096]");
  EXPECT_EQ(message(Trap{16}), "trap: field 'code' = 16 is out of range [0, 15]");
  EXPECT_EQ(message(Add{Reg::m1, Reg::m1, -32768}), "no error");
  EXPECT_EQ(message(Delay{0x80000}), "no error");
}

TEST(IsaControlFlow, ImmediateCodeTargets) {
  EXPECT_EQ(code_target(Call{Reg::m10, 0x4CC08}), 0x4CC08u);
  EXPECT_EQ(code_target(Bri{0x4C010}), 0x4C010u);
  EXPECT_EQ(code_target(Brz{Reg::m2, 0x4C100}), 0x4C100u);
  EXPECT_EQ(code_target(Br{Reg::m10}), std::nullopt);  // a register, not an immediate
  EXPECT_EQ(code_target(Nop{}), std::nullopt);
  EXPECT_EQ(code_target(Unknown{0x18000000}), std::nullopt);
}

TEST(IsaSpecs, EveryRowHasAUniqueMnemonic) {
  std::set<std::string_view> seen;
  for (const auto* spec : all_specs()) {
    EXPECT_TRUE(seen.insert(spec->mnemonic).second) << spec->mnemonic;
  }
  EXPECT_EQ(seen.size(), 23u);  // §4.1–§4.3: 16 scalar/control + 7 exchange
}

TEST(IsaEncode, SetziOfM14ZeroIsRefusedBecauseItIsTheNopWord) {
  // 0x19000000 | 14 << 20 | 0 is 0x19E00000, nop's word: encoding it would
  // emit an instruction that leaves $m14 alone.
  try {
    (void)encode(Setzi{Reg::m14, 0});
    ADD_FAILURE() << "setzi $m14, 0 encoded";
  } catch (const EncodingError& error) {
    EXPECT_NE(std::string(error.what()).find("add $m14, $m15, 0"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(parse_instruction("setzi $m14, 0"), AssemblyError);
  EXPECT_EQ(encode(Add{Reg::m14, Reg::m15, 0}).words[0], 0x22FE0000u);
  EXPECT_NO_THROW(encode(Setzi{Reg::m14, 1}));
  EXPECT_NO_THROW(encode(Setzi{Reg::m13, 0}));
}

TEST(IsaPlacement, TheTablesAlignmentIsWhereAnInstructionMaySit) {
  // §2.5, §5.5 rule 5: sendpicp starts on an 8-byte boundary.
  const SendPicP pair{43, 0x14021, 1, 0, 0, 0x640, 0x15000};
  EXPECT_EQ(alignment_of(pair), 8u);
  EXPECT_EQ(alignment_of(Nop{}), 4u);
  EXPECT_EQ(misplacement(pair, 0x4C018), std::nullopt);
  EXPECT_EQ(misplacement(pair, 0x4C014),
            "sendpicp at 0x4c014: the instruction needs an 8-byte boundary");
  EXPECT_EQ(misplacement(Nop{}, 0x4C016),
            "nop at 0x4c016: the instruction needs a 4-byte boundary");
  EXPECT_THROW(encode_at(pair, 0x4C014), EncodingError);
  EXPECT_EQ(encode_at(pair, 0x4C018).words, encode(pair).words);
}

TEST(IsaPlacement, AssemblingAProgramChecksEveryInstructionAtItsAddress) {
  const SendPicP pair{43, 0x14021, 1, 0, 0, 0x640, 0x15000};
  try {
    (void)encode_program(std::vector<Instruction>{Nop{}, pair}, 0x4C010);
    ADD_FAILURE() << "a sendpicp at 0x4c014 assembled";
  } catch (const EncodingError& error) {
    EXPECT_EQ(std::string(error.what()),
              "instruction 1: sendpicp at 0x4c014: the instruction needs an 8-byte boundary");
  }
  EXPECT_EQ(encode_program(std::vector<Instruction>{Nop{}, Nop{}, pair}, 0x4C010),
            (std::vector<std::uint32_t>{kNopWord, kNopWord, 0xF54A0109, 0x19015000}));
}

TEST(AssemblyParse, AnIntegerHasOneSignAndItComesFirst) {
  const auto error_of = [](std::string_view text) -> std::string {
    try {
      (void)parse_instruction(text);
    } catch (const AssemblyError& error) {
      return error.what();
    }
    return "no error";
  };
  for (const char* text :
       {"add $m1, $m2, --5", "add $m1, $m2, 0x-5", "add $m1, $m2, -0x-5", "add $m1, $m2, +5",
        "add $m1, $m2, --9223372036854775808", "add $m1, $m2, -0x-8000000000000000",
        "add $m1, $m2, -", "add $m1, $m2, -0x"}) {
    EXPECT_NE(error_of(text).find("is not a number"), std::string::npos)
        << text << ": " << error_of(text);
  }
  EXPECT_EQ(parse_instruction("add $m1, $m2, -5"), (Instruction{Add{Reg::m1, Reg::m2, -5}}));
  EXPECT_EQ(parse_instruction("add $m1, $m2, -0x8000"),
            (Instruction{Add{Reg::m1, Reg::m2, -32768}}));
  // The most negative 64-bit value is a number, just not one the field holds.
  EXPECT_NE(error_of("add $m1, $m2, -9223372036854775808").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("add $m1, $m2, -9223372036854775809").find("is not a number"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::target::isa
