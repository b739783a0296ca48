// run_subprocess: exit status, both output streams, signals, no shell, and a
// program that cannot start as an IoError.
#include "support/subprocess.hpp"

#include <gtest/gtest.h>

#include "support/error.hpp"

namespace tessera {
namespace {

TEST(Subprocess, CapturesStatusAndBothStreams) {
  const auto result = run_subprocess({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(result.exit_status, 3);
  EXPECT_EQ(result.out, "out\n");
  EXPECT_EQ(result.err, "err\n");
}

TEST(Subprocess, ArgumentsReachTheProgramUnsplit) {
  const auto result = run_subprocess({"/bin/echo", "a b", "$HOME", "*"});
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_EQ(result.out, "a b $HOME *\n");
}

TEST(Subprocess, LargeOutputDoesNotBlock) {
  const auto result = run_subprocess({"/bin/sh", "-c", "head -c 1000000 /dev/zero"});
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_EQ(result.out.size(), 1000000u);
}

TEST(Subprocess, ASignalIs128PlusItsNumber) {
  EXPECT_EQ(run_subprocess({"/bin/sh", "-c", "kill -9 $$"}).exit_status, 128 + 9);
}

TEST(Subprocess, AProgramThatCannotStartIsAnIoError) {
  try {
    run_subprocess({"/nonexistent/popc"});
    ADD_FAILURE() << "started";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/popc: cannot run"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(run_subprocess({}), UsageError);
}

}  // namespace
}  // namespace tessera
