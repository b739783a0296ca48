#pragma once
// A user's file opened for reading by offset (pread), never memory-mapped: a
// mapped file that another process truncates kills the reader with SIGBUS
// on the next access, where a read just comes back short — which we report
// as an error naming the file (ARCHITECTURE.md decision 9: a user's file
// never crashes the process). Checkpoints are read tensor by tensor, so the
// only copy is the one tensor being converted.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace tessera::models {

class InputFile {
 public:
  // Opens a regular file; IoError naming the path when the OS refuses.
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;

  const std::filesystem::path& path() const noexcept { return path_; }
  // The size when the file was opened.
  std::uint64_t size() const noexcept { return size_; }

  // Fills `out` from bytes [offset, offset + out.size()). IoError naming the
  // file when the OS refuses or the file ends early (it shrank since it was
  // opened).
  void read(std::uint64_t offset, std::span<std::uint8_t> out) const;
  std::vector<std::uint8_t> read(std::uint64_t offset, std::uint64_t bytes) const;

 private:
  void release() noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace tessera::models
