// Typing rules of issue 18's operations (compiler/ir/shape_inference.hpp), as
// tables: inputs and attributes → result type or the reason it is refused.
// Shapes use the extents the kernels' edges make interesting: 1, 12 (the
// GEMM's smallest row shard), 13, 71, 72 (SigLIP's head dimension), 80 (72
// padded), 129 (the largest f16 row shard), non-multiples of 16 and 64.
// matmul broadcasting follows numpy.matmul's documented rules.

#include <gtest/gtest.h>

#include "compiler/ir/graph_error.hpp"
#include "compiler/ir/shape_inference.hpp"
#include "tests/compiler/ir/typing_rows.hpp"

namespace tessera::compiler {
namespace {

using namespace typing_rows;

constexpr OpKind kMatmul = OpKind::kMatmul;
const NoAttributes kNone{};

TEST(TransformerTyping, MatmulShapes) {
  const std::vector<Row> rows = {
      {"square", kMatmul, {f32({64, 64}), f32({64, 64})}, kNone, f32({64, 64})},
      {"M K N of 1", kMatmul, {f32({1, 1}), f32({1, 1})}, kNone, f32({1, 1})},
      {"12 x 13 x 71", kMatmul, {f16({12, 13}), f16({13, 71})}, kNone, f16({12, 71})},
      {"72 x 80 x 129", kMatmul, {f16({72, 80}), f16({80, 129})}, kNone, f16({72, 129})},
      {"SigLIP fc1", kMatmul, {f16({729, 1152}), f16({1152, 4304})}, kNone, f16({729, 4304})},
      {"b is [K, N] under a batch",
       kMatmul,
       {f32({3, 13, 71}), f32({71, 129})},
       kNone,
       f32({3, 13, 129})},
      {"a is [M, K] against a batch",
       kMatmul,
       {f32({13, 71}), f32({2, 71, 5})},
       kNone,
       f32({2, 13, 5})},
      {"batch broadcasts (numpy.matmul)",
       kMatmul,
       {f32({2, 1, 4, 3}), f32({5, 3, 6})},
       kNone,
       f32({2, 5, 4, 6})},
      {"batch of 1 broadcasts", kMatmul, {f16({1, 4, 3}), f16({7, 3, 2})}, kNone, f16({7, 4, 2})},
      {"inner extents differ",
       kMatmul,
       {f32({12, 13}), f32({12, 13})},
       kNone,
       std::nullopt,
       "the inner extents differ: a [12, 13] is [..., M = 12, K = 13] and b [12, 13] is [..., K = "
       "12, N = 13]"},
      {"batches do not broadcast",
       kMatmul,
       {f32({2, 4, 3}), f32({3, 3, 6})},
       kNone,
       std::nullopt,
       "the leading axes [2] of a and [3] of b do not broadcast"},
      {"1-D a refused",
       kMatmul,
       {f32({8}), f32({8, 4})},
       kNone,
       std::nullopt,
       "operand a is f32[8]: matmul takes operands of rank ≥ 2 (a 1-D operand is refused"},
      {"1-D b refused",
       kMatmul,
       {f32({4, 8}), f32({8})},
       kNone,
       std::nullopt,
       "operand b is f32[8]"},
      {"scalar refused", kMatmul, {f32({}), f32({1, 1})}, kNone, std::nullopt, "rank ≥ 2"},
      {"one input", kMatmul, {f32({2, 2})}, kNone, std::nullopt, "takes 2 inputs, not 1"},
  };
  for (const Row& row : rows) check(row);
}

TEST(TransformerTyping, MatmulElementTypes) {
  const std::vector<Row> rows = {
      {"f32", kMatmul, {f32({2, 3}), f32({3, 4})}, kNone, f32({2, 4})},
      {"f16", kMatmul, {f16({2, 3}), f16({3, 4})}, kNone, f16({2, 4})},
      {"f16 with expanded F143 weights",
       kMatmul,
       {f16({729, 1152}), blocks({1152, 4304})},
       kNone,
       f16({729, 4304})},
      {"native FP8", kMatmul, {f8(-4, {13, 71}), blocks({71, 129})}, kNone, f16({13, 129})},
      {"block-scaled weights under a batch",
       kMatmul,
       {f16({2, 12, 72}), blocks({2, 72, 80})},
       kNone,
       f16({2, 12, 80})},
      {"mixed float",
       kMatmul,
       {f16({2, 3}), f32({3, 4})},
       kNone,
       std::nullopt,
       "multiplies f32·f32, f16·f16, f16·f8f143(64x64 blocks) or f8f143(2^s)·f8f143(64x64 "
       "blocks), not f16·f32"},
      {"f32 with block-scaled weights",
       kMatmul,
       {f32({2, 3}), blocks({3, 4})},
       kNone,
       std::nullopt,
       "not f32·f8f143(64x64 blocks)"},
      {"two tensor-wide f8",
       kMatmul,
       {f8(0, {2, 3}), f8(0, {3, 4})},
       kNone,
       std::nullopt,
       "not f8f143(2^0)·f8f143(2^0)"},
      {"block-scaled on the left",
       kMatmul,
       {blocks({2, 3}), f16({3, 4})},
       kNone,
       std::nullopt,
       "not f8f143(64x64 blocks)·f16"},
      {"integers", kMatmul, {u32({2, 3}), u32({3, 4})}, kNone, std::nullopt, "not u32·u32"},
  };
  for (const Row& row : rows) check(row);
}

TEST(TransformerTyping, Mul) {
  const std::vector<Row> rows = {
      {"broadcast row", OpKind::kMul, {f32({4, 8}), f32({8})}, kNone, f32({4, 8})},
      {"f16 column", OpKind::kMul, {f16({13, 1}), f16({1, 71})}, kNone, f16({13, 71})},
      {"mismatch",
       OpKind::kMul,
       {f32({4, 8}), f32({3})},
       kNone,
       std::nullopt,
       "shapes [4, 8] and [3] do not broadcast"},
      {"mixed",
       OpKind::kMul,
       {f32({2}), f16({2})},
       kNone,
       std::nullopt,
       "multiplies two f32 or two f16 tensors, not f32 and f16"},
      {"f8", OpKind::kMul, {f8(0, {2}), f8(0, {2})}, kNone, std::nullopt, "not f8f143(2^0)"},
  };
  for (const Row& row : rows) check(row);
}

TEST(TransformerTyping, GeluSoftmaxLayerNorm) {
  const GeluAttributes tanh{GeluApproximation::kTanh};
  const std::vector<Row> rows = {
      {"gelu f16", OpKind::kGelu, {f16({729, 4304})}, tanh, f16({729, 4304})},
      {"gelu f32 scalar", OpKind::kGelu, {f32({})}, tanh, f32({})},
      {"gelu u32", OpKind::kGelu, {u32({2})}, tanh, std::nullopt, "applies to f32 or f16, not u32"},
      {"gelu attributes",
       OpKind::kGelu,
       {f32({2})},
       kNone,
       std::nullopt,
       "the attributes are not those of gelu"},
      {"softmax last axis",
       OpKind::kSoftmax,
       {f32({2, 13, 71})},
       SoftmaxAttributes{2},
       f32({2, 13, 71})},
      {"softmax 1-D", OpKind::kSoftmax, {f16({129})}, SoftmaxAttributes{0}, f16({129})},
      {"softmax not last",
       OpKind::kSoftmax,
       {f32({4, 8})},
       SoftmaxAttributes{0},
       std::nullopt,
       "softmax runs along the last axis only (axis 1 of f32[4, 8]), not axis 0"},
      {"softmax no such axis",
       OpKind::kSoftmax,
       {f32({4, 8})},
       SoftmaxAttributes{2},
       std::nullopt,
       "axis 2 is not an axis of f32[4, 8]"},
      {"softmax scalar",
       OpKind::kSoftmax,
       {f32({})},
       SoftmaxAttributes{0},
       std::nullopt,
       "must have rank ≥ 1"},
      {"softmax f8",
       OpKind::kSoftmax,
       {f8(1, {4})},
       SoftmaxAttributes{0},
       std::nullopt,
       "normalises f32 or f16, not f8f143(2^1)"},
      {"layer_norm",
       OpKind::kLayerNorm,
       {f16({729, 1152}), f16({1152}), f16({1152})},
       LayerNormAttributes{1e-6},
       f16({729, 1152})},
      {"layer_norm 1-D of 13",
       OpKind::kLayerNorm,
       {f32({13}), f32({13}), f32({13})},
       LayerNormAttributes{0.5},
       f32({13})},
      {"layer_norm gamma length",
       OpKind::kLayerNorm,
       {f32({4, 72}), f32({80}), f32({72})},
       LayerNormAttributes{1e-5},
       std::nullopt,
       "gamma is f32[80], but x f32[4, 72] needs f32[72]"},
      {"layer_norm beta dtype",
       OpKind::kLayerNorm,
       {f16({4, 72}), f16({72}), f32({72})},
       LayerNormAttributes{1e-5},
       std::nullopt,
       "beta is f32[72], but x f16[4, 72] needs f16[72]"},
      {"layer_norm epsilon zero",
       OpKind::kLayerNorm,
       {f32({2}), f32({2}), f32({2})},
       LayerNormAttributes{0.0},
       std::nullopt,
       "epsilon must be a finite number > 0, not 0"},
      {"layer_norm epsilon negative",
       OpKind::kLayerNorm,
       {f32({2}), f32({2}), f32({2})},
       LayerNormAttributes{-1e-6},
       std::nullopt,
       "epsilon must be a finite number > 0"},
      {"layer_norm epsilon infinite",
       OpKind::kLayerNorm,
       {f32({2}), f32({2}), f32({2})},
       LayerNormAttributes{std::numeric_limits<double>::infinity()},
       std::nullopt,
       "epsilon must be a finite number > 0, not inf"},
      {"layer_norm scalar x",
       OpKind::kLayerNorm,
       {f32({}), f32({1}), f32({1})},
       LayerNormAttributes{1e-6},
       std::nullopt,
       "x must have rank ≥ 1"},
      {"layer_norm two inputs",
       OpKind::kLayerNorm,
       {f32({2}), f32({2})},
       LayerNormAttributes{1e-6},
       std::nullopt,
       "takes 3 inputs, not 2"},
  };
  for (const Row& row : rows) check(row);
}

TEST(TransformerTyping, Attention) {
  const AttentionAttributes scale{1.0 / 8.48528137423857};  // 1/√72
  const std::vector<Row> rows = {
      {"SigLIP heads of 72",
       OpKind::kAttention,
       {f16({1, 16, 729, 72}), f16({1, 16, 729, 72}), f16({1, 16, 729, 72})},
       scale,
       f16({1, 16, 729, 72})},
      {"batch 8, S ≠ T",
       OpKind::kAttention,
       {f32({8, 2, 13, 72}), f32({8, 2, 129, 72}), f32({8, 2, 129, 72})},
       scale,
       f32({8, 2, 13, 72})},
      {"one of everything",
       OpKind::kAttention,
       {f32({1, 1, 1, 1}), f32({1, 1, 1, 1}), f32({1, 1, 1, 1})},
       AttentionAttributes{1.0},
       f32({1, 1, 1, 1})},
      {"mixed dtypes",
       OpKind::kAttention,
       {f16({1, 1, 4, 8}), f32({1, 1, 4, 8}), f16({1, 1, 4, 8})},
       scale,
       std::nullopt,
       "q, k and v are all f32 or all f16, not f16, f32 and f16"},
      {"rank 3 q",
       OpKind::kAttention,
       {f32({1, 4, 8}), f32({1, 1, 4, 8}), f32({1, 1, 4, 8})},
       scale,
       std::nullopt,
       "q is f32[1, 4, 8]: q is [B, H, S, D], k and v are [B, H, T, D]"},
      {"head dim differs",
       OpKind::kAttention,
       {f32({1, 2, 4, 72}), f32({1, 2, 4, 80}), f32({1, 2, 4, 80})},
       scale,
       std::nullopt,
       "so k [1, 2, 4, 80] and v [1, 2, 4, 80] must both be [B = 1, H = 2, T, D = 72]"},
      {"k and v lengths differ",
       OpKind::kAttention,
       {f32({1, 2, 4, 8}), f32({1, 2, 5, 8}), f32({1, 2, 6, 8})},
       scale,
       std::nullopt,
       "must both be"},
      {"batch differs",
       OpKind::kAttention,
       {f32({2, 2, 4, 8}), f32({1, 2, 4, 8}), f32({1, 2, 4, 8})},
       scale,
       std::nullopt,
       "B = 2"},
      {"negative scale",
       OpKind::kAttention,
       {f32({1, 1, 2, 2}), f32({1, 1, 2, 2}), f32({1, 1, 2, 2})},
       AttentionAttributes{-0.5},
       std::nullopt,
       "scale must be a finite number > 0, not -0.5"},
      {"u32",
       OpKind::kAttention,
       {u32({1, 1, 2, 2}), u32({1, 1, 2, 2}), u32({1, 1, 2, 2})},
       scale,
       std::nullopt,
       "attends over f32 or f16, not u32"},
  };
  for (const Row& row : rows) check(row);
}

TEST(TransformerTyping, Convert) {
  const auto to = [](ElementType element) { return ConvertAttributes{element}; };
  const std::vector<Row> rows = {
      {"f32 to f16", OpKind::kConvert, {f32({2, 3})}, to({DType::kF16, 0}), f16({2, 3})},
      {"f16 to f32", OpKind::kConvert, {f16({2})}, to({DType::kF32, 0}), f32({2})},
      {"f16 to f8", OpKind::kConvert, {f16({13})}, to({DType::kF8F143, -7}), f8(-7, {13})},
      {"f32 to f8", OpKind::kConvert, {f32({13})}, to({DType::kF8F143, 31}), f8(31, {13})},
      {"f8 to f16", OpKind::kConvert, {f8(3, {4})}, to({DType::kF16, 0}), f16({4})},
      {"f8 to f32", OpKind::kConvert, {f8(-32, {4})}, to({DType::kF32, 0}), f32({4})},
      {"block-scaled to f16",
       OpKind::kConvert,
       {blocks({72, 129})},
       to({DType::kF16, 0}),
       f16({72, 129})},
      {"identity",
       OpKind::kConvert,
       {f32({2})},
       to({DType::kF32, 0}),
       std::nullopt,
       "converts f32 ↔ f16, f16/f32 → f8f143(2^s) and f8f143 → f16/f32, not f32 → f32"},
      {"rescale f8",
       OpKind::kConvert,
       {f8(0, {2})},
       to({DType::kF8F143, 1}),
       std::nullopt,
       "not f8f143(2^0) → f8f143(2^1)"},
      {"integers",
       OpKind::kConvert,
       {u32({2})},
       to({DType::kF16, 0}),
       std::nullopt,
       "not u32 → f16"},
      {"to integers",
       OpKind::kConvert,
       {f16({2})},
       to({DType::kU8, 0}),
       std::nullopt,
       "not f16 → u8"},
      {"to block-scaled",
       OpKind::kConvert,
       {f16({2, 2})},
       to(kBlockScaledF8),
       std::nullopt,
       "(block-scaled values come only from block_scale)"},
      {"target scale out of range",
       OpKind::kConvert,
       {f16({2})},
       to({DType::kF8F143, 40}),
       std::nullopt,
       "target: f8f143 scale 40 is outside [-32, 31]"},
  };
  for (const Row& row : rows) check(row);
}

// Row-major codes: block_scale's attributes without panels.
const BlockScaleAttributes kRowMajor{};

TEST(TransformerTyping, BlockScale) {
  const std::vector<Row> rows = {
      {"one block", OpKind::kBlockScale, {u8({64, 64}), i32({1, 1})}, kRowMajor, blocks({64, 64})},
      {"partial blocks",
       OpKind::kBlockScale,
       {u8({129, 13}), i32({3, 1})},
       kRowMajor,
       blocks({129, 13})},
      {"SigLIP fc1 weight",
       OpKind::kBlockScale,
       {u8({1152, 4304}), i32({18, 68})},
       kRowMajor,
       blocks({1152, 4304})},
      {"27 layers",
       OpKind::kBlockScale,
       {u8({27, 72, 80}), i32({27, 2, 2})},
       kRowMajor,
       blocks({27, 72, 80})},
      {"wrong grid",
       OpKind::kBlockScale,
       {u8({129, 13}), i32({2, 1})},
       kRowMajor,
       std::nullopt,
       "codes u8[129, 13] have 3 × 1 blocks of 64 × 64, so the scales must be i32[3, 1], not "
       "i32[2, 1]"},
      {"scales not i32",
       OpKind::kBlockScale,
       {u8({64, 64}), u8({1, 1})},
       kRowMajor,
       std::nullopt,
       "must be i32[1, 1], not u8[1, 1]"},
      {"leading axes differ",
       OpKind::kBlockScale,
       {u8({2, 64, 64}), i32({3, 1, 1})},
       kRowMajor,
       std::nullopt,
       "must be i32[2, 1, 1]"},
      {"codes not u8",
       OpKind::kBlockScale,
       {f8(0, {64, 64}), i32({1, 1})},
       kRowMajor,
       std::nullopt,
       "codes are u8 [..., K, N] (F143 bit patterns), not f8f143(2^0)[64, 64]"},
      {"1-D codes",
       OpKind::kBlockScale,
       {u8({64}), i32({1})},
       kRowMajor,
       std::nullopt,
       "codes are u8 [..., K, N]"},
      // Codes the host packed in weight panels (BlockScaleAttributes).
      {"16-deep panels",
       OpKind::kBlockScale,
       {u8({9, 5, 16, 16}), i32({2, 3})},
       BlockScaleAttributes{16, {72, 129}},
       blocks({72, 129})},
      {"32-deep panels of 27 layers",
       OpKind::kBlockScale,
       {u8({27, 72, 36, 16, 32}), i32({27, 18, 18})},
       BlockScaleAttributes{32, {1152, 1152}},
       blocks({27, 1152, 1152})},
      {"panels that hold another matrix",
       OpKind::kBlockScale,
       {u8({9, 5, 16, 16}), i32({2, 3})},
       BlockScaleAttributes{16, {96, 129}},
       std::nullopt,
       "a [96, 129] matrix in panels of 16 × 16 is codes [9, 6, 16, 16], not [9, 5, 16, 16]"},
      {"8-deep panels",
       OpKind::kBlockScale,
       {u8({9, 9, 16, 8}), i32({2, 3})},
       BlockScaleAttributes{8, {72, 129}},
       std::nullopt,
       "panels of 8 inner values: the weight panels hold 16 or 32"},
      {"a matrix without panels",
       OpKind::kBlockScale,
       {u8({72, 129}), i32({2, 3})},
       BlockScaleAttributes{0, {72, 129}},
       std::nullopt,
       "a matrix shape is given only with panels"},
  };
  for (const Row& row : rows) check(row);
}

TEST(TransformerTyping, BlockScaledValuesAreNotMoved) {
  const std::vector<Row> rows = {
      {"copy",
       OpKind::kCopy,
       {blocks({64, 64})},
       kNone,
       std::nullopt,
       "input 0 is f8f143(64x64 blocks)[64, 64]: a block-scaled value feeds only matmul (as b), "
       "convert and repeat"},
      {"transpose",
       OpKind::kTranspose,
       {blocks({64, 64})},
       TransposeAttributes{{1, 0}},
       std::nullopt,
       "a block-scaled value feeds only"},
      {"concat",
       OpKind::kConcat,
       {blocks({64, 64}), blocks({64, 64})},
       ConcatAttributes{0},
       std::nullopt,
       "a block-scaled value feeds only"},
      {"reduce_sum",
       OpKind::kReduceSum,
       {blocks({64, 64})},
       ReduceAttributes{{0}, false},
       std::nullopt,
       "sums f32 or f16, not f8f143(64x64 blocks)"},
      {"declared parameter",
       OpKind::kParameter,
       {},
       BindingAttributes{"w", blocks({64, 64})},
       std::nullopt,
       "\"w\" is declared f8f143(64x64 blocks)[64, 64]: block-scaled values come only from "
       "block_scale"},
  };
  for (const Row& row : rows) check(row);
  try {
    (void)infer_result_types(OpKind::kHostOutput, {{blocks({64, 64})}}, BindingAttributes{"y", {}});
    ADD_FAILURE() << "a block-scaled host output was accepted";
  } catch (const GraphError& error) {
    EXPECT_NE(error.message().find("convert it first"), std::string::npos) << error.message();
  }
}

TEST(TransformerTyping, BlockScaledElementTypeIsChecked) {
  EXPECT_EQ(format_element_type(kBlockScaledF8), "f8f143(64x64 blocks)");
  EXPECT_EQ(element_type_problem(kBlockScaledF8), std::nullopt);
  EXPECT_NE(element_type_problem({DType::kF8F143, 2, F8Scaling::kBlock64}), std::nullopt);
  EXPECT_NE(element_type_problem({DType::kF16, 0, F8Scaling::kBlock64}), std::nullopt);
  EXPECT_EQ(byte_size(blocks({64, 3})), 192u);  // the codes; the scales are block_scale's input
}

TEST(TransformerTyping, RepeatSequences) {
  const auto repeat = [](std::uint32_t count, std::uint32_t carried, std::uint32_t sequence) {
    return RepeatAttributes{count, carried, BlockId{1}, sequence};
  };
  const std::vector<TensorType> inputs = {f32({4, 8}), f16({3, 8, 8}), blocks({3, 72, 80}),
                                          f32({8})};
  const auto arguments = repeat_body_argument_types(inputs, repeat(3, 1, 2));
  ASSERT_EQ(arguments.size(), 4u);
  EXPECT_EQ(arguments[0], f32({4, 8}));
  EXPECT_EQ(arguments[1], f16({8, 8}));
  EXPECT_EQ(arguments[2], blocks({72, 80}));
  EXPECT_EQ(arguments[3], f32({8}));
  EXPECT_EQ(infer_result_types(OpKind::kRepeat, inputs, repeat(3, 1, 2)),
            std::vector<TensorType>{f32({4, 8})});
  // A rank-1 sequence gives scalar entries.
  EXPECT_EQ(repeat_body_argument_types({{f32({2}), f32({5})}}, repeat(5, 1, 1))[1], f32({}));

  const std::vector<Row> rows = {
      {"wrong length", OpKind::kRepeat, inputs, repeat(4, 1, 2), std::nullopt,
       "sequence value 0 is f16[3, 8, 8], but a sequence has one entry per iteration along axis 0 "
       "(4 of them)"},
      {"scalar sequence",
       OpKind::kRepeat,
       {f32({2}), f32({})},
       repeat(1, 1, 1),
       std::nullopt,
       "sequence value 0 is f32[]"},
      {"block-scaled entries need [K, N]",
       OpKind::kRepeat,
       {f32({2}), blocks({3, 64})},
       repeat(3, 1, 1),
       std::nullopt,
       "would lose the block-scaled [K, N] axes"},
      {"more sequences than inputs",
       OpKind::kRepeat,
       {f32({2}), f32({3, 2})},
       repeat(3, 1, 2),
       std::nullopt,
       "carries 1 values and takes 2 sequences but has only 2 inputs"},
  };
  for (const Row& row : rows) check(row);
}

}  // namespace
}  // namespace tessera::compiler
