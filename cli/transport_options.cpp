#include "cli/transport_options.hpp"

#include <fmt/format.h>

#include "backends/c600/c600_transport.hpp"
#include "backends/sim/sim_transport.hpp"
#include "cli/number_options.hpp"
#include "support/error.hpp"
#include "support/thread_pool.hpp"

namespace po = boost::program_options;

namespace tessera::cli {
namespace {

C600Opener& c600_opener() {
  static C600Opener opener;
  return opener;
}

}  // namespace

void set_c600_opener_for_testing(C600Opener opener) { c600_opener() = std::move(opener); }

void add_threads_option(CommandSyntax& syntax) {
  syntax.options.add_options()(
      "threads", po::value<std::string>()->value_name("N"),
      fmt::format("sim: host threads that run the tiles, 1 to {} (default: the machine's "
                  "cores, here {}); results are the same for every N",
                  kMaxSimThreads, ThreadPool::machine_threads())
          .c_str());
}

unsigned read_threads_option(const po::variables_map& values) {
  const auto threads = unsigned_option<unsigned>(values, "threads");
  if (!threads) return 0;
  if (*threads == 0 || *threads > kMaxSimThreads) {
    throw UsageError(
        fmt::format("--threads: {} is outside 1 to {}", *threads, kMaxSimThreads));
  }
  return *threads;
}

void add_transport_options(CommandSyntax& syntax) {
  add_threads_option(syntax);
  syntax.options.add_options()(
      "cycles", po::value<std::string>()->value_name("N"),
      "sim: give up after N simulated cycles (N < 2^64; default: no limit)")(
      "check-uninitialized", "sim: fault when a kernel reads bytes nothing ever wrote")(
      "device", po::value<std::string>()->default_value("/dev/ipu0")->value_name("PATH"),
      "c600: the device node")("bootloader", po::value<std::string>()->value_name("FILE"),
                               "c600: the secondary bootloader ELF (docs/HARDWARE.md)")(
      "ipucfg", po::value<std::string>()->value_name("FILE"),
      "c600: the device configuration to replay (.ipucfg)");
}

void read_transport_options(const po::variables_map& values, TransportRequest& request) {
  request.max_cycles = unsigned_option<std::uint64_t>(values, "cycles");
  request.check_uninitialized = values.count("check-uninitialized") != 0;
  request.threads = read_threads_option(values);
  if (values.count("device")) request.device = values["device"].as<std::string>();
  if (values.count("bootloader")) request.bootloader = values["bootloader"].as<std::string>();
  if (values.count("ipucfg")) request.ipucfg = values["ipucfg"].as<std::string>();
}

std::unique_ptr<runtime::Transport> open_transport(const TransportRequest& request) {
  if (request.backend == "sim") {
    backends::SimTransportOptions options;
    options.sim.trace = request.trace;
    options.sim.check_uninitialized = request.check_uninitialized;
    options.sim.threads = request.threads;
    if (request.max_cycles) options.max_cycles = *request.max_cycles;
    return std::make_unique<backends::SimTransport>(target::Topology::c600(), options);
  }
  if (request.backend == "c600") {
    if (request.bootloader.empty() || request.ipucfg.empty()) {
      throw UsageError(
          "--backend c600 needs --bootloader FILE (the SDK's secondary bootloader ELF) and "
          "--ipucfg FILE (the device configuration capture); see docs/HARDWARE.md");
    }
    backends::c600::C600Options options;
    options.device = request.device;
    options.bootloader = request.bootloader;
    options.ipucfg = request.ipucfg;
    if (c600_opener()) return c600_opener()(options);
    return backends::c600::open_c600(options);
  }
  throw UsageError(fmt::format("--backend '{}': choose sim or c600", request.backend));
}

}  // namespace tessera::cli
