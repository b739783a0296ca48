// Untrusted text made safe for a terminal: a table of vectors, one row per
// kind of character (issue 15, item 6).
#include <gtest/gtest.h>

#include <string>

#include "support/terminal_text.hpp"

namespace tessera {
namespace {

struct Vector {
  std::string input;
  std::string printed;
};

// clang-format off
const Vector kVectors[] = {
  {"tessera 0.1.0 (git 1a2b)", "tessera 0.1.0 (git 1a2b)"},  // printable ASCII passes
  {"", ""},
  {"back\\slash \"quoted\"", "back\\slash \"quoted\""},
  {"caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x98\x80"},  // UTF-8 passes
  {"evil\x1B[2J", "evil\\u001b[2J"},        // ESC: would clear the screen
  {"over\rwrite", "over\\rwrite"},          // CR: would rewrite the line
  {"two\nlines\ttab", "two\\nlines\\ttab"},
  {"bell\x07 bs\x08 ff\x0C", "bell\\u0007 bs\\b ff\\f"},
  {std::string("nul\0!", 5), "nul\\u0000!"},
  {"del\x7F", "del\\u007f"},
  {"csi\xC2\x9B" "31m", "csi\\u009b31m"},   // C1 CSI (U+009B), an 8-bit escape
  {"rlo\xE2\x80\xAE" "txt.exe", "rlo\\u202etxt.exe"},  // bidi override: reorders what is shown
  {"lsep\xE2\x80\xA8", "lsep\\u2028"},
  {"bad\xFF" "byte", "bad\\xffbyte"},       // not UTF-8: each byte shown
  {"cut\xE2\x86", "cut\\xe2\\x86"},         // a truncated sequence
  {"overlong\xC0\xAF", "overlong\\xc0\\xaf"},
};
// clang-format on

TEST(TerminalText, EscapesEveryControlAndInvalidByteAndNothingElse) {
  for (const Vector& vector : kVectors) {
    EXPECT_EQ(escape_for_terminal(vector.input), vector.printed) << vector.printed;
  }
}

}  // namespace
}  // namespace tessera
