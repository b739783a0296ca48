// tessera disasm: decode instruction words to assembly text.
#include <ostream>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/raw_words.hpp"
#include "target/assembly.hpp"
#include "target/memory_map.hpp"

namespace po = boost::program_options;

namespace tessera::cli {

Command disasm_command() {
  return Command{
      "disasm", "decode IPU21 supervisor instruction words to assembly text",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "disasm";
        syntax.summary =
            "Decodes IPU21 supervisor instruction words, given as hex on the command line or as\n"
            "a raw little-endian file, into a listing: address, words, assembly text.";
        syntax.usage = "[--base ADDR] WORD... | --file RAW [--base ADDR]";
        syntax.details =
            "WORDs are hex, with or without 0x. A two-word sendpicp takes two WORDs. Words no\n"
            "instruction matches print as `.word 0x...`. Operand units are described in\n"
            "target/isa.hpp (counts are natural, exchange addresses are word units).\n\n"
            "Example: tessera disasm 0x782A03CB 0x43A00000";
        syntax.options.add_options()(
            "file,f", po::value<std::string>()->value_name("RAW"),
            "read little-endian 32-bit words from this file")(
            "base", po::value<std::string>()->value_name("ADDR"),
            "address of the first word (default 0 for WORDs, the image load base 0x4c010 for "
            "--file)");
        syntax.hidden.add_options()("word", po::value<std::vector<std::string>>(), "instruction word");
        syntax.positional.add("word", -1);
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        const bool from_file = values->count("file") != 0;
        const bool from_words = values->count("word") != 0;
        if (from_file == from_words) {
          throw UsageError("give either WORDs or --file, not both and not neither");
        }
        std::vector<std::uint32_t> words;
        std::uint32_t base = 0;
        if (from_file) {
          words = read_raw_words((*values)["file"].as<std::string>());
          base = target::kLoadBase;
        } else {
          for (const auto& text : (*values)["word"].as<std::vector<std::string>>()) {
            words.push_back(parse_hex_word(text));
          }
        }
        if (values->count("base")) {
          base = parse_address((*values)["base"].as<std::string>());
          if (base % 4 != 0) throw UsageError("--base must be 4-aligned");
        }
        for (const auto& line : target::isa::disassemble_words(words, base)) {
          io.out << target::isa::format_listing_line(line) << '\n';
        }
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
