#pragma once
// Writing a file so that a failure loses nothing and nothing planted in its
// directory can redirect the write. Every tool that writes a file goes
// through here.
//
// The bytes go to a new temporary file in the destination's directory (so
// the rename below stays on one file system), created exclusively under a
// name nobody can predict: O_CREAT | O_EXCL | O_NOFOLLOW, so an existing
// file or symlink there is never opened, let alone truncated. The file is
// flushed to disk, renamed over PATH (a symlink at PATH is replaced, not
// followed), and the directory is flushed so the rename survives a crash.
// An existing PATH stays untouched until the new contents are complete; on
// any failure the temporary file is removed. Errors are IoErrors naming PATH
// with the OS's reason, e.g. "out.bin: cannot write: File too large".

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <span>

namespace tessera {

class AtomicFile {
 public:
  // Creates the temporary file next to `path`.
  explicit AtomicFile(std::filesystem::path path);
  // Removes the temporary file unless commit() succeeded. Never throws.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

  void write(std::span<const std::uint8_t> bytes);
  // Flushes the file, renames it over path() and flushes the directory.
  void commit();

 private:
  [[noreturn]] void fail(const char* what) const;

  std::filesystem::path path_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes the pieces, in order, as the file's contents, through AtomicFile.
void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::span<const std::uint8_t>> pieces);

inline void write_file_atomically(const std::filesystem::path& path,
                                  std::span<const std::uint8_t> bytes) {
  write_file_atomically(path, {bytes});
}

}  // namespace tessera
