// Progress lines: drawn in place on a terminal with phase, % and elapsed
// time, names escaped, erased at the end; nothing at all when stderr is not a
// terminal (the tessera binary run through a pipe).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/progress.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::cli {
namespace {

TEST(Progress, DrawsPhasePercentAndElapsedInPlaceThenErasesTheLine) {
  std::ostringstream terminal;
  {
    Progress progress(&terminal, std::chrono::milliseconds(5));
    progress.phase("host call 'run\x1b' (1 of 2)", 0.5);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the ticker redraws
    progress.hide();
    progress.phase("writing out.ipuexe");
  }
  const std::string text = terminal.str();
  EXPECT_NE(text.find("\r\x1b[Ktessera: host call 'run\\u001b' (1 of 2)   50 %  0."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\r\x1b[Ktessera: writing out.ipuexe  0."), std::string::npos) << text;
  EXPECT_GE(std::count(text.begin(), text.end(), '\r'), 4) << "redrawn while the phase ran";
  EXPECT_EQ(text.find('\n'), std::string::npos) << "never a new line";
  EXPECT_TRUE(text.ends_with("\r\x1b[K")) << "the line is erased at the end";
}

TEST(Progress, IsSilentWithoutATerminal) {
  Progress progress(nullptr);
  progress.phase("compiling", 0.1);
  progress.hide();
}

TEST(Progress, CompileAndRunPrintNothingOnAPipedStderr) {
  tessera::testing::ScratchDirectory scratch;
  const std::string graph = scratch.path("g.json"), package = scratch.path("g.ipuexe");
  std::ofstream(graph) << R"({"format": "tessera.graph", "version": 1, "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [4], "result": "x"},
    {"op": "copy", "inputs": ["x"], "result": "y"},
    {"op": "host_output", "name": "y", "inputs": ["y"]}]})";
  const auto compiled =
      tessera::testing::run_tessera({"compile", graph, "-o", package, "--tiles", "2"});
  EXPECT_EQ(compiled.exit_status, 0);
  EXPECT_EQ(compiled.err, "");
  const std::string x = scratch.path("x.bin");
  std::ofstream(x, std::ios::binary) << std::string(16, '\0');
  const auto ran = tessera::testing::run_tessera(
      {"run", package, "-i", "x=" + x, "-o", "y=" + scratch.path("y.bin")});
  EXPECT_EQ(ran.exit_status, 0) << ran.err;
  EXPECT_EQ(ran.err, "");
}

}  // namespace
}  // namespace tessera::cli
