#pragma once
// Choosing and opening a backend from the command line: `--backend` and the
// options each backend takes. One place, so every command that runs a
// package offers the same choices.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/program_options.hpp>

#include "cli/command.hpp"
#include "runtime/transport.hpp"

namespace tessera::backends::c600 {
struct C600Options;
}

namespace tessera::cli {

struct TransportRequest {
  std::string backend = "sim";  // "sim" or "c600"
  bool trace = false;           // record spans for profiles and traces
  // sim
  std::optional<std::uint64_t> max_cycles;
  bool check_uninitialized = false;
  unsigned threads = 0;  // host threads for the tiles; 0: the machine's cores
  // c600
  std::string device = "/dev/ipu0";
  std::string bootloader;
  std::string ipucfg;
};

// Adds --cycles, --check-uninitialized and --threads (sim), --device,
// --bootloader and --ipucfg (c600) to a command's options.
void add_transport_options(CommandSyntax& syntax);
void read_transport_options(const boost::program_options::variables_map& values,
                            TransportRequest& request);

// --threads N, the simulator's host threads (simulate and run share it): its
// description, and its value (0, the machine's cores, when absent).
inline constexpr unsigned kMaxSimThreads = 1024;
void add_threads_option(CommandSyntax& syntax);
unsigned read_threads_option(const boost::program_options::variables_map& values);

// UsageError for an unknown backend or a missing option it needs.
std::unique_ptr<runtime::Transport> open_transport(const TransportRequest& request);

// Tests only: what `--backend c600` opens the device with, given the options
// the command line made (default: backends::c600::open_c600 on the kernel
// driver). The hardware-package test puts the fake C600
// (tests/driver/fake_device.hpp) behind it, so `tessera run --backend c600`
// runs in-process against it; an empty function restores the default.
using C600Opener =
    std::function<std::unique_ptr<runtime::Transport>(const backends::c600::C600Options&)>;
void set_c600_opener_for_testing(C600Opener opener);

}  // namespace tessera::cli
