// tessera inspect and tessera validate: what a package holds, and whether it
// is valid.
#include <filesystem>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "schema/digest.hpp"
#include "schema/reader.hpp"
#include "schema/sha256.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

using namespace tessera::schema;
using nlohmann::json;

std::string flags_text(std::uint32_t flags) {
  std::string text;
  text += (flags & kSegmentRead) != 0 ? 'R' : '-';
  text += (flags & kSegmentWrite) != 0 ? 'W' : '-';
  text += (flags & kSegmentExecute) != 0 ? 'X' : '-';
  return text;
}

std::string shape_text(const std::vector<std::uint32_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return text + "]";
}

std::string provenance_text(const Application& app, std::uint32_t index) {
  return index == kNoProvenance ? std::string() : "  <- " + app.debug.provenance.at(index);
}

std::size_t count_segments(const Application& app) {
  std::size_t n = 0;
  for (const auto& tile : app.tiles) n += tile.segments.size();
  return n;
}

// ---- Text ---------------------------------------------------------------------

void print_summary(const Application& app, const std::filesystem::path& path,
                   std::uintmax_t file_bytes, std::ostream& out) {
  std::size_t symbols = 0, allocations = 0, call_sites = 0;
  for (const auto& tile : app.debug.tiles) {
    symbols += tile.symbols.size();
    allocations += tile.allocations.size();
    call_sites += tile.call_sites.size();
  }
  out << fmt::format("package            {} ({} bytes)\n", path.string(), file_bytes);
  out << fmt::format("compiler           {}\n", app.compiler_version);
  out << fmt::format("build digest       {}\n", to_hex(build_digest(app)));
  out << fmt::format("hardware loadable  {}\n",
                     app.hardware_loadable ? "yes" : "no (" + app.not_loadable_reason + ")");
  out << fmt::format("tiles              {} ({} segments)\n", app.tiles.size(), count_segments(app));
  out << fmt::format("blobs              {} ({} bytes uncompressed)\n", app.blobs.size(),
                     app.blobs.total_bytes());
  out << fmt::format("bindings           {} input, {} output, {} weight\n", app.inputs.size(),
                     app.outputs.size(), app.weights.size());
  out << fmt::format("host exchange      {} pages, {} calls, startup mark {}\n",
                     app.host_exchange.pages.size(), app.host_exchange.calls.size(),
                     app.host_exchange.startup_mark);
  std::string entries;
  for (const auto& entry : app.entry_points) entries += (entries.empty() ? "" : ", ") + entry.name;
  out << fmt::format("entry points       {}\n", entries.empty() ? "(none)" : entries);
  out << fmt::format("config writes      {}\n", app.device_config_writes.size());
  out << fmt::format("debug              {} tiles: {} symbols, {} allocations, {} call sites; "
                     "{} exchange phases\n",
                     app.debug.tiles.size(), symbols, allocations, call_sites,
                     app.debug.exchange_phases.size());
}

void print_tiles(const Application& app, std::ostream& out) {
  out << "\nTiles\n";
  for (const auto& tile : app.tiles) {
    out << fmt::format("  {}  entry {:#x}\n", tile.tile, tile.entry_point);
    for (const auto& s : tile.segments) {
      out << fmt::format("    [{:#07x}, {:#07x})  {}  {:>7} bytes, {:>7} from blob {} at {:#x}\n",
                         s.address, s.address + s.memory_size, flags_text(s.flags), s.memory_size,
                         s.file_size, s.blob, s.blob_offset);
    }
  }
}

void print_bindings(const Application& app, std::ostream& out) {
  out << "\nBindings\n";
  const auto print_list = [&](std::string_view kind, const std::vector<Binding>& bindings) {
    for (const auto& b : bindings) {
      out << fmt::format("  {:<7} {}  {} {}  {} bytes in {} slices\n", kind, b.name,
                         dtype_name(b.dtype), shape_text(b.shape), payload_bytes(b),
                         b.slices.size());
      for (const auto& s : b.slices) {
        out << fmt::format("    bytes [{:#x}, {:#x}) -> {} {:#x}\n", s.file_offset,
                           s.file_offset + s.size, s.tile, s.tile_address);
      }
    }
  };
  print_list("input", app.inputs);
  print_list("output", app.outputs);
  print_list("weight", app.weights);
}

void print_debug(const Application& app, std::ostream& out) {
  out << "\nDebug\n";
  for (const auto& tile : app.debug.tiles) {
    out << fmt::format("  {}\n", tile.tile);
    for (const auto& s : tile.symbols) {
      out << fmt::format("    symbol      {:#07x} {:>6}  {:<14} {}\n", s.address, s.size,
                         symbol_kind_name(s.kind), s.name);
    }
    for (const auto& a : tile.allocations) {
      out << fmt::format("    allocation  {:#07x} {:>6}  {:<14} #{} {} ({}) live [{}, {}){}\n",
                         a.address, a.size, allocation_kind_name(a.kind), a.id, a.name, a.tensor,
                         a.live_from,
                         a.live_until == kLiveToEnd ? "end" : std::to_string(a.live_until),
                         provenance_text(app, a.provenance));
    }
    for (const auto& c : tile.call_sites) {
      out << fmt::format("    call        {:#07x}  {}{}\n", c.pc, c.kernel,
                         provenance_text(app, c.provenance));
      for (const auto& o : c.operands) {
        out << fmt::format("      $m{} {:#07x} +{} in #{}{}\n", o.reg, o.address, o.footprint,
                           o.allocation, o.writes ? " (written)" : "");
      }
    }
    for (const auto& l : tile.loops) {
      out << fmt::format("    loop        counter {:#07x}  {} iterations{}\n", l.counter, l.count,
                         provenance_text(app, l.provenance));
    }
  }
  for (const auto& phase : app.debug.exchange_phases) {
    out << fmt::format("  exchange phase {}: {} transfers\n", phase.id, phase.transfers.size());
    for (const auto& t : phase.transfers) {
      std::string destinations;
      for (const auto& d : t.destinations) {
        destinations += fmt::format("{}{} {:#x}", destinations.empty() ? "" : ", ", d.tile,
                                    d.address);
      }
      out << fmt::format("    {} {:#x} -> {} ({} words){}\n", t.source_tile, t.source_address,
                         destinations, t.words, provenance_text(app, t.provenance));
    }
  }
  // Where the planned phases repeat (loops are described once, not unrolled:
  // docs/FORMAT.md, "Planned exchange phases").
  for (const auto& loop : app.debug.phase_loops) {
    out << fmt::format("  phase loop: rounds from {}, {} per iteration, {} iterations\n",
                       loop.first_round, loop.rounds_per_iteration, loop.count);
  }
  if (app.debug.planned_rounds > 0) {
    out << fmt::format("  planned rounds: every round below {} is planned\n",
                       app.debug.planned_rounds);
  }
}

// ---- JSON ---------------------------------------------------------------------

json binding_json(const Binding& b) {
  json slices = json::array();
  for (const auto& s : b.slices) {
    slices.push_back({{"tile", s.tile.value},
                      {"tileAddress", s.tile_address},
                      {"fileOffset", s.file_offset},
                      {"size", s.size}});
  }
  return {{"name", b.name},   {"dtype", dtype_name(b.dtype)}, {"shape", b.shape},
          {"bytes", payload_bytes(b)}, {"slices", slices}};
}

json package_json(const Application& app, std::uintmax_t file_bytes, bool tiles, bool bindings,
                  bool debug) {
  json doc = {{"fileBytes", file_bytes},
              {"compilerVersion", app.compiler_version},
              {"buildDigest", to_hex(build_digest(app))},
              {"hardwareLoadable", app.hardware_loadable},
              {"notLoadableReason", app.not_loadable_reason},
              {"tileCount", app.tiles.size()},
              {"segmentCount", count_segments(app)},
              {"blobCount", app.blobs.size()},
              {"blobBytes", app.blobs.total_bytes()}};
  json entries = json::array();
  for (const auto& e : app.entry_points) {
    entries.push_back({{"name", e.name}, {"command", e.command}, {"externalSyncs", e.external_syncs}});
  }
  doc["entryPoints"] = entries;
  json calls = json::array();
  for (const auto& c : app.host_exchange.calls) {
    calls.push_back({{"name", c.name},
                     {"phases", c.phases},
                     {"inputSlices", c.inputs.size()},
                     {"outputSlices", c.outputs.size()}});
  }
  doc["hostCalls"] = calls;
  if (tiles) {
    json list = json::array();
    for (const auto& t : app.tiles) {
      json segments = json::array();
      for (const auto& s : t.segments) {
        segments.push_back({{"address", s.address},
                            {"memorySize", s.memory_size},
                            {"fileSize", s.file_size},
                            {"blob", s.blob},
                            {"blobOffset", s.blob_offset},
                            {"flags", flags_text(s.flags)}});
      }
      list.push_back({{"tile", t.tile.value}, {"entryPoint", t.entry_point}, {"segments", segments}});
    }
    doc["tiles"] = list;
  }
  if (bindings) {
    for (const auto& [key, list] : {std::pair{"inputs", &app.inputs}, {"outputs", &app.outputs},
                                    {"weights", &app.weights}}) {
      json array = json::array();
      for (const auto& b : *list) array.push_back(binding_json(b));
      doc[key] = array;
    }
  }
  if (debug) {
    json tiles_debug = json::array();
    for (const auto& t : app.debug.tiles) {
      json symbols = json::array(), allocations = json::array(), sites = json::array();
      for (const auto& s : t.symbols) {
        symbols.push_back({{"name", s.name}, {"address", s.address}, {"size", s.size},
                           {"kind", symbol_kind_name(s.kind)}});
      }
      for (const auto& a : t.allocations) {
        allocations.push_back({{"id", a.id}, {"name", a.name}, {"tensor", a.tensor},
                               {"address", a.address}, {"size", a.size},
                               {"liveFrom", a.live_from}, {"liveUntil", a.live_until},
                               {"kind", allocation_kind_name(a.kind)}});
      }
      for (const auto& c : t.call_sites) {
        json operands = json::array();
        for (const auto& o : c.operands) {
          operands.push_back({{"register", o.reg}, {"allocation", o.allocation},
                              {"address", o.address}, {"footprint", o.footprint},
                              {"writes", o.writes}});
        }
        sites.push_back({{"pc", c.pc}, {"kernel", c.kernel}, {"operands", operands}});
      }
      json loops = json::array();
      for (const auto& l : t.loops) {
        loops.push_back({{"counter", l.counter}, {"count", l.count}, {"provenance", l.provenance}});
      }
      tiles_debug.push_back({{"tile", t.tile.value}, {"symbols", symbols},
                             {"allocations", allocations}, {"callSites", sites},
                             {"loops", loops}});
    }
    json phases = json::array();
    for (const auto& p : app.debug.exchange_phases) {
      json transfers = json::array();
      for (const auto& t : p.transfers) {
        json destinations = json::array();
        for (const auto& d : t.destinations) {
          destinations.push_back({{"tile", d.tile.value}, {"address", d.address}});
        }
        transfers.push_back({{"sourceTile", t.source_tile.value},
                             {"sourceAddress", t.source_address},
                             {"words", t.words},
                             {"destinations", destinations}});
      }
      phases.push_back({{"id", p.id}, {"transfers", transfers}});
    }
    json loops = json::array();
    for (const auto& loop : app.debug.phase_loops) {
      loops.push_back({{"firstRound", loop.first_round},
                       {"roundsPerIteration", loop.rounds_per_iteration},
                       {"count", loop.count}});
    }
    doc["debug"] = {{"tiles", tiles_debug}, {"exchangePhases", phases},
                    {"phaseLoops", loops}, {"plannedRounds", app.debug.planned_rounds},
                    {"provenance", app.debug.provenance}};
  }
  return doc;
}

std::uintmax_t file_size_of(const std::filesystem::path& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? 0 : size;
}

}  // namespace

Command inspect_command() {
  return Command{
      "inspect", "show what a .ipuexe package holds",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "inspect";
        syntax.summary =
            "Reads and validates a package, then prints a summary: compiler, digest, tiles,\n"
            "blobs, bindings, host exchange, entry points and debug records.";
        syntax.usage = "PACKAGE [--tiles] [--bindings] [--debug] [--json]";
        syntax.options.add_options()("tiles", "list every tile's entry point and segments")(
            "bindings", "list inputs, outputs and weights with their slices")(
            "debug", "list symbols, allocations, call sites and planned transfers")(
            "json", "print JSON instead of text");
        syntax.required_argument("package");
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        const std::filesystem::path path = (*values)["package"].as<std::string>();
        const Application app = read_package_file(path);
        const bool tiles = values->count("tiles") != 0;
        const bool bindings = values->count("bindings") != 0;
        const bool debug = values->count("debug") != 0;
        if (values->count("json")) {
          io.out << package_json(app, file_size_of(path), tiles, bindings, debug).dump(2) << '\n';
          return kExitSuccess;
        }
        print_summary(app, path, file_size_of(path), io.out);
        if (tiles) print_tiles(app, io.out);
        if (bindings) print_bindings(app, io.out);
        if (debug) print_debug(app, io.out);
        return kExitSuccess;
      }};
}

Command validate_command() {
  return Command{
      "validate", "check a .ipuexe package against every rule of the format",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "validate";
        syntax.summary =
            "Reads a package with full validation (docs/FORMAT.md): exit 0 when it is valid,\n"
            "1 with the first broken rule, named by its field path, on one line.";
        syntax.usage = "PACKAGE";
        syntax.required_argument("package");
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        const std::filesystem::path path = (*values)["package"].as<std::string>();
        const Application app = read_package_file(path);
        io.out << fmt::format("{}: valid, build digest {}\n", path.string(),
                              to_hex(build_digest(app)));
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
