// `tessera profile` as a user runs it: a graph of several operators compiled,
// run on the simulator with --profile, and read back. The oracle is the run's
// Chrome trace (written from the simulator's spans, not through the profile's
// splitting of them into steps) and sums taken here over the JSON rows; bad
// profile files are clear one-line errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

using nlohmann::json;
using testing::run_tessera;

// Five operators the compiler lowers today, each feeding the next.
constexpr const char* kGraph = R"({
  "format": "tessera.graph", "version": 1,
  "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [16, 8], "result": "x"},
    {"op": "add", "inputs": ["x", "x"], "result": "doubled"},
    {"op": "transpose", "inputs": ["doubled"], "permutation": [1, 0], "result": "t"},
    {"op": "slice", "inputs": ["t"], "begin": [0, 0], "end": [8, 12], "result": "head"},
    {"op": "concat", "inputs": ["head", "head"], "axis": 1, "result": "joined"},
    {"op": "reduce_sum", "inputs": ["joined"], "axes": [0], "result": "s"},
    {"op": "host_output", "name": "s", "inputs": ["s"]},
    {"op": "host_output", "name": "t", "inputs": ["t"]}
  ]
})";

class ProfileCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new tessera::testing::ScratchDirectory();
    const std::string graph = scratch_->path("graph.json");
    std::ofstream(graph) << kGraph;
    package_ = scratch_->path("graph.ipuexe");
    const auto compiled =
        run_tessera({"compile", graph, "-o", package_, "--tiles", "8", "--report"});
    ASSERT_EQ(compiled.exit_status, 0) << compiled.err;
    // The compiler's own horizon per phase: the oracle for the planned ones.
    const std::regex phase_line(R"(phase +(\d+):.* horizon +(\d+) events)");
    for (auto it = std::sregex_iterator(compiled.out.begin(), compiled.out.end(), phase_line);
         it != std::sregex_iterator(); ++it) {
      compiler_horizons_[std::stoull((*it)[1].str())] = std::stoull((*it)[2].str());
    }
    std::vector<float> x(128);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i);
    std::vector<std::uint8_t> bytes(x.size() * 4);
    std::memcpy(bytes.data(), x.data(), bytes.size());
    const std::string x_npy = scratch_->path("x.npy");
    runtime::write_tensor_file(x_npy, runtime::HostTensor(schema::DType::kF32, {16, 8}, bytes));
    profile_ = scratch_->path("run.profile");
    const std::string trace = scratch_->path("trace.json");
    const auto run =
        run_tessera({"run", package_, "-i", "x=" + x_npy, "-o", "s=" + scratch_->path("s.npy"),
                     "--profile", profile_, "--trace", trace});
    ASSERT_EQ(run.exit_status, 0) << run.err;
    std::smatch match;
    ASSERT_TRUE(std::regex_search(run.out, match, std::regex(R"(after (\d+) simulated cycles)")))
        << run.out;
    halt_cycle_ = std::stoull(match[1].str());
    // The trace's spans in cycles (its times are microseconds at the clock).
    const json events = json::parse(std::ifstream(trace))["traceEvents"];
    for (const auto& event : events) {
      if (event["ph"] != "X") continue;
      const double to_cycles = 1500.0;  // SimOptions' default clock, 1.5 GHz
      const auto start = std::llround(event["ts"].get<double>() * to_cycles);
      const auto length = std::llround(event["dur"].get<double>() * to_cycles);
      trace_end_ = std::max<std::uint64_t>(trace_end_, static_cast<std::uint64_t>(start + length));
      trace_cycles_by_tile_[event["tid"].get<unsigned>()] += static_cast<std::uint64_t>(length);
    }
  }
  static void TearDownTestSuite() { delete scratch_; }

  static json profile_json(std::vector<std::string> extra) {
    std::vector<std::string> args = {"profile", profile_, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run_tessera(args);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return json::parse(result.out);
  }

  static tessera::testing::ScratchDirectory* scratch_;
  static std::string package_, profile_;
  static std::uint64_t halt_cycle_;
  static std::uint64_t trace_end_;
  static std::map<unsigned, std::uint64_t> trace_cycles_by_tile_;
  static std::map<std::uint64_t, std::uint64_t> compiler_horizons_;
};

tessera::testing::ScratchDirectory* ProfileCommand::scratch_ = nullptr;
std::string ProfileCommand::package_, ProfileCommand::profile_;
std::uint64_t ProfileCommand::halt_cycle_ = 0;
std::uint64_t ProfileCommand::trace_end_ = 0;
std::map<unsigned, std::uint64_t> ProfileCommand::trace_cycles_by_tile_;
std::map<std::uint64_t, std::uint64_t> ProfileCommand::compiler_horizons_;

TEST_F(ProfileCommand, AttributesTheRunsCyclesToNamedOperations) {
  const json doc = profile_json({"--by", "operation", "--limit", "0"});
  const json& summary = doc["summary"];
  EXPECT_EQ(summary["tiles"], 8);
  // Every tile starts at cycle 0 on the simulator's shared clock: the run
  // lasts until the trace's last span ends. Tiles run ahead of the SystemC
  // clock, so that is at or after the cycle `run` reports the halt at.
  const auto total = summary["totalCycles"].get<std::uint64_t>();
  EXPECT_EQ(total, trace_end_);
  EXPECT_GE(total, halt_cycle_);
  const auto named = summary["namedOperationCycles"].get<std::uint64_t>();
  const auto steps = summary["stepCycles"].get<std::uint64_t>();
  ASSERT_GT(steps, 0u);
  EXPECT_GE(static_cast<double>(named), 0.99 * static_cast<double>(steps))
      << named << " of " << steps << " step cycles name an operation";
  std::uint64_t grouped = 0;
  std::set<std::string> operators;
  for (const auto& group : doc["groups"]) {
    grouped += group["cycles"].get<std::uint64_t>();
    const std::string name = group["name"];
    for (const char* op : {"add", "transpose", "slice", "concat", "reduce_sum"}) {
      if (name.find(std::string("(") + op + " ") != std::string::npos) operators.insert(op);
    }
  }
  EXPECT_EQ(grouped, steps);  // the groups partition the steps
  EXPECT_EQ(operators,
            (std::set<std::string>{"add", "concat", "reduce_sum", "slice", "transpose"}));
  // The shares of the kinds cover every tile's time once.
  std::uint64_t tile_cycles = 0;
  for (const auto& [kind, value] : summary["kinds"].items())
    tile_cycles += value["tileCycles"].get<std::uint64_t>();
  EXPECT_EQ(tile_cycles, 8 * total);
  // Splitting the spans into steps loses no cycle of any tile.
  const json tiles = profile_json({"--by", "tile", "--limit", "0"});
  ASSERT_EQ(tiles["groups"].size(), trace_cycles_by_tile_.size());
  for (const auto& group : tiles["groups"]) {
    const auto tile = static_cast<unsigned>(std::stoul(group["name"].get<std::string>().substr(1)));
    EXPECT_EQ(group["cycles"].get<std::uint64_t>(), trace_cycles_by_tile_[tile]) << group.dump();
  }
}

TEST_F(ProfileCommand, KernelsExchangeAndFiltersShowInTheTables) {
  const json kinds = profile_json({"--by", "kind"});
  std::set<std::string> names;
  for (const auto& group : kinds["groups"]) names.insert(group["name"]);
  EXPECT_TRUE(names.count("compute") && names.count("exchange")) << kinds.dump();
  const json kernels = profile_json({"--by", "kernel", "--filter", "kind=compute"});
  bool sum_kernel = false;
  for (const auto& group : kernels["groups"]) {
    sum_kernel = sum_kernel || group["name"].get<std::string>().find("sum") != std::string::npos;
    EXPECT_GE(group["max"].get<std::uint64_t>(), group["p95"].get<std::uint64_t>());
    EXPECT_GE(group["p95"].get<std::uint64_t>(), group["p50"].get<std::uint64_t>());
  }
  EXPECT_TRUE(sum_kernel) << kernels.dump();
  // The 8 tiles are spread over the chip; two of them sit in the first row.
  const json first_row = profile_json({"--by", "tile", "--filter", "tiles=p0-p63"});
  std::set<std::string> row;
  for (const auto& group : first_row["groups"]) row.insert(group["name"]);
  EXPECT_EQ(row.size(), 2u) << first_row.dump();
  for (const auto& name : row) EXPECT_LT(std::stoul(name.substr(1)), 64u) << name;

  const auto text = run_tessera({"profile", profile_, "--by", "operation"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("critical tile"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("avg tiles"), std::string::npos) << text.out;
}

TEST_F(ProfileCommand, MemoryComesFromThePackage) {
  const json doc = profile_json({"--package", package_, "--memory", "--tile", "p0"});
  ASSERT_EQ(doc["memory"].size(), 8u);
  for (const auto& tile : doc["memory"]) {
    const auto used = tile["usedBytes"].get<std::uint64_t>();
    EXPECT_EQ(used + tile["freeBytes"].get<std::uint64_t>(), 0x9C000u);
    EXPECT_GT(tile["code"].get<std::uint64_t>(), 0u);
  }
  EXPECT_FALSE(doc["allocationMap"]["allocations"].empty());
  const auto text = run_tessera({"profile", profile_, "--package", package_, "--memory"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("fullest tiles"), std::string::npos) << text.out;

  const auto no_package = run_tessera({"profile", profile_, "--memory"});
  EXPECT_EQ(no_package.exit_status, 2);
  EXPECT_NE(no_package.err.find("--memory needs --package"), std::string::npos) << no_package.err;
}

TEST_F(ProfileCommand, ExchangePhasesPlannedAgainstMeasured) {
  ASSERT_FALSE(compiler_horizons_.empty());
  const json doc = profile_json({"--package", package_, "--exchange"});
  std::map<std::uint64_t, std::uint64_t> planned;
  for (const auto& phase : doc["exchangePhases"]) {
    ASSERT_FALSE(phase["planned"].is_null()) << phase.dump();
    planned[phase["round"].get<std::uint64_t>()] = phase["planned"].get<std::uint64_t>();
    EXPECT_EQ(phase["tiles"], 8);
    // A row costs its events and no less on the simulator.
    EXPECT_GE(phase["measured"].get<std::uint64_t>(), phase["planned"].get<std::uint64_t>());
  }
  EXPECT_EQ(planned, compiler_horizons_);
  const json without = profile_json({"--exchange"});
  for (const auto& phase : without["exchangePhases"]) EXPECT_TRUE(phase["planned"].is_null());
}

TEST_F(ProfileCommand, AnotherPackagesProfileIsRefused) {
  const std::string graph = scratch_->path("other.json");
  std::ofstream(graph) << R"({"format": "tessera.graph", "version": 1, "operations": [
    {"op": "host_input", "name": "x", "dtype": "f32", "shape": [4], "result": "x"},
    {"op": "copy", "inputs": ["x"], "result": "y"},
    {"op": "host_output", "name": "y", "inputs": ["y"]}]})";
  const std::string other = scratch_->path("other.ipuexe");
  ASSERT_EQ(run_tessera({"compile", graph, "-o", other, "--tiles", "2"}).exit_status, 0);
  const auto result = run_tessera({"profile", profile_, "--package", other, "--memory"});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("is the run of package"), std::string::npos) << result.err;
}

TEST_F(ProfileCommand, WritesAnHtmlReport) {
  const std::string report = scratch_->path("report.html");
  const auto result = run_tessera({"profile", profile_, "--package", package_, "--html", report});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  std::ifstream in(report);
  const std::string html((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(html.find("\"totalCycles\":" + std::to_string(trace_end_)), std::string::npos);
  EXPECT_EQ(html.find("__TESSERA_PROFILE_JSON__"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos) << "the report needs no network";
  EXPECT_EQ(html.find("https://"), std::string::npos) << "the report needs no network";
}

TEST_F(ProfileCommand, BadProfileFilesAreClearErrors) {
  const auto write = [&](const std::string& name, const std::string& bytes) {
    const std::string path = scratch_->path(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  };
  std::ifstream in(profile_, std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), {});
  const struct {
    std::string path;
    std::string expected;
  } cases[] = {
      {scratch_->path("missing.profile"), "missing.profile"},
      {write("odd.profile", "1234567"), "not a whole number of 8-byte words"},
      {write("empty.profile", ""), "malformed Cap'n Proto message"},
      {write("garbage.profile", std::string(64, '\xff')), "malformed Cap'n Proto message"},
      {write("truncated.profile", good.substr(0, (good.size() / 16) * 8)), "profile"},
      {package_, "profile"},
  };
  for (const auto& c : cases) {
    const auto result = run_tessera({"profile", c.path});
    EXPECT_EQ(result.exit_status, 1) << c.path << ": " << result.err;
    EXPECT_NE(result.err.find(c.expected), std::string::npos) << c.path << ": " << result.err;
    EXPECT_NE(result.err.find(c.path), std::string::npos) << "names the file: " << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
  const auto usage = run_tessera({"profile", profile_, "--by", "colour"});
  EXPECT_EQ(usage.exit_status, 2);
  EXPECT_NE(usage.err.find("--by colour"), std::string::npos) << usage.err;
}

}  // namespace
}  // namespace tessera
