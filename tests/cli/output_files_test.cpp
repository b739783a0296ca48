// Every file a command writes goes through the one atomic writer
// (support/atomic_file.hpp): a planted symlink never redirects it, a write
// the OS refuses (`ulimit -f`) leaves the old file whole, and the error
// names the file with the OS's reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/process.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::run_process;
using testing::run_tessera;

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `tessera ARGS...` with files limited to 512 bytes (`ulimit -f 1`) and
// SIGXFSZ ignored, so an oversized write fails with EFBIG instead of
// killing the process.
testing::ProcessResult run_tessera_with_small_files(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\"",
                                   TESSERA_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

std::vector<std::string> names_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class OutputFiles : public ::testing::Test {
 protected:
  OutputFiles() {
    std::string program;
    for (int i = 0; i < 300; ++i) program += "setzi $m1, 0x60000\n";  // 1200 bytes of code
    program += "setzi $m0, 0\nbr $m0\n";
    source_ = scratch_.write("program.s", program);
  }
  testing::ScratchDirectory scratch_;
  std::string source_;
};

// Issue 15 item 7: a symlink planted at PATH.partial made `tessera pack`
// overwrite its target and leave the package a symlink to it.
TEST_F(OutputFiles, PackNeverWritesThroughAPlantedSymlink) {
  const std::string victim = scratch_.write("victim", "precious");
  const std::string package = scratch_.path("program.ipuexe");
  fs::create_symlink(victim, package + ".partial");
  const auto packed = run_tessera({"pack", source_, "-o", package, "--tiles", "1"});
  ASSERT_EQ(packed.exit_status, 0) << packed.err;
  EXPECT_EQ(contents(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(package));
  EXPECT_EQ(run_tessera({"validate", package}).exit_status, 0);
}

// Issue 15 item 9: `tessera asm -o` truncated the file in place, so under
// `ulimit -f` an existing file became a half-written one, and the error
// said only "cannot write".
TEST_F(OutputFiles, AsmOutputIsAllOrNothingAndSaysWhy) {
  const std::string raw = scratch_.write("program.raw", "old contents");
  const auto result = run_tessera_with_small_files({"asm", "--file", source_, "-o", raw});
  EXPECT_EQ(result.exit_status, 1) << result.err;
  EXPECT_NE(result.err.find(raw + ": cannot write: File too large"), std::string::npos)
      << result.err;
  EXPECT_EQ(contents(raw), "old contents");
  EXPECT_EQ(names_in(scratch_.path("")), (std::vector<std::string>{"program.raw", "program.s"}));
}

TEST_F(OutputFiles, SimulateReportsAreAllOrNothingAndSayWhy) {
  const std::string package = scratch_.path("program.ipuexe");
  ASSERT_EQ(run_tessera({"pack", source_, "-o", package, "--tiles", "64"}).exit_status, 0);
  for (const std::string option : {"--report", "--faults", "--trace"}) {
    const std::string file = scratch_.write("out.json", "old contents");
    const auto result = run_tessera_with_small_files({"simulate", package, option, file});
    if (option == "--faults") {
      // No faults: "[]" fits, and replaces the old contents whole.
      EXPECT_EQ(result.exit_status, 0) << result.err;
      EXPECT_EQ(contents(file), "[]\n");
      continue;
    }
    EXPECT_EQ(result.exit_status, 1) << option << ": " << result.err;
    EXPECT_NE(result.err.find(file + ": cannot write: File too large"), std::string::npos)
        << option << ": " << result.err;
    EXPECT_EQ(contents(file), "old contents") << option;
    EXPECT_EQ(names_in(scratch_.path("")),
              (std::vector<std::string>{"out.json", "program.ipuexe", "program.s"}));
  }
}

}  // namespace
}  // namespace tessera
