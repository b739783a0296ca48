// Numbers on the command line (issue 15, items 10 and 11): unsigned options
// take digits (or 0x and hex digits) and nothing else, everywhere; a
// negative value is refused instead of wrapping to 2^64 − 5; `run --timeout`
// takes 0.001 to 86400 seconds and refuses inf, nan and values that round to
// nothing. Each refusal is a usage error (exit 2) naming the option, before
// any file is read or written.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "cli/number_options.hpp"
#include "schema/writer.hpp"
#include "support/error.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/runtime/ring_package.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::cli {
namespace {

using target::PhysicalTile;
using testing::run_tessera;

std::string usage_error(const std::function<void()>& body) {
  try {
    body();
  } catch (const UsageError& error) {
    return error.what();
  }
  return "accepted";
}

TEST(ParseUnsigned, DigitsOrHexAndNothingElse) {
  EXPECT_EQ(parse_unsigned<std::uint64_t>("0", "--n"), 0u);
  EXPECT_EQ(parse_unsigned<std::uint64_t>("100000", "--n"), 100000u);
  EXPECT_EQ(parse_unsigned<std::uint64_t>("010", "--n"), 10u) << "decimal, not octal";
  EXPECT_EQ(parse_unsigned<std::uint64_t>("0x1F", "--n"), 31u);
  EXPECT_EQ(parse_unsigned<std::uint64_t>("18446744073709551615", "--n"),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(parse_unsigned<std::uint32_t>("4294967295", "--n"), 4294967295u);
  // clang-format off
  const std::vector<std::pair<std::string, std::string>> refused = {
    {"-5", "--n: '-5' is negative; it takes a whole number from 0 to 18446744073709551615"},
    {" -5", "--n: ' -5' is negative; it takes a whole number from 0 to 18446744073709551615"},
    {"-0", "--n: '-0' is negative"},
    {"+5", "--n: '+5' is not a whole number (decimal digits, or 0x and hex digits)"},
    {" 5", "--n: ' 5' is not a whole number"},
    {"5 ", "--n: '5 ' is not a whole number"},
    {"", "--n: '' is not a whole number"},
    {"0x", "--n: '0x' is not a whole number"},
    {"1e3", "--n: '1e3' is not a whole number"},
    {"18446744073709551616", "--n: '18446744073709551616' is more than 18446744073709551615"},
  };
  // clang-format on
  for (const auto& [text, message] : refused) {
    const std::string error = usage_error([&] { (void)parse_unsigned<std::uint64_t>(text, "--n"); });
    EXPECT_EQ(error.rfind(message, 0), 0u) << "'" << text << "': " << error;
  }
  EXPECT_EQ(usage_error([] { (void)parse_unsigned<std::uint32_t>("4294967296", "--jitter-us"); }),
            "--jitter-us: '4294967296' is more than 4294967295");
  EXPECT_EQ(usage_error([] { (void)parse_unsigned<std::uint32_t>("-1", "--jitter-us"); }),
            "--jitter-us: '-1' is negative; it takes a whole number from 0 to 4294967295");
}

TEST(ParseSeconds, ADocumentedRangeAndNothingElse) {
  constexpr std::chrono::milliseconds kMin{1};
  constexpr std::chrono::milliseconds kMax = std::chrono::hours(24);
  EXPECT_EQ(seconds_range(kMin, kMax), "0.001 to 86400 seconds");
  EXPECT_EQ(parse_seconds("60", "--timeout", kMin, kMax), std::chrono::milliseconds(60'000));
  EXPECT_EQ(parse_seconds("0.001", "--timeout", kMin, kMax), std::chrono::milliseconds(1));
  EXPECT_EQ(parse_seconds("2.5", "--timeout", kMin, kMax), std::chrono::milliseconds(2500));
  EXPECT_EQ(parse_seconds("86400", "--timeout", kMin, kMax), std::chrono::milliseconds(86'400'000));
  for (const std::string text : {"1e10", "inf", "-inf", "nan", "1e30", "86400.5", "0", "-1",
                                 "0.0009", "1e-4", "", "ten", "5s", " 5"}) {
    const std::string error = usage_error([&] { (void)parse_seconds(text, "--timeout", kMin, kMax); });
    EXPECT_EQ(error.rfind("--timeout: '" + text + "' ", 0), 0u) << error;
    EXPECT_NE(error.find("0.001 to 86400 seconds"), std::string::npos) << error;
  }
}

class NumberOptions : public ::testing::Test {
 protected:
  NumberOptions() {
    package_ = scratch_.path("ring.ipuexe");
    schema::write_package(runtime::testing::ring_package({{PhysicalTile(1), PhysicalTile(70)}, 64}),
                          package_);
    source_ = scratch_.write("p.s", "setzi $m0, 0\nbr $m0\n");
    graph_ = scratch_.write("g.json", R"({"format": "tessera.graph", "version": 1, "operations": [
      {"op": "host_input", "name": "x", "dtype": "f32", "shape": [4, 8], "result": "x"},
      {"op": "host_output", "name": "y", "inputs": ["x"]}]})");
  }
  testing::ScratchDirectory scratch_;
  std::string package_;
  std::string source_;
  std::string graph_;
};

// Issue 15 item 11: "--cycles= -5" was taken as 2^64 − 5 and
// --jitter-us=-1 as 4294967295 µs.
TEST_F(NumberOptions, NegativeValuesAreRefusedByEveryCommand) {
  const std::string out = scratch_.path("out.ipuexe");
  const std::vector<std::vector<std::string>> command_lines = {
      {"simulate", package_, "--cycles= -5"},
      {"simulate", package_, "--cycles=-5"},
      {"run", package_, "--jitter-us=-1"},
      {"run", package_, "--jitter-seed=-1"},
      {"run", package_, "--cycles=-1"},
      {"pack", source_, "-o", out, "--tiles=-1"},
      {"compile", graph_, "-o", out, "--tiles=-3"},
      {"compile", graph_, "-o", out, "--min-shard-bytes=-1"},
  };
  for (const auto& args : command_lines) {
    const auto result = run_tessera(args);
    EXPECT_EQ(result.exit_status, 2) << args.back() << ": " << result.err << result.out;
    EXPECT_NE(result.err.find("is negative; it takes a whole number from 0 to"), std::string::npos)
        << args.back() << ": " << result.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << args.back();
  }
}

TEST_F(NumberOptions, HexCountsWork) {
  const std::string out = scratch_.path("out.ipuexe");
  EXPECT_EQ(run_tessera({"pack", source_, "-o", out, "--tiles", "0x40"}).exit_status, 0);
  const auto run = run_tessera({"simulate", out, "--cycles", "0x186a0"});
  EXPECT_EQ(run.exit_status, 0) << run.err;
}

// Issue 15 item 10: --timeout ≥ 1e10 s wrapped the deadline, inf and 1e30
// were undefined behaviour (cast to INT64_MIN ms), and values under 1 ms
// truncated to 0; each aborted the run.
TEST_F(NumberOptions, RunTimeoutOutsideItsRangeIsAUsageError) {
  for (const std::string timeout : {"1e10", "inf", "1e30", "0.0001", "nan", "0"}) {
    const auto result = run_tessera({"run", package_, "--timeout", timeout});
    EXPECT_EQ(result.exit_status, 2) << timeout << ": " << result.err;
    EXPECT_NE(result.err.find("--timeout: '" + timeout + "' "), std::string::npos)
        << timeout << ": " << result.err;
  }
  const auto help = run_tessera({"run", "--help"});
  EXPECT_NE(help.out.find("0.001 to 86400"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace tessera::cli
