#pragma once
// The pieces a Graph is made of: values, operations and blocks, with ids.
//
// The graph is structured SSA (prior art §1.1). Every value is defined once,
// either as an operation's result or as a block argument, and value ids are
// unique over the whole graph, inside regions too. A block is an ordered list
// of operations; block 0 is the graph's top level, and every other block is
// the body of one `repeat` operation. Blocks are isolated: an operation uses
// only values defined earlier in its own block (or the block's arguments), so
// everything a loop body reads enters through its arguments, and lowering
// never has to search enclosing scopes. Repeat bodies stay structured all the
// way down (ARCHITECTURE.md decision 8): nothing here is ever unrolled.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "compiler/ir/tensor_type.hpp"

namespace tessera::compiler {

// Printed as %N.
struct ValueId {
  std::uint32_t index = 0;
  friend constexpr auto operator<=>(const ValueId&, const ValueId&) = default;
};

// Printed as "op N". Ids follow construction order (a repeat's id comes
// before the operations of its body).
struct OpId {
  std::uint32_t index = 0;
  friend constexpr auto operator<=>(const OpId&, const OpId&) = default;
};

struct BlockId {
  std::uint32_t index = 0;
  friend constexpr auto operator<=>(const BlockId&, const BlockId&) = default;
};

inline constexpr BlockId kTopBlock{0};

// The operations of issue 8, and issue 18's transformer operations (matmul …
// block_scale). Their typing rules are in shape_inference.hpp.
enum class OpKind : std::uint8_t {
  kHostInput,   // a tensor the host sends for every run
  kParameter,   // a weight, bound once
  kHostOutput,  // a tensor the host receives; no result
  kCopy,
  kSlice,
  kConcat,
  kReshape,
  kTranspose,
  kBroadcastTo,
  kAdd,
  kReduceSum,
  kRepeat,
  kMatmul,
  kMul,
  kGelu,
  kLayerNorm,
  kSoftmax,
  kAttention,
  kConvert,
  kBlockScale,  // u8 codes + i32 scales → f8f143 with one scale per 64 × 64 block
};

// "host_input", "broadcast_to", … (the JSON graph format's names).
std::string_view op_kind_name(OpKind kind) noexcept;
std::optional<OpKind> op_kind_from_name(std::string_view name) noexcept;
inline constexpr OpKind kLastOpKind = OpKind::kBlockScale;

// ---- Attributes, one struct per family of operations ---------------------------

// copy, add, mul, matmul.
struct NoAttributes {
  friend bool operator==(const NoAttributes&, const NoAttributes&) = default;
};

// host_input, parameter (name and declared type) and host_output (name; its
// type is its input's). The name becomes the package binding's name.
struct BindingAttributes {
  std::string name;
  TensorType type;  // host_input and parameter only; empty for host_output
  friend bool operator==(const BindingAttributes&, const BindingAttributes&) = default;
};

// slice: per axis, elements [begin, end) (step 1).
struct SliceAttributes {
  std::vector<std::uint32_t> begin;
  std::vector<std::uint32_t> end;
  friend bool operator==(const SliceAttributes&, const SliceAttributes&) = default;
};

struct ConcatAttributes {
  std::uint32_t axis = 0;
  friend bool operator==(const ConcatAttributes&, const ConcatAttributes&) = default;
};

// reshape and broadcast_to: the result shape.
struct ShapeAttributes {
  Shape shape;
  friend bool operator==(const ShapeAttributes&, const ShapeAttributes&) = default;
};

// transpose: result axis i is input axis permutation[i] (NumPy's axes).
struct TransposeAttributes {
  std::vector<std::uint32_t> permutation;
  friend bool operator==(const TransposeAttributes&, const TransposeAttributes&) = default;
};

// reduce_sum: the summed axes, strictly increasing; they are dropped from the
// shape, or kept as extent 1 with keep_dims.
struct ReduceAttributes {
  std::vector<std::uint32_t> axes;
  bool keep_dims = false;
  friend bool operator==(const ReduceAttributes&, const ReduceAttributes&) = default;
};

// repeat: inputs are the carried values, then the sequence values, then the
// invariant values; the body's arguments match them one for one (a sequence
// value's argument is its entry for the iteration: axis 0 dropped); the body
// yields the next carried values and the results are the carried values after
// `count` iterations.
struct RepeatAttributes {
  std::uint32_t count = 1;
  std::uint32_t carried = 0;  // how many of the inputs are carried
  BlockId body;
  std::uint32_t sequence = 0;  // how many inputs follow the carried ones as sequences
  friend bool operator==(const RepeatAttributes&, const RepeatAttributes&) = default;
};

// gelu: which approximation of 0.5·x·(1 + erf(x/√2)). Only the tanh form,
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), which every device kernel
// computes (kernels-siglip-f143.md §2; HF SigLIP's gelu_pytorch_tanh).
enum class GeluApproximation : std::uint8_t { kTanh };
std::string_view gelu_approximation_name(GeluApproximation approximation) noexcept;
std::optional<GeluApproximation> gelu_approximation_from_name(std::string_view name) noexcept;

struct GeluAttributes {
  GeluApproximation approximation = GeluApproximation::kTanh;
  friend bool operator==(const GeluAttributes&, const GeluAttributes&) = default;
};

// layer_norm: (x − mean)/√(var + epsilon)·gamma + beta over the last axis.
struct LayerNormAttributes {
  double epsilon = 1e-6;
  friend bool operator==(const LayerNormAttributes&, const LayerNormAttributes&) = default;
};

// softmax along `axis`.
struct SoftmaxAttributes {
  std::uint32_t axis = 0;
  friend bool operator==(const SoftmaxAttributes&, const SoftmaxAttributes&) = default;
};

// attention: softmax(scale·q·kᵀ)·v.
struct AttentionAttributes {
  double scale = 1.0;
  friend bool operator==(const AttentionAttributes&, const AttentionAttributes&) = default;
};

// convert: the result's element type (dtype and, for f8f143, the scale).
struct ConvertAttributes {
  ElementType to;
  friend bool operator==(const ConvertAttributes&, const ConvertAttributes&) = default;
};

// block_scale: how the codes hold the [K, N] matrix. panels = 0: row-major,
// codes [..., K, N]. panels = m (16 or 32): the AMP's weight panels B_m×16
// of the whole matrix, as the host packs them for the device
// (kernels/amp_layout.hpp weight_offset with inner = K padded to m): codes
// [..., ⌈N/16⌉, ⌈K/m⌉, 16, m], and `matrix` = [K, N] gives the logical
// extents the padding hides; every padding code is 0.
struct BlockScaleAttributes {
  std::uint32_t panels = 0;
  Shape matrix;  // [K, N] when panels > 0, else empty
  friend bool operator==(const BlockScaleAttributes&, const BlockScaleAttributes&) = default;
};

using Attributes = std::variant<NoAttributes, BindingAttributes, SliceAttributes, ConcatAttributes,
                                ShapeAttributes, TransposeAttributes, ReduceAttributes,
                                RepeatAttributes, GeluAttributes, LayerNormAttributes,
                                SoftmaxAttributes, AttentionAttributes, ConvertAttributes,
                                BlockScaleAttributes>;

// ---- Values, operations, blocks ------------------------------------------------

struct Value {
  TensorType type;
  BlockId block;               // the block that defines it
  std::optional<OpId> op;      // the defining operation; nullopt for a block argument
  std::uint32_t position = 0;  // result index, or argument index
  friend bool operator==(const Value&, const Value&) = default;
};

struct Operation {
  OpKind kind = OpKind::kCopy;
  BlockId block;  // the block it sits in
  std::vector<ValueId> inputs;
  std::vector<ValueId> results;
  Attributes attributes;
  friend bool operator==(const Operation&, const Operation&) = default;
};

struct Block {
  std::optional<OpId> owner;  // the repeat whose body this is; nullopt for the top level
  std::vector<ValueId> arguments;
  std::vector<OpId> operations;
  std::vector<ValueId> yields;  // empty for the top level
  friend bool operator==(const Block&, const Block&) = default;
};

}  // namespace tessera::compiler
