// tessera disasm: decode instruction words to assembly text, or list one
// tile's code from a package with its debug names.
#include <ostream>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/number_options.hpp"
#include "cli/raw_words.hpp"
#include "cli/tile_listing.hpp"
#include "schema/reader.hpp"
#include "target/assembly.hpp"
#include "target/memory_map.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

int disasm_tile(const po::variables_map& values, Streams& io) {
  const auto positional = values.count("word") ? values["word"].as<std::vector<std::string>>()
                                               : std::vector<std::string>{};
  if (positional.size() != 1) throw UsageError("--tile takes one PACKAGE and no WORDs");
  if (values.count("file") || values.count("base")) {
    throw UsageError("--file and --base are for raw words, not for PACKAGE --tile");
  }
  const std::string& tile_text = values["tile"].as<std::string>();
  target::PhysicalTile tile;
  try {
    tile = target::parse_tile(tile_text, target::Topology::c600());
  } catch (const target::TopologyError& error) {
    throw UsageError(fmt::format("--tile {}: {}", tile_text, error.message()));
  }
  const std::string& path = positional.front();
  const schema::Application app = schema::read_package_file(path);
  with_context(path, [&] {
    const schema::TileImage& image = tile_image(app, tile);
    if (values.count("symbols")) {
      print_tile_symbols(app, image, io.out);
    } else {
      print_tile_listing(app, image, io.out);
    }
  });
  return kExitSuccess;
}

}  // namespace

Command disasm_command() {
  return Command{
      "disasm", "decode IPU21 supervisor instruction words, or a package tile's code, to assembly",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "disasm";
        syntax.summary =
            "Decodes IPU21 supervisor instruction words, given as hex on the command line, as\n"
            "a raw little-endian file, or as one tile's code in a .ipuexe package, into a\n"
            "listing: address, words, assembly text.";
        syntax.usage =
            "[--base ADDR] WORD... | --file RAW [--base ADDR] | PACKAGE --tile T [--symbols]";
        syntax.details =
            "WORDs are hex, with or without 0x. A two-word sendpicp takes two WORDs. Words no\n"
            "instruction matches print as `.word 0x...`. Operand units are described in\n"
            "target/isa.hpp (counts are natural, exchange addresses are word units).\n\n"
            "PACKAGE --tile T lists every executable segment of tile T's image in address\n"
            "order. T is physical (p260 or 260) or logical (L100, placed by the C600 map).\n"
            "With the package's debug records it adds a `name:` line where a symbol starts,\n"
            "the symbol of each call or branch target, under each kernel call site its\n"
            "operands (`$m2 → y0 [0x64000, +1024) write`) and provenance, and marks the\n"
            "entry point. `tessera inspect PACKAGE --tiles` lists the tiles.\n\n"
            "Examples: tessera disasm 0x782A03CB 0x43A00000\n"
            "          tessera disasm model.ipuexe --tile L0";
        syntax.options.add_options()(
            "file,f", po::value<std::string>()->value_name("RAW"),
            "read little-endian 32-bit words from this file")(
            "base", po::value<std::string>()->value_name("ADDR"),
            "address of the first word (default 0 for WORDs, the image load base 0x4c010 for "
            "--file)")(
            "tile,t", po::value<std::string>()->value_name("T"),
            "list this tile's code from PACKAGE: p260 or 260 (physical), L100 (logical)")(
            "symbols", "with --tile: list the tile's symbols and allocations instead");
        syntax.hidden.add_options()("word", po::value<std::vector<std::string>>(), "instruction word");
        syntax.positional.add("word", -1);
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        if (values->count("tile")) return disasm_tile(*values, io);
        if (values->count("symbols")) throw UsageError("--symbols needs PACKAGE --tile T");
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
            if (text.ends_with(".ipuexe")) {
              throw UsageError(fmt::format("{} is a package: give --tile T too", text));
            }
            words.push_back(parse_hex_word(text));
          }
        }
        if (values->count("base")) {
          base = *unsigned_option<std::uint32_t>(*values, "base");
          if (base % 4 != 0) throw UsageError("--base must be 4-aligned");
        }
        for (const auto& line : target::isa::disassemble_words(words, base)) {
          io.out << target::isa::format_listing_line(line) << '\n';
        }
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
