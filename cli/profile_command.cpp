// tessera profile: read a cycle profile (schema/profile.capnp) the way a
// person tunes a model: where the cycles go, grouped and filtered, how full
// each tile's memory is, and an HTML report to look at
// (runtime/profile/ answers the questions; this file prints them).
#include <optional>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/number_options.hpp"
#include "runtime/profile/exchange_phases.hpp"
#include "runtime/profile/html_report.hpp"
#include "runtime/profile/json.hpp"
#include "runtime/profile/memory.hpp"
#include "runtime/profile/query.hpp"
#include "schema/digest.hpp"
#include "schema/reader.hpp"
#include "schema/sha256.hpp"
#include "support/error.hpp"
#include "target/memory_map.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

using namespace tessera::profile;

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? "-"
                    : fmt::format("{:.1f} %",
                                  100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string digest_hex(std::span<const std::uint8_t> digest) {
  std::string text;
  for (const auto byte : digest) text += fmt::format("{:02x}", byte);
  return text;
}

void print_summary(const Timeline& timeline, const Summary& summary, std::ostream& out) {
  const auto& profile = timeline.profile();
  out << fmt::format("tiles              {} ({} steps)\n", summary.tiles, summary.samples);
  out << fmt::format("clock              {:.3f} GHz ({} clock)\n",
                     static_cast<double>(profile.clock_hz) / 1e9,
                     profile.origin == schema::ClockOrigin::kShared ? "shared" : "per-tile");
  out << fmt::format("total              {} cycles, {:.6f} ms\n", summary.total_cycles,
                     summary.milliseconds);
  out << "share of tile time\n";
  for (std::size_t i = 0; i < kSummaryKinds.size(); ++i) {
    out << fmt::format("  {:<17}{:>8}  {} tile-cycles\n", schema::step_kind_name(kSummaryKinds[i]),
                       percent(summary.kind_cycles[i], summary.tile_cycles),
                       summary.kind_cycles[i]);
  }
  if (summary.critical_tile) {
    out << fmt::format("critical tile      {}: {} cycles of compute and exchange ({} of the run)\n",
                       *summary.critical_tile, summary.critical_work_cycles,
                       percent(summary.critical_work_cycles, summary.total_cycles));
  }
  out << fmt::format("named operations   {} of step cycles\n",
                     percent(summary.named_cycles, summary.step_cycles));
  if (profile.dropped_samples != 0) {
    out << fmt::format("dropped samples    {} (the device's sample buffers were full: the steps "
                       "they began are missing)\n",
                       profile.dropped_samples);
  }
}

void print_groups(GroupBy by, const std::vector<Group>& groups, std::size_t limit,
                  std::ostream& out) {
  out << fmt::format("{:>9} {:>6} {:>14} {:>10} {:>10} {:>10} {:>9}  {}\n", "samples", "tiles",
                     "cycles", "p50", "p95", "max", "avg tiles", group_by_name(by));
  std::size_t shown = 0;
  for (const Group& g : groups) {
    if (limit != 0 && shown++ == limit) {
      out << fmt::format("({} more; --limit 0 shows all)\n", groups.size() - limit);
      break;
    }
    out << fmt::format("{:>9} {:>6} {:>14} {:>10} {:>10} {:>10} {:>9.1f}  {}\n", g.samples, g.tiles,
                       g.cycles, g.p50, g.p95, g.max, g.average_active_tiles, g.name);
  }
}

void print_memory(const std::vector<TileMemory>& tiles, std::size_t limit, std::ostream& out) {
  std::array<std::uint64_t, kMemoryCategories> totals{};
  std::uint64_t free = 0;
  for (const auto& tile : tiles) {
    for (std::size_t c = 0; c < kMemoryCategories; ++c) totals[c] += tile.category_bytes[c];
    free += tile.free_bytes;
  }
  out << fmt::format("memory of {} tiles ({} KiB of SRAM each)\n", tiles.size(),
                     target::kSramSize / 1024);
  const std::uint64_t all = static_cast<std::uint64_t>(tiles.size()) * target::kSramSize;
  for (std::size_t c = 0; c < kMemoryCategories; ++c) {
    out << fmt::format("  {:<9}{:>14} bytes  {:>8}\n",
                       memory_category_name(static_cast<MemoryCategory>(c)), totals[c],
                       percent(totals[c], all));
  }
  out << fmt::format("  {:<9}{:>14} bytes  {:>8}\n", "free", free, percent(free, all));
  out << "fullest tiles\n";
  out << fmt::format("  {:<7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "tile", "used", "code",
                     "rows", "tensors", "staging", "free");
  for (const auto& tile : fullest_tiles(tiles, limit == 0 ? tiles.size() : limit)) {
    out << fmt::format("  {:<7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
                       fmt::format("{}", tile.tile), tile.used_bytes, tile.category_bytes[0],
                       tile.category_bytes[1], tile.category_bytes[2], tile.category_bytes[3],
                       tile.free_bytes);
  }
}

void print_allocation_map(const nlohmann::json& map, std::ostream& out) {
  out << fmt::format("allocations of p{}, by address\n", map["tile"].get<unsigned>());
  for (const auto& a : map["allocations"]) {
    const std::string until =
        a["liveUntil"].is_null() ? "end" : std::to_string(a["liveUntil"].get<std::uint32_t>());
    const std::string operation = a["operation"].get<std::string>();
    out << fmt::format("  [{:#07x}, {:#07x}) {:>7}  {:<8} #{} {} ({}) live [{}, {}){}\n",
                       a["address"].get<std::uint32_t>(),
                       a["address"].get<std::uint64_t>() + a["size"].get<std::uint64_t>(),
                       a["size"].get<std::uint32_t>(), a["category"].get<std::string>(),
                       a["id"].get<std::uint32_t>(), a["name"].get<std::string>(),
                       a["tensor"].get<std::string>(), a["liveFrom"].get<std::uint32_t>(), until,
                       operation.empty() ? "" : "  <- " + operation);
  }
}

void print_exchange_phases(const std::vector<ExchangePhaseRun>& phases, std::size_t limit,
                           std::ostream& out) {
  out << fmt::format("{:>8} {:>6} {:>12} {:>9} {:>9}  {}\n", "round", "tiles", "start", "measured",
                     "planned", "operation");
  std::size_t shown = 0;
  for (const auto& p : phases) {
    if (limit != 0 && shown++ == limit) {
      out << fmt::format("({} more; --limit 0 shows all)\n", phases.size() - limit);
      break;
    }
    out << fmt::format("{:>8} {:>6} {:>12} {:>9} {:>9}  {}\n", p.round, p.tiles, p.start,
                       p.measured, p.planned ? std::to_string(*p.planned) : "-", p.operation);
  }
}

nlohmann::json steps_at_json(const Timeline& timeline, const StepsAt& at) {
  const auto& profile = timeline.profile();
  nlohmann::json kinds = nlohmann::json::object();
  for (std::size_t i = 0; i < kSummaryKinds.size(); ++i) {
    kinds[std::string(schema::step_kind_name(kSummaryKinds[i]))] = at.kind_tiles[i];
  }
  nlohmann::json tiles = nlohmann::json::array();
  for (std::size_t t = 0; t < at.tiles.size(); ++t) {
    nlohmann::json row = {{"tile", profile.tiles[t].tile.value}, {"kind", "idle"}};
    if (const Sample* sample = at.tiles[t]) {
      const auto& step = timeline.step(*sample);
      row["kind"] = schema::step_kind_name(profile.kind(step));
      row["operation"] = profile.operation(step);
      row["kernel"] = profile.kernel(step);
      row["offset"] = sample->offset;
      row["cycles"] = sample->cycles;
    }
    tiles.push_back(std::move(row));
  }
  return {{"cycle", at.cycle}, {"kinds", kinds}, {"tiles", tiles}};
}

void print_steps_at(const nlohmann::json& at, std::size_t limit, std::ostream& out) {
  std::string counts;
  for (const auto& [kind, tiles] : at["kinds"].items()) {
    if (tiles.get<std::uint64_t>() == 0) continue;
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", tiles.get<std::uint64_t>(), kind);
  }
  out << fmt::format("at cycle {}: {}\n", at["cycle"].get<std::uint64_t>(), counts);
  std::size_t shown = 0;
  for (const auto& row : at["tiles"]) {
    if (limit != 0 && shown++ == limit) {
      out << fmt::format("({} more tiles; --limit 0 shows all)\n", at["tiles"].size() - limit);
      break;
    }
    if (!row.contains("offset")) {
      out << fmt::format("  p{:<5} idle\n", row["tile"].get<unsigned>());
      continue;
    }
    const std::string kernel = row["kernel"];
    out << fmt::format("  p{:<5} {:<16} [{}, +{})  {}{}\n", row["tile"].get<unsigned>(),
                       row["kind"].get<std::string>(), row["offset"].get<std::uint64_t>(),
                       row["cycles"].get<std::uint32_t>(), row["operation"].get<std::string>(),
                       kernel.empty() ? "" : "  kernel " + kernel);
  }
}

const schema::TileDebug& debug_tile(const schema::Application& app, target::PhysicalTile tile) {
  for (const auto& debug : app.debug.tiles) {
    if (debug.tile == tile) return debug;
  }
  throw InputError(fmt::format("the package's debug section describes no tile {}", tile));
}

}  // namespace

Command profile_command() {
  return Command{
      "profile", "read a cycle profile: summary, grouped tables, memory, HTML report",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "profile";
        syntax.summary =
            "Reads a cycle profile (`tessera run --profile FILE`) and prints where the cycles go:\n"
            "the run's length, the share of exchange, compute, sync, host and idle time, and the\n"
            "critical tile; with --by, the steps grouped; with --memory, each tile's SRAM use\n"
            "from the package's debug section; with --html, a self-contained report.";
        syntax.usage =
            "PROFILE [--package PACKAGE] [--json] [--by kernel|operation|layer|kind|tile]\n"
            "        [--filter TERM]... [--limit N] [--memory [--tile T]] [--exchange]\n"
            "        [--at CYCLE] [--html REPORT.html]";
        syntax.details =
            "Filter terms (all must hold): kind=exchange|compute|synchronization|host|idle,\n"
            "kernel=NAME (exact), operation=TEXT (substring), tile=T, tiles=FIRST-LAST\n"
            "(physical tiles: p12 or 12). Cycles are wrapping 32-bit counter differences;\n"
            "p50 and p95 are sorted[(n - 1) * p / 100] of the step durations, and \"avg tiles\"\n"
            "is the group's cycles over the time some tile was in it. A step's layer is the\n"
            "loop iteration it ran in (a repeat's), else the `layers.N` part of its\n"
            "operation's provenance. Memory counts the bytes each category's allocations\n"
            "cover once, whatever their live ranges (docs/PROFILES.md).";
        syntax.options.add_options()(
            "package", po::value<std::string>()->value_name("PACKAGE"),
            "the package that ran (its digest must match): memory use, names in the report")(
            "json", "print JSON instead of text")(
            "by", po::value<std::string>()->value_name("GROUP"),
            "group the steps by kernel, operation, layer, kind or tile")(
            "filter", po::value<std::vector<std::string>>()->value_name("TERM"),
            "keep only the steps a term allows (repeatable)")(
            "limit", po::value<std::string>()->value_name("N"),
            "rows per table (default 20; 0: all)")(
            "memory", "per-tile SRAM use by category, fullest tiles first (needs --package)")(
            "exchange",
            "each exchange phase: its tiles and measured horizon, and with --package the planned "
            "one")("tile", po::value<std::string>()->value_name("T"),
                   "with --memory: that tile's allocation map")(
            "at", po::value<std::string>()->value_name("CYCLE"),
            "what every tile does at that cycle (from the run's start), as the report's cursor "
            "says")("html", po::value<std::string>()->value_name("REPORT.html"),
            "write a self-contained HTML report (no network needed to open it)");
        syntax.required_argument("profile");
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        const bool json_output = values->count("json") != 0;
        const std::size_t limit = unsigned_option<std::uint32_t>(*values, "limit").value_or(20);
        std::optional<GroupBy> by;
        if (values->count("by")) {
          const std::string text = (*values)["by"].as<std::string>();
          by = parse_group_by(text);
          if (!by) {
            throw UsageError(
                fmt::format("--by {}: group by kernel, operation, layer, kind or tile", text));
          }
        }
        Filter filter;
        if (values->count("filter")) {
          for (const auto& term : (*values)["filter"].as<std::vector<std::string>>()) {
            add_filter_term(filter, term);
          }
        }
        const bool memory = values->count("memory") != 0;
        if (values->count("tile") && !memory) throw UsageError("--tile needs --memory");
        if (memory && !values->count("package")) {
          throw UsageError(
              "--memory needs --package: memory use comes from the package's debug section");
        }
        if (!filter.empty() && !by)
          throw UsageError("--filter needs --by (it selects the grouped steps)");

        const std::string path = (*values)["profile"].as<std::string>();
        const schema::Profile profile = schema::read_profile_file(path);
        std::optional<schema::Application> app;
        std::string package_path;
        if (values->count("package")) {
          package_path = (*values)["package"].as<std::string>();
          app = schema::read_package_file(package_path);
          const auto digest = schema::build_digest(*app);
          if (!profile.build_digest.empty() &&
              !std::equal(digest.begin(), digest.end(), profile.build_digest.begin(),
                          profile.build_digest.end())) {
            throw InputError(fmt::format("{} is the run of package {}, not of {} (build digest {})",
                                         path, digest_hex(profile.build_digest), package_path,
                                         digest_hex(digest)));
          }
        }
        const Timeline timeline(profile);
        const Summary summary = summarize(timeline);

        if (values->count("html")) {
          const std::string report = (*values)["html"].as<std::string>();
          ReportInputs inputs{&timeline, app ? &*app : nullptr, path, package_path};
          write_html_report(report, inputs);
          io.out << fmt::format("wrote the report to {}\n", report);
          return kExitSuccess;
        }

        nlohmann::json doc = {{"profile", path}, {"summary", summary_json(timeline, summary)}};
        if (!json_output) {
          io.out << fmt::format("profile            {}\n", path);
          if (app) io.out << fmt::format("package            {}\n", package_path);
          print_summary(timeline, summary, io.out);
        }
        if (by) {
          const auto groups = group_samples(timeline, *by, filter);
          if (json_output) {
            doc["groups"] = groups_json(*by, groups)["groups"];
            doc["by"] = group_by_name(*by);
          } else {
            io.out << '\n';
            print_groups(*by, groups, limit, io.out);
          }
        }
        if (memory) {
          const auto tiles = memory_use(app->debug);
          std::optional<nlohmann::json> map;
          if (values->count("tile")) {
            target::PhysicalTile tile;
            try {
              tile =
                  target::parse_tile((*values)["tile"].as<std::string>(), target::Topology::c600());
            } catch (const target::TopologyError& error) {
              throw UsageError(fmt::format("--tile: {}", error.what()));
            }
            map = allocation_map_json(debug_tile(*app, tile), app->debug.provenance);
          }
          if (json_output) {
            nlohmann::json rows = nlohmann::json::array();
            for (const auto& tile : tiles) rows.push_back(tile_memory_json(tile));
            doc["memory"] = rows;
            if (map) doc["allocationMap"] = *map;
          } else {
            io.out << '\n';
            print_memory(tiles, limit, io.out);
            if (map) {
              io.out << '\n';
              print_allocation_map(*map, io.out);
            }
          }
        }
        if (const auto cycle = unsigned_option<std::uint64_t>(*values, "at")) {
          const nlohmann::json at = steps_at_json(timeline, steps_at(timeline, *cycle));
          if (json_output) {
            doc["at"] = at;
          } else {
            io.out << '\n';
            print_steps_at(at, limit, io.out);
          }
        }
        if (values->count("exchange")) {
          const auto phases = exchange_phases(timeline, app ? &*app : nullptr);
          if (json_output) {
            doc["exchangePhases"] = exchange_phases_json(phases);
          } else {
            io.out << '\n';
            print_exchange_phases(phases, limit, io.out);
          }
        }
        if (json_output) io.out << doc.dump(1) << '\n';
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
