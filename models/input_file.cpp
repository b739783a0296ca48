#include "models/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::models {

InputFile::InputFile(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    throw IoError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  }
  struct ::stat status {};
  if (::fstat(fd_, &status) != 0) {
    const int error = errno;
    release();
    throw IoError(fmt::format("{}: cannot stat: {}", path.string(), std::strerror(error)));
  }
  if (!S_ISREG(status.st_mode)) {
    release();
    throw IoError(fmt::format("{}: not a regular file", path.string()));
  }
  size_ = checked_cast<std::uint64_t>(status.st_size, "file size");
}

InputFile::~InputFile() { release(); }

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(std::exchange(other.size_, 0)) {}

InputFile& InputFile::operator=(InputFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void InputFile::read(std::uint64_t offset, std::span<std::uint8_t> out) const {
  std::size_t done = 0;
  while (done < out.size()) {
    const std::uint64_t at = checked_add(offset, std::uint64_t{done}, "file offset");
    const ::ssize_t got = ::pread(fd_, out.data() + done, out.size() - done,
                                  checked_cast<::off_t>(at, "file offset"));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw IoError(fmt::format("{}: cannot read bytes [{}, {}): {}", path_.string(), offset,
                                offset + out.size(), std::strerror(errno)));
    }
    if (got == 0) {
      throw IoError(fmt::format(
          "{}: ends at byte {} while reading bytes [{}, {}): the file was {} bytes when it was "
          "opened and has shrunk since (is another program writing it?)",
          path_.string(), at, offset, offset + out.size(), size_));
    }
    done += static_cast<std::size_t>(got);
  }
}

std::vector<std::uint8_t> InputFile::read(std::uint64_t offset, std::uint64_t bytes) const {
  std::vector<std::uint8_t> out(checked_cast<std::size_t>(bytes, "read size"));
  read(offset, out);
  return out;
}

void InputFile::release() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace tessera::models
