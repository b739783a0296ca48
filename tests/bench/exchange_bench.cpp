// Exchange benchmark: all 1472 C600 tiles exchange in one phase under a fixed
// permutation — every tile sends `--words` words (default 1024 = 4 KiB) to
// one partner and receives its own partner's words — and the program reports
// words delivered per host second. The program shape is tests/sim/phase.hpp's
// (sync 3; call row; sync 3; halt); rows come from tests/sim/rows.hpp's
// build_row with target::word32_transfer timings, so each tile's row carries
// its send and its receive controls (those that act during its own send ride
// on it as sendpic/sendpicp). Every destination is checked word for word.
//
// Not a test: nothing asserts on timing. Run it from a Release build:
//
//   build-release/tests/bench/tessera_bench_exchange [--words N] [--repeat K] …
//
// Wall times on a shared machine are noisy: quote the best of several
// repetitions (printed last) or the CPU times, with the machine.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "schema/model.hpp"
#include "sim/chip.hpp"
#include "support/little_endian.hpp"
#include "target/exchange_timing.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"
#include "tests/sim/program.hpp"
#include "tests/sim/rows.hpp"

namespace {

using namespace tessera;
using namespace tessera::sim::testing;
using target::Event;
using target::LogicalTile;
using target::PhysicalTile;
using Kind = RowAction::Kind;
using Clock = std::chrono::steady_clock;

// The same layout as tests/sim/phase.hpp.
constexpr std::uint32_t kRow = 0x4D000;
constexpr std::uint32_t kSource = 0x60000;       // element 5
constexpr std::uint32_t kDestination = 0x70000;  // element 9
constexpr std::uint32_t kGuard = 0xEEEEEEEE;     // one word before and after each destination
constexpr std::uint32_t kTiles = target::kTileCount;

std::uint32_t source_word(PhysicalTile tile, std::uint32_t i) {
  return (std::uint32_t{tile.value} << 16) | i;
}

struct Options {
  std::uint32_t words = 1024;
  int repeat = 3;
  std::uint32_t shift = 737;
  std::optional<std::uint64_t> seed;
  bool plan = false;
};

constexpr std::string_view kUsage = R"(usage: tessera_bench_exchange [options]

All 1472 tiles exchange in one phase under a permutation; prints words delivered per host second.

  --words N     words each tile sends (1..4148; default 1024 = 4 KiB)
  --repeat K    load and run the application K times on one chip (default 3)
  --shift K     the permutation logical i -> (i + K) mod 1472 (default 737; K not a multiple of 1472)
  --seed S      a random permutation from this seed instead (no tile sends to itself)
  --plan        also give the package's plan of the phase, which the simulator checks
)";

// ---- Timing helpers -----------------------------------------------------------

double cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

struct Stopwatch {
  Clock::time_point wall = Clock::now();
  double cpu = cpu_seconds();
  std::pair<double, double> elapsed() const {
    return {std::chrono::duration<double>(Clock::now() - wall).count(), cpu_seconds() - cpu};
  }
};

long peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

// ---- The application ------------------------------------------------------------

// destination[i] is the logical tile logical i sends to; a permutation with
// no fixed point.
std::vector<std::uint32_t> permutation(const Options& options) {
  std::vector<std::uint32_t> destination(kTiles);
  if (!options.seed) {
    for (std::uint32_t i = 0; i < kTiles; ++i) destination[i] = (i + options.shift) % kTiles;
    return destination;
  }
  // A random derangement: shuffle, then rotate any fixed point away by
  // swapping with its neighbour (which stays a permutation).
  std::iota(destination.begin(), destination.end(), 0u);
  std::mt19937_64 random(*options.seed);
  std::shuffle(destination.begin(), destination.end(), random);
  for (std::uint32_t i = 0; i < kTiles; ++i) {
    if (destination[i] == i) std::swap(destination[i], destination[(i + 1) % kTiles]);
  }
  return destination;
}

struct Exchange {
  std::vector<PhysicalTile> tile;   // by logical id
  std::vector<std::uint32_t> to;    // logical destination of each logical sender
  std::vector<std::uint32_t> from;  // logical sender of each logical receiver
  std::vector<Event> send_start;    // by logical sender
  schema::Application app;
};

// Whether a lone receive control of `receiver` acts one event after its own
// send starts: build_row cannot merge that one into the send (a sendpic
// continues a stream that has not started yet).
bool lone_control_after_start(const target::Word32Timing& timing, Event own_start) {
  const Event at = own_start + 1;
  const bool paired = timing.pointer == timing.teardown;  // one sendpicp carries both
  return timing.source_select == at || (!paired && (timing.pointer == at || timing.teardown == at));
}

Exchange build(const Options& options) {
  const auto topology = target::Topology::c600();
  const std::uint32_t n = options.words;
  Exchange x;
  x.to = permutation(options);
  x.from.assign(kTiles, 0);
  for (std::uint32_t i = 0; i < kTiles; ++i) {
    x.tile.push_back(topology.physical(LogicalTile(static_cast<std::uint16_t>(i))));
    x.from[x.to[i]] = i;
  }
  // Every tile sends at one start, the earliest that suits every pair; a tile
  // with a lone receive control one event after its own start sends one event
  // later (which moves its receiver's controls, hence the loop).
  Event start = 0;
  for (std::uint32_t i = 0; i < kTiles; ++i) {
    start = std::max(start, target::earliest_send_start(x.tile[i], x.tile[x.to[i]]));
  }
  x.send_start.assign(kTiles, start);
  const auto timing_into = [&](std::uint32_t receiver) {
    const std::uint32_t sender = x.from[receiver];
    return target::word32_transfer(x.tile[sender], x.tile[receiver], x.send_start[sender], n);
  };
  for (int round = 0;; ++round) {
    if (round == 100) throw std::runtime_error("no send starts found that build_row can merge");
    bool moved = false;
    for (std::uint32_t r = 0; r < kTiles; ++r) {
      if (lone_control_after_start(timing_into(r), x.send_start[r])) {
        ++x.send_start[r];
        moved = true;
      }
    }
    if (!moved) break;
  }

  x.app.compiler_version = "exchange benchmark";
  std::vector<std::uint32_t> source(n);
  const auto program = assemble(
      std::vector<isa::Instruction>{isa::Sync{3}, isa::Call{isa::Reg::m10, kRow}, isa::Sync{3}} +
      halt());
  const std::vector<std::uint32_t> guard{kGuard};
  for (std::uint32_t i = 0; i < kTiles; ++i) {
    const PhysicalTile tile = x.tile[i];
    const PhysicalTile destination = x.tile[x.to[i]];
    const target::Word32Timing in = timing_into(i);
    const std::vector<PhysicalTile> to{destination};
    auto actions = receive_actions(in, x.tile[x.from[i]].value, kDestination / 4);
    actions.push_back(
        RowAction{Kind::kSend, x.send_start[i], kSource / 4, n, target::word32_sctl(tile, to)});
    const Event horizon = std::max(in.horizon, x.send_start[i] + n);
    schema::TileImage image{tile, target::kEntryPoint, {}};
    add_segment(x.app, image, target::kLoadBase, program, true);
    add_segment(x.app, image, kRow, assemble(build_row(actions, horizon, kRow)), true);
    for (std::uint32_t w = 0; w < n; ++w) source[w] = source_word(tile, w);
    add_segment(x.app, image, kSource, words_to_bytes(source), false);
    add_segment(x.app, image, kDestination - 4, words_to_bytes(guard), false);
    add_segment(x.app, image, kDestination + 4 * n, words_to_bytes(guard), false);
    x.app.tiles.push_back(image);
  }
  if (options.plan) {
    schema::ExchangePhase planned{0, {}};  // the first device-wide sync opens round 0
    for (std::uint32_t i = 0; i < kTiles; ++i) {
      planned.transfers.push_back(
          schema::PlannedTransfer{x.tile[i],
                                  kSource,
                                  n,
                                  {schema::TransferDestination{x.tile[x.to[i]], kDestination}},
                                  schema::kNoProvenance});
    }
    x.app.debug.exchange_phases.push_back(planned);
  }
  return x;
}

// Every destination holds its sender's words, and both guards survive.
// Returns the first difference.
std::optional<std::string> check(sim::Chip& chip, const Exchange& x, std::uint32_t n) {
  std::vector<std::uint8_t> bytes(4 * (std::size_t{n} + 2));
  for (std::uint32_t r = 0; r < kTiles; ++r) {
    const PhysicalTile receiver = x.tile[r];
    const PhysicalTile sender = x.tile[x.from[r]];
    chip.tile(receiver).sram().read(kDestination - 4, bytes);
    const auto at = [&](std::uint32_t i) {
      std::uint32_t word = 0;
      std::memcpy(&word, bytes.data() + 4 * std::size_t{i}, 4);
      return word;
    };
    if (at(0) != kGuard || at(n + 1) != kGuard) {
      return fmt::format("{}: a guard around {:#x} was overwritten", receiver, kDestination);
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      if (at(i + 1) != source_word(sender, i)) {
        return fmt::format("{} word {} at {:#x} is {:#010x}, not {}'s word {:#010x}", receiver, i,
                           kDestination + 4 * i, at(i + 1), sender, source_word(sender, i));
      }
    }
  }
  return std::nullopt;
}

int run(const Options& options) {
  const std::uint32_t n = options.words;
  const std::uint64_t words = std::uint64_t{kTiles} * n;
  std::printf("all-tile permutation: %u tiles x %u words (%u bytes) = %llu words; %s%s\n", kTiles,
              n, 4 * n, static_cast<unsigned long long>(words),
              options.seed
                  ? fmt::format("random permutation, seed {}", *options.seed).c_str()
                  : fmt::format("logical i -> (i + {}) mod {}", options.shift, kTiles).c_str(),
              options.plan ? "; planned (the simulator checks the plan)" : "");

  Stopwatch watch;
  const Exchange x = build(options);
  auto [build_wall, build_cpu] = watch.elapsed();
  Event latest_start = 0;
  for (const Event start : x.send_start) latest_start = std::max(latest_start, start);
  std::printf("build application: %.3f s (cpu %.3f s); send starts %lld..%lld\n", build_wall,
              build_cpu,
              static_cast<long long>(*std::min_element(x.send_start.begin(), x.send_start.end())),
              static_cast<long long>(latest_start));

  watch = Stopwatch{};
  sim::Chip chip(target::Topology::c600());
  auto [construct_wall, construct_cpu] = watch.elapsed();
  std::printf("chip construction: %.3f s (cpu %.3f s)\n", construct_wall, construct_cpu);

  double best_run = 0, best_load_run = 0;
  for (int repetition = 0; repetition < options.repeat; ++repetition) {
    watch = Stopwatch{};
    chip.load(x.app);
    const auto [load_wall, load_cpu] = watch.elapsed();
    watch = Stopwatch{};
    chip.start();
    const sim::RunResult result = chip.run();
    const auto [run_wall, run_cpu] = watch.elapsed();
    if (result.reason != sim::StopReason::kAllHalted) {
      std::fprintf(stderr, "FAILED: the run stopped: %s%s\n",
                   std::string(sim::stop_reason_name(result.reason)).c_str(),
                   chip.faults().all().empty()
                       ? ""
                       : (": " + sim::describe(chip.faults().all().front())).c_str());
      return 1;
    }
    const std::uint64_t delivered = chip.exchange_stats().words_delivered;
    if (delivered != words) {
      std::fprintf(stderr, "FAILED: %llu words delivered, expected %llu\n",
                   static_cast<unsigned long long>(delivered),
                   static_cast<unsigned long long>(words));
      return 1;
    }
    if (const auto difference = check(chip, x, n)) {
      std::fprintf(stderr, "FAILED: %s\n", difference->c_str());
      return 1;
    }
    const double per_run = static_cast<double>(words) / run_wall;
    const double per_load_run = static_cast<double>(words) / (load_wall + run_wall);
    best_run = std::max(best_run, per_run);
    best_load_run = std::max(best_load_run, per_load_run);
    std::printf(
        "run %d: load %.3f s (cpu %.3f), start+run %.3f s (cpu %.3f), %llu cycles; "
        "%.1f M words/s run, %.1f M words/s load+run\n",
        repetition + 1, load_wall, load_cpu, run_wall, run_cpu,
        static_cast<unsigned long long>(result.cycle), per_run / 1e6, per_load_run / 1e6);
  }
  std::printf("verified: every destination holds its partner's %u words\n", n);
  std::printf("best: %.1f M words/s run, %.1f M words/s load+run; peak RSS %ld MB\n",
              best_run / 1e6, best_load_run / 1e6, peak_rss_mb());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  const auto number = [&](int& i) -> std::uint64_t {
    if (i + 1 >= argc) throw std::invalid_argument(std::string(argv[i]) + " needs a value");
    char* end = nullptr;
    const std::uint64_t value = std::strtoull(argv[++i], &end, 0);
    if (end == argv[i] || *end != '\0')
      throw std::invalid_argument(std::string("not a number: ") + argv[i]);
    return value;
  };
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--words") {
        const auto value = number(i);
        if (value < 1 || value > target::kMaxTransferWords) {
          throw std::invalid_argument("--words must be in 1..4148");
        }
        options.words = static_cast<std::uint32_t>(value);
      } else if (arg == "--repeat") {
        const auto value = number(i);
        if (value < 1 || value > 1000) throw std::invalid_argument("--repeat must be in 1..1000");
        options.repeat = static_cast<int>(value);
      } else if (arg == "--shift") {
        const auto value = number(i);
        if (value % kTiles == 0)
          throw std::invalid_argument("--shift must not be a multiple of 1472");
        options.shift = static_cast<std::uint32_t>(value % kTiles);
      } else if (arg == "--seed") {
        options.seed = number(i);
      } else if (arg == "--plan") {
        options.plan = true;
      } else if (arg == "--help" || arg == "-h") {
        std::fputs(kUsage.data(), stdout);
        return 0;
      } else {
        throw std::invalid_argument("unknown option " + std::string(arg));
      }
    }
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "%s\n%s", error.what(), kUsage.data());
    return 2;
  }
  try {
    return run(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "FAILED: %s\n", error.what());
    return 1;
  }
}
