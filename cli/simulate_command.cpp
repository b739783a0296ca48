// tessera simulate: run a package on the SystemC model of the C600 until it
// halts, faults, deadlocks or reaches a cycle limit.
#include <chrono>
#include <filesystem>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "cli/commands.hpp"
#include "cli/transport_options.hpp"
#include "cli/number_options.hpp"
#include "schema/reader.hpp"
#include "sim/chip.hpp"
#include "support/atomic_file.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

void write_json(const std::string& path, const nlohmann::json& document) {
  const std::string text = document.dump(1) + '\n';
  write_file_atomically(path, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

}  // namespace

Command simulate_command() {
  return Command{
      "simulate", "run a package on the simulated C600 until it halts",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        CommandSyntax syntax;
        syntax.name = "simulate";
        syntax.summary =
            "Loads a package onto the SystemC model of the C600 (1472 tiles), starts every tile\n"
            "at its entry point and runs until all halt, a fault, a deadlock, a host sync or the\n"
            "cycle limit. Prints the run report; exits 1 when the run did not complete.";
        syntax.usage =
            "PACKAGE [--cycles N] [--threads N] [--keep-going] [--check-uninitialized]\n"
            "        [--trace FILE]";
        syntax.details =
            "No host takes part: a package that waits at a host sync (zones 7, 15) stops there.\n"
            "`tessera run` drives the host side (host calls, inputs, outputs). The trace is\n"
            "Chrome/Perfetto JSON (open it in ui.perfetto.dev).";
        syntax.options.add_options()("cycles", po::value<std::string>()->value_name("N"),
                                     "stop after N simulated cycles (N < 2^64; default: no limit)")(
            "keep-going", "record faults and keep the other tiles running")(
            "check-uninitialized", "fault when a kernel reads bytes nothing ever wrote")(
            "trace", po::value<std::string>()->value_name("FILE"),
            "write a Chrome/Perfetto trace of compute and sync-wait spans")(
            "faults", po::value<std::string>()->value_name("FILE"), "write the faults as JSON")(
            "report", po::value<std::string>()->value_name("FILE"),
            "write the run report (cycles per tile) as JSON");
        add_threads_option(syntax);
        syntax.required_argument("package");
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        sim::SimOptions options;
        options.threads = read_threads_option(*values);
        options.keep_going = values->count("keep-going") != 0;
        options.check_uninitialized = values->count("check-uninitialized") != 0;
        options.trace = values->count("trace") != 0;
        const std::uint64_t limit =
            unsigned_option<std::uint64_t>(*values, "cycles").value_or(~std::uint64_t{0});

        const std::string path = (*values)["package"].as<std::string>();
        const schema::Application app = schema::read_package_file(path);
        sim::Chip chip(target::Topology::c600(), options);
        chip.load(app);
        chip.start();
        const auto started = std::chrono::steady_clock::now();
        const sim::RunResult result = chip.run(limit);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

        const sim::RunReport report = chip.report();
        io.out << fmt::format("{}: {} after {} cycles ({:.3f} s of host time)\n", path,
                              sim::stop_reason_name(result.reason), result.cycle, seconds);
        io.out << report.to_text();
        for (const auto& fault : chip.faults().all()) io.out << "fault: " << sim::describe(fault) << '\n';
        if (result.reason == sim::StopReason::kHostSync) {
          io.out << fmt::format("{} tiles wait at a host sync; `tessera run` drives the host side\n",
                                chip.tiles_waiting_at_host_sync().size());
        }
        if (values->count("trace")) write_json((*values)["trace"].as<std::string>(), chip.trace());
        if (values->count("faults")) {
          write_json((*values)["faults"].as<std::string>(), chip.faults().to_json());
        }
        if (values->count("report")) {
          write_json((*values)["report"].as<std::string>(), report.to_json());
        }
        return result.reason == sim::StopReason::kAllHalted ? kExitSuccess : kExitFailure;
      }};
}

}  // namespace tessera::cli
