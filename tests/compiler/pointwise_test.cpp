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
#include "tests/compiler/graph_runner.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler {
namespace {

using tessera::testing::TensorBytes;

// Element bits of `type`'s dtype: mostly moderate values, with specials.
std::vector<std::uint8_t> random_bytes(const TensorType& type, std::uint32_t seed) {
  std::mt19937 random(seed);
  const std::uint64_t count = element_count(type.shape);
  std::vector<std::uint8_t> bytes;
  std::uniform_real_distribution<float> moderate(-6.0f, 6.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  for (std::uint64_t e = 0; e < count; ++e) {
    const int p = pick(random);
    if (type.dtype() == DType::kF8F143 || type.dtype() == DType::kU8) {
      bytes.push_back(static_cast<std::uint8_t>(random()));
      continue;
    }
    float value = moderate(random);
    if (p == 0) value = std::numeric_limits<float>::quiet_NaN();
    if (p == 1) value = std::numeric_limits<float>::infinity();
    if (p == 2) value = -std::numeric_limits<float>::infinity();
    if (p == 3) value = type.dtype() == DType::kF16 ? 65504.0f : 3.0e38f;
    if (p == 4) value = type.dtype() == DType::kF16 ? 3.0e-6f : 2.0e-40f;  // subnormal
    if (p == 5) value = -0.0f;
    if (p == 6) value = 70000.0f * moderate(random);  // f32 → f16 overflow
    if (p == 7) value = 1e-3f * moderate(random);      // small
    if (type.dtype() == DType::kF16) {
      std::uint16_t bits = kernels::f32_to_f16(value);
      if (p == 8) bits = 0x7D01;  // a signalling NaN with a payload
      bytes.push_back(static_cast<std::uint8_t>(bits));
      bytes.push_back(static_cast<std::uint8_t>(bits >> 8));
    } else {
      std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
      if (p == 8) bits = 0x7F800001;  // a signalling NaN
      if (p == 9) bits = 0x33000001;  // just above half an f16 subnormal: rounding edge
      if (p == 10) bits = 0x3F801000;  // 1 + 2^-11: a tie to even in f16
      for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
    }
  }
  return bytes;
}

// Compiles `graph` for `tiles`, runs it on random bindings and compares every
// output with the reference within its bounds.
void expect_reference(const Graph& graph, std::uint32_t tiles, std::uint32_t seed = 1) {
  TensorBytes bindings;
  std::uint32_t n = seed;
  for (const OpKind kind : {OpKind::kHostInput, OpKind::kParameter}) {
    for (const OpId op : graph.top_level(kind)) {
      const auto& name = std::get<BindingAttributes>(graph.operation(op).attributes).name;
      bindings[name] = random_bytes(graph.type(graph.operation(op).results[0]), n++);
    }
  }
  const auto reference = tessera::testing::evaluate_graph_with_bounds(graph, bindings);
  const CompileResult compiled = compile(graph, {.tiles = tiles});
  const auto run = testing::run_on_simulator(compiled.application, bindings);
  for (const OpId op : graph.top_level(OpKind::kHostOutput)) {
    const auto& name = std::get<BindingAttributes>(graph.operation(op).attributes).name;
    const TensorType& type = graph.type(graph.operation(op).inputs[0]);
    const auto problem = tessera::testing::check_within_bounds(
        type, run.outputs.at(name), reference.outputs.at(name), reference.bounds.at(name));
    EXPECT_FALSE(problem.has_value()) << name << " on " << tiles << " tiles: " << *problem;
  }
}

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
