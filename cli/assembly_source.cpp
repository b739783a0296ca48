#include "cli/assembly_source.hpp"

#include <fstream>

#include <fmt/format.h>

#include "support/checked.hpp"
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
                                          const std::string& origin, std::uint32_t base) {
  std::vector<AssembledLine> assembled;
  std::uint32_t address = base;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view text = strip_comment(lines[i]);
    if (text.empty()) continue;
    const auto encoded = with_context(fmt::format("{} {}", origin, i + 1), [&] {
      const auto instruction = target::isa::parse_instruction(text);
      try {
        return target::isa::encode_at(instruction, address);
      } catch (const target::isa::EncodingError& error) {
        throw target::isa::AssemblyError(error.message());
      }
    });
    assembled.push_back({{encoded.words.begin(), encoded.words.begin() + encoded.count}});
    address = checked_add(address, 4 * std::uint32_t{encoded.count}, "instruction address");
  }
  return assembled;
}

std::vector<std::uint32_t> words_of(const std::vector<AssembledLine>& lines) {
  std::vector<std::uint32_t> words;
  for (const auto& line : lines) words.insert(words.end(), line.words.begin(), line.words.end());
  return words;
}

}  // namespace tessera::cli
