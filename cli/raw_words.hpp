#pragma once
// Raw instruction files: little-endian 32-bit words, nothing else.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace tessera::cli {

// Larger than any tile's memory by far; a bigger file is a mistake, not code.
inline constexpr std::uintmax_t kMaxRawWordsFileBytes = 16u << 20;

// Reads a raw word file. Throws IoError when it cannot be read, InputError
// when its size is not a multiple of 4 or exceeds kMaxRawWordsFileBytes.
std::vector<std::uint32_t> read_raw_words(const std::filesystem::path& path);

// Writes words as a raw little-endian file, replacing it atomically
// (support/atomic_file.hpp).
void write_raw_words(const std::filesystem::path& path, std::span<const std::uint32_t> words);

// Parses a 32-bit word given in hex, with or without 0x ("782A03CB", "0x43a00000").
std::uint32_t parse_hex_word(std::string_view text);

}  // namespace tessera::cli
