#include "tests/testing/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

extern char** environ;

namespace tessera::testing {
namespace {

// A temporary file that is unlinked at once; only its descriptor is used.
class TempFile {
 public:
  TempFile() {
    std::string pattern = "/tmp/tessera-test-XXXXXX";
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0) throw std::runtime_error(std::string("mkstemp: ") + std::strerror(errno));
    ::unlink(pattern.c_str());
  }
  ~TempFile() { ::close(fd_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }

  std::string contents() const {
    std::string text;
    std::array<char, 4096> buffer{};
    ::lseek(fd_, 0, SEEK_SET);
    for (;;) {
      const ssize_t n = ::read(fd_, buffer.data(), buffer.size());
      if (n <= 0) break;
      text.append(buffer.data(), static_cast<std::size_t>(n));
    }
    return text;
  }

 private:
  int fd_ = -1;
};

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("run_process: empty argv");
  TempFile out;
  TempFile err;

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
    throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(spawn_error));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }

  ProcessResult result;
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = out.contents();
  result.err = err.contents();
  return result;
}

}  // namespace tessera::testing
