// tessera asm: encode assembly text to instruction words.
#include <fstream>
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/raw_words.hpp"
#include "target/assembly.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

// Assembly lines from a file: one instruction per line; `#` starts a comment.
std::vector<std::string> read_source_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(fmt::format("{}: cannot open", path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string_view strip_comment(std::string_view line) {
  const auto hash = line.find('#');
  line = line.substr(0, hash);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return line;
}

}  // namespace

Command asm_command() {
  return Command{
      "asm", "encode IPU21 assembly text to instruction words",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "asm";
        syntax.summary =
            "Encodes IPU21 supervisor assembly (the syntax `tessera disasm` prints) into\n"
            "instruction words, printed as hex or written as a raw little-endian file.";
        syntax.usage = "[--output RAW] INSTRUCTION... | --file SOURCE [--output RAW]";
        syntax.details =
            "Each INSTRUCTION is one argument, e.g. 'send 2, 0x14079, 3'. In a SOURCE file, one\n"
            "instruction per line; '#' starts a comment. Every operand is range-checked.\n\n"
            "Example: tessera asm 'setzi $m8, 0x604' 'put $INCOMING_MUX, $m8' 'br $m10'";
        syntax.options.add_options()("file,f", po::value<std::string>()->value_name("SOURCE"),
                                     "read instructions from this file")(
            "output,o", po::value<std::string>()->value_name("RAW"),
            "write little-endian words to this file instead of printing them")(
            "instruction", po::value<std::vector<std::string>>(), "instruction text");
        syntax.positional.add("instruction", -1);
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        const bool from_file = values->count("file") != 0;
        if (from_file == (values->count("instruction") != 0)) {
          throw UsageError("give either INSTRUCTIONs or --file, not both and not neither");
        }
        const std::string origin = from_file ? (*values)["file"].as<std::string>() : "argument";
        const auto lines = from_file ? read_source_lines(origin)
                                     : (*values)["instruction"].as<std::vector<std::string>>();
        std::vector<std::uint32_t> words;
        std::vector<std::string> printed;
        for (std::size_t i = 0; i < lines.size(); ++i) {
          const std::string_view text = strip_comment(lines[i]);
          if (text.empty()) continue;
          const auto instruction = with_context(fmt::format("{} {}", origin, i + 1), [&] {
            return target::isa::parse_instruction(text);
          });
          const auto encoded = target::isa::encode(instruction);
          words.insert(words.end(), encoded.words.begin(), encoded.words.begin() + encoded.count);
          printed.push_back(encoded.count == 2
                                ? fmt::format("{:08x} {:08x}", encoded.words[0], encoded.words[1])
                                : fmt::format("{:08x}", encoded.words[0]));
        }
        if (values->count("output")) {
          write_raw_words((*values)["output"].as<std::string>(), words);
        } else {
          for (const auto& line : printed) io.out << line << '\n';
        }
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
