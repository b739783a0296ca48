// The installed `tessera` binary as a user runs it: exit statuses and streams.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/process.hpp"

namespace {

using tessera::testing::run_process;

std::vector<std::string> tessera_argv(std::vector<std::string> args) {
  args.insert(args.begin(), TESSERA_CLI_PATH);
  return args;
}

TEST(TesseraBinary, HelpExitsZeroOnStdout) {
  const auto result = run_process(tessera_argv({"--help"}));
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_NE(result.out.find("Usage: tessera"), std::string::npos);
  EXPECT_EQ(result.err, "");
}

TEST(TesseraBinary, VersionNamesTheGitRevision) {
  const auto result = run_process(tessera_argv({"--version"}));
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_TRUE(result.out.starts_with("tessera ")) << result.out;
  EXPECT_NE(result.out.find("(git "), std::string::npos);
}

TEST(TesseraBinary, UsageErrorsExitTwoWithOneLineOnStderr) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"no-such-command"}, {"--no-such-option"}, {"--log-level", "loud", "help"}}) {
    const auto result = run_process(tessera_argv(args));
    EXPECT_EQ(result.exit_status, 2) << args.front();
    EXPECT_EQ(result.out, "");
    ASSERT_FALSE(result.err.empty());
    EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
    EXPECT_TRUE(result.err.starts_with("tessera")) << result.err;
  }
}

TEST(TesseraBinary, BareInvocationPrintsHelpAndExitsTwo) {
  const auto result = run_process(tessera_argv({}));
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.out.find("Commands:"), std::string::npos);
}

TEST(TesseraBinary, DebugLoggingGoesToStderrOnlyWhenAskedFor) {
  const auto quiet = run_process(tessera_argv({"help"}));
  EXPECT_EQ(quiet.err, "");

  const auto verbose = run_process(tessera_argv({"--log-level", "debug", "help"}));
  EXPECT_EQ(verbose.exit_status, 0);
  EXPECT_NE(verbose.err.find("[debug] tessera "), std::string::npos) << verbose.err;
  EXPECT_EQ(verbose.out.find("[debug]"), std::string::npos);
  EXPECT_EQ(verbose.out, quiet.out);
}

}  // namespace
