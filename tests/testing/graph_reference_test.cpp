// The graph reference interpreter on small hand-computed cases, one op at a
// time. Expected values are worked out by hand (and, for transpose and
// broadcasting, against NumPy's definitions: np.transpose(x, perm),
// np.broadcast_to, a + b).

#include "tests/testing/graph_reference.hpp"

#include <bit>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "support/error.hpp"

namespace tessera::testing {
namespace {

using compiler::DType;
using compiler::Graph;
using compiler::ValueId;

template <typename T>
std::vector<std::uint8_t> to_bytes(const std::vector<T>& values) {
  std::vector<std::uint8_t> bytes;
  for (const T value : values) {
    for (std::size_t b = 0; b < sizeof(T); ++b) {
      bytes.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> (8 * b)));
    }
  }
  return bytes;
}

template <typename T>
std::vector<T> from_bytes(const std::vector<std::uint8_t>& bytes) {
  EXPECT_EQ(bytes.size() % sizeof(T), 0u);
  std::vector<T> values(bytes.size() / sizeof(T));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint64_t value = 0;
    for (std::size_t b = 0; b < sizeof(T); ++b) {
      value |= std::uint64_t{bytes[i * sizeof(T) + b]} << (8 * b);
    }
    values[i] = static_cast<T>(value);
  }
  return values;
}

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<std::uint32_t> bits;
  for (const float value : values) bits.push_back(std::bit_cast<std::uint32_t>(value));
  return to_bytes(bits);
}

std::vector<float> f32_values(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> values;
  for (const std::uint32_t bits : from_bytes<std::uint32_t>(bytes)) {
    values.push_back(std::bit_cast<float>(bits));
  }
  return values;
}

std::vector<std::uint32_t> iota_u32(std::uint32_t count) {
  std::vector<std::uint32_t> values(count);
  for (std::uint32_t i = 0; i < count; ++i) values[i] = i;
  return values;
}

// 2^-24 and 2^-11: half an ulp of 1.0 in f32 and in f16.
constexpr float kHalfUlpF32 = 0x1p-24f;
constexpr std::uint32_t kOneF32 = 0x3F800000;
constexpr std::uint16_t kOneF16 = 0x3C00;
constexpr std::uint16_t kHalfUlpF16 = 0x1000;  // 2^-11

// One unary op on a u32 input x of `shape` holding 0, 1, 2, … (so each output
// element names the input element it came from).
template <typename Op>
std::vector<std::uint32_t> move_iota(compiler::Shape shape, Op op) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kU32, shape);
  g.host_output("y", op(g, x));
  const auto count = static_cast<std::uint32_t>(compiler::element_count(shape));
  return from_bytes<std::uint32_t>(evaluate_graph(g, {{"x", to_bytes(iota_u32(count))}}).at("y"));
}

TEST(GraphReference, CopyAndReshapeKeepTheBytes) {
  EXPECT_EQ(move_iota({2, 3}, [](Graph& g, ValueId x) { return g.copy(x); }), iota_u32(6));
  EXPECT_EQ(move_iota({2, 3}, [](Graph& g, ValueId x) { return g.reshape(x, {3, 1, 2}); }),
            iota_u32(6));
}

TEST(GraphReference, TransposeIsNumPys) {
  // [[0, 1, 2], [3, 4, 5]].T
  EXPECT_EQ(move_iota({2, 3}, [](Graph& g, ValueId x) { return g.transpose(x, {1, 0}); }),
            (std::vector<std::uint32_t>{0, 3, 1, 4, 2, 5}));
  // np.arange(12).reshape(2, 3, 2).transpose(2, 0, 1): out[a, b, c] = in[b, c, a].
  EXPECT_EQ(move_iota({2, 3, 2}, [](Graph& g, ValueId x) { return g.transpose(x, {2, 0, 1}); }),
            (std::vector<std::uint32_t>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
  // np.arange(12).reshape(2, 3, 2).transpose(1, 2, 0): out[a, b, c] = in[c, a, b].
  EXPECT_EQ(move_iota({2, 3, 2}, [](Graph& g, ValueId x) { return g.transpose(x, {1, 2, 0}); }),
            (std::vector<std::uint32_t>{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}));
}

TEST(GraphReference, Slice) {
  // np.arange(12).reshape(3, 4)[1:3, 1:3]
  EXPECT_EQ(move_iota({3, 4}, [](Graph& g, ValueId x) { return g.slice(x, {1, 1}, {3, 3}); }),
            (std::vector<std::uint32_t>{5, 6, 9, 10}));
  EXPECT_EQ(move_iota({3, 4}, [](Graph& g, ValueId x) { return g.slice(x, {2, 0}, {3, 4}); }),
            (std::vector<std::uint32_t>{8, 9, 10, 11}));
}

TEST(GraphReference, ConcatOnEachAxis) {
  // concat({a, b, a}, axis) with b = [[10, 11], [12, 13]].
  for (const auto& [axis, shape_a, expected] : std::vector<
           std::tuple<std::uint32_t, compiler::Shape, std::vector<std::uint32_t>>>{
           {1, {2, 1}, {0, 10, 11, 0, 1, 12, 13, 1}},  // a = [[0], [1]]
           {0, {1, 2}, {0, 1, 10, 11, 12, 13, 0, 1}},  // a = [[0, 1]]
       }) {
    Graph g;
    const ValueId a = g.host_input("a", DType::kU32, shape_a);
    const ValueId b = g.host_input("b", DType::kU32, {2, 2});
    g.host_output("y", g.concat({a, b, a}, axis));
    const auto out = evaluate_graph(g, {{"a", to_bytes(std::vector<std::uint32_t>{0, 1})},
                                        {"b", to_bytes(std::vector<std::uint32_t>{10, 11, 12, 13})}});
    EXPECT_EQ(from_bytes<std::uint32_t>(out.at("y")), expected) << "axis " << axis;
  }
}

TEST(GraphReference, BroadcastTo) {
  EXPECT_EQ(move_iota({3}, [](Graph& g, ValueId x) { return g.broadcast_to(x, {2, 3}); }),
            (std::vector<std::uint32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(move_iota({2, 1}, [](Graph& g, ValueId x) { return g.broadcast_to(x, {2, 3}); }),
            (std::vector<std::uint32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(move_iota({2, 1}, [](Graph& g, ValueId x) { return g.broadcast_to(x, {2, 2, 2}); }),
            (std::vector<std::uint32_t>{0, 0, 1, 1, 0, 0, 1, 1}));
}

TEST(GraphReference, DataMovementOfF8KeepsTheBits) {
  Graph g;
  const ValueId x = g.host_input("x", compiler::TensorType{{DType::kF8F143, -3}, {2, 2}});
  g.host_output("y", g.transpose(x, {1, 0}));
  const auto out = evaluate_graph(g, {{"x", {0x01, 0x02, 0x83, 0xFF}}});
  EXPECT_EQ(out.at("y"), (std::vector<std::uint8_t>{0x01, 0x83, 0x02, 0xFF}));
}

TEST(GraphReference, AddBroadcastsLikeNumPy) {
  const std::vector<float> a{1, 2, 3, 4, 5, 6};  // [2, 3]
  for (const auto& [shape_b, b, expected] :
       std::vector<std::tuple<compiler::Shape, std::vector<float>, std::vector<float>>>{
           {{3}, {10, 20, 30}, {11, 22, 33, 14, 25, 36}},
           {{2, 1}, {100, 200}, {101, 102, 103, 204, 205, 206}},
           {{1, 1, 3}, {10, 20, 30}, {11, 22, 33, 14, 25, 36}},  // result [1, 2, 3]
           {{}, {0.5f}, {1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}},
       }) {
    Graph g;
    const ValueId x = g.host_input("a", DType::kF32, {2, 3});
    const ValueId y = g.host_input("b", DType::kF32, shape_b);
    g.host_output("sum", g.add(x, y));
    g.host_output("reversed", g.add(y, x));
    const auto out = evaluate_graph(g, {{"a", f32_bytes(a)}, {"b", f32_bytes(b)}});
    EXPECT_EQ(f32_values(out.at("sum")), expected);
    EXPECT_EQ(f32_values(out.at("reversed")), expected);
  }
  // [2, 1] + [1, 3] → [2, 3]: both sides broadcast.
  Graph g;
  const ValueId x = g.host_input("a", DType::kF32, {2, 1});
  const ValueId y = g.host_input("b", DType::kF32, {1, 3});
  g.host_output("sum", g.add(x, y));
  const auto out = evaluate_graph(g, {{"a", f32_bytes({100, 200})}, {"b", f32_bytes({1, 2, 3})}});
  EXPECT_EQ(f32_values(out.at("sum")), (std::vector<float>{101, 102, 103, 201, 202, 203}));
}

std::uint32_t add_f32(std::uint32_t a, std::uint32_t b) {
  Graph g;
  g.host_output("y", g.add(g.host_input("a", DType::kF32, {1}), g.host_input("b", DType::kF32, {1})));
  const auto out = evaluate_graph(g, {{"a", to_bytes(std::vector{a})}, {"b", to_bytes(std::vector{b})}});
  return from_bytes<std::uint32_t>(out.at("y")).at(0);
}

std::uint16_t add_f16(std::uint16_t a, std::uint16_t b) {
  Graph g;
  g.host_output("y", g.add(g.host_input("a", DType::kF16, {1}), g.host_input("b", DType::kF16, {1})));
  const auto out = evaluate_graph(g, {{"a", to_bytes(std::vector{a})}, {"b", to_bytes(std::vector{b})}});
  return from_bytes<std::uint16_t>(out.at("y")).at(0);
}

TEST(GraphReference, F32AddRoundsToNearestEvenWithCanonicalNan) {
  struct Row {
    std::uint32_t a, b, sum;
  };
  for (const Row row : std::vector<Row>{
           {kOneF32, 0x33800000, kOneF32},      // 1 + 2^-24: a tie, to even (1)
           {kOneF32, 0x34400000, 0x3F800002},   // 1 + 3·2^-24: a tie, to even (1 + 2^-22)
           {kOneF32, 0x33800001, 0x3F800001},   // just above the tie: up
           {0x80000000, 0x80000000, 0x80000000},  // -0 + -0 = -0
           {0x00000000, 0x80000000, 0x00000000},  // +0 + -0 = +0
           {0x00000001, 0x00000001, 0x00000002},  // subnormals add exactly
           {0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000},  // overflow to +Inf
           {0x7F800000, 0xFF800000, 0x7FC00000},  // Inf - Inf: the canonical NaN
           {0x7F800123, kOneF32, 0x7FC00000},     // a NaN payload is not propagated
       }) {
    EXPECT_EQ(add_f32(row.a, row.b), row.sum) << std::hex << row.a << " + " << row.b;
  }
}

TEST(GraphReference, F16AddIsTheCorrectlyRoundedF16Sum) {
  struct Row {
    std::uint16_t a, b, sum;
  };
  for (const Row row : std::vector<Row>{
           {kOneF16, kHalfUlpF16, kOneF16},  // 1 + 2^-11: a tie, to even
           {kOneF16, 0x1600, 0x3C02},        // 1 + 3·2^-11: a tie, to even (1 + 2^-9)
           {kOneF16, 0x1001, 0x3C01},        // just above the tie: up
           {0x7BFF, 0x4800, 0x7BFF},         // 65504 + 8 rounds back to 65504
           {0x7BFF, 0x4C00, 0x7C00},         // 65504 + 16 is the tie with 65536: to Inf
           {0x0001, 0x0001, 0x0002},         // subnormals
           {0x8000, 0x8000, 0x8000},         // -0 + -0
           {0x7C00, 0xFC00, 0x7E00},         // Inf - Inf: the canonical NaN
           {0x7C01, kOneF16, 0x7E00},        // a signalling NaN in, the canonical NaN out
       }) {
    EXPECT_EQ(add_f16(row.a, row.b), row.sum) << std::hex << row.a << " + " << row.b;
  }
}

// reduce_sum of f32 x over `axes` (keep_dims off).
std::vector<std::uint32_t> sum_f32(compiler::Shape shape, const std::vector<float>& x,
                                   std::vector<std::uint32_t> axes) {
  Graph g;
  g.host_output("y", g.reduce_sum(g.host_input("x", DType::kF32, shape), axes));
  return from_bytes<std::uint32_t>(evaluate_graph(g, {{"x", f32_bytes(x)}}).at("y"));
}

TEST(GraphReference, ReduceSumAccumulatesSequentiallyInRowMajorOrder) {
  const float h = kHalfUlpF32;
  // Sequentially 1 + h = 1 (a tie, to even) three times; pairwise
  // (1 + h) + (h + h) would be 1 + 2^-23, and right to left 1 + 3h rounds up too.
  EXPECT_EQ(sum_f32({4}, {1, h, h, h}, {0}), (std::vector<std::uint32_t>{kOneF32}));
  // Summing the small ones first is exact: h + h + 1 = 1 + 2^-23.
  EXPECT_EQ(sum_f32({3}, {h, h, 1}, {0}), (std::vector<std::uint32_t>{0x3F800001}));
  // Two axes: row-major order x00, x01, x10, x11 = h, h, 1, 0 gives 1 + 2^-23;
  // column-major (h + 1 + h + 0) would give 1.
  EXPECT_EQ(sum_f32({2, 2}, {h, h, 1, 0}, {0, 1}), (std::vector<std::uint32_t>{0x3F800001}));
  // Reducing axis 0 of [[1, h], [h, h], [h, 1]] column by column.
  EXPECT_EQ(sum_f32({3, 2}, {1, h, h, h, h, 1}, {0}),
            (std::vector<std::uint32_t>{kOneF32, 0x3F800001}));
  // The middle axis of [2, 3, 2] (integers: exact).
  std::vector<float> x;
  for (int i = 0; i < 12; ++i) x.push_back(static_cast<float>(i));
  std::vector<std::uint32_t> expected;
  for (const float v : {6.0f, 9.0f, 24.0f, 27.0f}) {  // 0+2+4, 1+3+5, 6+8+10, 7+9+11
    expected.push_back(std::bit_cast<std::uint32_t>(v));
  }
  EXPECT_EQ(sum_f32({2, 3, 2}, x, {1}), expected);
}

TEST(GraphReference, ReduceSumStartsFromTheFirstElement) {
  // -0 + -0 stays -0 (starting from +0 would give +0).
  EXPECT_EQ(sum_f32({2}, {-0.0f, -0.0f}, {0}), (std::vector<std::uint32_t>{0x80000000}));
  // One reduced element is a bit-exact copy, NaN payload included.
  Graph g;
  g.host_output("y", g.reduce_sum(g.host_input("x", DType::kF32, {1, 2}), {0}));
  const auto out =
      evaluate_graph(g, {{"x", to_bytes(std::vector<std::uint32_t>{0x7F800123, 0xFFC00001})}});
  EXPECT_EQ(from_bytes<std::uint32_t>(out.at("y")),
            (std::vector<std::uint32_t>{0x7F800123, 0xFFC00001}));
  // An add that makes a NaN makes the canonical one.
  Graph nan_sum;
  nan_sum.host_output("y", nan_sum.reduce_sum(nan_sum.host_input("x", DType::kF32, {2}), {0}));
  const auto nan_out = evaluate_graph(
      nan_sum, {{"x", to_bytes(std::vector<std::uint32_t>{0x7F800123, kOneF32})}});
  EXPECT_EQ(from_bytes<std::uint32_t>(nan_out.at("y")), (std::vector<std::uint32_t>{0x7FC00000}));
}

TEST(GraphReference, ReduceSumKeepDims) {
  for (const bool keep_dims : {false, true}) {
    Graph g;
    const ValueId y = g.reduce_sum(g.host_input("x", DType::kF32, {2, 3}), {1}, keep_dims);
    EXPECT_EQ(g.type(y).shape, keep_dims ? compiler::Shape({2, 1}) : compiler::Shape({2}));
    g.host_output("y", y);
    const auto out = evaluate_graph(g, {{"x", f32_bytes({1, 2, 3, 4, 5, 6})}});
    EXPECT_EQ(f32_values(out.at("y")), (std::vector<float>{6, 15}));
  }
}

TEST(GraphReference, F16ReduceSumRoundsOnceAtTheEnd) {
  struct Row {
    std::vector<std::uint16_t> x;
    std::uint16_t sum;
  };
  for (const Row& row : std::vector<Row>{
           // In f16, 1 + 2^-11 + 2^-11 would be 1 (two ties to even); in f32 it is
           // exactly 1 + 2^-10.
           {{kOneF16, kHalfUlpF16, kHalfUlpF16}, 0x3C01},
           // 65504 + 65504 - 65504 would overflow in f16; in f32 it is 65504.
           {{0x7BFF, 0x7BFF, 0xFBFF}, 0x7BFF},
           // 2^-24 (the smallest subnormal) six times: exactly 6·2^-24.
           {{1, 1, 1, 1, 1, 1}, 0x0006},
           // 1 + 2^-11 + 2^-23 (exact in f32): above the tie only thanks to the
           // last term. With 2^-24 the f32 sum itself would tie back to 1 + 2^-11.
           {{kOneF16, kHalfUlpF16, 0x0002}, 0x3C01},
           {{kOneF16, kHalfUlpF16, 0x0001}, kOneF16},
           {{0x8000, 0x8000}, 0x8000},
       }) {
    Graph g;
    const auto count = static_cast<std::uint32_t>(row.x.size());
    g.host_output("y", g.reduce_sum(g.host_input("x", DType::kF16, {count}), {0}));
    const auto out = evaluate_graph(g, {{"x", to_bytes(row.x)}});
    EXPECT_EQ(from_bytes<std::uint16_t>(out.at("y")), (std::vector<std::uint16_t>{row.sum}))
        << std::hex << "first " << row.x[0];
  }
}

TEST(GraphReference, RepeatCarriesAndKeepsInvariants) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {2});
  const ValueId w = g.parameter("w", DType::kF32, {2});
  const auto results =
      g.repeat(3, {x}, {w}, [](Graph& body, auto carried, auto invariant) {
        return std::vector<ValueId>{body.add(carried[0], invariant[0])};
      });
  g.host_output("y", results[0]);
  const auto out = evaluate_graph(g, {{"x", f32_bytes({1, 2})}, {"w", f32_bytes({10, 100})}});
  EXPECT_EQ(f32_values(out.at("y")), (std::vector<float>{31, 302}));
}

TEST(GraphReference, RepeatYieldsAreTakenTogether) {
  // (a, b) → (b, a + b) five times from (1, 1): Fibonacci, so a body that read
  // a value it had already replaced would show.
  Graph g;
  const ValueId one = g.host_input("one", DType::kF32, {1});
  const auto results = g.repeat(5, {one, one}, {}, [](Graph& body, auto carried, auto) {
    return std::vector<ValueId>{carried[1], body.add(carried[0], carried[1])};
  });
  g.host_output("a", results[0]);
  g.host_output("b", results[1]);
  const auto out = evaluate_graph(g, {{"one", f32_bytes({1})}});
  EXPECT_EQ(f32_values(out.at("a")), (std::vector<float>{8}));
  EXPECT_EQ(f32_values(out.at("b")), (std::vector<float>{13}));
}

TEST(GraphReference, NestedRepeat) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {1});
  const auto outer = g.repeat(3, {x}, {}, [](Graph& body, auto carried, auto) {
    return body.repeat(4, {carried[0]}, {}, [](Graph& inner, auto c, auto) {
      return std::vector<ValueId>{inner.add(c[0], c[0])};
    });
  });
  g.host_output("y", outer[0]);
  EXPECT_EQ(f32_values(evaluate_graph(g, {{"x", f32_bytes({1})}}).at("y")),
            (std::vector<float>{4096}));  // 2^(3·4)
}

TEST(GraphReference, BindingErrorsNameTheBinding) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {2, 3});
  g.host_output("y", g.copy(x));
  const auto message = [&](const TensorBytes& bindings) {
    try {
      evaluate_graph(g, bindings);
    } catch (const UsageError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({}), "evaluating op 0 (host_input \"x\"): binding \"x\" (f32[2, 3], 24 bytes) is missing");
  EXPECT_EQ(message({{"x", std::vector<std::uint8_t>(20)}}),
            "evaluating op 0 (host_input \"x\"): binding \"x\" (f32[2, 3]) has 20 bytes, not 24");
  EXPECT_EQ(message({{"x", std::vector<std::uint8_t>(24)}, {"z", {}}}),
            "binding \"z\" names no host input or parameter of the graph");
  EXPECT_EQ(evaluate_graph(g, {{"x", std::vector<std::uint8_t>(24, 7)}}).at("y"),
            std::vector<std::uint8_t>(24, 7));
}

}  // namespace
}  // namespace tessera::testing
