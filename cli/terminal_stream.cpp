#include "cli/terminal_stream.hpp"

#include "support/terminal_text.hpp"

namespace tessera::cli {
namespace {

// Bytes at the end of `text` that begin a multi-byte UTF-8 sequence not yet
// complete: held back so that a sequence split between two writes is not
// escaped as invalid bytes.
std::size_t incomplete_utf8_tail(const std::string& text) {
  for (std::size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const auto byte = static_cast<unsigned char>(text[text.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t length = (byte & 0xE0) == 0xC0   ? 2
                               : (byte & 0xF0) == 0xE0 ? 3
                               : (byte & 0xF8) == 0xF0 ? 4
                                                       : 1;
    return length > back ? back : 0;
  }
  return 0;
}

}  // namespace

void TerminalSafeStream::Buffer::emit(bool final) {
  std::size_t start = 0;
  for (std::size_t end = pending_.find('\n'); end != std::string::npos;
       end = pending_.find('\n', start)) {
    out_ << escape_for_terminal(std::string_view(pending_).substr(start, end - start)) << '\n';
    start = end + 1;
  }
  const std::size_t keep = final ? 0 : incomplete_utf8_tail(pending_.substr(start));
  out_ << escape_for_terminal(
      std::string_view(pending_).substr(start, pending_.size() - start - keep));
  pending_.erase(0, pending_.size() - keep);
}

TerminalSafeStream::Buffer::int_type TerminalSafeStream::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  pending_ += traits_type::to_char_type(c);
  if (traits_type::to_char_type(c) == '\n') emit(false);
  return c;
}

std::streamsize TerminalSafeStream::Buffer::xsputn(const char* text, std::streamsize count) {
  pending_.append(text, static_cast<std::size_t>(count));
  if (pending_.find('\n') != std::string::npos) emit(false);
  return count;
}

int TerminalSafeStream::Buffer::sync() {
  emit(false);
  out_.flush();
  return out_ ? 0 : -1;
}

TerminalSafeStream::TerminalSafeStream(std::ostream& destination)
    : std::ostream(nullptr), buffer_(destination) {
  rdbuf(&buffer_);
}

TerminalSafeStream::~TerminalSafeStream() {
  buffer_.emit(true);
  flush();
}

}  // namespace tessera::cli
