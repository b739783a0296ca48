#pragma once
// Text that came from outside the process (package strings, file names,
// messages quoting them) made safe to print on a terminal. An untrusted
// string must not be able to move the cursor, clear or rewrite the screen or
// the line, retitle the window or reorder what is shown, so every character
// that can do that is printed as an escape:
//   \n \r \t \b \f               those C0 controls, by name
//   \u0000 .. \u001f, \u007f     the other C0 controls and DEL (ESC is \u001b)
//   \u0080 .. \u009f             the C1 controls (U+009B is an 8-bit CSI)
//   \u061c \u200e \u200f \u202a..\u202e \u2066..\u2069 \u2028 \u2029
//                                bidirectional controls and line separators
//   \xHH                         each byte that is not well-formed UTF-8
// Everything else, printable ASCII and UTF-8 alike, is unchanged. The escapes
// are valid inside a JSON string, so JSON output stays JSON. The one function
// every printer of untrusted text uses (the tessera command filters all its
// output through it, line by line).

#include <string>
#include <string_view>

namespace tessera {

std::string escape_for_terminal(std::string_view text);

}  // namespace tessera
