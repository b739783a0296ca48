// Strings from a package reach the terminal escaped (issue 15, item 6): a
// compilerVersion holding ESC and CR was printed as-is by `inspect`, so a
// package could clear the screen, retitle the window or rewrite the line.
// Whatever a command prints — results, errors, logs — carries no control
// character but the newlines that end its lines.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/terminal_stream.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "schema/writer.hpp"
#include "support/little_endian.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/runtime/ring_package.hpp"
#include "tests/testing/sample_package.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

using target::PhysicalTile;
using testing::run_tessera;

// ESC ] 0 ; … BEL retitles the window; ESC [ 2 J clears the screen; CR
// returns to the start of the line; U+009B is an 8-bit CSI; U+202E reverses
// what follows.
const std::string kHostile =
    "evil\x1B]0;owned\x07\x1B[2J\rtessera\xC2\x9B"
    "1m\xE2\x80\xAE";
const std::string kShown = "evil\\u001b]0;owned\\u0007\\u001b[2J\\rtessera\\u009b1m\\u202e";

// Only printable text, UTF-8 and line ends.
void expect_no_control_characters(const std::string& text, const std::string& what) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7F) {
      ADD_FAILURE() << what << ": control byte " << static_cast<int>(c) << " at " << i;
      return;
    }
  }
  EXPECT_EQ(text.find("\xC2\x9B"), std::string::npos) << what;
  EXPECT_EQ(text.find("\xE2\x80\xAE"), std::string::npos) << what;
}

void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

class TerminalOutput : public ::testing::Test {
 protected:
  TerminalOutput() {
    schema::Application app = testing::sample_application();
    app.compiler_version = kHostile;
    app.not_loadable_reason = kHostile;
    app.entry_points[0].name = kHostile;
    app.debug.tiles[0].symbols[0].name = kHostile;
    app.debug.tiles[0].allocations[0].name = kHostile;
    app.debug.provenance[0] = kHostile;
    package_ = scratch_.path("hostile.ipuexe");
    schema::write_package(app, package_);
  }
  testing::ScratchDirectory scratch_;
  std::string package_;
};

TEST_F(TerminalOutput, InspectEscapesEveryStringFromThePackage) {
  const auto result = run_tessera({"inspect", package_, "--tiles", "--bindings", "--debug"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  expect_no_control_characters(result.out, "inspect");
  EXPECT_NE(result.out.find("compiler           " + kShown + "\n"), std::string::npos)
      << result.out;
}

TEST_F(TerminalOutput, InspectJsonStaysJsonAndKeepsTheStrings) {
  const auto result = run_tessera({"inspect", package_, "--debug", "--json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  expect_no_control_characters(result.out, "inspect --json");
  const auto document = nlohmann::json::parse(result.out);
  EXPECT_EQ(document["compilerVersion"], kHostile);
  EXPECT_EQ(document["debug"]["provenance"][0], kHostile);
}

TEST_F(TerminalOutput, DisasmEscapesSymbolNames) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--symbols"}}) {
    std::vector<std::string> args = {"disasm", package_, "--tile", "p5"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run_tessera(args);
    ASSERT_EQ(result.exit_status, 0) << result.err;
    expect_no_control_characters(result.out, "disasm");
    EXPECT_NE(result.out.find(kShown), std::string::npos) << result.out;
  }
}

TEST_F(TerminalOutput, ErrorsQuotingThePackageAreEscaped) {
  schema::Application app = testing::sample_application();
  app.host_exchange.calls[0].name = kHostile;
  app.host_exchange.calls.push_back(app.host_exchange.calls[0]);
  const std::string broken = scratch_.path("broken.ipuexe");
  write_bytes(broken, schema::serialize_unchecked_for_testing(schema::canonical(app)));
  const auto result = run_tessera({"validate", broken});
  EXPECT_EQ(result.exit_status, 1);
  expect_no_control_characters(result.err, "validate's error");
  EXPECT_NE(result.err.find("'" + kShown + "' names two calls"), std::string::npos) << result.err;
}

TEST_F(TerminalOutput, RunEscapesCallNamesInItsReportAndItsLogs) {
  schema::Application app =
      runtime::testing::ring_package({{PhysicalTile(1), PhysicalTile(70)}, 64});
  app.host_exchange.calls[0].name = kHostile;
  const std::string ring = scratch_.path("ring.ipuexe");
  schema::write_package(app, ring);
  const std::string x = scratch_.path("x.npy");
  runtime::write_tensor_file(
      x, runtime::HostTensor(schema::DType::kU32, {128}, std::vector<std::uint8_t>(512, 1)));
  const auto result = run_tessera({"--log-level", "info", "run", ring, "-i", "x=" + x});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  expect_no_control_characters(result.out, "run");
  expect_no_control_characters(result.err, "run's log");
  EXPECT_NE(result.out.find("call '" + kShown + "'"), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("host call '" + kShown + "'"), std::string::npos) << result.err;
}

TEST(TerminalSafeStream, EscapesEachLineAndKeepsSplitUtf8Whole) {
  std::ostringstream sink;
  {
    cli::TerminalSafeStream out(sink);
    out << "caf\xC3";  // the rest of the sequence comes with the next write
    out.flush();
    out << "\xA9 \x1B[2J\n" << 42 << '\n' << "tail\r";
  }
  EXPECT_EQ(sink.str(), "caf\xC3\xA9 \\u001b[2J\n42\ntail\\r");
}

}  // namespace
}  // namespace tessera
