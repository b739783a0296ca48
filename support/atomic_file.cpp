#include "support/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera {
namespace {

// Collisions with a planted or concurrent name only cost a retry; after
// this many the directory is not one to write into.
constexpr int kNameAttempts = 16;

std::filesystem::path directory_of(const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

// ".NAME.1f2e3d4c5b6a7980.tmp": hidden, next to NAME, unpredictable.
std::filesystem::path temporary_name(const std::filesystem::path& path) {
  std::random_device random;
  const std::uint64_t tag = (std::uint64_t{random()} << 32) ^ random();
  return directory_of(path) / fmt::format(".{}.{:016x}.tmp", path.filename().string(), tag);
}

// Makes a rename in `directory` durable. File systems that cannot sync a
// directory (EINVAL) have nothing more to flush.
int sync_directory(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int result = ::fsync(fd) == 0 || errno == EINVAL ? 0 : errno;
  ::close(fd);
  return result;
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
  for (int attempt = 0; attempt < kNameAttempts && fd_ < 0; ++attempt) {
    temporary_ = temporary_name(path_);
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    throw IoError(fmt::format("{}: cannot create a temporary file in {}: {}", path_.string(),
                              directory_of(path_).string(), std::strerror(errno)));
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(temporary_.c_str());
}

void AtomicFile::fail(const char* what) const {
  throw IoError(fmt::format("{}: cannot {}: {}", path_.string(), what, std::strerror(errno)));
}

void AtomicFile::write(std::span<const std::uint8_t> bytes) {
  while (!bytes.empty()) {
    const ::ssize_t wrote = ::write(fd_, bytes.data(), bytes.size());
    if (wrote < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    bytes = bytes.subspan(static_cast<std::size_t>(wrote));
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("flush");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close");
  if (::rename(temporary_.c_str(), path_.c_str()) != 0)
    fail("rename the temporary file into place");
  committed_ = true;
  if (const int error = sync_directory(directory_of(path_)); error != 0) {
    errno = error;
    fail("flush its directory");
  }
}

void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::span<const std::uint8_t>> pieces) {
  AtomicFile file(path);
  for (const auto piece : pieces) file.write(piece);
  file.commit();
}

}  // namespace tessera
