#include "backends/c600/device_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace tessera::backends::c600 {
namespace {

std::mutex registry_mutex;
std::set<std::string>& registry() {
  static std::set<std::string> held;
  return held;
}

constexpr std::size_t kMaxCommandChars = 200;
constexpr std::size_t kMaxHolderChars = 512;

// The holder's text, read through the descriptor we verified (never by name).
std::string read_holder(int fd) {
  std::string text(kMaxHolderChars, '\0');
  const ::ssize_t got = ::pread(fd, text.data(), text.size(), 0);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? std::string("an unknown process") : text;
}

// The device as one name: absolute, with symlinks, "." and ".." resolved
// as far as the path exists (the rest normalized lexically).
std::filesystem::path canonical_device(const std::string& device) {
  std::error_code error;
  std::filesystem::path path = std::filesystem::absolute(device, error);
  if (error) return std::filesystem::path(device).lexically_normal();
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, error);
  return error ? path.lexically_normal() : resolved;
}

// Opens the lock file without following a symlink and checks that it is a
// regular file with no other name, so nothing planted in a shared directory
// is truncated or locked in its place.
int open_lock_file(const std::string& device, const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) {
    if (errno == ELOOP) {
      throw IoError(fmt::format("device {}: the lock file {} is a symlink; refusing to follow it",
                                device, path.string()));
    }
    throw IoError(fmt::format("device {}: cannot create the lock file {}: {}", device,
                              path.string(), std::strerror(errno)));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_nlink != 1) {
    ::close(fd);
    throw IoError(
        fmt::format("device {}: {} is not a lock file of its own (a regular file with "
                    "one name); remove it if nothing holds the device",
                    device, path.string()));
  }
  return fd;
}

}  // namespace

std::string holder_description() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string command((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : command) {
    if (c == '\0' || c == '\n') c = ' ';
  }
  while (!command.empty() && command.back() == ' ') command.pop_back();
  if (command.size() > kMaxCommandChars) command = command.substr(0, kMaxCommandChars) + "…";
  return fmt::format("pid {} ({})", ::getpid(), command);
}

std::filesystem::path lock_file_path(const std::string& device,
                                     const std::filesystem::path& directory) {
  std::string name;
  for (const char c : canonical_device(device).string()) {
    if (c == '/') {
      if (!name.empty() && name.back() != '-') name += '-';
    } else {
      name += c;
    }
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  return directory / ("tessera-" + name + ".lock");
}

std::unique_ptr<DeviceLock> DeviceLock::acquire(const std::string& device,
                                                const std::filesystem::path& directory) {
  const std::filesystem::path path = lock_file_path(device, directory);
  std::unique_lock<std::mutex> guard(registry_mutex);
  if (registry().count(path.string()) != 0) {
    throw DeviceBusyError(fmt::format("device {} is busy: held by this process ({}); lock file {}",
                                      device, holder_description(), path.string()));
  }
  const int fd = open_lock_file(device, path);
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;  // l_start = l_len = 0: the whole file, however long
  if (::fcntl(fd, F_OFD_SETLK, &whole) != 0) {
    const int error = errno;
    if (error == EAGAIN || error == EACCES) {
      const std::string holder = read_holder(fd);
      ::close(fd);
      throw DeviceBusyError(fmt::format("device {} is busy: held by {}; lock file {}", device,
                                        holder, path.string()));
    }
    ::close(fd);
    throw IoError(
        fmt::format("device {}: cannot lock {}: {}", device, path.string(), std::strerror(error)));
  }
  const std::string holder = holder_description() + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    // The lock holds; only the holder text is missing. Not worth failing for.
  }
  registry().insert(path.string());
  return std::unique_ptr<DeviceLock>(new DeviceLock(path, fd));
}

DeviceLock::DeviceLock(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}

DeviceLock::~DeviceLock() {
  (void)::ftruncate(fd_, 0);
  ::close(fd_);  // releases the lock
  std::lock_guard<std::mutex> guard(registry_mutex);
  registry().erase(path_.string());
}

}  // namespace tessera::backends::c600
