#pragma once
// A file mapped read-only into memory, so that a checkpoint's tensors are
// read in place rather than copied (STYLE.md, "Loaders validate everything
// before they touch anything": validate the header, then map the data).

#include <cstdint>
#include <filesystem>
#include <span>

namespace tessera::models {

class MappedFile {
 public:
  // Maps the whole file; IoError naming the path when the OS refuses. An
  // empty file maps to an empty span.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  std::span<const std::uint8_t> bytes() const noexcept { return {data_, size_}; }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void release() noexcept;

  std::filesystem::path path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tessera::models
