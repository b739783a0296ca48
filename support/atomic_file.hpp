#pragma once
// Writing a file so that a failure loses nothing: the bytes go to PATH.partial,
// are flushed to disk, and only then renamed over PATH. An existing PATH stays
// untouched until the new contents are complete.

#include <cstdint>
#include <filesystem>
#include <span>

namespace tessera {

// IoError naming the path on any failure; PATH.partial is removed then.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

}  // namespace tessera
