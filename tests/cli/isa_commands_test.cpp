// `tessera disasm` and `tessera asm` as a user runs them.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/scratch.hpp"

namespace {

using ScratchDir = tessera::testing::ScratchDirectory;

tessera::testing::ProcessResult tessera(std::vector<std::string> args) {
  return tessera::testing::run_tessera(std::move(args));
}

TEST(DisasmCommand, PrintsASendAndTheRowReturn) {
  // The example: `tessera disasm 0x782A03CB 0x43A00000`.
  const auto result = tessera({"disasm", "0x782A03CB", "0x43A00000"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "00000000  782a03cb           send 2, 0x14079, 3\n"
            "00000004  43a00000           br $m10\n");
}

TEST(DisasmCommand, TwoWordInstructionsAndUnknownWordsAtABase) {
  const auto result = tessera({"disasm", "--base", "0x60000", "F54A0109", "19015000", "1234"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "00060000  f54a0109 19015000  sendpicp 43, 0x14021, 1, 0, 0, 0x640, 0x15000\n"
            "00060008  00001234           .word 0x00001234\n");
}

TEST(DisasmCommand, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(tessera({"disasm"}).exit_status, 2);
  EXPECT_EQ(tessera({"disasm", "xyz"}).exit_status, 2);
  EXPECT_EQ(tessera({"disasm", "1FFFFFFFF"}).exit_status, 2);
  EXPECT_EQ(tessera({"disasm", "--base", "2", "0"}).exit_status, 2);
  EXPECT_EQ(tessera({"disasm", "--file", "x.bin", "0"}).exit_status, 2);
}

TEST(DisasmCommand, FileErrorsAreOneLineFailures) {
  ScratchDir dir;
  const auto missing = tessera({"disasm", "--file", dir.path("missing.bin")});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_NE(missing.err.find("missing.bin"), std::string::npos);

  std::ofstream(dir.path("odd.bin")) << "12345";
  const auto odd = tessera({"disasm", "--file", dir.path("odd.bin")});
  EXPECT_EQ(odd.exit_status, 1);
  EXPECT_NE(odd.err.find("size 5 is not a whole number of 32-bit words"), std::string::npos)
      << odd.err;
}

TEST(AsmCommand, AssemblesToTheReferenceWords) {
  // §4.5 wrapper vector for XREQ owner 4: 19800604 438080A0 4180000F.
  const auto result = tessera({"asm", "setzi $m8, 0x604", "put $A0, $m8", "sync 15"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out, "19800604\n438080a0\n4180000f\n");
}

TEST(AsmCommand, RawFileRoundTripsThroughDisasm) {
  ScratchDir dir;
  const auto source = dir.path("row.s");
  std::ofstream(source) << "# SDK receiver row, first three instructions\n"
                           "delayxpic 1, 0, 0x82\n"
                           "\n"
                           "delay 51   # until event 52\n"
                           "sendpicp 52, 0x0, 0, 0, 0, 0xc0, 0x14048\n";
  const auto raw = dir.path("row.bin");
  const auto assembled = tessera({"asm", "--file", source, "-o", raw});
  ASSERT_EQ(assembled.exit_status, 0) << assembled.err;
  EXPECT_EQ(assembled.out, "");
  EXPECT_EQ(std::filesystem::file_size(raw), 16u);

  const auto listing = tessera({"disasm", "--file", raw});
  EXPECT_EQ(listing.exit_status, 0) << listing.err;
  EXPECT_EQ(listing.out,
            "0004c010  64000082           delayxpic 1, 0, 0x82\n"
            "0004c014  40a00032           delay 51\n"
            "0004c018  f6600000 03014048  sendpicp 52, 0x0, 0, 0, 0, 0xc0, 0x14048\n");
}

TEST(AsmCommand, OutOfRangeOperandNamesLineFieldAndValue) {
  ScratchDir dir;
  const auto source = dir.path("bad.s");
  std::ofstream(source) << "nop\nsend 65, 0x0, 3\n";
  const auto result = tessera({"asm", "--file", source});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_EQ(result.out, "") << "nothing is printed when any line is wrong";
  EXPECT_NE(result.err.find("bad.s 2: send: field 'words' = 65 is out of range [1, 64]"),
            std::string::npos)
      << result.err;
}

TEST(AsmCommand, EachInstructionIsCheckedWhereItWillSit) {
  // From the load base 0x4c010, a sendpicp after one nop lands at 0x4c014.
  const std::string pair = "sendpicp 52, 0x0, 0, 0, 0, 0xc0, 0x14048";
  const auto misaligned = tessera({"asm", "nop", pair});
  EXPECT_EQ(misaligned.exit_status, 1);
  EXPECT_NE(misaligned.err.find("argument 2: sendpicp at 0x4c014: the instruction needs an 8-byte "
                                "boundary"),
            std::string::npos)
      << misaligned.err;
  const auto aligned = tessera({"asm", "--base", "0x4c00c", "nop", pair});
  EXPECT_EQ(aligned.exit_status, 0) << aligned.err;
  EXPECT_EQ(aligned.out, "19e00000\nf6600000 03014048\n");
}

}  // namespace
