#include "models/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "support/checked.hpp"
#include "support/error.hpp"

namespace tessera::models {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw IoError(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  }
  struct ::stat status {};
  if (::fstat(fd, &status) != 0) {
    const int error = errno;
    ::close(fd);
    throw IoError(fmt::format("{}: cannot stat: {}", path.string(), std::strerror(error)));
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    throw IoError(fmt::format("{}: not a regular file", path.string()));
  }
  size_ = checked_cast<std::size_t>(status.st_size, "file size");
  if (size_ > 0) {
    void* address = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      throw IoError(fmt::format("{}: cannot map: {}", path.string(), std::strerror(error)));
    }
    data_ = static_cast<const std::uint8_t*>(address);
  }
  ::close(fd);  // the mapping keeps the file
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace tessera::models
