#pragma once
// Writing a file so that a failure loses nothing: the bytes go to PATH.partial,
// are flushed to disk, and only then renamed over PATH. An existing PATH stays
// untouched until the new contents are complete.

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <span>

namespace tessera {

// Writes the pieces, in order, as the file's contents. IoError naming the
// file on any failure (create, write, flush, close, rename); PATH.partial is
// removed then.
void write_file_atomically(const std::filesystem::path& path,
                           std::initializer_list<std::span<const std::uint8_t>> pieces);

inline void write_file_atomically(const std::filesystem::path& path,
                                  std::span<const std::uint8_t> bytes) {
  write_file_atomically(path, {bytes});
}

}  // namespace tessera
