#include "support/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera {

void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  const std::filesystem::path temporary = path.string() + ".partial";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw IoError(fmt::format("{}: cannot create: {}", temporary.string(), std::strerror(errno)));
  }
  auto fail = [&](const char* what) {
    const int error = errno;
    ::close(fd);
    std::filesystem::remove(temporary);
    throw IoError(fmt::format("{}: cannot {}: {}", temporary.string(), what, std::strerror(error)));
  };
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("flush");
  ::close(fd);
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary);
    throw IoError(fmt::format("{}: cannot rename into place: {}", path.string(), error.message()));
  }
}

}  // namespace tessera
