#include "backends/c600/device_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <utility>

#include <boost/interprocess/exceptions.hpp>
#include <fmt/format.h>

namespace tessera::backends::c600 {
namespace {

std::mutex registry_mutex;
std::set<std::string>& registry() {
  static std::set<std::string> held;
  return held;
}

constexpr std::size_t kMaxCommandChars = 200;

std::string read_holder(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? std::string("an unknown process") : text;
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
  for (const char c : device) {
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
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw IoError(fmt::format("device {}: cannot create the lock file {}: {}", device,
                              path.string(), std::strerror(errno)));
  }
  boost::interprocess::file_lock lock;
  bool locked = false;
  try {
    lock = boost::interprocess::file_lock(path.c_str());
    locked = lock.try_lock();
  } catch (const boost::interprocess::interprocess_exception& error) {
    ::close(fd);
    throw IoError(fmt::format("device {}: cannot lock {}: {}", device, path.string(),
                              error.what()));
  }
  if (!locked) {
    ::close(fd);  // this process holds no lock on the file, so closing is harmless
    throw DeviceBusyError(fmt::format("device {} is busy: held by {}; lock file {}", device,
                                      read_holder(path), path.string()));
  }
  const std::string holder = holder_description() + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    // The lock holds; only the holder text is missing. Not worth failing for.
  }
  registry().insert(path.string());
  return std::unique_ptr<DeviceLock>(new DeviceLock(path, fd, std::move(lock)));
}

DeviceLock::DeviceLock(std::filesystem::path path, int fd, boost::interprocess::file_lock lock)
    : path_(std::move(path)), fd_(fd), lock_(std::move(lock)) {}

DeviceLock::~DeviceLock() {
  (void)::ftruncate(fd_, 0);
  try {
    lock_.unlock();
  } catch (const boost::interprocess::interprocess_exception&) {
    // Closing the descriptor below releases the lock regardless.
  }
  ::close(fd_);
  std::lock_guard<std::mutex> guard(registry_mutex);
  registry().erase(path_.string());
}

}  // namespace tessera::backends::c600
