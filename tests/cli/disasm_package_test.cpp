// `tessera disasm PACKAGE --tile T` on real package files: the ring package
// (code with kernel calls and full debug records) and the sample package
// (one tile with debug records, one without).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schema/writer.hpp"
#include "support/little_endian.hpp"
#include "target/isa.hpp"
#include "target/topology.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/runtime/ring_package.hpp"
#include "tests/testing/sample_package.hpp"
#include "tests/testing/scratch.hpp"

namespace {

using tessera::target::PhysicalTile;
using tessera::testing::ProcessResult;

ProcessResult tessera_cli(std::vector<std::string> args) {
  return tessera::testing::run_tessera(std::move(args));
}

// Every line of `expected` appears in `text`, in this order.
void expect_lines_in_order(const std::string& text, const std::vector<std::string>& expected) {
  std::size_t from = 0;
  for (const auto& line : expected) {
    const std::size_t at = text.find(line, from);
    ASSERT_NE(at, std::string::npos) << "missing, or out of order: '" << line << "' in\n" << text;
    from = at + line.size();
  }
}

class DisasmPackage : public ::testing::Test {
 protected:
  DisasmPackage() {
    // Compute tiles L0 and L1 (p0 and p2); 256 words per tile is 1024 bytes per operand.
    ring_ = scratch_.path("ring.ipuexe");
    tessera::schema::write_package(
        tessera::runtime::testing::ring_package({{PhysicalTile(0), PhysicalTile(2)}, 256}),
        ring_);
    sample_ = scratch_.path("sample.ipuexe");
    tessera::schema::write_package(tessera::testing::sample_application(), sample_);
  }

  tessera::testing::ScratchDirectory scratch_;
  std::string ring_;
  std::string sample_;
};

TEST_F(DisasmPackage, ListsATilesCodeWithLabelsCallSitesAndTheEntryPoint) {
  const auto result = tessera_cli({"disasm", ring_, "--tile", "p0"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  expect_lines_in_order(
      result.out,
      {"tile p0 (L0): entry point 0x4c010, ",
       "\nsegment [0x4c010, ",
       "0004c010  41800007           sync 7  ; entry point\n",
       "0004c024  18a13300           call $m10, 0x4cc00  ; tessera_copy_words\n"
       "          ; call site: tessera_copy_words  <- host input x\n"
       "          ;   $m2 → x [0x60000, +1024) write\n"
       "          ;   $m3 → h2d staging [0x50180, +1024) read\n",
       "0004c038  18a13302           call $m10, 0x4cc08  ; tessera_add_u32\n"
       "          ; call site: tessera_add_u32  <- y0 = add(x, x)\n"
       "          ;   $m2 → y0 [0x64000, +1024) write\n"
       "          ;   $m3 → x [0x60000, +1024) read\n"
       "          ;   $m4 → x [0x60000, +1024) read\n"
       "0004c03c  41800003           sync 3\n",
       "\nsegment [0x4cc00, 0x4cc0c)  R-X  12 bytes\n"
       "tessera_copy_words:\n"
       "0004cc00  43a00000           br $m10\n"
       "0004cc04  19e00000           nop\n"
       "tessera_add_u32:\n"
       "0004cc08  43a00000           br $m10\n"});
  EXPECT_EQ(result.out.find("; note:"), std::string::npos) << result.out;
}

TEST_F(DisasmPackage, SegmentsComeInAddressOrderAndDataIsNotListed) {
  const auto result = tessera_cli({"disasm", ring_, "--tile", "p0"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  expect_lines_in_order(result.out, {"\nsegment [0x4c010, ", "\nsegment [0x4cc00, ",
                                     "\nsegment [0x4d000, ", "\nsegment [0x58000, "});
  EXPECT_EQ(result.out.find("R-- "), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("RW- "), std::string::npos) << result.out;
}

TEST_F(DisasmPackage, TakesALogicalTile) {
  const auto physical = tessera_cli({"disasm", ring_, "--tile", "2"});
  const auto logical = tessera_cli({"disasm", ring_, "-t", "L1"});
  ASSERT_EQ(logical.exit_status, 0) << logical.err;
  EXPECT_TRUE(logical.out.starts_with("tile p2 (L1): ")) << logical.out;
  EXPECT_EQ(logical.out, physical.out);
}

TEST_F(DisasmPackage, ATileWithoutDebugRecordsIsListedWithoutNames) {
  const auto result = tessera_cli({"disasm", sample_, "--tile", "p0"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  expect_lines_in_order(
      result.out, {"tile p0 (L0): entry point 0x4c010, 1 executable segment; no debug records, "
                   "so no names\n",
                   "\nsegment [0x4c010, 0x4c090)  R-X  128 bytes (64 from the package, then zeros)\n",
                   "0004c010  ", "  ; entry point\n", "0004c050  ; 64 zero bytes to 0x4c090\n"});
}

TEST_F(DisasmPackage, RecordsNoInstructionStartsAtAreNoted) {
  // Tile p5's call site (0x4c018) lands on the second word of a sendpicp.
  auto app = tessera::testing::sample_application();
  std::vector<std::uint32_t> words(16, tessera::target::isa::kNopWord);
  words[1] = 0xF54A0109;
  words[2] = 0x19015000;
  auto& code = app.tiles[1].segments[0];
  code.blob = app.blobs.add(tessera::words_to_bytes(words));
  code.blob_offset = 0;
  code.file_size = code.memory_size = static_cast<std::uint32_t>(4 * words.size());
  const std::string path = scratch_.path("notes.ipuexe");
  tessera::schema::write_package(app, path);
  const auto result = tessera_cli({"disasm", path, "--tile", "p5"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  expect_lines_in_order(result.out,
                        {"0004c014  f54a0109 19015000  sendpicp ", "gemm_f16:\n0004c020  19e00000 ",
                         "\n; note: call site 0x4c018 (gemm_f16) does not start a listed "
                         "instruction\n"});
}

TEST_F(DisasmPackage, SymbolsListsSymbolsAndAllocations) {
  const auto result = tessera_cli({"disasm", sample_, "--tile", "p5", "--symbols"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "tile p5 (L182): entry point 0x4c010\n"
            "symbol      0x4c020     32  kernel         gemm_f16\n"
            "symbol      0x60080     64  data           weights\n"
            "allocation  0x60000     64  tensor         #1 x  <- graph: copy %1\n"
            "allocation  0x60040     32  tensor         #3 y  <- graph: matmul %3\n"
            "allocation  0x60080     64  tensor         #2 w  <- graph: matmul %3\n");
}

TEST_F(DisasmPackage, AnUnknownTileNamesThePackagesTiles) {
  const auto result = tessera_cli({"disasm", sample_, "--tile", "p7"});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "tessera disasm: error: " + sample_ +
                            ": p7 is not one of the package's 2 tiles (p0, p5)\n");
}

TEST_F(DisasmPackage, BadArgumentsAreUsageErrors) {
  const auto malformed = tessera_cli({"disasm", sample_, "--tile", "q7"});
  EXPECT_EQ(malformed.exit_status, 2);
  EXPECT_NE(malformed.err.find("--tile q7: 'q7' is not a tile"), std::string::npos)
      << malformed.err;
  const auto off_chip = tessera_cli({"disasm", sample_, "--tile", "p1472"});
  EXPECT_EQ(off_chip.exit_status, 2);
  EXPECT_NE(off_chip.err.find("p1472 is not a C600 tile"), std::string::npos) << off_chip.err;
  const auto no_tile = tessera_cli({"disasm", sample_});
  EXPECT_EQ(no_tile.exit_status, 2);
  EXPECT_NE(no_tile.err.find("is a package: give --tile T too"), std::string::npos) << no_tile.err;
  EXPECT_EQ(tessera_cli({"disasm", "--tile", "p0"}).exit_status, 2);
  EXPECT_EQ(tessera_cli({"disasm", sample_, sample_, "--tile", "p0"}).exit_status, 2);
  EXPECT_EQ(tessera_cli({"disasm", sample_, "--tile", "p0", "--base", "0x4c010"}).exit_status, 2);
  EXPECT_EQ(tessera_cli({"disasm", "--symbols", "0"}).exit_status, 2);
}

TEST_F(DisasmPackage, AMissingOrBrokenPackageIsAOneLineFailure) {
  const auto missing = tessera_cli({"disasm", scratch_.path("missing.ipuexe"), "--tile", "p0"});
  EXPECT_EQ(missing.exit_status, 1);
  EXPECT_NE(missing.err.find("missing.ipuexe"), std::string::npos) << missing.err;
  const auto not_a_package =
      tessera_cli({"disasm", scratch_.write("junk.ipuexe", "not a package"), "--tile", "p0"});
  EXPECT_EQ(not_a_package.exit_status, 1);
  EXPECT_TRUE(not_a_package.err.starts_with("tessera disasm: error: ")) << not_a_package.err;
  EXPECT_EQ(not_a_package.err.find('\n'), not_a_package.err.size() - 1) << not_a_package.err;
}

}  // namespace
