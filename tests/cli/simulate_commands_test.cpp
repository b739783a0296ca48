// `tessera pack` and `tessera simulate`: a hand-written program on the
// simulated chip, as a user runs it.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/scratch.hpp"

namespace {

using tessera::testing::run_tessera;

class SimulateCommand : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    return scratch_.write(name, text);
  }
  std::string path(const std::string& name) const { return scratch_.path(name); }
  tessera::testing::ScratchDirectory scratch_;
};

constexpr const char* kProgram =
    "setzi $m1, 0x60000\n"
    "setzi $m2, 42\n"
    "st32 $m2, $m1, $m15, 0\n"
    "sync 3          # every tile meets here\n"
    "setzi $m0, 0\n"
    "br $m0          # halt\n";

TEST_F(SimulateCommand, PackThenSimulateOnEveryTile) {
  const auto source = write("program.s", kProgram);
  const auto package = path("program.ipuexe");
  const auto packed = run_tessera({"pack", source, "-o", package});
  ASSERT_EQ(packed.exit_status, 0) << packed.err;
  EXPECT_NE(packed.out.find("6 instruction words on 1472 tiles"), std::string::npos) << packed.out;

  const auto report = path("report.json");
  const auto trace = path("trace.json");
  const auto run = run_tessera({"simulate", package, "--report", report, "--trace", trace});
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  // Four instructions, the device-wide sync (600), two more instructions.
  EXPECT_NE(run.out.find("all tiles halted after 636 cycles"), std::string::npos) << run.out;
  const auto json = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(json["totalCycles"], 636);
  EXPECT_EQ(json["tiles"].size(), 1472u);
  const auto spans = nlohmann::json::parse(std::ifstream(trace));
  EXPECT_GT(spans["traceEvents"].size(), 1472u);
}

TEST_F(SimulateCommand, SimulateReportsAFaultAndExitsOne) {
  const auto source = write("bad.s", "setzi $m1, 0x40000\nst32 $m1, $m1, $m15, 0\n");
  const auto package = path("bad.ipuexe");
  ASSERT_EQ(run_tessera({"pack", source, "-o", package, "--tiles", "2"}).exit_status, 0);
  const auto faults = path("faults.json");
  const auto run = run_tessera({"simulate", package, "--faults", faults});
  EXPECT_EQ(run.exit_status, 1);
  EXPECT_NE(run.out.find("fault: InvalidAddress on p0 (supervisor) at pc 0x4c014"), std::string::npos)
      << run.out;
  const auto json = nlohmann::json::parse(std::ifstream(faults));
  EXPECT_EQ(json[0]["kind"], "InvalidAddress");
}

TEST_F(SimulateCommand, SimulateStopsAtTheCycleLimit) {
  const auto source = write("loop.s", "bri 0x4c010\n");
  const auto package = path("loop.ipuexe");
  ASSERT_EQ(run_tessera({"pack", source, "-o", package, "--tiles", "1"}).exit_status, 0);
  const auto run = run_tessera({"simulate", package, "--cycles", "100000"});
  EXPECT_EQ(run.exit_status, 1);
  EXPECT_NE(run.out.find("cycle limit"), std::string::npos) << run.out;
}

TEST_F(SimulateCommand, AnyThreadCountGivesTheSameReport) {
  const auto source = write("program.s", kProgram);
  const auto package = path("program.ipuexe");
  ASSERT_EQ(run_tessera({"pack", source, "-o", package}).exit_status, 0);
  std::vector<std::string> reports;
  for (const char* threads : {"1", "2", "3"}) {
    const auto report = path(std::string("report") + threads + ".json");
    const auto run = run_tessera({"simulate", package, "--threads", threads, "--report", report});
    ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
    std::ifstream in(report);
    reports.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_EQ(reports[1], reports[0]);
  EXPECT_EQ(reports[2], reports[0]);
  for (const char* bad : {"0", "-1", "1025", "two"}) {
    const auto run = run_tessera({"simulate", package, "--threads", bad});
    EXPECT_EQ(run.exit_status, 2) << bad;
    EXPECT_NE(run.err.find("--threads"), std::string::npos) << run.err;
  }
}

TEST_F(SimulateCommand, PackRejectsBadInput) {
  EXPECT_EQ(run_tessera({"pack", write("e.s", "# nothing\n"), "-o", path("e.ipuexe")}).exit_status, 1);
  EXPECT_EQ(run_tessera({"pack", write("x.s", "nop\n"), "-o", path("x.ipuexe"), "--tiles", "0"})
                .exit_status,
            2);
  const auto bad = run_tessera({"pack", write("y.s", "nop\nfrob 1\n"), "-o", path("y.ipuexe")});
  EXPECT_EQ(bad.exit_status, 1);
  EXPECT_NE(bad.err.find("y.s 2: unknown mnemonic 'frob'"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(path("y.ipuexe")));
}

}  // namespace
