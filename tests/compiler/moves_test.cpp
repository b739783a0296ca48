// Element moves on one tile (lower/moves.hpp, issue 15 item 15): a sub-word
// run whose ends sit at the same byte of their words is copy_words for its
// whole words plus element moves for at most 3 bytes on either side — not an
// 8-byte table entry per element, which made u8[1, 50001] unplaceable.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "compiler/compile.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/lower/moves.hpp"
#include "kernels/registry.hpp"
#include "support/little_endian.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler {
namespace {

using lower::BufferId;
using lower::KernelRun;
using lower::Location;
using target::LogicalTile;

constexpr LogicalTile kTile{0};

struct Lowered {
  lower::Program program;
  std::vector<KernelRun> runs;  // on kTile, in order
};

// `elements` moves of `element_bytes` from `from` to `to` on one tile.
Lowered lower_run(std::uint32_t element_bytes, std::uint32_t from, std::uint32_t to,
                  std::uint32_t elements) {
  Lowered result;
  auto buffer = [&](const char* name) {
    lower::Buffer b;
    b.name = name;
    b.bytes[kTile] = 4 * ((std::max(from, to) + element_bytes * elements + 3) / 4);
    return result.program.add_buffer(std::move(b));
  };
  const BufferId source = buffer("source");
  const BufferId destination = buffer("destination");
  lower::MoveLowering moves(result.program, "test", 0, element_bytes);
  for (std::uint32_t i = 0; i < elements; ++i) {
    moves.move(Location{kTile, destination, to + i * element_bytes},
               Location{kTile, source, from + i * element_bytes});
  }
  std::map<LogicalTile, std::vector<KernelRun>> compute;
  EXPECT_TRUE(moves.finish(compute).empty()) << "a local run needs no transfer";
  result.runs = compute[kTile];
  return result;
}

// The (destination, source) element pairs of a move-table run.
std::vector<std::pair<std::uint32_t, std::uint32_t>> table_pairs(const lower::Program& program,
                                                                 const KernelRun& run) {
  const auto& pointer = run.pointers.at(2);
  const auto& bytes = program.buffers.at(pointer.buffer).contents.at(kTile);
  const std::uint32_t count = run.scalars.at(0).second;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  for (std::uint32_t i = 0; i < count; ++i) {
    pairs.emplace_back(load_u32_le(bytes.data() + pointer.offset + 8 * i),
                       load_u32_le(bytes.data() + pointer.offset + 8 * i + 4));
  }
  return pairs;
}

TEST(LocalMoves, AnOddU8RunIsCopyWordsAndATailOfThreeElements) {
  const Lowered lowered = lower_run(1, 0, 0, 50003);
  ASSERT_EQ(lowered.runs.size(), 2u);
  EXPECT_EQ(lowered.runs[0].kernel, kernels::kCopyWords);
  EXPECT_EQ(lowered.runs[0].scalars, (std::vector<std::pair<unsigned, std::uint32_t>>{{4, 12500}}));
  EXPECT_EQ(lowered.runs[1].kernel, kernels::kMoveElementsB8);
  EXPECT_EQ(table_pairs(lowered.program, lowered.runs[1]),
            (std::vector<std::pair<std::uint32_t, std::uint32_t>>{
                {50000, 50000}, {50001, 50001}, {50002, 50002}}));
}

TEST(LocalMoves, AnF16RunStartingMidWordHasAHeadAndATail) {
  // 100 f16 from byte 6 to byte 2: one element before the first whole word,
  // 49 words, one element after them.
  const Lowered lowered = lower_run(2, 6, 2, 100);
  ASSERT_EQ(lowered.runs.size(), 2u);
  EXPECT_EQ(lowered.runs[0].kernel, kernels::kCopyWords);
  EXPECT_EQ(lowered.runs[0].pointers[0].offset, 4u);
  EXPECT_EQ(lowered.runs[0].pointers[1].offset, 8u);
  EXPECT_EQ(lowered.runs[0].scalars, (std::vector<std::pair<unsigned, std::uint32_t>>{{4, 49}}));
  EXPECT_EQ(lowered.runs[1].kernel, kernels::kMoveElementsB16);
  EXPECT_EQ(table_pairs(lowered.program, lowered.runs[1]),
            (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{1, 3}, {100, 102}}));
}

TEST(LocalMoves, ShortAndMisalignedRunsStayTableMoves) {
  EXPECT_EQ(lower_run(1, 0, 0, 4 * lower::kCopyWordsMinimum - 1).runs.size(), 1u);
  // Source and destination at different bytes of their words: no word copy.
  const Lowered shifted = lower_run(1, 1, 0, 1000);
  ASSERT_EQ(shifted.runs.size(), 1u);
  EXPECT_EQ(shifted.runs[0].kernel, kernels::kMoveElementsB8);
}

// The issue's graph: u8[1, 50000] compiled, u8[1, 50001] was "cannot place
// 'move table' (400008 bytes)". Odd f16 runs likewise.
TEST(LocalMoves, OddSubWordCopiesCompileAndComputeTheReference) {
  for (const auto& [dtype, extent] :
       {std::pair{DType::kU8, 50001u}, std::pair{DType::kF16, 30001u}}) {
    Graph g;
    g.host_output("y", g.copy(g.host_input("x", dtype, {1, extent})));
    const CompileResult compiled = compile(g, {.tiles = 1});
    std::vector<std::uint8_t> input(byte_size(g.type(ValueId{0})));
    for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<std::uint8_t>(i * 7 + 3);
    const tessera::testing::TensorBytes inputs{{"x", input}};
    const auto run = testing::run_on_simulator(compiled.application, inputs);
    EXPECT_EQ(run.outputs, tessera::testing::evaluate_graph(g, inputs)) << extent;
  }
}


// move_run (issue 18, compile speed): a run of bytes gives exactly what its
// element moves in the same order give — the same transfers (direct,
// multicast, staged), the same local kernel runs and the same staging and
// table buffers — across tiles and on one, whole-word and sub-word, runs
// that join the previous one and runs that do not.
struct Lowering {
  std::vector<std::tuple<lower::Location, std::uint32_t, std::vector<lower::Location>>> transfers;
  std::map<LogicalTile, std::vector<std::tuple<std::string, std::vector<std::tuple<unsigned, BufferId, std::uint32_t>>,
                                               std::vector<std::pair<unsigned, std::uint32_t>>>>>
      runs;
  std::vector<std::tuple<std::string, std::map<LogicalTile, std::uint32_t>,
                         std::map<LogicalTile, std::vector<std::uint8_t>>>>
      buffers;
  friend bool operator==(const Lowering&, const Lowering&) = default;
};

struct RunMove {
  lower::Location to, from;
  std::uint32_t bytes = 0;
};

Lowering lower_moves(std::uint32_t element_bytes, const std::vector<RunMove>& moves_to_make, bool as_runs) {
  lower::Program program;
  for (const char* name : {"a", "b"}) {
    lower::Buffer b;
    b.name = name;
    for (std::uint16_t t = 0; t < 3; ++t) b.bytes[LogicalTile(t)] = 4096;
    program.add_buffer(std::move(b));
  }
  lower::MoveLowering moves(program, "test", 0, element_bytes);
  for (const RunMove& m : moves_to_make) {
    if (as_runs) {
      moves.move_run(m.to, m.from, m.bytes);
      continue;
    }
    for (std::uint32_t b = 0; b < m.bytes; b += element_bytes) {
      moves.move(Location{m.to.tile, m.to.buffer, m.to.offset + b}, Location{m.from.tile, m.from.buffer, m.from.offset + b});
    }
  }
  std::map<LogicalTile, std::vector<KernelRun>> compute;
  Lowering result;
  for (const lower::Transfer& t : moves.finish(compute)) result.transfers.emplace_back(t.source, t.words, t.destinations);
  for (const auto& [tile, list] : compute) {
    for (const KernelRun& run : list) {
      std::vector<std::tuple<unsigned, BufferId, std::uint32_t>> pointers;
      for (const auto& p : run.pointers) pointers.emplace_back(p.reg, p.buffer, p.offset);
      result.runs[tile].emplace_back(run.kernel, pointers, run.scalars);
    }
  }
  for (const lower::Buffer& b : program.buffers) result.buffers.emplace_back(b.name, b.bytes, b.contents);
  return result;
}

TEST(MoveRuns, GiveTheTransfersAndRunsOfTheirElementMoves) {
  const LogicalTile t0{0}, t1{1}, t2{2};
  for (const std::uint32_t size : {1u, 2u, 4u}) {
    const std::vector<RunMove> moves{
        {{t1, 0, 0}, {t0, 0, 0}, 64 * size},             // whole words between tiles
        {{t1, 0, 64 * size}, {t0, 0, 64 * size}, 8 * size},  // joins the previous run
        {{t2, 0, 0}, {t0, 0, 0}, 72 * size},             // the same source range: multicast
        {{t1, 1, 2 * size}, {t0, 0, 1000 + size}, 13 * size},  // sub-word ends: staged
        {{t1, 1, 40 * size}, {t0, 1, 40 * size}, 3 * size},    // another key in between
        {{t1, 1, 15 * size}, {t0, 0, 1000 + 14 * size}, 5 * size},  // back to the staged key, joining
        {{t0, 1, 0}, {t0, 0, 2000}, 200 * size},         // on one tile: copy_words
        {{t0, 1, 3 * size}, {t0, 0, 2000 + 500 * size}, 7 * size},  // on one tile: table moves
        {{t2, 1, 4}, {t2, 0, 8}, 16},                    // a short whole-word local run
    };
    EXPECT_EQ(lower_moves(size, moves, true), lower_moves(size, moves, false)) << size << "-byte elements";
  }
}

TEST(MoveRuns, ARunOfPartElementsIsRefused) {
  lower::Program program;
  lower::MoveLowering moves(program, "test", 0, 2);
  EXPECT_THROW(moves.move_run(Location{kTile, 0, 0}, Location{kTile, 0, 8}, 3), lower::LoweringError);
  EXPECT_THROW(moves.move_run(Location{kTile, 0, 0}, Location{kTile, 0, 8}, 0), lower::LoweringError);
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

// Issue 15 item 14: concat found each element's input by scanning the inputs
// from the first, so its lowering was quadratic in the input count (8000
// inputs: 10 s, the equivalent broadcast_to: 0.18 s). A concat of 100,000
// copies of one element lowers to exactly the moves of the equivalent
// broadcast_to (quadratic, that was 5·10^9 input visits).
TEST(ConcatLowering, ManyInputsLowerLikeTheEquivalentBroadcast) {
  constexpr std::uint32_t kInputs = 100000;
  const auto lowered = [](bool as_concat) {
    Graph g;
    const ValueId x = g.host_input("x", DType::kF32, {1});
    const ValueId y =
        as_concat ? g.concat(std::vector<ValueId>(kInputs, x), 0) : g.broadcast_to(x, {kInputs});
    g.host_output("y", y);
    return lower::lower_graph(g, {.tiles = 1});
  };
  const lower::Program concat = lowered(true);
  const lower::Program broadcast = lowered(false);
  ASSERT_EQ(concat.steps.size(), broadcast.steps.size());
  for (std::size_t i = 0; i < concat.steps.size(); ++i) {
    EXPECT_EQ(concat.steps[i].kind, broadcast.steps[i].kind);
    ASSERT_EQ(concat.steps[i].runs.size(), broadcast.steps[i].runs.size());
    for (const auto& [tile, runs] : concat.steps[i].runs) {
      const auto& other = broadcast.steps[i].runs.at(tile);
      ASSERT_EQ(runs.size(), other.size());
      for (std::size_t r = 0; r < runs.size(); ++r) {
        EXPECT_EQ(runs[r].kernel, other[r].kernel);
        EXPECT_EQ(runs[r].scalars, other[r].scalars);
      }
    }
  }
  ASSERT_EQ(concat.buffers.size(), broadcast.buffers.size());
  for (std::size_t b = 0; b < concat.buffers.size(); ++b) {
    EXPECT_EQ(concat.buffers[b].contents, broadcast.buffers[b].contents) << concat.buffers[b].name;
  }
}

}  // namespace
}  // namespace tessera::compiler
