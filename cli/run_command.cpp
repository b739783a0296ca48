// tessera run: load a package on a backend, run its host calls with inputs
// from .npy/.bin files, and write the outputs.
#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "backends/sim/sim_transport.hpp"
#include "cli/command.hpp"
#include "cli/progress.hpp"
#include "cli/commands.hpp"
#include "cli/number_options.hpp"
#include "cli/transport_options.hpp"
#include "runtime/session.hpp"
#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "schema/profile.hpp"
#include "schema/reader.hpp"
#include "support/atomic_file.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

// NAME=FILE, split at the first '='.
std::pair<std::string, std::string> name_and_file(const std::string& option,
                                                  const std::string& text) {
  const auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw UsageError(fmt::format("--{} '{}': expected NAME=FILE", option, text));
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

std::map<std::string, std::string> named_files(const po::variables_map& values,
                                               const char* option) {
  std::map<std::string, std::string> files;
  if (!values.count(option)) return files;
  for (const auto& text : values[option].as<std::vector<std::string>>()) {
    auto [name, file] = name_and_file(option, text);
    if (!files.emplace(name, file).second) {
      throw UsageError(fmt::format("--{}: '{}' is given twice", option, name));
    }
  }
  return files;
}

const schema::Binding* find_binding(const std::vector<schema::Binding>& list,
                                    std::string_view name) {
  for (const auto& binding : list) {
    if (binding.name == name) return &binding;
  }
  return nullptr;
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (1u << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

}  // namespace

Command run_command() {
  return Command{
      "run", "run a package's host calls on the simulator or a C600",
      [](const std::vector<std::string>& args, Streams& io) -> int {
        const std::string timeout_help =
            fmt::format("limit for one rendezvous and for the final halt ({})",
                        seconds_range(runtime::kMinWaitTimeout, runtime::kMaxWaitTimeout));
        CommandSyntax syntax;
        syntax.name = "run";
        syntax.summary =
            "Loads a package on a backend (the simulated C600 by default), runs its host calls in\n"
            "package order with the inputs given, waits for the device to halt and writes the\n"
            "outputs asked for. Inputs and weights are checked against their bindings (dtype,\n"
            "shape) before anything runs.";
        syntax.usage =
            "PACKAGE [--backend sim|c600] [--input NAME=FILE]... [--output NAME=FILE]...\n"
            "           [--profile FILE] [--trace FILE]";
        syntax.details =
            "FILE is .npy (little-endian, C order; an f8f143 binding takes uint8) or raw .bin\n"
            "(the binding's bytes, row-major). Every input and weight a call reads must be given.\n"
            "Outputs not asked for are summarised and dropped. `tessera inspect PACKAGE\n"
            "--bindings` lists the names, dtypes and shapes. The profile is a Cap'n Proto\n"
            "file (schema/profile.capnp); the trace is Chrome/Perfetto JSON (simulator only).\n"
            "Protocol and errors: docs/RUNTIME.md.";
        syntax.options.add_options()(
            "backend", po::value<std::string>()->default_value("sim")->value_name("NAME"),
            "sim (the SystemC model) or c600 (a C600 through the kernel driver)")(
            "input,i", po::value<std::vector<std::string>>()->value_name("NAME=FILE"),
            "an input or weight binding's tensor file")(
            "output,o", po::value<std::vector<std::string>>()->value_name("NAME=FILE"),
            "where to write an output binding (.npy or .bin)")(
            "profile", po::value<std::string>()->value_name("FILE"),
            "write the cycle profile (schema/profile.capnp; read it with `tessera profile`)")(
            "trace", po::value<std::string>()->value_name("FILE"),
            "write a Chrome/Perfetto trace (simulator only)")(
            "timeout", po::value<std::string>()->default_value("60")->value_name("SECONDS"),
            timeout_help.c_str())(
            "jitter-us", po::value<std::string>()->default_value("0")->value_name("N"),
            "wait a seeded-random 0..N µs before every HSP write (tests the protocol; "
            "N < 2^32)")("jitter-seed",
                         po::value<std::string>()->default_value("1")->value_name("S"),
                         "seed of --jitter-us (< 2^64)");
        add_transport_options(syntax);
        syntax.required_argument("package");
        const auto values = parse_command_line(syntax, args, io);
        if (!values) return kExitSuccess;

        // Numbers first: a bad one is refused before any file is read.
        runtime::SessionOptions options;
        options.rendezvous_timeout =
            parse_seconds((*values)["timeout"].as<std::string>(), "--timeout",
                          runtime::kMinWaitTimeout, runtime::kMaxWaitTimeout);
        options.halt_timeout = options.rendezvous_timeout;
        options.write_jitter_max_us = *unsigned_option<std::uint32_t>(*values, "jitter-us");
        options.write_jitter_seed = *unsigned_option<std::uint64_t>(*values, "jitter-seed");
        TransportRequest request;
        request.backend = (*values)["backend"].as<std::string>();
        read_transport_options(*values, request);

        const std::string path = (*values)["package"].as<std::string>();
        const auto input_files = named_files(*values, "input");
        const auto output_files = named_files(*values, "output");
        const bool want_trace = values->count("trace") != 0;
        const bool want_profile = values->count("profile") != 0;

        const schema::Application app = schema::read_package_file(path);

        // Everything about the files is checked before the device is touched.
        std::map<std::string, runtime::HostTensor, std::less<>> tensors;
        for (const auto& [name, file] : input_files) {
          const schema::Binding* binding = find_binding(app.inputs, name);
          if (binding == nullptr) binding = find_binding(app.weights, name);
          if (binding == nullptr) {
            throw UsageError(fmt::format("--input {}: the package has no input or weight '{}'",
                                         name, name));
          }
          tensors.emplace(name, runtime::read_tensor_file(file, *binding));
        }
        std::set<std::string> written_by_calls;
        for (const auto& call : app.host_exchange.calls) {
          written_by_calls.insert(call.output_bindings.begin(), call.output_bindings.end());
        }
        for (const auto& [name, file] : output_files) {
          if (find_binding(app.outputs, name) == nullptr) {
            throw UsageError(fmt::format("--output {}: the package has no output '{}'", name, name));
          }
          if (!written_by_calls.contains(name)) {
            throw UsageError(fmt::format("--output {}: no host call of the package writes it", name));
          }
          (void)runtime::tensor_file_format(file);  // a bad extension fails now, not after the run
        }
        std::set<std::string> read_by_calls;
        for (const auto& call : app.host_exchange.calls) {
          for (const auto& name : call.input_bindings) {
            read_by_calls.insert(name);
            if (!tensors.contains(name)) {
              throw UsageError(fmt::format("host call '{}' reads '{}': give it with --input {}=FILE",
                                           call.name, name, name));
            }
          }
        }
        for (const auto& [name, tensor] : tensors) {
          if (!read_by_calls.contains(name)) {
            throw UsageError(fmt::format("--input {}: no host call of the package reads it", name));
          }
        }

        request.trace = want_trace || want_profile;
        if (want_trace && request.backend != "sim") {
          throw UsageError("--trace needs the simulator backend (--backend sim)");
        }
        const auto transport = open_transport(request);

        const auto started = std::chrono::steady_clock::now();
        spdlog::info("loading {} on {}", path, transport->description());
        Progress progress(io.progress);
        progress.phase(fmt::format("loading {}", path));
        // The session keeps the package's records; moved, not copied.
        runtime::Session session(*transport, std::move(app), options);
        runtime::TensorMap outputs;
        const auto& calls = session.application().host_exchange.calls;
        for (std::size_t c = 0; c < calls.size(); ++c) {
          const auto& call = calls[c];
          progress.phase(fmt::format("host call '{}' ({} of {})", call.name, c + 1, calls.size()),
                         static_cast<double>(c) / static_cast<double>(calls.size()));
          runtime::TensorMap inputs;
          std::uint64_t in_bytes = 0;
          for (const auto& name : call.input_bindings) {
            inputs.emplace(name, tensors.at(name));
            in_bytes += tensors.at(name).byte_size();
          }
          spdlog::info("host call '{}': {} in", call.name, human_bytes(in_bytes));
          auto result = session.invoke(call.name, inputs);
          progress.hide();
          for (auto& [name, tensor] : result) {
            io.out << fmt::format("call '{}': {} in, output '{}' {}\n", call.name,
                                  human_bytes(in_bytes), name, tensor.describe_shape());
            outputs.insert_or_assign(name, std::move(tensor));
          }
          if (result.empty()) {
            io.out << fmt::format("call '{}': {} in, no outputs\n", call.name, human_bytes(in_bytes));
          }
          io.out.flush();
        }
        progress.phase("waiting for the device to halt", 1.0);
        session.finish();
        progress.hide();
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::string cycles;
        if (auto* sim = dynamic_cast<backends::SimTransport*>(transport.get())) {
          cycles = fmt::format(" after {} simulated cycles", sim->chip().now());
        }
        io.out << fmt::format("{}: the device halted{} ({} rendezvous, {:.3f} s)\n", path, cycles,
                              session.rendezvous_count(), seconds);

        for (const auto& [name, file] : output_files) {
          const runtime::HostTensor& tensor = outputs.at(name);
          runtime::write_tensor_file(file, tensor);
          io.out << fmt::format("wrote {} {} to {}\n", name, tensor.describe_shape(), file);
        }
        if (want_profile) {
          const auto profile = session.profile();
          if (!profile) throw UsageError("this backend records no cycle profile");
          schema::write_profile((*values)["profile"].as<std::string>(), *profile);
          io.out << fmt::format("wrote the cycle profile to {}\n",
                                (*values)["profile"].as<std::string>());
        }
        if (want_trace) {
          auto& sim = dynamic_cast<backends::SimTransport&>(*transport);
          const std::string text = sim.chip().trace().dump(1) + "\n";
          write_file_atomically((*values)["trace"].as<std::string>(),
                                {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
          io.out << fmt::format("wrote the trace to {}\n", (*values)["trace"].as<std::string>());
        }
        return kExitSuccess;
      }};
}

}  // namespace tessera::cli
