// Where stochastic rounding's state lives (kernels/rounding.hpp): each
// simulated tile owns its six worker streams, seeded from its physical id at
// reset and carried from one kernel call to the next. A chip of several tiles
// each converting the same values twice gives, on every tile, exactly what
// that tile's own streams give in isolation — so no result depends on which
// other tiles exist or the order they run in — the second call continues the
// stream rather than repeating it, and a fresh chip reproduces every bit.
// Both f32 → f16 conversions that round under the call's mode are run: the
// element-wise one and the attention one, each with its own partition of
// elements over the workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/attention.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/rounding.hpp"
#include "sim/chip.hpp"
#include "tests/sim/program.hpp"

namespace tessera::kernels {
namespace {

using namespace sim::testing;

constexpr std::uint32_t kEntry = 0x4D000;
constexpr std::uint32_t kIn = 0x60000;
constexpr std::uint32_t kFirst = 0x61000;
constexpr std::uint32_t kSecond = 0x62000;
constexpr std::uint32_t kCount = 601;  // 6k + 1: worker 0 has one more

std::vector<float> values() {
  std::vector<float> v(kCount);
  for (std::uint32_t i = 0; i < kCount; ++i) v[i] = 1.0F + static_cast<float>(i) * 3.1e-5F;
  return v;
}

// Per tile, the two calls' outputs.
using TileOutputs = std::vector<std::pair<std::vector<std::uint16_t>, std::vector<std::uint16_t>>>;

TileOutputs run_chip(std::string_view kernel, std::size_t tiles) {
  sim::SimOptions options;
  options.rounding = Rounding::kStochastic;
  sim::Chip chip(small_topology(tiles), options);
  const auto program =
      load_constant(Reg::m2, kFirst) + load_constant(Reg::m3, kIn) + load_constant(Reg::m4, kCount);
  const auto first_call = target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size());
  const auto second =
      std::vector<isa::Instruction>{isa::Call{Reg::m10, kEntry}} + load_constant(Reg::m2, kSecond);
  const auto second_call = first_call + 4 * static_cast<std::uint32_t>(second.size());
  const auto full =
      program + second + std::vector<isa::Instruction>{isa::Call{Reg::m10, kEntry}} + halt();
  const auto in = values();
  std::vector<std::uint8_t> bytes(in.size() * 4);
  std::memcpy(bytes.data(), in.data(), bytes.size());
  for (const auto tile : chip.topology().physical_tiles()) {
    load_program(chip, tile, full);
    load_program(chip, tile, {isa::Br{Reg::m10}}, kEntry);
    chip.load_segment(tile, kIn, bytes, false);
    schema::TileDebug debug;
    debug.tile = tile;
    debug.symbols = {schema::Symbol{std::string(kernel), kEntry, 4, schema::SymbolKind::kKernel}};
    debug.allocations = {
        schema::Allocation{1, "in", "%in", kIn, kCount * 4, 0, schema::kLiveToEnd,
                           schema::AllocationKind::kTensor, 0},
        schema::Allocation{2, "first", "%first", kFirst, kCount * 2, 0, schema::kLiveToEnd,
                           schema::AllocationKind::kTensor, 0},
        schema::Allocation{3, "second", "%second", kSecond, kCount * 2, 0, schema::kLiveToEnd,
                           schema::AllocationKind::kTensor, 0}};
    for (const auto& [pc, out] : {std::pair{first_call, 2u}, std::pair{second_call, 3u}}) {
      schema::CallSite site{pc, std::string(kernel), {}, 0};
      site.operands.push_back(
          schema::CallOperand{2, out, out == 2 ? kFirst : kSecond, kCount * 2, true});
      site.operands.push_back(schema::CallOperand{3, 1, kIn, kCount * 4, false});
      debug.call_sites.push_back(site);
    }
    chip.set_debug(tile, debug);
  }
  chip.start();
  const sim::RunResult result = chip.run();
  EXPECT_EQ(result.reason, sim::StopReason::kAllHalted)
      << (chip.faults().empty() ? "" : sim::describe(chip.faults().all()[0]));
  TileOutputs outputs;
  for (const auto tile : chip.topology().physical_tiles()) {
    std::vector<std::uint8_t> first(kCount * 2), second_bytes(kCount * 2);
    chip.tile(tile).sram().read(kFirst, first);
    chip.tile(tile).sram().read(kSecond, second_bytes);
    std::vector<std::uint16_t> a(kCount), b(kCount);
    std::memcpy(a.data(), first.data(), first.size());
    std::memcpy(b.data(), second_bytes.data(), second_bytes.size());
    outputs.emplace_back(a, b);
  }
  return outputs;
}

// Each worker's elements in its draw order, under a kernel's partition.
using Partition = std::vector<std::vector<std::uint32_t>> (*)(std::uint32_t count);

// The element-wise conversion's: balanced contiguous ranges.
std::vector<std::vector<std::uint32_t>> balanced_contiguous(std::uint32_t count) {
  std::vector<std::vector<std::uint32_t>> workers(6);
  const std::uint32_t q = count / 6, r = count % 6;
  for (unsigned w = 0; w < 6; ++w) {
    const std::uint32_t begin = w * q + std::min(w, r), n = q + (w < r ? 1 : 0);
    for (std::uint32_t i = begin; i < begin + n; ++i) workers[w].push_back(i);
  }
  return workers;
}

// The attention conversion's: pairs strided over the workers, low element first.
std::vector<std::vector<std::uint32_t>> strided_pairs(std::uint32_t count) {
  std::vector<std::vector<std::uint32_t>> workers(6);
  for (std::uint32_t i = 0; i < count; ++i) workers[(i / 2) % 6].push_back(i);
  return workers;
}

// One call on a tile whose streams are `prng`.
std::vector<std::uint16_t> expected_call(TilePrng& prng, Partition partition) {
  const auto in = values();
  std::vector<std::uint16_t> out(kCount);
  const auto workers = partition(kCount);
  for (unsigned w = 0; w < 6; ++w) {
    for (const std::uint32_t i : workers[w]) {
      out[i] = round_f16_stochastic(std::bit_cast<std::uint32_t>(in[i]), prng.worker(w).next());
    }
  }
  return out;
}

void expect_each_tile_draws_from_its_own_streams(std::string_view kernel, Partition partition) {
  const TileOutputs chip = run_chip(kernel, 3);
  ASSERT_EQ(chip.size(), 3u);
  for (std::size_t t = 0; t < chip.size(); ++t) {
    TilePrng prng(target::c600_physical(target::LogicalTile(static_cast<std::uint16_t>(t))).value);
    EXPECT_EQ(chip[t].first, expected_call(prng, partition)) << "tile " << t << ", first call";
    EXPECT_EQ(chip[t].second, expected_call(prng, partition)) << "tile " << t << ", second call";
    EXPECT_NE(chip[t].first, chip[t].second) << "the second call repeated the first's draws";
  }
  EXPECT_NE(chip[0].first, chip[1].first);
  EXPECT_NE(chip[1].first, chip[2].first);
  // A tile's results do not depend on the other tiles, and a new chip
  // reproduces them.
  const TileOutputs alone = run_chip(kernel, 1);
  EXPECT_EQ(alone[0], chip[0]);
  EXPECT_EQ(run_chip(kernel, 3), chip);
}

TEST(StochasticTiles, EachTileDrawsFromItsOwnStreamsCarriedAcrossCalls) {
  expect_each_tile_draws_from_its_own_streams(kConvertF32ToF16, balanced_contiguous);
}

TEST(StochasticTiles, TheAttentionConversionDrawsFromItsTilesStreamsToo) {
  expect_each_tile_draws_from_its_own_streams(kAttentionF32ToF16, strided_pairs);
}

}  // namespace
}  // namespace tessera::kernels
