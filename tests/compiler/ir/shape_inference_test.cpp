// Typing rules of every operation (compiler/ir/shape_inference.hpp), as
// tables: inputs and attributes → result type or the reason it is refused.
// Broadcasting rows follow NumPy's documented rules (numpy.org, "Broadcasting").

#include <gtest/gtest.h>

#include "compiler/ir/graph_error.hpp"
#include "compiler/ir/shape_inference.hpp"

namespace tessera::compiler {
namespace {

TensorType f32(Shape shape) { return {{DType::kF32, 0}, std::move(shape)}; }
TensorType f16(Shape shape) { return {{DType::kF16, 0}, std::move(shape)}; }
TensorType f8(std::int32_t scale, Shape shape) {
  return {{DType::kF8F143, scale}, std::move(shape)};
}
TensorType u32(Shape shape) { return {{DType::kU32, 0}, std::move(shape)}; }

struct Row {
  const char* what;
  OpKind kind;
  std::vector<TensorType> inputs;
  Attributes attributes;
  std::optional<TensorType> result;  // nullopt: refused
  const char* message = "";          // for refused rows, a substring of the reason
};

void check(const Row& row) {
  SCOPED_TRACE(row.what);
  if (row.result) {
    const auto results = infer_result_types(row.kind, row.inputs, row.attributes);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(format_type(results[0]), format_type(*row.result));
    EXPECT_EQ(results[0], *row.result);
  } else {
    try {
      (void)infer_result_types(row.kind, row.inputs, row.attributes);
      ADD_FAILURE() << "accepted";
    } catch (const GraphError& error) {
      EXPECT_NE(error.message().find(row.message), std::string::npos) << error.message();
    }
  }
}

TEST(ShapeInference, AddBroadcastsLikeNumPy) {
  const std::vector<Row> rows = {
      {"same shape", OpKind::kAdd, {f32({4, 8}), f32({4, 8})}, NoAttributes{}, f32({4, 8})},
      {"row vector", OpKind::kAdd, {f32({4, 8}), f32({8})}, NoAttributes{}, f32({4, 8})},
      {"column and row", OpKind::kAdd, {f32({4, 1}), f32({1, 8})}, NoAttributes{}, f32({4, 8})},
      {"scalar left", OpKind::kAdd, {f32({}), f32({3})}, NoAttributes{}, f32({3})},
      {"scalar both", OpKind::kAdd, {f16({}), f16({})}, NoAttributes{}, f16({})},
      {"rank 3 with rank 2",
       OpKind::kAdd,
       {f32({2, 1, 3}), f32({5, 1})},
       NoAttributes{},
       f32({2, 5, 3})},
      {"ones", OpKind::kAdd, {f32({1}), f32({1, 1})}, NoAttributes{}, f32({1, 1})},
      {"f16", OpKind::kAdd, {f16({2, 3}), f16({3})}, NoAttributes{}, f16({2, 3})},
      {"mismatch",
       OpKind::kAdd,
       {f32({4, 8}), f32({3})},
       NoAttributes{},
       std::nullopt,
       "shapes [4, 8] and [3] do not broadcast"},
      {"mismatch inner",
       OpKind::kAdd,
       {f32({2, 3}), f32({3, 3})},
       NoAttributes{},
       std::nullopt,
       "do not broadcast"},
      {"mixed dtypes",
       OpKind::kAdd,
       {f32({2}), f16({2})},
       NoAttributes{},
       std::nullopt,
       "not f32 and f16"},
      {"u32", OpKind::kAdd, {u32({2}), u32({2})}, NoAttributes{}, std::nullopt, "not u32 and u32"},
      {"f8", OpKind::kAdd, {f8(0, {2}), f8(0, {2})}, NoAttributes{}, std::nullopt, "f8f143"},
      {"one input", OpKind::kAdd, {f32({2})}, NoAttributes{}, std::nullopt, "takes 2 inputs"},
  };
  for (const Row& row : rows) check(row);
}

TEST(ShapeInference, DataMovement) {
  const std::vector<Row> rows = {
      {"copy keeps f8 scale", OpKind::kCopy, {f8(-3, {2, 2})}, NoAttributes{}, f8(-3, {2, 2})},
      {"slice", OpKind::kSlice, {f32({4, 8})}, SliceAttributes{{1, 2}, {3, 8}}, f32({2, 6})},
      {"slice scalar", OpKind::kSlice, {f32({})}, SliceAttributes{{}, {}}, f32({})},
      {"slice empty range",
       OpKind::kSlice,
       {f32({4})},
       SliceAttributes{{2}, {2}},
       std::nullopt,
       "axis 0: [2, 2)"},
      {"slice past end",
       OpKind::kSlice,
       {f32({4})},
       SliceAttributes{{0}, {5}},
       std::nullopt,
       "inside [0, 4)"},
      {"slice rank",
       OpKind::kSlice,
       {f32({4, 4})},
       SliceAttributes{{0}, {4}},
       std::nullopt,
       "one entry per axis"},
      {"concat axis 1",
       OpKind::kConcat,
       {f32({2, 3}), f32({2, 5})},
       ConcatAttributes{1},
       f32({2, 8})},
      {"concat one input", OpKind::kConcat, {u32({2})}, ConcatAttributes{0}, u32({2})},
      {"concat other axis differs",
       OpKind::kConcat,
       {f32({2, 3}), f32({3, 3})},
       ConcatAttributes{1},
       std::nullopt,
       "differs from input 0's [2, 3] off axis 1"},
      {"concat scale differs",
       OpKind::kConcat,
       {f8(1, {2}), f8(2, {2})},
       ConcatAttributes{0},
       std::nullopt,
       "input 1 is f8f143(2^2), input 0 is f8f143(2^1)"},
      {"concat scalar", OpKind::kConcat, {f32({})}, ConcatAttributes{0}, std::nullopt, "scalars"},
      {"concat bad axis",
       OpKind::kConcat,
       {f32({2})},
       ConcatAttributes{1},
       std::nullopt,
       "axis 1 is not an axis"},
      {"concat overflow",
       OpKind::kConcat,
       {f32({0xFFFFFFFF}), f32({1})},
       ConcatAttributes{0},
       std::nullopt,
       "overflows"},
      {"reshape", OpKind::kReshape, {f16({4, 8})}, ShapeAttributes{{2, 16}}, f16({2, 16})},
      {"reshape to scalar", OpKind::kReshape, {f16({1, 1})}, ShapeAttributes{{}}, f16({})},
      {"reshape count",
       OpKind::kReshape,
       {f16({4, 8})},
       ShapeAttributes{{5, 6}},
       std::nullopt,
       "cannot reshape [4, 8] (32 elements) to [5, 6] (30 elements)"},
      {"reshape zero",
       OpKind::kReshape,
       {f16({4})},
       ShapeAttributes{{0, 4}},
       std::nullopt,
       "zero extent on axis 0"},
      {"transpose",
       OpKind::kTranspose,
       {f32({2, 3, 4})},
       TransposeAttributes{{2, 0, 1}},
       f32({4, 2, 3})},
      {"transpose repeated axis",
       OpKind::kTranspose,
       {f32({2, 3})},
       TransposeAttributes{{0, 0}},
       std::nullopt,
       "not a permutation"},
      {"transpose short",
       OpKind::kTranspose,
       {f32({2, 3})},
       TransposeAttributes{{0}},
       std::nullopt,
       "not a permutation"},
      {"broadcast_to new axes",
       OpKind::kBroadcastTo,
       {f32({3})},
       ShapeAttributes{{2, 4, 3}},
       f32({2, 4, 3})},
      {"broadcast_to ones",
       OpKind::kBroadcastTo,
       {f32({4, 1})},
       ShapeAttributes{{4, 6}},
       f32({4, 6})},
      {"broadcast_to scalar", OpKind::kBroadcastTo, {f8(5, {})}, ShapeAttributes{{2}}, f8(5, {2})},
      {"broadcast_to mismatch",
       OpKind::kBroadcastTo,
       {f32({3})},
       ShapeAttributes{{4}},
       std::nullopt,
       "cannot broadcast [3] to [4]"},
      {"broadcast_to lower rank",
       OpKind::kBroadcastTo,
       {f32({1, 3})},
       ShapeAttributes{{3}},
       std::nullopt,
       "cannot broadcast [1, 3] to [3]"},
  };
  for (const Row& row : rows) check(row);
}

TEST(ShapeInference, ReduceSum) {
  const std::vector<Row> rows = {
      {"last axis", OpKind::kReduceSum, {f32({4, 8})}, ReduceAttributes{{1}, false}, f32({4})},
      {"all axes", OpKind::kReduceSum, {f32({4, 8})}, ReduceAttributes{{0, 1}, false}, f32({})},
      {"keep dims",
       OpKind::kReduceSum,
       {f32({4, 8, 2})},
       ReduceAttributes{{0, 2}, true},
       f32({1, 8, 1})},
      // f16 sums keep their dtype (they accumulate in f32 inside; shape_inference.hpp).
      {"f16 stays f16", OpKind::kReduceSum, {f16({6})}, ReduceAttributes{{0}, false}, f16({})},
      {"no axes",
       OpKind::kReduceSum,
       {f32({4})},
       ReduceAttributes{{}, false},
       std::nullopt,
       "at least one axis"},
      {"unsorted axes",
       OpKind::kReduceSum,
       {f32({4, 4})},
       ReduceAttributes{{1, 0}, false},
       std::nullopt,
       "strictly increasing"},
      {"repeated axis",
       OpKind::kReduceSum,
       {f32({4, 4})},
       ReduceAttributes{{1, 1}, false},
       std::nullopt,
       "strictly increasing"},
      {"axis out of range",
       OpKind::kReduceSum,
       {f32({4})},
       ReduceAttributes{{1}, false},
       std::nullopt,
       "strictly increasing axes of f32[4]"},
      {"integers",
       OpKind::kReduceSum,
       {u32({4})},
       ReduceAttributes{{0}, false},
       std::nullopt,
       "sums f32 or f16, not u32"},
  };
  for (const Row& row : rows) check(row);
}

TEST(ShapeInference, Bindings) {
  const std::vector<Row> rows = {
      {"host input", OpKind::kHostInput, {}, BindingAttributes{"x", f8(-32, {3})}, f8(-32, {3})},
      {"scale out of range",
       OpKind::kParameter,
       {},
       BindingAttributes{"w", f8(32, {3})},
       std::nullopt,
       "f8f143 scale 32 is outside [-32, 31]"},
      {"scale on f32",
       OpKind::kParameter,
       {},
       BindingAttributes{"w", {{DType::kF32, 1}, {3}}},
       std::nullopt,
       "f32 has no scale"},
      {"empty name",
       OpKind::kHostInput,
       {},
       BindingAttributes{"", f32({1})},
       std::nullopt,
       "must not be empty"},
      {"space in name",
       OpKind::kHostInput,
       {},
       BindingAttributes{"a b", f32({1})},
       std::nullopt,
       "the character 0x20"},
      {"rank 9",
       OpKind::kHostInput,
       {},
       BindingAttributes{"x", f32({1, 1, 1, 1, 1, 1, 1, 1, 1})},
       std::nullopt,
       "more than 8"},
      {"element overflow",
       OpKind::kHostInput,
       {},
       BindingAttributes{"x", f32({0xFFFFFFFF, 0xFFFFFFFF, 2})},
       std::nullopt,
       "more than 2^64 elements"},
      {"byte overflow",
       OpKind::kHostInput,
       {},
       BindingAttributes{"x", f32({0xFFFFFFFF, 0xFFFFFFFF})},
       std::nullopt,
       "more than 2^64 bytes"},
      {"wrong attributes",
       OpKind::kHostInput,
       {},
       NoAttributes{},
       std::nullopt,
       "not those of host_input"},
  };
  for (const Row& row : rows) check(row);
  EXPECT_TRUE(
      infer_result_types(OpKind::kHostOutput, {{f32({2})}}, BindingAttributes{"y", {}}).empty());
}

TEST(ShapeInference, BroadcastShapesIsSymmetric) {
  const std::vector<std::pair<Shape, Shape>> pairs = {
      {{4, 8}, {8}}, {{1}, {5, 1, 3}}, {{}, {}}, {{2, 1}, {1, 2}}, {{3}, {4}}};
  for (const auto& [a, b] : pairs) EXPECT_EQ(broadcast_shapes(a, b), broadcast_shapes(b, a));
}

}  // namespace
}  // namespace tessera::compiler
