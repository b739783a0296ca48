// Every kernel's host model is a function of its call alone — registers,
// operand bytes, the tile's cycle counter and the tile's own per-worker
// random streams — so a multi-tile run comes out the same on any number of
// host threads (sim/README.md, "Tiles on every host core"; issue 17's
// "thread count 1 vs 2" test). For every kernel and runtime helper in the
// registry, six tiles each make two calls of it (with a device-wide sync
// between them) on their own shapes and data, with allocations and call
// sites so every span is checked; the run on 1, 2 and 3 host threads must
// give the same bytes of every operand on every tile, the same per-tile
// cycles and the same (empty) fault list — rounding to nearest even and
// rounding stochastically. The runtime helpers are in too: the barrier takes
// no data, so only its cycles are compared.
//
// A batch of small calls would run whole on the pool thread that starts it,
// so every model runs through a wrapper that holds a multi-thread run's
// thread briefly and notes which host threads ran calls; the test requires
// that the calls really did spread over several threads.
//
// The valid registers come from the footprint properties' generators
// (tests/kernels/call_generators.hpp), drawn with fixed seeds; a kernel for
// which no generator yields a call fails the test by name, so a kernel added
// without a generator case cannot go untested here.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kernels/pointwise_kernels.hpp"
#include "kernels/registry.hpp"
#include "sim/chip.hpp"
#include "tests/kernels/call_generators.hpp"
#include "tests/sim/program.hpp"

namespace tessera::kernels {
namespace {

using namespace sim::testing;
using testing::CallCase;

constexpr std::uint16_t kTiles = 6;
constexpr std::uint32_t kKernelEntry = 0x4D000;  // the kernel symbol; its code never runs
// Small calls: every kernel runs six times (two rounding modes, three thread
// counts) on six tiles.
constexpr std::uint64_t kMaxCaseBytes = 64 * 1024;
constexpr unsigned kMaxDraws = 50'000;  // about 10'000 fill every kernel's quota
constexpr unsigned kTableRegister = 4;  // where the element moves' table goes

// Where operands go: buffers above the code, each region a bump allocator.
// A generated pointer inside SRAM names the region its kernel needs (the
// GEMM's A in standard memory, C at the interleaved operand window, the
// expanded family's weights in interleaved memory); any other pointer is
// symbolic and its operand goes wherever there is room.
struct Arena {
  std::uint32_t next;
  std::uint32_t end;

  std::optional<std::uint32_t> take(std::uint64_t bytes) {
    if (next + bytes > end) return std::nullopt;
    const std::uint32_t at = next;
    next = static_cast<std::uint32_t>((next + bytes + 63) / 64 * 64 + 64);
    return at;
  }
};

// One buffer of a placed call: the operands (registers) whose pointer it is.
struct Region {
  std::uint32_t address = 0;
  std::uint32_t size = 0;
  std::vector<unsigned> regs;
};

struct PlacedCall {
  const KernelSpec* spec = nullptr;
  Registers registers{};
  std::vector<Region> regions;
  std::vector<std::uint8_t> table;
};

// Operands that share a generated pointer (an in-place call) share a buffer
// of their largest footprint; the others get their own, exactly their
// footprint, so a byte past one belongs to no allocation.
std::optional<PlacedCall> place(const KernelSpec& spec, const CallCase& c) {
  Arena standard{0x60000, target::kInterleavedRegion.begin};
  Arena window{target::kInterleavedOperandWindow.begin, target::kInterleavedOperandWindow.end};
  Arena interleaved{target::kInterleavedOperandWindow.end, target::kSramEnd};
  PlacedCall placed{&spec, c.registers, {}, c.table};
  std::map<std::uint32_t, std::size_t> region_of;  // generated pointer -> region
  for (const OperandSpec& operand : spec.operands) {
    const std::uint32_t pointer = c.registers[operand.reg];
    const auto bytes = static_cast<std::uint32_t>(operand.footprint(c.registers));
    auto [it, fresh] = region_of.emplace(pointer, placed.regions.size());
    if (fresh) placed.regions.emplace_back();
    Region& region = placed.regions[it->second];
    region.regs.push_back(operand.reg);
    region.size = std::max(region.size, bytes);
  }
  for (Region& region : placed.regions) {
    const std::uint32_t pointer = c.registers[region.regs.front()];
    std::optional<std::uint32_t> at;
    if (target::kInterleavedOperandWindow.contains(pointer)) {
      at = window.take(region.size);
    } else if (target::kInterleavedRegion.contains(pointer)) {
      at = interleaved.take(region.size);
    } else if (target::kStandardRegion.contains(pointer)) {
      at = standard.take(region.size);
    } else {
      at = standard.take(region.size);
      if (!at) at = interleaved.take(region.size);
    }
    if (!at) return std::nullopt;
    region.address = *at;
    for (const unsigned reg : region.regs) placed.registers[reg] = *at;
  }
  return placed;
}

bool is_float_kernel(std::string_view name) {
  return name.find("f16") != std::string_view::npos || name.find("f32") != std::string_view::npos ||
         name.find("f143") != std::string_view::npos;
}

// Operand bytes: for a float kernel, halves of moderate magnitude (finite
// as f16, and as f32 when read in pairs) with one in eight elements a
// special value — f16 and f32 NaNs, infinities, subnormals, ±65504, signed
// zeros; for the others, uniform bytes. The element moves' table is the
// generated one.
std::vector<std::uint8_t> contents(const PlacedCall& call, const Region& region,
                                   std::mt19937& rng) {
  std::vector<std::uint8_t> bytes(region.size);
  if (!call.table.empty() &&
      std::count(region.regs.begin(), region.regs.end(), kTableRegister) > 0) {
    std::copy_n(call.table.begin(), std::min(call.table.size(), bytes.size()), bytes.begin());
    return bytes;
  }
  if (!is_float_kernel(call.spec->name)) {
    for (auto& byte : bytes) byte = static_cast<std::uint8_t>(rng());
    return bytes;
  }
  static constexpr std::uint16_t kF16Specials[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF,
                                                   0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE01};
  static constexpr std::uint32_t kF32Specials[] = {0x7FC00000u, 0x7F800000u, 0xFF800000u,
                                                   0x00000001u, 0x80000000u, 0x7F7FFFFFu};
  std::uniform_int_distribution<unsigned> mantissa(0, 0x3FF), exponent(10, 20), sign(0, 1),
      special(0, 7);
  for (std::size_t i = 0; i + 1 < bytes.size(); i += 2) {
    auto h = static_cast<std::uint16_t>(sign(rng) << 15 | exponent(rng) << 10 | mantissa(rng));
    if (special(rng) == 0) h = kF16Specials[rng() % std::size(kF16Specials)];
    std::memcpy(bytes.data() + i, &h, 2);
  }
  for (std::size_t i = 0; i + 3 < bytes.size(); i += 4) {
    if (special(rng) != 0) continue;
    const std::uint32_t w = kF32Specials[rng() % std::size(kF32Specials)];
    std::memcpy(bytes.data() + i, &w, 4);
  }
  if (bytes.size() % 2 != 0) bytes.back() = static_cast<std::uint8_t>(rng());
  return bytes;
}

// Valid calls of every kernel the generators know, `per_kernel` each, drawn
// with fixed seeds: calls that do some work (every operand's footprint
// non-zero) and are small, placed on a tile.
std::map<std::string_view, std::vector<PlacedCall>> draw_calls(unsigned per_kernel) {
  const std::vector<rc::Gen<CallCase>> families = {
      rc::gen::exec([] { return testing::any_case(); }),
      rc::gen::exec([] { return testing::pointwise_case(); }),
      rc::gen::exec([] { return testing::layout_case(); }),
      rc::gen::exec([] { return testing::f143_case(); }),
      rc::gen::exec([] { return testing::layer_norm_case(); }),
      rc::gen::exec([] { return testing::row_normalisation_case(); }),
      rc::gen::exec([] { return testing::integer_and_helper_case(); })};
  const KernelRegistry& registry = KernelRegistry::standard();
  std::map<std::string_view, std::vector<PlacedCall>> calls;
  std::size_t full = 0;
  for (unsigned draw = 0; draw < kMaxDraws && full < registry.all().size(); ++draw) {
    const CallCase c = families[draw % families.size()](rc::Random(draw + 1)).value();
    const KernelSpec* spec = registry.find(c.kernel);
    if (spec == nullptr) {
      ADD_FAILURE() << "a generator names " << c.kernel << ", which is not in the registry";
      continue;
    }
    auto& mine = calls[spec->name];
    if (mine.size() >= per_kernel || c.touches_nothing) continue;
    std::uint64_t total = 0;
    bool works = true;
    for (const OperandSpec& operand : spec->operands) {
      const std::uint64_t bytes = operand.footprint(c.registers);
      works = works && bytes != 0;
      total += bytes;
    }
    if (!works || total > kMaxCaseBytes) continue;
    std::optional<PlacedCall> placed = place(*spec, c);
    if (!placed) continue;
    // Placing moves pointers only: the call stays valid and its footprints
    // stay what they were.
    if (const auto why = spec->precondition(placed->registers)) {
      ADD_FAILURE() << spec->name << " placed on a tile breaks its precondition: " << *why;
      continue;
    }
    for (const OperandSpec& operand : spec->operands) {
      EXPECT_EQ(operand.footprint(placed->registers), operand.footprint(c.registers))
          << spec->name << " $m" << operand.reg;
    }
    mine.push_back(std::move(*placed));
    if (mine.size() == per_kernel) ++full;
  }
  return calls;
}

// The standard registry with every model wrapped: the wrapper notes which
// host thread ran the call and, on a run with more than one thread, holds
// that thread for a moment before the model runs, so the pool's other
// threads take the batch's other tiles (a batch of small calls otherwise
// runs whole on the thread that starts it, and a model that depended on its
// host thread would go unnoticed). Everything else is the standard entry's.
class SpreadingRegistry {
 public:
  explicit SpreadingRegistry(bool hold) : hold_(hold) {
    for (const KernelSpec& spec : KernelRegistry::standard().all()) {
      KernelSpec wrapped = spec;
      wrapped.model = [this, model = spec.model](KernelCall& call) {
        {
          const std::lock_guard lock(mutex_);
          threads_.insert(std::this_thread::get_id());
        }
        if (hold_) std::this_thread::sleep_for(std::chrono::microseconds(500));
        model(call);
      };
      registry_.add(std::move(wrapped));
    }
  }
  SpreadingRegistry(const SpreadingRegistry&) = delete;
  SpreadingRegistry& operator=(const SpreadingRegistry&) = delete;

  const KernelRegistry& registry() const { return registry_; }
  std::size_t host_threads() const {
    const std::lock_guard lock(mutex_);
    return threads_.size();
  }

 private:
  bool hold_;
  KernelRegistry registry_;
  mutable std::mutex mutex_;
  std::set<std::thread::id> threads_;
};

struct Outcome {
  std::size_t host_threads = 0;  // that ran the models
  sim::StopReason reason{};
  std::uint64_t cycle = 0;
  std::string faults;
  nlohmann::json report;
  // Per tile, per region: the bytes after the run.
  std::vector<std::vector<std::vector<std::uint8_t>>> operands;
};

// Each tile calls its kernel twice — loads $m2..$m9, call, device sync,
// loads again, call, halt — with one allocation per region and a call site
// per call naming them.
Outcome run(const std::vector<PlacedCall>& tiles, unsigned seed, unsigned threads,
            Rounding rounding) {
  sim::SimOptions options;
  options.threads = threads;
  options.rounding = rounding;
  options.check_uninitialized = true;
  options.quantum_cycles = 2000;  // many yields, many batches
  const SpreadingRegistry models(threads > 1);
  sim::Chip chip(small_topology(kTiles), options, models.registry());
  for (std::uint16_t logical = 0; logical < kTiles; ++logical) {
    const PlacedCall& call = tiles[logical];
    const auto tile = target::c600_physical(target::LogicalTile(logical));
    std::vector<isa::Instruction> loads;
    for (unsigned reg = kOutputRegister; reg <= kLastArgumentRegister; ++reg) {
      loads = loads + load_constant(static_cast<Reg>(reg), call.registers[reg]);
    }
    std::vector<isa::Instruction> program = loads;
    const auto first_call = target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size());
    program = program +
              std::vector<isa::Instruction>{isa::Call{Reg::m10, kKernelEntry}, isa::Sync{3}} +
              loads;
    const auto second_call = target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size());
    program = program + std::vector<isa::Instruction>{isa::Call{Reg::m10, kKernelEntry}} + halt();
    load_program(chip, tile, program);
    load_program(chip, tile, {isa::Br{Reg::m10}}, kKernelEntry);

    schema::TileDebug debug;
    debug.tile = tile;
    debug.symbols = {schema::Symbol{call.spec->name, kKernelEntry, 4,
                                    call.spec->kind == KernelKind::kKernel
                                        ? schema::SymbolKind::kKernel
                                        : schema::SymbolKind::kRuntimeHelper}};
    std::mt19937 rng(seed * 977 + logical);
    for (std::size_t i = 0; i < call.regions.size(); ++i) {
      const Region& region = call.regions[i];
      const std::string name = fmt::format("operand{}", i);
      debug.allocations.push_back(schema::Allocation{
          static_cast<std::uint32_t>(i + 1), name, "%" + name, region.address, region.size, 0,
          schema::kLiveToEnd, schema::AllocationKind::kTensor, 0});
      chip.load_segment(tile, region.address, contents(call, region, rng), false);
    }
    for (const std::uint32_t pc : {first_call, second_call}) {
      schema::CallSite site{pc, call.spec->name, {}, 0};
      for (const OperandSpec& operand : call.spec->operands) {
        std::uint32_t owner = 0;
        for (std::size_t i = 0; i < call.regions.size(); ++i) {
          const auto& regs = call.regions[i].regs;
          if (std::count(regs.begin(), regs.end(), operand.reg) > 0) {
            owner = static_cast<std::uint32_t>(i + 1);
          }
        }
        site.operands.push_back(schema::CallOperand{
            static_cast<std::uint8_t>(operand.reg), owner, call.registers[operand.reg],
            static_cast<std::uint32_t>(operand.footprint(call.registers)),
            operand.access != Access::kRead});
      }
      debug.call_sites.push_back(site);
    }
    chip.set_debug(tile, debug, {"graph: " + call.spec->name});
  }
  chip.start();
  const sim::RunResult result = chip.run();
  Outcome outcome{models.host_threads(),          result.reason,           result.cycle,
                  chip.faults().to_json().dump(), chip.report().to_json(), {}};
  for (std::uint16_t logical = 0; logical < kTiles; ++logical) {
    const auto tile = target::c600_physical(target::LogicalTile(logical));
    auto& regions = outcome.operands.emplace_back();
    for (const Region& region : tiles[logical].regions) {
      std::vector<std::uint8_t> bytes(region.size);
      chip.tile(tile).sram().read(region.address, bytes);
      regions.push_back(std::move(bytes));
    }
  }
  return outcome;
}

std::string_view rounding_name(Rounding rounding) {
  return rounding == Rounding::kNearestEven ? "nearest-even" : "stochastic";
}

// The first difference between two runs of the same calls, or "".
std::string difference(const Outcome& a, const Outcome& b) {
  if (a.reason != b.reason) {
    return fmt::format("stop reason {} vs {}", sim::stop_reason_name(a.reason),
                       sim::stop_reason_name(b.reason));
  }
  if (a.cycle != b.cycle) return fmt::format("stop cycle {} vs {}", a.cycle, b.cycle);
  if (a.faults != b.faults) return "faults " + a.faults + "\n vs " + b.faults;
  if (a.report != b.report) {
    const auto& x = a.report["tiles"];
    const auto& y = b.report["tiles"];
    for (std::size_t t = 0; t < std::min(x.size(), y.size()); ++t) {
      if (x[t] != y[t])
        return fmt::format("report of tile {}: {} vs {}", t, x[t].dump(), y[t].dump());
    }
    return "report " + a.report.dump() + "\n vs " + b.report.dump();
  }
  for (std::size_t t = 0; t < a.operands.size(); ++t) {
    for (std::size_t r = 0; r < a.operands[t].size(); ++r) {
      const auto& x = a.operands[t][r];
      const auto& y = b.operands[t][r];
      const auto at =
          static_cast<std::size_t>(std::mismatch(x.begin(), x.end(), y.begin()).first - x.begin());
      if (at != x.size()) {
        return fmt::format("tile {} operand buffer {} byte {} of {}: {:#04x} vs {:#04x}", t, r, at,
                           x.size(), x[at], y[at]);
      }
    }
  }
  return "";
}

TEST(ThreadCount, EveryKernelComesOutTheSameOnOneTwoAndThreeThreads) {
  const KernelRegistry& registry = KernelRegistry::standard();
  const auto calls = draw_calls(kTiles);
  std::set<std::string> rounds_stochastically;
  unsigned seed = 0;
  std::size_t tested = 0;
  std::size_t spread = 0;  // runs on 2 or 3 threads whose calls ran on more than one
  std::size_t runs = 0;
  for (const KernelSpec& spec : registry.all()) {
    ++seed;
    const auto it = calls.find(spec.name);
    if (it == calls.end() || it->second.size() < kTiles) {
      ADD_FAILURE() << spec.name << ": no generator in tests/kernels/call_generators.hpp yields "
                    << kTiles << " small valid calls of it that do work; add a case for it";
      continue;
    }
    ++tested;
    std::optional<Outcome> nearest;
    for (const Rounding rounding : {Rounding::kNearestEven, Rounding::kStochastic}) {
      const Outcome one = run(it->second, seed, 1, rounding);
      // The calls are valid: the baseline halts cleanly.
      EXPECT_EQ(one.reason, sim::StopReason::kAllHalted)
          << spec.name << " (" << rounding_name(rounding) << "): " << one.faults;
      for (const unsigned threads : {2u, 3u}) {
        const Outcome many = run(it->second, seed, threads, rounding);
        ++runs;
        if (many.host_threads > 1) ++spread;
        const std::string diff = difference(one, many);
        EXPECT_EQ(diff, "") << spec.name << " (" << rounding_name(rounding) << "): 1 vs " << threads
                            << " threads differ";
      }
      if (rounding == Rounding::kNearestEven) {
        nearest = one;
      } else if (one.operands != nearest->operands) {
        rounds_stochastically.insert(spec.name);
      }
    }
  }
  EXPECT_EQ(tested, registry.all().size());
  // The comparison has teeth only if the calls really ran on several host
  // threads; the wrapper's hold makes that the rule, not the exception.
  EXPECT_GE(2 * spread, runs) << spread << " of " << runs
                              << " multi-thread runs used more than one host thread";
  // The stochastic runs did reach the rounding kernels' streams.
  EXPECT_TRUE(rounds_stochastically.contains(std::string(kConvertF32ToF16)))
      << fmt::format("{}", fmt::join(rounds_stochastically, ", "));
  std::cout << "kernels whose results depend on the rounding mode: "
            << fmt::format("{}", fmt::join(rounds_stochastically, ", ")) << "\n"
            << spread << " of " << runs << " multi-thread runs used more than one host thread\n";
}

}  // namespace
}  // namespace tessera::kernels
