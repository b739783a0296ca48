// The dispatcher, run in-process against a command set made for the test.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/command.hpp"
#include "support/error.hpp"

namespace tessera::cli {
namespace {

namespace po = boost::program_options;

struct Outcome {
  int status;
  std::string out;
  std::string err;
};

// A command set with one command, `echo`, that prints its positional words
// and knows one option.
class Dispatch : public ::testing::Test {
 protected:
  Dispatch() {
    commands_.add(Command{
        "echo", "print the words it is given", [this](const std::vector<std::string>& args, Streams& io) {
          CommandSyntax syntax;
          syntax.name = "echo";
          syntax.summary = "Prints the words it is given.";
          syntax.usage = "[--upper] WORD...";
          syntax.details = "Words are separated by one space.";
          syntax.options.add_options()("upper", "print in capitals");
          syntax.hidden.add_options()("word", po::value<std::vector<std::string>>()->required(),
                                      "a word");
          syntax.positional.add("word", -1);
          const auto values = parse_command_line(syntax, args, io);
          if (!values) return int{kExitSuccess};
          ++echo_runs_;
          std::string line;
          for (const auto& word : (*values)["word"].as<std::vector<std::string>>()) {
            line += (line.empty() ? "" : " ") + word;
          }
          if (values->count("upper")) {
            for (auto& c : line) c = static_cast<char>(std::toupper(c));
          }
          io.out << line << '\n';
          return int{kExitSuccess};
        }});
    commands_.add(Command{"fail", "always fails", [](const auto&, Streams&) -> int {
                            InputError error("tiles[3].entryPoint", "0x90000 is not executable");
                            error.add_context("loading x.ipuexe");
                            throw error;
                          }});
    commands_.add(Command{"explode", "throws a non-Tessera exception",
                          [](const auto&, Streams&) -> int { throw std::logic_error("boom\nbang"); }});
  }

  Outcome run(std::vector<std::string> args) {
    std::ostringstream out;
    std::ostringstream err;
    Streams io{out, err};
    const int status = cli::run(args, commands_, io);
    return {status, out.str(), err.str()};
  }

  CommandSet commands_;
  int echo_runs_ = 0;
};

TEST_F(Dispatch, RunsTheNamedCommandWithItsArguments) {
  const auto outcome = run({"echo", "--upper", "a", "b"});
  EXPECT_EQ(outcome.status, kExitSuccess);
  EXPECT_EQ(outcome.out, "A B\n");
  EXPECT_EQ(outcome.err, "");
}

TEST_F(Dispatch, GlobalOptionsBeforeTheCommandAreNotPassedToIt) {
  const auto outcome = run({"--log-level", "debug", "echo", "x"});
  EXPECT_EQ(outcome.status, kExitSuccess);
  EXPECT_EQ(outcome.out, "x\n");
  EXPECT_EQ(run({"--log-level=error", "echo", "y"}).out, "y\n");
}

TEST_F(Dispatch, GlobalHelpListsEveryCommand) {
  const auto outcome = run({"--help"});
  EXPECT_EQ(outcome.status, kExitSuccess);
  EXPECT_NE(outcome.out.find("Usage: tessera"), std::string::npos);
  EXPECT_NE(outcome.out.find("echo"), std::string::npos);
  EXPECT_NE(outcome.out.find("print the words it is given"), std::string::npos);
  EXPECT_NE(outcome.out.find("--log-level"), std::string::npos);
  EXPECT_EQ(run({"help"}).out, outcome.out);
}

TEST_F(Dispatch, NoCommandPrintsHelpAndIsAUsageError) {
  const auto outcome = run({});
  EXPECT_EQ(outcome.status, kExitUsage);
  EXPECT_NE(outcome.out.find("Commands:"), std::string::npos);
}

TEST_F(Dispatch, EachCommandHasItsOwnHelp) {
  const auto outcome = run({"echo", "--help"});
  EXPECT_EQ(outcome.status, kExitSuccess);
  EXPECT_EQ(echo_runs_, 0);
  EXPECT_NE(outcome.out.find("Usage: tessera echo [--upper] WORD..."), std::string::npos);
  EXPECT_NE(outcome.out.find("--upper"), std::string::npos);
  EXPECT_EQ(outcome.out.find("--word"), std::string::npos) << "positional targets are hidden";
  EXPECT_NE(outcome.out.find("Words are separated by one space."), std::string::npos);
  EXPECT_EQ(run({"help", "echo"}).out, outcome.out);
}

TEST_F(Dispatch, VersionPrintsVersionAndRevision) {
  const auto outcome = run({"--version"});
  EXPECT_EQ(outcome.status, kExitSuccess);
  EXPECT_TRUE(outcome.out.starts_with("tessera 0.")) << outcome.out;
  EXPECT_NE(outcome.out.find("(git "), std::string::npos);
}

TEST_F(Dispatch, UnknownCommandIsAOneLineUsageError) {
  const auto outcome = run({"frobnicate"});
  EXPECT_EQ(outcome.status, kExitUsage);
  EXPECT_EQ(outcome.err, "tessera: unknown command 'frobnicate' (see 'tessera --help')\n");
  EXPECT_EQ(run({"help", "frobnicate"}).status, kExitUsage);
}

TEST_F(Dispatch, UnknownGlobalOptionIsAUsageError) {
  const auto outcome = run({"--frobnicate", "echo", "x"});
  EXPECT_EQ(outcome.status, kExitUsage);
  EXPECT_NE(outcome.err.find("frobnicate"), std::string::npos);
  EXPECT_EQ(echo_runs_, 0);
}

TEST_F(Dispatch, BadLogLevelIsAUsageError) {
  const auto outcome = run({"--log-level", "loud", "echo", "x"});
  EXPECT_EQ(outcome.status, kExitUsage);
  EXPECT_NE(outcome.err.find("unknown log level 'loud'"), std::string::npos);
  EXPECT_EQ(run({"--log-level"}).status, kExitUsage);
}

TEST_F(Dispatch, CommandArgumentErrorsNameTheCommand) {
  const auto unknown = run({"echo", "--shout", "x"});
  EXPECT_EQ(unknown.status, kExitUsage);
  EXPECT_TRUE(unknown.err.starts_with("tessera echo: ")) << unknown.err;
  EXPECT_NE(unknown.err.find("(see 'tessera echo --help')"), std::string::npos);

  const auto missing = run({"echo"});
  EXPECT_EQ(missing.status, kExitUsage);
  EXPECT_NE(missing.err.find("word"), std::string::npos);
}

TEST_F(Dispatch, ErrorsBecomeOneLineWithTheirContext) {
  const auto outcome = run({"fail"});
  EXPECT_EQ(outcome.status, kExitFailure);
  EXPECT_EQ(outcome.err,
            "tessera fail: error: loading x.ipuexe: tiles[3].entryPoint: 0x90000 is not "
            "executable\n");
}

TEST_F(Dispatch, ForeignExceptionsAreReportedOnOneLine) {
  const auto outcome = run({"explode"});
  EXPECT_EQ(outcome.status, kExitFailure);
  EXPECT_EQ(outcome.err, "tessera explode: internal error: boom bang\n");
}

TEST(CommandSet, RejectsDuplicateNames) {
  CommandSet commands;
  commands.add(Command{"x", "", {}});
  EXPECT_THROW(commands.add(Command{"x", "", {}}), Error);
  EXPECT_THROW(commands.add(Command{"help", "", {}}), Error);
}

}  // namespace
}  // namespace tessera::cli
