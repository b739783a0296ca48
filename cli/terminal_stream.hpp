#pragma once
// Everything the tessera command prints passes through escape_for_terminal
// (support/terminal_text.hpp): results on stdout, errors on stderr. Much of
// it quotes untrusted text — names, versions and provenance from packages,
// graph names, file names, error messages that quote them — and one filter
// at the door catches every such string, including those a future printer
// forgets. The command's own output has no control character but '\n', so
// the filter escapes each line and keeps the line ends.

#include <ostream>
#include <streambuf>
#include <string>

namespace tessera::cli {

class TerminalSafeStream : public std::ostream {
 public:
  // Writes to `destination`, escaped; flushes pending text when flushed or destroyed.
  explicit TerminalSafeStream(std::ostream& destination);
  ~TerminalSafeStream() override;

 private:
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::ostream& destination) : out_(destination) {}
    // Writes every complete line, and at the end (or a flush) the rest too
    // but for a trailing UTF-8 sequence that may still be completed.
    void emit(bool final);

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* text, std::streamsize count) override;
    int sync() override;

   private:
    std::ostream& out_;
    std::string pending_;
  };

  Buffer buffer_;
};

}  // namespace tessera::cli
