// tessera asm: encode assembly text to instruction words.
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "cli/assembly_source.hpp"
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/number_options.hpp"
#include "cli/raw_words.hpp"
#include "target/assembly.hpp"
#include "target/memory_map.hpp"

namespace po = boost::program_options;

namespace tessera::cli {

Command asm_command() {
  return Command{
      "asm", "encode IPU21 assembly text to instruction words",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "asm";
        syntax.summary =
            "Encodes IPU21 supervisor assembly (the syntax `tessera disasm` prints) into\n"
            "instruction words, printed as hex or written as a raw little-endian file.";
        syntax.usage =
            "[--base ADDR] [--output RAW] INSTRUCTION... | --file SOURCE [--base ADDR] [--output "
            "RAW]";
        syntax.details =
            "Each INSTRUCTION is one argument, e.g. 'send 2, 0x14079, 3'. In a SOURCE file, one\n"
            "instruction per line; '#' starts a comment. Every operand is range-checked, and\n"
            "every instruction is checked where it will sit: the first at ADDR (default the\n"
            "image load base 0x4c010, where `tessera pack` puts it), so a sendpicp must land\n"
            "on an 8-byte boundary.\n\n"
            "Example: tessera asm 'setzi $m8, 0x604' 'put $INCOMING_MUX, $m8' 'br $m10'";
        syntax.options.add_options()("file,f", po::value<std::string>()->value_name("SOURCE"),
                                     "read instructions from this file")(
            "output,o", po::value<std::string>()->value_name("RAW"),
            "write little-endian words to this file instead of printing them")(
            "base", po::value<std::string>()->value_name("ADDR"),
            "address of the first instruction (default the image load base 0x4c010)")(
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
        std::uint32_t base = target::kLoadBase;
        if (values->count("base")) {
          base = *unsigned_option<std::uint32_t>(*values, "base");
          if (base % 4 != 0) throw UsageError("--base must be 4-aligned");
        }
        const auto assembled = assemble_lines(lines, origin, base);
        if (values->count("output")) {
          write_raw_words((*values)["output"].as<std::string>(), words_of(assembled));
        } else {
          for (const auto& line : assembled) {
            io.out << (line.words.size() == 2
                           ? fmt::format("{:08x} {:08x}\n", line.words[0], line.words[1])
                           : fmt::format("{:08x}\n", line.words[0]));
          }
        }
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
