// The one atomic file writer every tool uses: nothing planted in the
// destination's directory redirects it, a failure leaves the old file and no
// temporary behind, and errors name the file and say the OS's reason.
#include <signal.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "support/atomic_file.hpp"
#include "support/error.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDirectory;

std::span<const std::uint8_t> bytes_of(const std::string& text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> names_in(const ScratchDirectory& scratch) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(scratch.path("")))) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string io_error(const std::function<void()>& body) {
  try {
    body();
  } catch (const IoError& error) {
    return error.what();
  }
  return "no error";
}

TEST(AtomicFile, WritesThePiecesInOrderAndLeavesNothingElse) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("out.bin");
  write_file_atomically(path, {bytes_of("abc"), bytes_of(""), bytes_of("de")});
  EXPECT_EQ(contents(path), "abcde");
  write_file_atomically(path, bytes_of("x"));
  EXPECT_EQ(contents(path), "x");
  EXPECT_EQ(names_in(scratch), std::vector<std::string>{"out.bin"});
}

// Issue 15 item 7: the writers opened a fixed PATH.partial with O_TRUNC
// and no O_NOFOLLOW, so a symlink planted there made `tessera pack`
// overwrite its target and leave the output a symlink to it.
TEST(AtomicFile, ASymlinkPlantedAtTheOldTemporaryNameIsNeverFollowed) {
  const ScratchDirectory scratch;
  const std::string victim = scratch.write("victim", "precious");
  const std::string path = scratch.path("out.bin");
  fs::create_symlink(victim, path + ".partial");
  write_file_atomically(path, bytes_of("new contents"));
  EXPECT_EQ(contents(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(contents(path), "new contents");
  EXPECT_TRUE(fs::is_symlink(path + ".partial")) << "not ours to touch";
}

TEST(AtomicFile, ASymlinkAtThePathIsReplacedNotWrittenThrough) {
  const ScratchDirectory scratch;
  const std::string victim = scratch.write("victim", "precious");
  const std::string path = scratch.path("out.bin");
  fs::create_symlink(victim, path);
  write_file_atomically(path, bytes_of("new contents"));
  EXPECT_EQ(contents(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(contents(path), "new contents");
}

TEST(AtomicFile, AFailedRenameKeepsWhatIsThereAndRemovesTheTemporary) {
  const ScratchDirectory scratch;
  // A non-empty directory, which rename cannot replace.
  const std::string path = scratch.path("out.bin");
  fs::create_directories(path + "/inside");
  const std::string error = io_error([&] { write_file_atomically(path, bytes_of("x")); });
  EXPECT_EQ(error.rfind(path + ": cannot rename the temporary file into place: ", 0), 0u)
      << error;
  EXPECT_TRUE(fs::is_directory(path + "/inside"));
  EXPECT_EQ(names_in(scratch), std::vector<std::string>{"out.bin"});
}

TEST(AtomicFile, AMissingDirectoryIsNamedWithTheReason) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("no/such/out.bin");
  EXPECT_EQ(io_error([&] { write_file_atomically(path, bytes_of("x")); }),
            path + ": cannot create a temporary file in " + scratch.path("no/such") +
                ": No such file or directory");
}

// Issue 15 item 9: under `ulimit -f` an existing output became a
// half-written file. A write the OS refuses leaves it whole, removes the
// temporary, and says why.
TEST(AtomicFile, AWriteTheOsRefusesLeavesTheOldFileWhole) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("out.bin");
  write_file_atomically(path, bytes_of("old contents"));
  const std::string big(64 * 1024, 'x');
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  // Without the signal's default action (termination), write() fails with EFBIG.
  const auto previous = ::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string error = io_error([&] { write_file_atomically(path, bytes_of(big)); });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, previous);
  EXPECT_EQ(error, path + ": cannot write: File too large");
  EXPECT_EQ(contents(path), "old contents");
  EXPECT_EQ(names_in(scratch), std::vector<std::string>{"out.bin"});
}

TEST(AtomicFile, AnUncommittedFileLeavesNoTrace) {
  const ScratchDirectory scratch;
  const std::string path = scratch.path("out.bin");
  {
    AtomicFile file(path);
    file.write(bytes_of("half"));
  }
  EXPECT_TRUE(names_in(scratch).empty());
  AtomicFile file(path);
  file.write(bytes_of("whole"));
  file.commit();
  EXPECT_EQ(contents(path), "whole");
}

}  // namespace
}  // namespace tessera
