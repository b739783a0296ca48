#include "support/terminal_text.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "support/utf8.hpp"

namespace tessera {
namespace {

bool is_shown_as_escape(std::uint32_t code) {
  if (code < 0x20 || (code >= 0x7F && code <= 0x9F)) return true;  // C0, DEL, C1
  return code == 0x061C || code == 0x200E || code == 0x200F || (code >= 0x202A && code <= 0x202E) ||
         (code >= 0x2066 && code <= 0x2069) || code == 0x2028 || code == 0x2029;
}

void append_escape(std::string& out, std::uint32_t code) {
  switch (code) {
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    default:
      out += fmt::format("\\u{:04x}", code);
      return;
  }
}

}  // namespace

std::string escape_for_terminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto sequence = decode_utf8(text, i);
    if (!sequence) {
      out += fmt::format("\\x{:02x}", static_cast<std::uint8_t>(text[i]));
      ++i;
      continue;
    }
    if (is_shown_as_escape(sequence->code_point)) {
      append_escape(out, sequence->code_point);
    } else {
      out.append(text.substr(i, sequence->length));
    }
    i += sequence->length;
  }
  return out;
}

}  // namespace tessera
