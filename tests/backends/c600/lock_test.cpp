// Exclusive device ownership across processes (review-findings.md #10).

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "backends/c600/c600_transport.hpp"
#include "backends/c600/device_lock.hpp"
#include "tests/backends/c600/fixture.hpp"

namespace tessera::backends::c600 {
namespace {

using testing::FakeDevice;

TEST(DeviceLock, FileNamesFollowTheDevicePath) {
  EXPECT_EQ(lock_file_path("/dev/ipu0", "/tmp"), "/tmp/tessera-dev-ipu0.lock");
  EXPECT_EQ(lock_file_path("/dev/fake-ipu0", "/var/lock"), "/var/lock/tessera-dev-fake-ipu0.lock");
}

TEST(DeviceLock, ASecondProcessIsToldWhoHoldsTheDevice) {
  testing::ScratchDirectory scratch;
  int to_parent[2];
  int to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char state = 'E';
    try {
      FakeDevice fake;
      auto transport = open_c600(testing::fake_options(scratch), fake);
      state = 'L';
      (void)!::write(to_parent[1], &state, 1);
      char go = 0;
      (void)!::read(to_child[0], &go, 1);
    } catch (...) {
      (void)!::write(to_parent[1], &state, 1);
    }
    ::_exit(0);
  }
  char state = 0;
  ASSERT_EQ(::read(to_parent[0], &state, 1), 1);
  ASSERT_EQ(state, 'L');

  FakeDevice fake;
  const C600Options options = testing::fake_options(scratch);
  try {
    open_c600(options, fake);
    ADD_FAILURE() << "a second process opened a held device";
  } catch (const DeviceBusyError& error) {
    const std::string text = error.what();
    const std::string expected =
        fmt::format("device /dev/fake-ipu0 is busy: held by pid {} (", child);
    EXPECT_NE(text.find(expected), std::string::npos) << text;
    EXPECT_NE(text.find("backend_c600_tests"), std::string::npos) << text;
    EXPECT_NE(text.find(lock_file_path(options.device, options.lock_directory).string()),
              std::string::npos)
        << text;
  }
  EXPECT_TRUE(fake.calls().empty());  // refused before the device was touched

  const char go = 'x';
  ASSERT_EQ(::write(to_child[1], &go, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // Released with the holder: this process may open it now.
  EXPECT_NO_THROW(open_c600(options, fake));
  for (const int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) ::close(fd);
}

TEST(DeviceLock, TheSameProcessCannotOpenADeviceTwice) {
  testing::ScratchDirectory scratch;
  FakeDevice fake;
  FakeDevice other;
  const C600Options options = testing::fake_options(scratch);
  auto transport = open_c600(options, fake);
  try {
    open_c600(options, other);
    FAIL();
  } catch (const DeviceBusyError& error) {
    EXPECT_NE(std::string(error.what()).find("is busy: held by this process (pid "),
              std::string::npos)
        << error.what();
  }
  transport.reset();
  EXPECT_NO_THROW(open_c600(options, other));
}

std::string contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Issue 15 item 7: the lock file (default directory /tmp) was opened with
// O_CREAT and no O_NOFOLLOW, then truncated and written with the holder's
// name: a symlink planted there made tessera truncate its target.
TEST(DeviceLock, APlantedSymlinkIsNeverFollowed) {
  testing::ScratchDirectory scratch;
  const std::filesystem::path victim = scratch.write("victim", "precious");
  const auto lock = lock_file_path("/dev/fake-ipu0", scratch.path(""));
  std::filesystem::create_symlink(victim, lock);
  try {
    DeviceLock::acquire("/dev/fake-ipu0", scratch.path(""));
    FAIL() << "the lock went through a symlink";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find(lock.string() + " is a symlink"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(contents(victim), "precious");
}

TEST(DeviceLock, AHardLinkPlantedAsTheLockFileIsRefused) {
  testing::ScratchDirectory scratch;
  const std::filesystem::path victim = scratch.write("victim", "precious");
  const auto lock = lock_file_path("/dev/fake-ipu0", scratch.path(""));
  std::filesystem::create_hard_link(victim, lock);
  try {
    DeviceLock::acquire("/dev/fake-ipu0", scratch.path(""));
    FAIL() << "the lock truncated a file with another name";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("is not a lock file of its own"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(contents(victim), "precious");
}

// Issue 15 item 8: /dev/ipu0 and /dev/./ipu0 took different locks, and one
// process held both. The lock belongs to the device's real path.
TEST(DeviceLock, OneDeviceUnderTwoNamesIsOneLock) {
  testing::ScratchDirectory scratch;
  EXPECT_EQ(lock_file_path("/dev/./fake-ipu0", "/tmp"), "/tmp/tessera-dev-fake-ipu0.lock");
  EXPECT_EQ(lock_file_path("/dev//fake-ipu0", "/tmp"), "/tmp/tessera-dev-fake-ipu0.lock");
  EXPECT_EQ(lock_file_path("/dev/../dev/fake-ipu0", "/tmp"), "/tmp/tessera-dev-fake-ipu0.lock");
  const std::string node = scratch.write("ipu3", "");
  const std::string alias = scratch.path("alias");
  std::filesystem::create_symlink(node, alias);
  EXPECT_EQ(lock_file_path(alias, "/tmp"), lock_file_path(node, "/tmp"));

  const auto held = DeviceLock::acquire("/dev/fake-ipu0", scratch.path(""));
  EXPECT_THROW(DeviceLock::acquire("/dev/./fake-ipu0", scratch.path("")), DeviceBusyError);
  const auto node_lock = DeviceLock::acquire(node, scratch.path(""));
  EXPECT_THROW(DeviceLock::acquire(alias, scratch.path("")), DeviceBusyError);
}

}  // namespace
}  // namespace tessera::backends::c600
