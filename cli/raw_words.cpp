#include "cli/raw_words.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "support/atomic_file.hpp"
#include "support/error.hpp"
#include "support/little_endian.hpp"

namespace tessera::cli {

std::vector<std::uint32_t> read_raw_words(const std::filesystem::path& path) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw IoError(fmt::format("{}: {}", path.string(), error.message()));
  if (size > kMaxRawWordsFileBytes) {
    throw InputError(fmt::format("{}: {} bytes is larger than the {} bytes a raw word file may have",
                                 path.string(), size, kMaxRawWordsFileBytes));
  }
  if (size % 4 != 0) {
    throw InputError(fmt::format("{}: size {} is not a whole number of 32-bit words", path.string(), size));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size())) {
    throw IoError(fmt::format("{}: short read ({} of {} bytes)", path.string(), in.gcount(), size));
  }
  std::vector<std::uint32_t> words(bytes.size() / 4);
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = load_u32_le(&bytes[4 * i]);
  return words;
}

void write_raw_words(const std::filesystem::path& path, std::span<const std::uint32_t> words) {
  write_file_atomically(path, words_to_bytes(words));
}

namespace {

std::uint32_t parse_number(std::string_view text, int base, std::string_view what) {
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw UsageError(fmt::format("'{}' is not a {}", text, what));
  }
  return value;
}

std::string_view without_hex_prefix(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) text.remove_prefix(2);
  return text;
}

}  // namespace

std::uint32_t parse_hex_word(std::string_view text) {
  return parse_number(without_hex_prefix(text), 16, "32-bit hex word");
}

}  // namespace tessera::cli
