#include "support/utf8.hpp"

namespace tessera {

std::optional<Utf8Sequence> decode_utf8(std::string_view text, std::size_t at) noexcept {
  if (at >= text.size()) return std::nullopt;
  const auto lead = static_cast<std::uint8_t>(text[at]);
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead < 0x80) {
    return Utf8Sequence{lead, 1};
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code = lead & 0x1Fu;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code = lead & 0x0Fu;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code = lead & 0x07u;
  } else {
    return std::nullopt;
  }
  if (text.size() - at < length) return std::nullopt;
  for (std::size_t k = 1; k < length; ++k) {
    const auto next = static_cast<std::uint8_t>(text[at + k]);
    if ((next & 0xC0) != 0x80) return std::nullopt;
    code = (code << 6) | (next & 0x3Fu);
  }
  constexpr std::uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
    return std::nullopt;
  }
  return Utf8Sequence{code, length};
}

bool is_valid_utf8(std::string_view text) noexcept {
  for (std::size_t i = 0; i < text.size();) {
    const auto sequence = decode_utf8(text, i);
    if (!sequence) return false;
    i += sequence->length;
  }
  return true;
}

std::size_t utf8_code_points(std::string_view text) noexcept {
  std::size_t count = 0;
  for (const char c : text) {
    if ((static_cast<std::uint8_t>(c) & 0xC0u) != 0x80u) ++count;
  }
  return count;
}

}  // namespace tessera
