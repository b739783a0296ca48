// tessera pack: a package from one hand-written assembly program, loaded on
// the first N tiles — for bring-up, simulator experiments and the demo, until
// the compiler produces real packages.
#include <ostream>

#include <fmt/format.h>

#include "cli/assembly_source.hpp"
#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/number_options.hpp"
#include "schema/sha256.hpp"
#include "schema/writer.hpp"
#include "support/little_endian.hpp"
#include "support/version.hpp"
#include "target/memory_map.hpp"

namespace po = boost::program_options;

namespace tessera::cli {

Command pack_command() {
  return Command{
      "pack", "build a package that runs one assembly program on N tiles",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "pack";
        syntax.summary =
            "Assembles SOURCE (the syntax `tessera disasm` prints) and writes a package that\n"
            "loads it at the image load base 0x4c010 of the first N tiles in logical order, with\n"
            "that address as every tile's entry point.";
        syntax.usage = "SOURCE -o PACKAGE [--tiles N]";
        syntax.details =
            "Branch targets in SOURCE are absolute byte addresses; the first instruction is at\n"
            "0x4c010. Programs end with `setzi $m0, 0` and `br $m0` (branch to 0 halts).\n"
            "The package carries no kernels, bindings or host exchange and is marked as built\n"
            "for the simulator.";
        syntax.options.add_options()(
            "output,o", po::value<std::string>()->required()->value_name("PACKAGE"),
            "the package to write")("tiles",
                                    po::value<std::string>()
                                        ->default_value(std::to_string(target::kTileCount))
                                        ->value_name("N"),
                                    "how many tiles run the program (1..1472)");
        syntax.required_argument("source");
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        const unsigned tiles = *unsigned_option<unsigned>(*values, "tiles");
        if (tiles < 1 || tiles > target::kTileCount) {
          throw UsageError(fmt::format("--tiles {} is outside 1..{}", tiles, target::kTileCount));
        }
        const std::string source = (*values)["source"].as<std::string>();
        const auto words =
            words_of(assemble_lines(read_source_lines(source), source, target::kLoadBase));
        if (words.empty()) throw InputError(fmt::format("{}: no instructions", source));
        const std::vector<std::uint8_t> code = words_to_bytes(words);
        const auto code_range = target::AddressRange::from_size(
            target::kLoadBase, static_cast<std::uint32_t>(code.size()), "program");
        if (!target::is_executable(code_range)) {
          throw InputError(fmt::format("{}: {} bytes of code do not fit below {:#x}", source,
                                       code.size(), target::kExecutableRange.end));
        }

        schema::Application app;
        app.compiler_version = fmt::format("tessera pack {} (git {})", version(), git_revision());
        app.not_loadable_reason = "hand-assembled by tessera pack for the simulator";
        const std::uint32_t blob = app.blobs.add(code);
        const auto topology = target::Topology::c600();
        for (unsigned i = 0; i < tiles; ++i) {
          app.tiles.push_back(schema::TileImage{
              topology.physical_tiles()[i],
              target::kEntryPoint,
              {schema::Segment{target::kLoadBase, code_range.size(), blob, 0, code_range.size(),
                               schema::kSegmentRead | schema::kSegmentExecute}}});
        }
        const std::string output = (*values)["output"].as<std::string>();
        const auto digest = schema::write_package(app, output);
        io.out << fmt::format("{}: {} instruction words on {} tiles, build digest {}\n", output,
                              words.size(), tiles, schema::to_hex(digest));
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
