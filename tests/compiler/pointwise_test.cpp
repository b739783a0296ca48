// mul, gelu and convert compiled, run on the simulator and compared with the
// CPU reference (tests/testing/graph_reference.hpp): bit for bit for mul and
// convert, within graph_bounds.hpp's bound for gelu. Shapes with rows and
// columns of 1, 12, 13, 71, 72, 80, 129 (not multiples of 16), rank 3,
// broadcasting, on 1, 7 and 1472 tiles, f32 and f16, with NaN, ±Inf,
// subnormals and the largest finite values among the data.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "compiler/compile.hpp"
#include "compiler/lower/lower.hpp"
#include "kernels/half.hpp"
#include "schema/writer.hpp"
#include "tests/compiler/reference_check.hpp"

namespace tessera::compiler {
namespace {

using testing::expect_reference;

struct Shapes {
  Shape a, b;
};

const std::vector<Shapes> kMulShapes = {
    {{1}, {1}},           {{12}, {12}},          {{13, 71}, {13, 71}}, {{72, 80}, {80}},
    {{129, 13}, {129, 1}}, {{3, 13, 12}, {13, 1}}, {{2, 71, 1}, {1, 72}}, {{1}, {80, 13}},
};

TEST(Pointwise, MulEqualsTheReferenceBitForBit) {
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    for (const Shapes& s : kMulShapes) {
      for (const std::uint32_t tiles : {1u, 7u, 1472u}) {
        SCOPED_TRACE(fmt::format("{} {} · {} on {}", dtype == DType::kF32 ? "f32" : "f16",
                                 format_shape(s.a), format_shape(s.b), tiles));
        Graph g;
        const ValueId a = g.host_input("a", dtype, s.a);
        const ValueId b = g.parameter("b", dtype, s.b);
        g.host_output("y", g.mul(a, b));
        expect_reference(g, tiles);
      }
    }
  }
}

TEST(Pointwise, MulOfAValueWithItselfAndOfAResult) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF16, {13, 12});
  const ValueId squared = g.mul(a, a);
  g.host_output("y", g.mul(squared, g.add(a, a)));
  expect_reference(g, 7);
}

// A [H] bias cut one word per tile, added to a [1, T, H] activation whose T
// rows lie on T tiles: read where it lies, each of its words would be a
// message of its own into every row tile (72 × 9 = 648 receives, each an
// instruction of a tile's exchange row); gathered on the first row tile
// first it is 72 one-word messages there and then one run of the whole bias
// to each of the 8 other row tiles. Bit-exact either way.
TEST(Pointwise, AddGathersASpreadBroadcastOperandOnceForItsResultTiles) {
  for (const bool mul : {false, true}) {
    SCOPED_TRACE(mul ? "mul" : "add");
    Graph g;
    const ValueId a = g.host_input("a", DType::kF16, {1, 9, 144});
    const ValueId b = g.parameter("b", DType::kF16, {144});
    g.host_output("y", mul ? g.mul(a, b) : g.add(a, b));
    const lower::Program program = lower::lower_graph(g, {.tiles = 128});
    std::size_t receives = 0;
    for (const lower::Step& step : program.steps) {
      for (const lower::Transfer& transfer : step.transfers) receives += transfer.destinations.size();
    }
    EXPECT_LE(receives, 72u + 8u);
    expect_reference(g, 128);
  }
}

// The same bias in pieces of whole runs (--min-shard-bytes 256: four
// shards of 64 words) is multicast from where it lies in the add's own
// phase — a run per shard to each row tile — not gathered in a phase of
// its own first (lower::lies_in_small_pieces). So is a LayerNorm's γ and β.
TEST(Pointwise, ABroadcastOperandInWholeRunsIsReadWhereItLies) {
  for (const bool norm : {false, true}) {
    SCOPED_TRACE(norm ? "layer_norm" : "add");
    Graph g;
    const ValueId a = g.host_input("a", DType::kF16, {1, 9, 512});
    const ValueId b = g.parameter("b", DType::kF16, {512});
    g.host_output("y", norm ? g.layer_norm(a, b, g.parameter("c", DType::kF16, {512}), 1e-5) : g.add(a, b));
    const CompileOptions options{.tiles = 64, .min_shard_bytes = 256};
    const lower::Program program = lower::lower_graph(g, {.tiles = 64, .min_shard_bytes = 256});
    std::size_t exchanges = 0;
    for (const lower::Step& step : program.steps) exchanges += step.kind == lower::StepKind::kExchange ? 1 : 0;
    EXPECT_EQ(exchanges, 1u);
    // Rare specials for layer_norm: one makes its whole row unbounded.
    const testing::TensorBytes bindings = testing::random_bindings(g, 1, norm ? 100000 : 100);
    const auto checked = testing::check_against_reference(g, bindings, options);
    EXPECT_GT(checked.constrained, 0u);
  }
}

// SigLIP's position embedding at batch 2: a [T, H] operand added to
// [2, T, H] is read twice, but gathered on one tile it would not fit
// (480 KB here against a tile's ~425 KB of interleaved memory; so400m's is
// 1.7 MB). Above lower::kMaxGatheredBroadcastBytes it is read where it lies.
TEST(Pointwise, ALargeBroadcastOperandIsReadWhereItLies) {
  Graph g;
  const ValueId a = g.host_input("a", DType::kF32, {2, 400, 300});
  const ValueId b = g.parameter("b", DType::kF32, {400, 300});
  g.host_output("y", g.add(a, b));
  const lower::Program program = lower::lower_graph(g, {.tiles = 64});
  for (const lower::Buffer& buffer : program.buffers) {
    EXPECT_EQ(buffer.name.find("gathered"), std::string::npos) << buffer.name;
  }
  expect_reference(g, 64);
}

const std::vector<Shape> kShapes = {{1},      {12},     {13},         {71, 72},
                                    {80, 13}, {129, 1}, {3, 13, 71}, {2, 12, 129}};

TEST(Pointwise, GeluIsWithinItsBound) {
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    for (const Shape& shape : kShapes) {
      for (const std::uint32_t tiles : {1u, 7u, 1472u}) {
        SCOPED_TRACE(fmt::format("{} {} on {}", dtype == DType::kF32 ? "f32" : "f16",
                                 format_shape(shape), tiles));
        Graph g;
        g.host_output("y", g.gelu(g.host_input("x", dtype, shape)));
        expect_reference(g, tiles);
      }
    }
  }
}

TEST(Pointwise, GeluOfAResultOnOtherTiles) {
  // A small host input starts on a round-robin tile; the gelu's result
  // lies from tile 0, so the input is moved first.
  Graph g;
  const ValueId a = g.host_input("a", DType::kF32, {3});
  const ValueId b = g.host_input("b", DType::kF32, {3});
  g.host_output("y", g.gelu(b));
  g.host_output("z", a);
  expect_reference(g, 7);
}

TEST(Pointwise, ConvertBetweenF32AndF16IsBitExact) {
  for (const auto& [from, to] : {std::pair{DType::kF32, DType::kF16}, std::pair{DType::kF16, DType::kF32}}) {
    for (const Shape& shape : kShapes) {
      for (const std::uint32_t tiles : {1u, 7u, 1472u}) {
        SCOPED_TRACE(fmt::format("{} {} on {}", from == DType::kF32 ? "f32 → f16" : "f16 → f32",
                                 format_shape(shape), tiles));
        Graph g;
        g.host_output("y", g.convert(g.host_input("x", from, shape), to));
        expect_reference(g, tiles);
      }
    }
  }
}

TEST(Pointwise, AConvertKeepsWordShardsInBothDtypes) {
  // The property test's shrunk case: f16[2] lies on one tile (a 4-byte row
  // block), its f32 convert on two; converting back must not split the f16
  // result into 2-byte shards (host slices are whole words).
  for (const Shape& shape : {Shape{2}, Shape{5, 3}, Shape{7}}) {
    SCOPED_TRACE(format_shape(shape));
    Graph g;
    const ValueId f = g.convert(g.host_input("x", DType::kF16, shape), DType::kF32);
    g.host_output("y", g.convert(f, DType::kF16));
    g.host_output("z", f);
    expect_reference(g, 300);
  }
}

TEST(Pointwise, ConvertToAndFromF143IsBitExact) {
  // Scales inside and outside [−14, 8], odd element counts (the last group
  // of four padded), more than 4096 codes on one tile (several expands).
  const std::vector<Shape> shapes = {{1}, {13}, {3, 13, 71}, {129, 80}, {71, 3}};
  for (const int scale : {0, -14, 8, 12, -20}) {
    for (const Shape& shape : shapes) {
      for (const std::uint32_t tiles : {1u, 7u}) {
        SCOPED_TRACE(fmt::format("scale {} {} on {}", scale, format_shape(shape), tiles));
        Graph g;
        const ValueId x = g.host_input("x", DType::kF16, shape);
        const ValueId codes = g.convert(x, ElementType{DType::kF8F143, scale});
        g.host_output("codes", codes);
        g.host_output("back", g.convert(codes, DType::kF16));
        const ValueId raw = g.host_input("raw", TensorType{ElementType{DType::kF8F143, scale}, shape});
        g.host_output("halves", g.convert(raw, DType::kF16));
        if (scale >= -14 && scale <= 8) g.host_output("floats", g.convert(raw, DType::kF32));
        expect_reference(g, tiles);
      }
    }
  }
}

TEST(Pointwise, ConvertsTheDeviceCannotDoExactlyAreRefusedNamingTheOp) {
  const auto message = [](const std::function<void(Graph&)>& build) {
    Graph g;
    build(g);
    try {
      (void)compile(g, {.tiles = 4});
    } catch (const lower::LoweringError& error) {
      return std::string(error.what());
    }
    return std::string("compiled");
  };
  EXPECT_NE(message([](Graph& g) {
              g.host_output("y", g.convert(g.host_input("x", DType::kF32, {8}),
                                           ElementType{DType::kF8F143, 0}));
            }).find("op 1 (convert %0): convert f32[8] → f8f143"),
            std::string::npos);
  const std::string outside = message([](Graph& g) {
    g.host_output("y", g.convert(g.host_input("x", TensorType{ElementType{DType::kF8F143, 9}, {8}}),
                                 DType::kF32));
  });
  EXPECT_NE(outside.find("op 1 (convert %0)"), std::string::npos) << outside;
  EXPECT_NE(outside.find("exact only for scales -14 … 8"), std::string::npos) << outside;
}

TEST(Pointwise, CompilingTwiceGivesIdenticalBytes) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {13, 71});
  const ValueId h = g.convert(g.gelu(g.mul(x, g.parameter("w", DType::kF32, {71}))), DType::kF16);
  g.host_output("y", g.convert(g.convert(h, ElementType{DType::kF8F143, -2}), DType::kF32));
  const auto first = schema::serialize_package(compile(g, {.tiles = 7}).application);
  const auto second = schema::serialize_package(compile(g, {.tiles = 7}).application);
  EXPECT_EQ(first, second);
  expect_reference(g, 7);
}

}  // namespace
}  // namespace tessera::compiler
