#pragma once
// Graph: the compiler's input IR and its C++ builder API (the primary way to
// make one; the JSON format in graph_json.hpp replays these same calls).
//
//   Graph g;
//   ValueId x = g.host_input("x", DType::kF32, {4, 8});
//   ValueId w = g.parameter("w", DType::kF32, {8});
//   ValueId y = g.add(x, w);                    // NumPy broadcasting: f32[4, 8]
//   auto out = g.repeat(12, {y}, {w},         // carried y, invariant w
//       [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> invariant) {
//         return std::vector<ValueId>{body.add(carried[0], invariant[0])};
//       });
//   g.host_output("y", out[0]);
//
// Every builder call types its result with shape_inference.hpp and throws a
// GraphError naming the operation it would have made and its inputs
// ("op 7 (add %3, %5): shapes [4, 8] and [3] do not broadcast"); a failed
// call leaves the graph exactly as it was. See shape_inference.hpp for the
// typing rules (reduce_sum of f16 accumulates in f32).
//
// Ids are assigned in construction order, so building the same graph twice
// gives equal graphs, and read_graph_json(write_graph_json(g)) == g.

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/graph_error.hpp"
#include "compiler/ir/operation.hpp"

namespace tessera::compiler {

class Graph {
 public:
  // The body of a repeat: receives the body's arguments for the carried and
  // the invariant values and returns the next carried values (one per carried
  // value, of the same types), all defined in the body.
  using RepeatBody = std::function<std::vector<ValueId>(
      Graph& body, std::span<const ValueId> carried, std::span<const ValueId> invariant)>;
  // The same with sequence values: `sequence` holds the body's arguments for
  // this iteration's entries (axis 0 dropped), between the carried and the
  // invariant ones.
  using SequenceRepeatBody = std::function<std::vector<ValueId>(
      Graph& body, std::span<const ValueId> carried, std::span<const ValueId> sequence,
      std::span<const ValueId> invariant)>;

  Graph();

  // ---- Building ---------------------------------------------------------------
  // Binding operations (host_input, parameter, host_output) live only at the
  // top level, and their names are unique across all three.
  ValueId host_input(std::string name, TensorType type);
  ValueId host_input(std::string name, DType dtype, Shape shape);
  ValueId parameter(std::string name, TensorType type);
  ValueId parameter(std::string name, DType dtype, Shape shape);
  OpId host_output(std::string name, ValueId value);

  ValueId copy(ValueId input);
  ValueId slice(ValueId input, std::vector<std::uint32_t> begin, std::vector<std::uint32_t> end);
  ValueId concat(const std::vector<ValueId>& inputs, std::uint32_t axis);
  ValueId reshape(ValueId input, Shape shape);
  ValueId transpose(ValueId input, std::vector<std::uint32_t> permutation);
  ValueId broadcast_to(ValueId input, Shape shape);
  ValueId add(ValueId a, ValueId b);
  ValueId reduce_sum(ValueId input, std::vector<std::uint32_t> axes, bool keep_dims = false);
  // Runs `body` once, now, to build the loop body (it is never unrolled) and
  // returns the repeat's results: the carried values after `count` iterations.
  std::vector<ValueId> repeat(std::uint32_t count, const std::vector<ValueId>& carried,
                              const std::vector<ValueId>& invariant, const RepeatBody& body);
  // With sequence values, each of extent `count` on axis 0: iteration i's
  // body receives entry i of each (27 layers' weights entering one body).
  std::vector<ValueId> repeat(std::uint32_t count, const std::vector<ValueId>& carried,
                              const std::vector<ValueId>& sequence,
                              const std::vector<ValueId>& invariant,
                              const SequenceRepeatBody& body);

  // Transformer operations (issue 18; typing rules in shape_inference.hpp).
  ValueId matmul(ValueId a, ValueId b);
  ValueId mul(ValueId a, ValueId b);
  ValueId gelu(ValueId input, GeluApproximation approximation = GeluApproximation::kTanh);
  ValueId layer_norm(ValueId input, ValueId gamma, ValueId beta, double epsilon);
  ValueId softmax(ValueId input, std::uint32_t axis);
  ValueId attention(ValueId q, ValueId k, ValueId v, double scale);
  ValueId convert(ValueId input, ElementType to);
  ValueId convert(ValueId input, DType to) { return convert(input, ElementType{to, 0}); }
  // u8 codes [..., K, N] and i32 scales [..., ⌈K/64⌉, ⌈N/64⌉] → block-scaled f8f143.
  ValueId block_scale(ValueId codes, ValueId scales);
  // The same from codes packed in weight panels (BlockScaleAttributes):
  // codes [..., ⌈N/16⌉, ⌈K/m⌉, 16, m] with m = `panels` (16 or 32), matrix [K, N].
  ValueId block_scale_panels(ValueId codes, ValueId scales, std::uint32_t panels, Shape matrix);

  // ---- Reading ------------------------------------------------------------------
  // GraphError for an id that is not in the graph.
  const Value& value(ValueId id) const;
  const Operation& operation(OpId id) const;
  const Block& block(BlockId id) const;
  const TensorType& type(ValueId id) const { return value(id).type; }
  const Block& top() const { return block(kTopBlock); }

  std::size_t value_count() const noexcept { return values_.size(); }
  std::size_t operation_count() const noexcept { return operations_.size(); }
  std::size_t block_count() const noexcept { return blocks_.size(); }

  // The top-level operations of a kind, in order (e.g. the host inputs).
  std::vector<OpId> top_level(OpKind kind) const;

  // "op 7 (add %3, %5)", "op 0 (host_input \"x\")": how errors name an operation.
  std::string describe(OpId id) const;

  // ---- Unchecked edits ------------------------------------------------------------
  // For passes that rewrite a graph and for tests of the verifier: these
  // change the tables directly, so call verify() afterwards.
  Value& value_for_edit(ValueId id);
  Operation& operation_for_edit(OpId id);
  Block& block_for_edit(BlockId id);

  // Same values, operations and blocks (the builder's state is not compared).
  friend bool operator==(const Graph& a, const Graph& b);

 private:
  BlockId current_block() const { return open_blocks_.back(); }
  // Checks that the inputs exist and are visible in the block being built,
  // types the results and appends the operation. Throws GraphError naming it.
  std::vector<ValueId> append(OpKind kind, std::vector<ValueId> inputs, Attributes attributes);
  void check_binding_name_unused(OpId would_be, const std::string& name) const;
  void check_visible(OpId would_be, std::span<const ValueId> inputs, OpKind kind) const;
  std::string describe_new(OpKind kind, std::span<const ValueId> inputs,
                           const Attributes& attributes) const;

  std::vector<Value> values_;
  std::vector<Operation> operations_;
  std::vector<Block> blocks_;
  std::vector<BlockId> open_blocks_{kTopBlock};  // the builder's insertion point is back()
};

// "%3".
std::string format_value(ValueId id);

// The one operation of `value`'s block that reads it, once, when nothing
// else reads it (no other reader, no second read, no yield); nullopt
// otherwise. Top-level values reach host outputs as readers too. Passes ask
// it before folding a value into its reader (a GEMM's epilogue, attention's
// head views).
std::optional<OpId> sole_reader(const Graph& graph, ValueId value);

}  // namespace tessera::compiler
