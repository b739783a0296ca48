#include "support/subprocess.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "support/error.hpp"

extern char** environ;

namespace tessera {
namespace {

// An unlinked temporary file: only its descriptor exists, so nothing is left behind.
class CaptureFile {
 public:
  CaptureFile() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera-tool-XXXXXX").string();
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0) throw IoError(fmt::format("{}: cannot create: {}", pattern, std::strerror(errno)));
    ::unlink(pattern.c_str());
  }
  ~CaptureFile() { ::close(fd_); }
  CaptureFile(const CaptureFile&) = delete;
  CaptureFile& operator=(const CaptureFile&) = delete;

  int fd() const noexcept { return fd_; }

  std::string contents() const {
    std::string text;
    std::array<char, 65536> buffer{};
    if (::lseek(fd_, 0, SEEK_SET) < 0) throw IoError("tool output: cannot seek");
    for (;;) {
      const ssize_t n = ::read(fd_, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw IoError(fmt::format("tool output: cannot read: {}", std::strerror(errno)));
      if (n == 0) break;
      text.append(buffer.data(), static_cast<std::size_t>(n));
    }
    return text;
  }

 private:
  int fd_ = -1;
};

}  // namespace

SubprocessResult run_subprocess(const std::vector<std::string>& argv) {
  if (argv.empty()) throw UsageError("run_subprocess: empty argv");
  CaptureFile out;
  CaptureFile err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fd(), STDERR_FILENO);
  std::vector<char*> c_argv;
  for (const auto& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error =
      ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawn_error != 0) {
    throw IoError(fmt::format("{}: cannot run: {}", argv[0], std::strerror(spawn_error)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw IoError(fmt::format("{}: waitpid: {}", argv[0], std::strerror(errno)));
  }
  SubprocessResult result;
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = out.contents();
  result.err = err.contents();
  return result;
}

}  // namespace tessera
