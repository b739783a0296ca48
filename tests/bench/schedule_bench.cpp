// Exchange scheduler benchmark (issue 8): compile time of a full-chip
// permutation of 4 KiB per tile (1472 transfers, tile i → (5·i + 737) mod
// 1472, target < 2 s in Release) and of ten times as many transfers (ten such
// permutations in one phase, 40 KiB per tile each way), with each phase's
// horizon against the bandwidth bound (4 bytes per cycle per tile: the busiest
// tile's words); the ten permutations are also listed by source tile, which
// hides their waves from the input order. With --simulate the permutation also runs on the simulator,
// which checks every word against the planned transfers.
//
// --growth prints the growth table of issue 18 item 6 instead: one-word
// messages over the whole chip (--family words, default sizes 10 k … 1 M) or
// transposes of f32[n, n] spread a row per tile (--family transpose, n = 128
// … 1024, i.e. 16 k … 1 M messages), each scheduled and validated once, with
// CPU seconds, ns per n·log2 n (flat when growth is n log n) and the horizon
// against the bandwidth bound.
//
// Not a test: nothing asserts on timing. Run it from a Release build:
//
//   build-release/tests/bench/tessera_bench_schedule [--repeat K] [--simulate]
//   build-release/tests/bench/tessera_bench_schedule --growth [--family words|transpose] [--size N]...
//
// Wall times on a shared machine are noisy: quote the best of the repetitions
// (and the CPU time), with the machine.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "compiler/exchange/scheduler.hpp"
#include "target/topology.hpp"
#include "tests/compiler/exchange_harness.hpp"

namespace {

using namespace tessera;
using namespace tessera::compiler::exchange;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kRow = 0x4D000;
constexpr std::uint32_t kSource = 0x60000;
constexpr std::uint32_t kDestination = 0x70000;
constexpr std::uint32_t kWords = 1024;  // 4 KiB

// `count` permutations i → (k·i + c) mod 1472 with odd k not divisible by 23
// (coprime to 1472 = 2^6·23) and odd c (so no tile maps to itself), each from
// and to its own 4 KiB.
std::vector<LogicalTransfer> permutations(std::uint32_t count) {
  const std::uint32_t ks[] = {5, 7, 9, 11, 13, 15, 17, 19, 21, 25};
  std::vector<LogicalTransfer> transfers;
  for (std::uint32_t j = 0; j < count; ++j) {
    const std::uint32_t k = ks[j % 10], c = 737 + 2 * j;
    for (std::uint32_t i = 0; i < target::kTileCount; ++i) {
      const auto to = static_cast<std::uint16_t>((k * i + c) % target::kTileCount);
      transfers.push_back(LogicalTransfer{PhysicalTile(static_cast<std::uint16_t>(i)),
                                          kSource + 4 * kWords * j, kWords,
                                          {{PhysicalTile(to), kDestination + 4 * kWords * j}},
                                          schema::kNoProvenance});
    }
  }
  return transfers;
}

// One-word messages: tile i sends its word j to tile (i + 1 + 7·j) mod 1472,
// so every tile sends and receives `messages` / 1472 of them.
std::vector<LogicalTransfer> one_word_messages(std::uint32_t messages) {
  std::vector<LogicalTransfer> transfers;
  const std::uint32_t per_tile = (messages + target::kTileCount - 1) / target::kTileCount;
  for (std::uint32_t j = 0; j < per_tile; ++j) {
    for (std::uint32_t i = 0; i < target::kTileCount && transfers.size() < messages; ++i) {
      const auto to = static_cast<std::uint16_t>((i + 1 + 7 * j) % target::kTileCount);
      transfers.push_back(LogicalTransfer{PhysicalTile(static_cast<std::uint16_t>(i)),
                                          kSource + 4 * j, 1,
                                          {{PhysicalTile(to), kDestination + 4 * j}},
                                          schema::kNoProvenance});
    }
  }
  return transfers;
}

// What lowering makes of a transpose of f32[n, n] spread one row per tile
// (logical tile i holds row i): element (i, j) goes from tile i to tile j,
// one word each; listed as lowering lists them, by destination.
std::vector<LogicalTransfer> transpose_of_rows(std::uint32_t n) {
  const target::Topology topology = target::Topology::c600();
  std::vector<LogicalTransfer> transfers;
  for (std::uint32_t j = 0; j < n; ++j) {
    for (std::uint32_t i = 0; i < n; ++i) {
      if (i == j) continue;
      transfers.push_back(LogicalTransfer{
          topology.physical(target::LogicalTile(static_cast<std::uint16_t>(i))), kSource + 4 * j, 1,
          {{topology.physical(target::LogicalTile(static_cast<std::uint16_t>(j))),
            kDestination + 4 * i}},
          schema::kNoProvenance});
    }
  }
  return transfers;
}

struct Timed {
  PhaseSchedule schedule;
  double wall_best = 1e30;
  double cpu_best = 1e30;
};

Timed compile(const std::vector<LogicalTransfer>& transfers, int repeat, bool validate) {
  Timed timed;
  ScheduleOptions options;
  options.row_address = kRow;
  options.validate = validate;
  for (int r = 0; r < repeat; ++r) {
    const std::clock_t cpu0 = std::clock();
    const auto wall0 = Clock::now();
    timed.schedule = schedule_phase({transfers, {}}, options);
    const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
    const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
    timed.wall_best = std::min(timed.wall_best, wall);
    timed.cpu_best = std::min(timed.cpu_best, cpu);
  }
  return timed;
}

void report(std::string_view name, const std::vector<LogicalTransfer>& transfers, int repeat) {
  const Timed unchecked = compile(transfers, repeat, false);
  const Timed checked = compile(transfers, repeat, true);
  const ExchangeCost& cost = checked.schedule.cost;
  fmt::print("{}: {} transfers, {} messages, {} rows\n", name, transfers.size(),
             checked.schedule.messages.size(), checked.schedule.rows.size());
  fmt::print("  compile (best of {}): {:.3f} s wall, {:.3f} s CPU; with validation {:.3f} s wall, "
             "{:.3f} s CPU\n",
             repeat, unchecked.wall_best, unchecked.cpu_best, checked.wall_best, checked.cpu_best);
  const SchedulingWork& work = checked.schedule.work;
  fmt::print("  work: {} list schedules, {} start searches ({:.2f} per message each), {} rounds, "
             "{} stale, {} frontier moves\n",
             work.list_schedules, work.start_searches,
             static_cast<double>(work.start_searches) /
                 static_cast<double>(work.pieces * work.list_schedules),
             work.search_rounds, work.stale_bounds, work.frontier_moves);
  fmt::print("  horizon {} events; bandwidth bound {} (busiest tile's words at 4 B/cycle); "
             "horizon − bound = {} ({:.3f}× the bound)\n",
             cost.horizon, cost.lower_bound, cost.horizon - static_cast<std::int64_t>(cost.lower_bound),
             static_cast<double>(cost.horizon) / static_cast<double>(cost.lower_bound));
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  bool simulate = false;
  bool growth = false;
  std::string_view family;
  std::vector<std::uint32_t> sizes;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--growth") {
      growth = true;
    } else if (arg == "--family" && i + 1 < argc) {
      family = argv[++i];
    } else if (arg == "--size" && i + 1 < argc) {
      sizes.push_back(static_cast<std::uint32_t>(std::atol(argv[++i])));
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--simulate") {
      simulate = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--repeat K] [--simulate] | --growth [--family words|transpose] "
                   "[--size N]...\n",
                   argv[0]);
      return arg == "--help" ? 0 : 2;
    }
  }
  try {
    if (growth) {
      // The growth table (issue 18 item 6): one schedule_phase each,
      // validated, CPU seconds; n log n growth keeps s / (n log2 n) flat.
      if (sizes.empty()) {
        sizes = family == "transpose" ? std::vector<std::uint32_t>{128, 256, 512, 1024}
                                      : std::vector<std::uint32_t>{10000, 100000, 300000, 1000000};
      }
      fmt::print("{:>44} {:>9} {:>9} {:>10} {:>13} {:>8} {:>6} {:>7}\n", "phase", "messages",
                 "CPU s", "wall s", "ns/(n log n)", "horizon", "bound", "ratio");
      for (const std::uint32_t n : sizes) {
        const bool transpose = family == "transpose";
        const auto transfers = transpose ? transpose_of_rows(n) : one_word_messages(n);
        const Timed timed = compile(transfers, 1, true);
        const auto messages = static_cast<double>(timed.schedule.messages.size());
        const ExchangeCost& cost = timed.schedule.cost;
        fmt::print("{:>44} {:>9} {:>9.3f} {:>10.3f} {:>13.1f} {:>8} {:>6} {:>7.3f}\n",
                   transpose ? fmt::format("transpose f32[{0}, {0}], a row per tile", n)
                             : fmt::format("one-word messages over 1472 tiles"),
                   timed.schedule.messages.size(), timed.cpu_best, timed.wall_best,
                   1e9 * timed.cpu_best / (messages * std::log2(messages)), cost.horizon,
                   cost.lower_bound,
                   static_cast<double>(cost.horizon) / static_cast<double>(cost.lower_bound));
      }
      return 0;
    }
    const auto one = permutations(1);
    report("full-chip permutation, 4 KiB per tile", one, repeat);
    const auto ten = permutations(10);
    report("ten permutations in one phase (10x the transfers), 40 KiB per tile", ten, repeat);
    auto by_source = ten;
    std::stable_sort(by_source.begin(), by_source.end(),
                     [](const auto& a, const auto& b) { return a.source < b.source; });
    report("the same ten permutations listed by source tile", by_source, repeat);
    if (simulate) {
      ScheduleOptions options;
      options.row_address = kRow;
      const PhaseSchedule schedule = schedule_phase({one, {}}, options);
      std::vector<testing::Buffer> buffers;
      std::vector<PhysicalTile> tiles;
      for (std::uint16_t t = 0; t < target::kTileCount; ++t) tiles.push_back(PhysicalTile(t));
      for (const auto& transfer : one) {
        testing::Buffer buffer{transfer.source, transfer.source_address, {}};
        for (std::uint32_t i = 0; i < kWords; ++i) {
          buffer.words.push_back(testing::pattern(transfer.source, transfer.source_address + 4 * i, 1));
        }
        buffers.push_back(std::move(buffer));
      }
      const auto wall0 = Clock::now();
      const testing::SimulatedPhase run = testing::simulate(tiles, schedule, buffers);
      const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
      if (!run.fault.empty()) {
        std::fprintf(stderr, "simulation fault: %s\n", run.fault.c_str());
        return 1;
      }
      fmt::print("simulated permutation: {} words delivered; program {} cycles (two device-wide "
                 "syncs and the row calls included), exchange horizon {} events, bound {}; "
                 "{:.2f} s host time\n",
                 run.words_delivered, run.result.cycle, schedule.horizon,
                 schedule.cost.lower_bound, wall);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}
