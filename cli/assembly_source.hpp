#pragma once
// Assembly source as the CLI reads it: one instruction per line (the syntax
// `tessera disasm` prints), `#` starts a comment, blank lines are skipped.

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::cli {

struct AssembledLine {
  std::vector<std::uint32_t> words;  // one, or two for sendpicp
};

// Reads a source file's lines; IoError when it cannot be opened.
std::vector<std::string> read_source_lines(const std::string& path);

// Assembles every instruction line, the first at byte address `base` and
// each next one after it, so that each is checked where it will sit (a
// sendpicp needs an 8-byte boundary); errors name `origin` and the line number.
std::vector<AssembledLine> assemble_lines(const std::vector<std::string>& lines,
                                          const std::string& origin, std::uint32_t base);

// All words of the assembled lines, in order.
std::vector<std::uint32_t> words_of(const std::vector<AssembledLine>& lines);

}  // namespace tessera::cli
