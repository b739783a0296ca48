// tessera compile: a JSON tensor graph (docs/GRAPH_FORMAT.md) → a package.
#include <chrono>
#include <ostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/compile_threads_option.hpp"
#include "cli/device_build.hpp"
#include "cli/number_options.hpp"
#include "cli/profile_samples_option.hpp"
#include "cli/progress.hpp"
#include "compiler/compile.hpp"
#include "compiler/ir/graph_json.hpp"
#include "schema/sha256.hpp"
#include "schema/writer.hpp"
#include "target/topology.hpp"

namespace po = boost::program_options;

namespace tessera::cli {

Command compile_command() {
  return Command{
      "compile", "compile a JSON tensor graph into a package",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "compile";
        syntax.summary =
            "Reads a tensor graph (docs/GRAPH_FORMAT.md), lays its tensors out over the first N\n"
            "tiles, lowers every operation to exchange phases and kernel calls, places memory,\n"
            "schedules the exchanges, emits each tile's code and writes the package.";
        syntax.usage =
            "GRAPH.json -o PACKAGE [--tiles N] [--min-shard-bytes B] [--sdk DIR]\n"
            "       [--profile-samples[=RECORDS]] [--threads N] [--report]";
        syntax.details =
            "The package has host calls `load_parameters` (when the graph has parameters) and\n"
            "`run`; run it with `tessera run PACKAGE -i NAME=FILE... -o NAME=FILE...`. Without\n"
            "an SDK the kernels are host models only and the package runs on the simulator.\n"
            "With --sdk DIR (or TESSERA_POPLAR_SDK=DIR) the device kernels (kernels/device/,\n"
            "or $TESSERA_DEVICE_SOURCES/kernels/device/) are built by DIR/bin/popc once into\n"
            "the kernel cache ($TESSERA_KERNEL_CACHE) and linked into every tile's code: the\n"
            "package is then hardware-loadable (docs/HARDWARE.md). Compiling the same graph\n"
            "twice gives identical bytes. With --profile-samples every tile records a cycle\n"
            "sample at each step, kernel call and loop iteration (each costs 114-150 tile\n"
            "cycles), which `tessera run --backend c600 --profile FILE` reads back as the\n"
            "run's profile. Operations: docs/GRAPH_FORMAT.md; what the compiler does:\n"
            "compiler/README.md.";
        syntax.options.add_options()("output,o",
                                     po::value<std::string>()->required()->value_name("PACKAGE"),
                                     "the package to write (.ipuexe)")(
            "tiles",
            po::value<std::string>()
                ->default_value(std::to_string(target::kTileCount))
                ->value_name("N"),
            "spread tensors over logical tiles 0..N-1 (1..1472)")(
            "min-shard-bytes", po::value<std::string>()->default_value("0")->value_name("B"),
            "cut no tensor into shards smaller than B bytes (0: spread each over as many "
            "tiles as it has row blocks); larger shards mean fewer, longer exchange messages")(
            "report", po::bool_switch(), "print what was compiled: phases, horizons, memory")(
            "no-validate", po::bool_switch(),
            "skip replaying the exchange rows (faster, less safe)");
        add_sdk_option(syntax);
        add_profile_samples_option(syntax);
        add_compile_threads_option(syntax);
        syntax.required_argument("graph");
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        const unsigned tiles = *unsigned_option<unsigned>(*values, "tiles");
        const auto min_shard_bytes = *unsigned_option<std::uint64_t>(*values, "min-shard-bytes");
        if (tiles < 1 || tiles > target::kTileCount) {
          throw UsageError(fmt::format("--tiles {} is outside 1..{}", tiles, target::kTileCount));
        }
        const std::string path = (*values)["graph"].as<std::string>();
        const std::string output = (*values)["output"].as<std::string>();
        const auto started = std::chrono::steady_clock::now();
        spdlog::info("reading {}", path);
        // The compiler reports no progress of its own: the line shows which
        // of the three phases runs (its % counts phases done) and the time.
        Progress progress(io.progress);
        progress.phase(fmt::format("reading {}", path), 0.0);
        const compiler::Graph graph = compiler::read_graph_json_file(path);
        spdlog::info("compiling {} operations for {} tiles", graph.operation_count(), tiles);
        compiler::CompileOptions options;
        options.tiles = tiles;
        options.min_shard_bytes = min_shard_bytes;
        options.validate_exchange = !(*values)["no-validate"].as<bool>();
        options.profile_samples = profile_samples_option(*values);
        options.threads = compile_threads_option(*values);
        // Device kernels only when an SDK is named: without one the package
        // is exactly what it always was (emulated only).
        const auto device = DeviceBuild::open(*values);
        if (device) options.device = device->code();
        progress.phase(fmt::format("compiling {} operations for {} tiles", graph.operation_count(), tiles),
                       1.0 / 3.0);
        compiler::CompileResult result = compiler::compile(graph, options);
        spdlog::info("writing {}", output);
        progress.phase(fmt::format("writing {}", output), 2.0 / 3.0);
        const auto digest = schema::write_package(result.application, output);
        progress.hide();
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        io.out << fmt::format("{}: {} tiles, {} exchange phases, {} kernel calls, compiled in {:.2f} s, "
                              "build digest {}\n",
                              output, result.report.package_tiles, result.report.phases.size(),
                              result.report.kernel_calls, seconds, schema::to_hex(digest));
        if (device) io.out << device->summary(result.application) << "\n";
        if ((*values)["report"].as<bool>()) io.out << compiler::format_report(result);
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
