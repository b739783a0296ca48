#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

// One well-formed UTF-8 sequence: its code point and its length in bytes.
struct Utf8Sequence {
  std::uint32_t code_point = 0;
  std::size_t length = 0;
};

// The sequence starting at text[at], or nullopt when the bytes there are not
// well-formed UTF-8 (a stray or truncated byte, an overlong form, a
// surrogate, a code point above U+10FFFF).
std::optional<Utf8Sequence> decode_utf8(std::string_view text, std::size_t at) noexcept;

// Whether text is well-formed UTF-8 throughout.
bool is_valid_utf8(std::string_view text) noexcept;

// The characters (code points) of well-formed UTF-8 text: its bytes that do
// not continue a sequence. A length "in characters" is this, not the bytes.
std::size_t utf8_code_points(std::string_view text) noexcept;

}  // namespace tessera
