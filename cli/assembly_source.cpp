#include "cli/assembly_source.hpp"

#include <fstream>

#include <fmt/format.h>

#include "support/error.hpp"
#include "target/assembly.hpp"

namespace tessera::cli {
namespace {

std::string_view strip_comment(std::string_view line) {
  line = line.substr(0, line.find('#'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return line;
}

}  // namespace

std::vector<std::string> read_source_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("{}: cannot open", path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<AssembledLine> assemble_lines(const std::vector<std::string>& lines,
                                          const std::string& origin) {
  std::vector<AssembledLine> assembled;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view text = strip_comment(lines[i]);
    if (text.empty()) continue;
    const auto instruction = with_context(fmt::format("{} {}", origin, i + 1), [&] {
      return target::isa::parse_instruction(text);
    });
    const auto encoded = target::isa::encode(instruction);
    assembled.push_back({{encoded.words.begin(), encoded.words.begin() + encoded.count}});
  }
  return assembled;
}

std::vector<std::uint32_t> words_of(const std::vector<AssembledLine>& lines) {
  std::vector<std::uint32_t> words;
  for (const auto& line : lines) words.insert(words.end(), line.words.begin(), line.words.end());
  return words;
}

}  // namespace tessera::cli
