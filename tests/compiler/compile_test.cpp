// The compiler end to end: graphs compiled, run on the simulator through
// runtime::Session, outputs compared with expectations computed here in
// plain C++ (the property test compares against the graph reference).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <numeric>

#include "compiler/compile.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/placement.hpp"
#include "kernels/half.hpp"
#include "schema/writer.hpp"
#include "support/little_endian.hpp"
#include "tests/compiler/graph_runner.hpp"

namespace tessera::compiler {
namespace {

using testing::run_on_simulator;
using testing::TensorBytes;

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> as_f32(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

std::vector<float> iota(std::size_t n, float start = 1.0f) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(Compile, TransposeAcrossTilesMovesEveryElement) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {6, 5});
  g.host_output("y", g.transpose(x, {1, 0}));
  const CompileResult compiled = compile(g, {.tiles = 6});
  const auto input = iota(30);
  const auto run = run_on_simulator(compiled.application, {{"x", f32_bytes(input)}});
  const auto y = as_f32(run.outputs.at("y"));
  ASSERT_EQ(y.size(), 30u);
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 6; ++j) EXPECT_EQ(y[i * 6 + j], input[j * 5 + i]) << i << "," << j;
  }
  EXPECT_GT(run.cycles, 0u);
}

TEST(Compile, F16TransposeGoesThroughStagingAndElementMoves) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {5, 3});  // 6-byte rows: blocks of 2 rows
  g.host_output("y", g.transpose(x, {1, 0}));
  const CompileResult compiled = compile(g, {.tiles = 8});
  std::vector<std::uint8_t> input(30);
  for (std::size_t i = 0; i < 15; ++i) store_u16_le(static_cast<std::uint16_t>(0x3C00 + i), input.data() + 2 * i);
  const auto run = run_on_simulator(compiled.application, {{"x", input}});
  const auto& y = run.outputs.at("y");
  ASSERT_EQ(y.size(), 30u);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 5; ++j) {
      EXPECT_EQ(load_u16_le(y.data() + 2 * (i * 5 + j)), 0x3C00 + j * 3 + i) << i << "," << j;
    }
  }
}

TEST(Compile, BroadcastAddAndSliceConcat) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 3});
  const ValueId b = g.host_input("b", DType::kF32, {3});
  const ValueId sum = g.add(x, b);
  const ValueId top = g.slice(sum, {0, 0}, {2, 3});
  const ValueId bottom = g.slice(sum, {2, 0}, {4, 3});
  g.host_output("y", g.concat({bottom, top}, 0));
  const CompileResult compiled = compile(g, {.tiles = 4});
  const auto xs = iota(12);
  const std::vector<float> bs{0.5f, -1.0f, 100.0f};
  const auto run = run_on_simulator(compiled.application, {{"x", f32_bytes(xs)}, {"b", f32_bytes(bs)}});
  const auto y = as_f32(run.outputs.at("y"));
  ASSERT_EQ(y.size(), 12u);
  for (std::size_t r = 0; r < 4; ++r) {
    const std::size_t from = (r + 2) % 4;
    for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(y[r * 3 + c], xs[from * 3 + c] + bs[c]);
  }
}

// Issue 21 item 5: until kernels are linked from popc-built objects, a
// compiled package is not hardware-loadable, and its reason names the first
// kernel it calls and the operation that calls it.
TEST(Compile, ThePackageSaysWhichKernelKeepsItOffHardware) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 3});
  g.host_output("y", g.add(x, x));
  const CompileResult compiled = compile(g, {.tiles = 4});
  EXPECT_FALSE(compiled.application.hardware_loadable);
  const std::string& reason = compiled.application.not_loadable_reason;
  EXPECT_NE(reason.find("kernel 'tessera_add_f32'"), std::string::npos) << reason;
  EXPECT_NE(reason.find("(add"), std::string::npos) << reason;
  EXPECT_NE(reason.find("no linked device code"), std::string::npos) << reason;
}

TEST(Compile, ReduceSumAcrossTilesAddsInRowMajorOrder) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {7, 3});
  g.host_output("s", g.reduce_sum(x, {0}));
  g.host_output("t", g.reduce_sum(x, {0, 1}, /*keep_dims=*/true));
  const CompileResult compiled = compile(g, {.tiles = 7});
  // Values whose sum depends on the order: 1e8 then small ones.
  std::vector<float> xs(21);
  for (std::size_t i = 0; i < 21; ++i) xs[i] = i < 3 ? 1e8f : 1.0f + static_cast<float>(i);
  const auto run = run_on_simulator(compiled.application, {{"x", f32_bytes(xs)}});
  const auto s = as_f32(run.outputs.at("s"));
  for (std::size_t c = 0; c < 3; ++c) {
    float expected = xs[c];
    for (std::size_t r = 1; r < 7; ++r) expected += xs[r * 3 + c];
    EXPECT_EQ(s[c], expected);
  }
  float all = xs[0];
  for (std::size_t i = 1; i < 21; ++i) all += xs[i];
  EXPECT_EQ(as_f32(run.outputs.at("t")).at(0), all);
}

TEST(Compile, ParametersComeInThroughTheirOwnCall) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {2, 4});
  const ValueId w = g.parameter("w", DType::kF32, {2, 4});
  g.host_output("y", g.add(x, w));
  const CompileResult compiled = compile(g, {.tiles = 2});
  const auto& calls = compiled.application.host_exchange.calls;
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, lower::kLoadParametersCall);
  EXPECT_EQ(calls[1].name, lower::kRunCall);
  const auto run = run_on_simulator(compiled.application,
                                    {{"x", f32_bytes(iota(8))}, {"w", f32_bytes(iota(8, 10.0f))}});
  const auto y = as_f32(run.outputs.at("y"));
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(y[i], static_cast<float>(1 + i) + static_cast<float>(10 + i));
}

// Found by the property test: p2 (L1) has a host transfer in the first input
// batch and none in the second, so it runs the inactive program (`sans 1;
// sync 1`) there and goes straight on to the output batch. Its next host
// sync belongs to the output batch's rounds, not to the rest of the batch it
// skipped (sim/sync_controller.hpp, HostSyncRounds). (in0's 4400 bytes on L0
// take two batches; in1 lies on L1 and L2.)
TEST(Compile, ATileIdleInOneHostBatchJoinsTheNext) {
  Graph g;
  g.host_input("in0", DType::kF32, {1, 1100});
  const ValueId b = g.host_input("in1", DType::kF32, {2});
  g.host_output("out0", g.copy(b));
  const CompileResult compiled = compile(g, {.tiles = 4});
  ASSERT_EQ(compiled.application.host_exchange.calls.at(0).input_batch_ends.size(), 2u);
  const auto run = run_on_simulator(
      compiled.application, {{"in0", f32_bytes(iota(1100))}, {"in1", f32_bytes({1.5f, -2.0f})}});
  EXPECT_EQ(as_f32(run.outputs.at("out0")), (std::vector<float>{1.5f, -2.0f}));
}

// Issue 15 item 16: 1000 scalar host inputs passed to outputs (8 KB) were
// refused ("p0: cannot place 'host batch 1861' (60 bytes)"): every short
// tensor lay on tile 0 and each had a batch of its own. Now bindings spread
// over the tiles and a tile's small pieces share a batch.
TEST(Compile, AThousandScalarBindingsCompileIntoFewBatches) {
  Graph g;
  for (int i = 0; i < 1000; ++i) {
    g.host_output(fmt::format("y{}", i), g.host_input(fmt::format("x{}", i), DType::kF32, {}));
  }
  TensorBytes inputs;
  for (int i = 0; i < 1000; ++i) {
    inputs[fmt::format("x{}", i)] = f32_bytes({static_cast<float>(i) * 0.5f});
  }
  for (const std::uint32_t tiles : {1u, 4u, 1472u}) {
    const CompileResult compiled = compile(g, {.tiles = tiles});
    EXPECT_EQ(compiled.report.host_batches, 2u) << tiles << " tiles: one batch in, one out";
    const auto run = run_on_simulator(compiled.application, inputs);
    for (int i = 0; i < 1000; ++i) {
      ASSERT_EQ(run.outputs.at(fmt::format("y{}", i)), inputs.at(fmt::format("x{}", i)))
          << i << " on " << tiles;
    }
  }
}

// Small host inputs and parameters take the tiles after the previous one's
// (lower/layout_policy.hpp), so they neither pile onto tile 0 nor wait for
// each other's host batches; an add of two of them moves one to the other.
TEST(Compile, SmallBindingsSpreadOverTheTiles) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF32, {2, 3});  // 2 rows: tiles 0, 1
  const ValueId b = g.host_input("b", DType::kF32, {2, 3});  // tiles 2, 3
  const ValueId c = g.parameter("c", DType::kF32, {});       // tile 4
  const ValueId d = g.host_input("d", DType::kF32, {6, 3});  // every tile: from tile 0
  const ValueId e = g.host_input("e", DType::kF32, {3});     // tiles 5, 0, 1: round robin
  g.host_output("s", g.add(g.add(a, b), c));
  g.host_output("t", g.add(d, e));
  const CompileResult compiled = compile(g, {.tiles = 6});
  const auto tiles_of = [&](const std::vector<schema::Binding>& list, const std::string& name) {
    std::vector<std::uint16_t> tiles;
    for (const auto& binding : list) {
      if (binding.name != name) continue;
      for (const auto& slice : binding.slices) tiles.push_back(slice.tile.value);
    }
    return tiles;
  };
  // Physical tile of logical tile `l`.
  const auto p = [](std::uint16_t l) {
    return target::c600_physical(target::LogicalTile(l)).value;
  };
  const auto& inputs = compiled.application.inputs;
  EXPECT_EQ(tiles_of(inputs, "a"), (std::vector<std::uint16_t>{p(0), p(1)}));
  EXPECT_EQ(tiles_of(inputs, "b"), (std::vector<std::uint16_t>{p(2), p(3)}));
  EXPECT_EQ(tiles_of(compiled.application.weights, "c"), (std::vector<std::uint16_t>{p(4)}));
  EXPECT_EQ(tiles_of(inputs, "d").front(), p(0));
  EXPECT_EQ(tiles_of(inputs, "e"), (std::vector<std::uint16_t>{p(5), p(0), p(1)}));
  const TensorBytes bindings{{"a", f32_bytes(iota(6))},
                             {"b", f32_bytes(iota(6, 10.0f))},
                             {"c", f32_bytes({0.25f})},
                             {"d", f32_bytes(iota(18, -4.0f))},
                             {"e", f32_bytes({1.0f, 2.0f, 3.0f})}};
  const auto run = run_on_simulator(compiled.application, bindings);
  EXPECT_EQ(run.outputs, tessera::testing::evaluate_graph(g, bindings));
}

// A sum whose partials do not fit its tile: the placement error says which
// tile, what it could not place and what is live there.
TEST(Compile, WhatDoesNotFitIsAPlacementErrorWithTheTilesMemory) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {120000, 1});
  g.host_output("s", g.reduce_sum(x, {0}));  // 120000 partials of one word on one tile
  try {
    compile(g, {.tiles = 1472});
    FAIL() << "placed 480 KB of partials on one tile";
  } catch (const PlacementError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("p0: cannot place 'partials (op 1)' (480000 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("live at step"), std::string::npos) << message;
    EXPECT_NE(message.find("free gaps"), std::string::npos) << message;
  }
}

// Exchange rows are sized at a probe address before code is placed, and
// checked there against their tile's data elements like placed rows. Weights
// that outgrow region 1 take region 0 from 0x80000 down, here (33 transposed
// weights of 8 KB per tile, whose move tables fill region 1) as far as
// 0x60000, where the probe used to sit: the compile then failed with a
// TEXCPT_CONFLICT between a probe row and the weights (so400m at f8 did).
// What is wrong here is that the rows, 12 KB each (a message per element),
// do not fit beside that data: the placement error says so, and why.
TEST(Compile, RowsThatDoNotFitBesideRegionZeroWeightsAreAPlacementErrorNotAProbeConflict) {
  constexpr std::uint32_t m = 2000;
  Graph g;
  ValueId y{};
  for (std::size_t i = 0; i < 33; ++i) {
    const ValueId t = g.transpose(g.parameter(fmt::format("w{}", i), DType::kF32, {2, m}), {1, 0});
    y = i == 0 ? t : g.add(y, t);
  }
  g.host_output("y", y);
  try {
    (void)compile(g, {.tiles = 2});
    ADD_FAILURE() << "compiled";
  } catch (const std::exception& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("p0: cannot place 'exchange row (phase"), std::string::npos) << what.substr(0, 600);
    EXPECT_EQ(what.find("TEXCPT_CONFLICT"), std::string::npos) << what.substr(0, 600);
    // And why region 0 is short: the weights took its top.
    EXPECT_NE(what.find("this tile's data outgrew region 1, so its bound weights took region 0's"),
              std::string::npos)
        << what;
  }
}

// A tile whose data outgrows region 1 offers its bound weights region 0
// above the code: x, w1, w2, w3 and the first sum, 96 KB each (480 KB),
// live at once on one tile do not fit region 1's 416 KB, and with one
// weight in region 0 they do.
// The results are exact: the weight is read where it lies.
TEST(Compile, WeightsThatOutgrowRegionOneTakeRegionZeroAboveTheCode) {
  constexpr std::uint32_t n = 24000;  // 96 KB of f32
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {n});
  const ValueId w1 = g.parameter("w1", DType::kF32, {n});
  const ValueId w2 = g.parameter("w2", DType::kF32, {n});
  const ValueId w3 = g.parameter("w3", DType::kF32, {n});
  g.host_output("y", g.add(g.add(x, w1), g.add(w2, w3)));
  const CompileResult compiled = compile(g, {.tiles = 1});
  bool in_region0 = false;
  for (const auto& tile : compiled.application.debug.tiles) {
    for (const auto& allocation : tile.allocations) {
      if (allocation.tensor.empty() || allocation.address >= target::kStandardRegion.end) continue;
      // Data in region 0 lies above every piece of code.
      in_region0 = true;
      EXPECT_GE(allocation.address, target::kLinkerRegion2.begin) << allocation.name;
      for (const auto& code : tile.allocations) {
        if (code.kind == schema::AllocationKind::kCode) {
          EXPECT_LE(code.address + code.size + target::kFetchLookahead, allocation.address)
              << code.name << " / " << allocation.name;
        }
      }
    }
  }
  EXPECT_TRUE(in_region0) << "a weight was expected in region 0";
  const auto xs = iota(n), w1s = iota(n, -5.0f), w2s = iota(n, 0.25f), w3s = iota(n, 7.5f);
  const auto run = run_on_simulator(compiled.application, {{"x", f32_bytes(xs)},
                                                           {"w1", f32_bytes(w1s)},
                                                           {"w2", f32_bytes(w2s)},
                                                           {"w3", f32_bytes(w3s)}});
  const auto y = as_f32(run.outputs.at("y"));
  ASSERT_EQ(y.size(), n);
  for (std::uint32_t i = 0; i < n; ++i) EXPECT_EQ(y[i], (xs[i] + w1s[i]) + (w2s[i] + w3s[i])) << i;
}

// Item 17: a shard of 4 GiB or more was cut to 32 bits in lowering and gave
// internal errors ("buffer 'x' has no allocation on p0", "no slice covers
// byte 0x4"). Every shard too large for its tile is the placement report,
// before any move into it is lowered.
TEST(Compile, AShardLargerThanATileIsThePlacementReport) {
  struct Case {
    Graph graph;
    std::uint32_t tiles;
    std::string expected;
  };
  std::vector<Case> cases;
  {
    Graph g;
    g.host_output("y", g.host_input("x", DType::kU8, {0xFFFFFFFF, 2}));  // 8 GiB
    cases.push_back({std::move(g), 1,
                     "p0: cannot place 'x' (8589934592 bytes, align 8) in interleaved memory"});
  }
  {
    Graph g;
    g.host_output("y", g.host_input("x", DType::kF32, {1u << 30}));  // 4 GiB over 2 tiles
    cases.push_back({std::move(g), 2, "p0: cannot place 'x' (2147483648 bytes"});
  }
  {
    Graph g;  // a transpose of 4 GiB: refused before lowering 2^32 element moves
    g.host_output("y", g.transpose(g.parameter("w", DType::kU8, {65536, 65536}), {1, 0}));
    cases.push_back({std::move(g), 1472, ": cannot place 'w' ("});
  }
  for (const Case& c : cases) {
    try {
      compile(c.graph, {.tiles = c.tiles});
      ADD_FAILURE() << "placed " << c.expected;
    } catch (const PlacementError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find(c.expected), std::string::npos) << message;
      EXPECT_NE(message.find("free gaps"), std::string::npos) << message;
    }
  }
}

TEST(Compile, AMinimumShardSizeKeepsSmallTensorsOnFewTiles) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {64, 256});  // 1 KiB rows
  g.host_output("s", g.reduce_sum(x, {0}));                      // f32[256]: 1 KiB
  const CompileResult spread = compile(g, {.tiles = 64});
  const CompileResult kept = compile(g, {.tiles = 64, .min_shard_bytes = 512});
  EXPECT_EQ(spread.application.outputs.at(0).slices.size(), 64u);  // 4 bytes each
  EXPECT_EQ(kept.application.outputs.at(0).slices.size(), 2u);     // 512 bytes each
  EXPECT_EQ(kept.application.inputs.at(0).slices.size(), 64u);     // a row is 1 KiB anyway
  std::vector<float> xs(64 * 256);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 97) * 0.125f;
  const auto a = run_on_simulator(spread.application, {{"x", f32_bytes(xs)}});
  const auto b = run_on_simulator(kept.application, {{"x", f32_bytes(xs)}});
  EXPECT_EQ(a.outputs.at("s"), b.outputs.at("s"));
}

TEST(Compile, CompilingTwiceGivesIdenticalBytes) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {9, 3});
  g.host_output("y", g.reduce_sum(g.transpose(x, {1, 0}), {1}));
  const auto first = schema::serialize_package(compile(g, {.tiles = 5}).application);
  const auto second = schema::serialize_package(compile(g, {.tiles = 5}).application);
  EXPECT_EQ(first, second);
}

TEST(Compile, RepeatRunsItsBodyCountTimesWithoutUnrolling) {
  // next = transpose(c) + c, three times: an exchange phase and two kernel
  // steps per iteration, one copy of their code.
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {6, 6});
  const ValueId w = g.parameter("w", DType::kF32, {6});
  const auto h = g.repeat(3, {x}, {w},
                          [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> invariant) {
                            const ValueId t = body.transpose(carried[0], {1, 0});
                            return std::vector<ValueId>{body.add(body.add(t, carried[0]), invariant[0])};
                          });
  g.host_output("y", h[0]);
  const CompileResult compiled = compile(g, {.tiles = 6});
  const std::size_t phases_once = compiled.report.phases.size();
  std::vector<float> c = iota(36, -7.0f);
  const std::vector<float> ws{0.25f, 1.0f, -2.0f, 3.5f, 0.0f, 8.0f};
  const auto run = run_on_simulator(compiled.application, {{"x", f32_bytes(c)}, {"w", f32_bytes(ws)}});
  for (int t = 0; t < 3; ++t) {
    std::vector<float> next(36);
    for (std::size_t i = 0; i < 6; ++i) {
      for (std::size_t j = 0; j < 6; ++j) next[i * 6 + j] = (c[j * 6 + i] + c[i * 6 + j]) + ws[j];
    }
    c = next;
  }
  EXPECT_EQ(as_f32(run.outputs.at("y")), c);
  // The rows and the planned phases exist once; the loop record makes the
  // simulator check all three iterations against them. (Every phase is in
  // the body: the loop-entry and yield copies stay on their tiles.)
  EXPECT_GE(phases_once, 1u);
  EXPECT_EQ(compiled.application.debug.exchange_phases.size(), phases_once);
  EXPECT_EQ(compiled.application.debug.phase_loops,
            (std::vector<schema::PhaseLoop>{{0, 2 * phases_once, 3}}));
  EXPECT_EQ(run.checked_phases, 3 * 2 * phases_once);
}

// Yields that name carried values — the same one twice, or a swap — are
// valid graphs: each state takes the previous iteration's value of the one
// it names (a swap goes through a saved copy).
TEST(Compile, ARepeatMayYieldItsCarriedValuesInAnyPlaces) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4});
  const ValueId z = g.host_input("z", DType::kF32, {4});
  const ValueId w = g.host_input("w", DType::kF32, {4});
  // (a, b, c) ← (b, a + c, a): a swap of a and b through the sum, a copy of a into c.
  const auto h = g.repeat(3, {x, z, w}, {},
                          [](Graph& body, std::span<const ValueId> c, std::span<const ValueId>) {
                            return std::vector<ValueId>{c[1], body.add(c[0], c[2]), c[0]};
                          });
  g.host_output("a", h[0]);
  g.host_output("b", h[1]);
  g.host_output("c", h[2]);
  // (a, a): the example, refused before as a permutation.
  const auto same =
      g.repeat(2, {x, z}, {}, [](Graph&, std::span<const ValueId> c, std::span<const ValueId>) {
        return std::vector<ValueId>{c[0], c[0]};
      });
  g.host_output("d", same[1]);
  // A pure rotation of three carried values.
  const auto turn =
      g.repeat(4, {x, z, w}, {}, [](Graph&, std::span<const ValueId> c, std::span<const ValueId>) {
        return std::vector<ValueId>{c[1], c[2], c[0]};
      });
  g.host_output("e", turn[0]);
  for (const std::uint32_t tiles : {1u, 2u}) {
    const CompileResult compiled = compile(g, {.tiles = tiles});
    const TensorBytes inputs{{"x", f32_bytes(iota(4))},
                             {"z", f32_bytes(iota(4, 10.0f))},
                             {"w", f32_bytes(iota(4, 100.0f))}};
    const auto run = run_on_simulator(compiled.application, inputs);
    EXPECT_EQ(run.outputs, tessera::testing::evaluate_graph(g, inputs)) << tiles << " tiles";
    EXPECT_EQ(as_f32(run.outputs.at("d")), iota(4)) << tiles << " tiles";
    EXPECT_EQ(as_f32(run.outputs.at("e")), iota(4, 10.0f)) << tiles << " tiles";
  }
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

// Review-findings #1: a kernel whose footprint leaves its operand's
// allocation is a compile-time error, not a corrupted neighbour at run time.
TEST(Link, AFootprintOutsideItsAllocationIsAnError) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  g.host_output("y", g.add(x, x));
  lower::Program program = lower::lower_graph(g, {.tiles = 2});
  bool tampered = false;
  for (auto& step : program.steps) {
    for (auto& [tile, runs] : step.runs) {
      for (auto& run : runs) {
        if (run.kernel == "tessera_add_f32" && !tampered) {
          run.scalars.at(0).second += 3;  // three elements past the shard
          tampered = true;
        }
      }
    }
  }
  ASSERT_TRUE(tampered);
  try {
    emit::link_program(program, {});
    FAIL() << "linked a call whose footprint overruns";
  } catch (const emit::LinkError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("kernel tessera_add_f32 on p"), std::string::npos) << message;
    EXPECT_NE(message.find("operand $m2 (sum) footprint [0x"), std::string::npos) << message;
    EXPECT_NE(message.find("+76) is not inside its allocation '%"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace tessera::compiler
