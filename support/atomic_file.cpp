#include "support/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw IoError(fmt::format("{}: {}", what, std::strerror(errno)));
}

void write_all(int fd, std::span<const std::uint8_t> bytes, const std::string& partial) {
  while (!bytes.empty()) {
    const ::ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0) {
      if (errno == EINTR) continue;
      fail(fmt::format("cannot write {}", partial));
    }
    bytes = bytes.subspan(static_cast<std::size_t>(wrote));
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::span<const std::uint8_t>> pieces) {
  const std::string partial = path.string() + ".partial";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(fmt::format("cannot create {}", partial));
  bool open = true;
  try {
    for (const auto piece : pieces) write_all(fd, piece, partial);
    if (::fsync(fd) != 0) fail(fmt::format("cannot flush {}", partial));
    open = false;
    if (::close(fd) != 0) fail(fmt::format("cannot close {}", partial));
    if (::rename(partial.c_str(), path.c_str()) != 0) {
      fail(fmt::format("cannot rename {} into place", partial));
    }
  } catch (...) {
    if (open) ::close(fd);
    ::unlink(partial.c_str());
    throw;
  }
}

}  // namespace tessera
