#include "compiler/ir/graph.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "compiler/ir/shape_inference.hpp"
#include "support/checked.hpp"

namespace tessera::compiler {
namespace {

bool is_binding(OpKind kind) {
  return kind == OpKind::kHostInput || kind == OpKind::kParameter || kind == OpKind::kHostOutput;
}

// The text inside "op N (…)": kind, binding name, inputs.
std::string describe_parts(OpKind kind, std::span<const ValueId> inputs,
                           const Attributes& attributes) {
  std::string text(op_kind_name(kind));
  if (const auto* binding = std::get_if<BindingAttributes>(&attributes); binding != nullptr) {
    text += fmt::format(" \"{}\"", binding->name);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    text += (i == 0 ? " " : ", ") + format_value(inputs[i]);
  }
  return text;
}

std::string describe_block(const Graph& graph, BlockId id) {
  const Block& block = graph.block(id);
  if (!block.owner) return "the top level";
  return fmt::format("the body of op {}", block.owner->index);
}

}  // namespace

std::string format_value(ValueId id) { return fmt::format("%{}", id.index); }

Graph::Graph() { blocks_.push_back(Block{}); }

// ---- Reading ------------------------------------------------------------------------

const Value& Graph::value(ValueId id) const {
  if (id.index >= values_.size()) {
    throw GraphError(fmt::format("{} is not a value of this graph ({} values)", format_value(id),
                                 values_.size()));
  }
  return values_[id.index];
}

const Operation& Graph::operation(OpId id) const {
  if (id.index >= operations_.size()) {
    throw GraphError(fmt::format("op {} is not an operation of this graph ({} operations)",
                                 id.index, operations_.size()));
  }
  return operations_[id.index];
}

const Block& Graph::block(BlockId id) const {
  if (id.index >= blocks_.size()) {
    throw GraphError(
        fmt::format("block {} is not a block of this graph ({} blocks)", id.index, blocks_.size()));
  }
  return blocks_[id.index];
}

Value& Graph::value_for_edit(ValueId id) { return const_cast<Value&>(value(id)); }
Operation& Graph::operation_for_edit(OpId id) { return const_cast<Operation&>(operation(id)); }
Block& Graph::block_for_edit(BlockId id) { return const_cast<Block&>(block(id)); }

std::vector<OpId> Graph::top_level(OpKind kind) const {
  std::vector<OpId> found;
  for (const OpId id : top().operations) {
    if (operation(id).kind == kind) found.push_back(id);
  }
  return found;
}

std::string Graph::describe(OpId id) const {
  const Operation& op = operation(id);
  return fmt::format("op {} ({})", id.index, describe_parts(op.kind, op.inputs, op.attributes));
}

std::string Graph::describe_new(OpKind kind, std::span<const ValueId> inputs,
                                const Attributes& attributes) const {
  return fmt::format("op {} ({})", operations_.size(), describe_parts(kind, inputs, attributes));
}

bool operator==(const Graph& a, const Graph& b) {
  return a.values_ == b.values_ && a.operations_ == b.operations_ && a.blocks_ == b.blocks_;
}

// ---- Building -----------------------------------------------------------------------

void Graph::check_visible(OpId would_be, std::span<const ValueId> inputs, OpKind kind) const {
  (void)would_be;
  for (const ValueId input : inputs) {
    const Value& defined = value(input);
    if (defined.block != current_block()) {
      throw GraphError(fmt::format(
          "{} is defined in {}, but this {} is being built in {}; a repeat body sees only its "
          "arguments and its own results (pass outer values as invariants)",
          format_value(input), describe_block(*this, defined.block), op_kind_name(kind),
          describe_block(*this, current_block())));
    }
  }
}

void Graph::check_binding_name_unused(OpId would_be, const std::string& name) const {
  if (current_block() != kTopBlock) {
    throw GraphError(fmt::format("host bindings live only at the top level, not in {}",
                                 describe_block(*this, current_block())));
  }
  for (const OpId id : top().operations) {
    const auto* binding = std::get_if<BindingAttributes>(&operation(id).attributes);
    if (binding != nullptr && binding->name == name && id != would_be) {
      throw GraphError(fmt::format("the name \"{}\" is already used by {}", name, describe(id)));
    }
  }
}

std::vector<ValueId> Graph::append(OpKind kind, std::vector<ValueId> inputs,
                                   Attributes attributes) {
  const OpId id{checked_cast<std::uint32_t>(operations_.size(), "operation count")};
  std::vector<TensorType> result_types;
  try {
    check_visible(id, inputs, kind);
    if (is_binding(kind)) {
      check_binding_name_unused(id, std::get<BindingAttributes>(attributes).name);
    }
    std::vector<TensorType> input_types;
    input_types.reserve(inputs.size());
    for (const ValueId input : inputs) input_types.push_back(type(input));
    result_types = infer_result_types(kind, input_types, attributes);
  } catch (GraphError& error) {
    error.add_context(describe_new(kind, inputs, attributes));
    throw;
  }
  // Ids are 32-bit; a graph that outgrows them is refused rather than wrapped.
  (void)checked_cast<std::uint32_t>(values_.size() + result_types.size(), "value count");

  const BlockId block = current_block();
  Operation op{kind, block, std::move(inputs), {}, std::move(attributes)};
  for (std::uint32_t i = 0; i < result_types.size(); ++i) {
    op.results.push_back(ValueId{static_cast<std::uint32_t>(values_.size())});
    values_.push_back(Value{std::move(result_types[i]), block, id, i});
  }
  std::vector<ValueId> results = op.results;
  operations_.push_back(std::move(op));
  blocks_[block.index].operations.push_back(id);
  return results;
}

ValueId Graph::host_input(std::string name, TensorType type) {
  return append(OpKind::kHostInput, {}, BindingAttributes{std::move(name), std::move(type)})[0];
}

ValueId Graph::host_input(std::string name, DType dtype, Shape shape) {
  return host_input(std::move(name), TensorType{{dtype, 0}, std::move(shape)});
}

ValueId Graph::parameter(std::string name, TensorType type) {
  return append(OpKind::kParameter, {}, BindingAttributes{std::move(name), std::move(type)})[0];
}

ValueId Graph::parameter(std::string name, DType dtype, Shape shape) {
  return parameter(std::move(name), TensorType{{dtype, 0}, std::move(shape)});
}

OpId Graph::host_output(std::string name, ValueId value) {
  append(OpKind::kHostOutput, {value}, BindingAttributes{std::move(name), {}});
  return OpId{static_cast<std::uint32_t>(operations_.size() - 1)};
}

ValueId Graph::copy(ValueId input) { return append(OpKind::kCopy, {input}, NoAttributes{})[0]; }

ValueId Graph::slice(ValueId input, std::vector<std::uint32_t> begin,
                     std::vector<std::uint32_t> end) {
  return append(OpKind::kSlice, {input}, SliceAttributes{std::move(begin), std::move(end)})[0];
}

ValueId Graph::concat(const std::vector<ValueId>& inputs, std::uint32_t axis) {
  return append(OpKind::kConcat, inputs, ConcatAttributes{axis})[0];
}

ValueId Graph::reshape(ValueId input, Shape shape) {
  return append(OpKind::kReshape, {input}, ShapeAttributes{std::move(shape)})[0];
}

ValueId Graph::transpose(ValueId input, std::vector<std::uint32_t> permutation) {
  return append(OpKind::kTranspose, {input}, TransposeAttributes{std::move(permutation)})[0];
}

ValueId Graph::broadcast_to(ValueId input, Shape shape) {
  return append(OpKind::kBroadcastTo, {input}, ShapeAttributes{std::move(shape)})[0];
}

ValueId Graph::add(ValueId a, ValueId b) { return append(OpKind::kAdd, {a, b}, NoAttributes{})[0]; }

ValueId Graph::reduce_sum(ValueId input, std::vector<std::uint32_t> axes, bool keep_dims) {
  return append(OpKind::kReduceSum, {input}, ReduceAttributes{std::move(axes), keep_dims})[0];
}

ValueId Graph::matmul(ValueId a, ValueId b) {
  return append(OpKind::kMatmul, {a, b}, NoAttributes{})[0];
}

ValueId Graph::mul(ValueId a, ValueId b) { return append(OpKind::kMul, {a, b}, NoAttributes{})[0]; }

ValueId Graph::gelu(ValueId input, GeluApproximation approximation) {
  return append(OpKind::kGelu, {input}, GeluAttributes{approximation})[0];
}

ValueId Graph::layer_norm(ValueId input, ValueId gamma, ValueId beta, double epsilon) {
  return append(OpKind::kLayerNorm, {input, gamma, beta}, LayerNormAttributes{epsilon})[0];
}

ValueId Graph::softmax(ValueId input, std::uint32_t axis) {
  return append(OpKind::kSoftmax, {input}, SoftmaxAttributes{axis})[0];
}

ValueId Graph::attention(ValueId q, ValueId k, ValueId v, double scale) {
  return append(OpKind::kAttention, {q, k, v}, AttentionAttributes{scale})[0];
}

ValueId Graph::convert(ValueId input, ElementType to) {
  return append(OpKind::kConvert, {input}, ConvertAttributes{to})[0];
}

ValueId Graph::block_scale(ValueId codes, ValueId scales) {
  return append(OpKind::kBlockScale, {codes, scales}, BlockScaleAttributes{})[0];
}

ValueId Graph::block_scale_panels(ValueId codes, ValueId scales, std::uint32_t panels, Shape matrix) {
  return append(OpKind::kBlockScale, {codes, scales}, BlockScaleAttributes{panels, std::move(matrix)})[0];
}

std::vector<ValueId> Graph::repeat(std::uint32_t count, const std::vector<ValueId>& carried,
                                   const std::vector<ValueId>& invariant, const RepeatBody& body) {
  SequenceRepeatBody without_sequence;
  if (body) {
    without_sequence = [&body](Graph& graph, std::span<const ValueId> carried_arguments,
                               std::span<const ValueId>,
                               std::span<const ValueId> invariant_arguments) {
      return body(graph, carried_arguments, invariant_arguments);
    };
  }
  return repeat(count, carried, {}, invariant, without_sequence);
}

std::vector<ValueId> Graph::repeat(std::uint32_t count, const std::vector<ValueId>& carried,
                                   const std::vector<ValueId>& sequence,
                                   const std::vector<ValueId>& invariant,
                                   const SequenceRepeatBody& body) {
  std::vector<ValueId> inputs = carried;
  inputs.insert(inputs.end(), sequence.begin(), sequence.end());
  inputs.insert(inputs.end(), invariant.begin(), invariant.end());
  const OpId id{checked_cast<std::uint32_t>(operations_.size(), "operation count")};
  const BlockId parent = current_block();
  const BlockId body_id{checked_cast<std::uint32_t>(blocks_.size(), "block count")};
  const RepeatAttributes attributes{count, checked_cast<std::uint32_t>(carried.size(), "carried"),
                                    body_id,
                                    checked_cast<std::uint32_t>(sequence.size(), "sequence")};
  const std::string description = describe_new(OpKind::kRepeat, inputs, attributes);

  std::vector<TensorType> argument_types;
  std::vector<TensorType> result_types;
  try {
    check_visible(id, inputs, OpKind::kRepeat);
    std::vector<TensorType> input_types;
    for (const ValueId input : inputs) input_types.push_back(type(input));
    result_types = infer_result_types(OpKind::kRepeat, input_types, attributes);
    argument_types = repeat_body_argument_types(input_types, attributes);
    if (!body) throw GraphError("has no body builder");
  } catch (GraphError& error) {
    error.add_context(description);
    throw;
  }

  // Everything below appends to the tables; on any failure they are cut back
  // to these sizes, so a failed repeat leaves no trace (ids stay dense).
  const std::size_t values_before = values_.size();
  const std::size_t operations_before = operations_.size();
  const std::size_t blocks_before = blocks_.size();
  const std::size_t open_before = open_blocks_.size();
  try {
    // The repeat takes its id before its body, so ids follow the printed
    // (pre-)order and a replay of the JSON form reproduces them.
    // Built in place: g++ 12 at -O3 reports a false -Wmaybe-uninitialized
    // for the variant member of a moved temporary Operation.
    Operation& repeat_op = operations_.emplace_back();
    repeat_op.kind = OpKind::kRepeat;
    repeat_op.block = parent;
    repeat_op.inputs = inputs;
    repeat_op.attributes = attributes;
    blocks_.push_back(Block{id, {}, {}, {}});
    std::vector<ValueId> arguments;
    for (std::uint32_t i = 0; i < argument_types.size(); ++i) {
      arguments.push_back(ValueId{checked_cast<std::uint32_t>(values_.size(), "value count")});
      values_.push_back(Value{argument_types[i], body_id, std::nullopt, i});
    }
    blocks_[body_id.index].arguments = arguments;

    open_blocks_.push_back(body_id);
    const std::span<const ValueId> all(arguments);
    std::vector<ValueId> yields =
        body(*this, all.first(carried.size()), all.subspan(carried.size(), sequence.size()),
             all.subspan(carried.size() + sequence.size()));
    open_blocks_.resize(open_before);

    if (yields.size() != carried.size()) {
      throw GraphError(fmt::format("the body yields {} values for {} carried values", yields.size(),
                                   carried.size()));
    }
    for (std::size_t i = 0; i < yields.size(); ++i) {
      const Value& yielded = value(yields[i]);
      if (yielded.block != body_id) {
        throw GraphError(fmt::format("yield {} ({}) is defined in {}, not in the body", i,
                                     format_value(yields[i]),
                                     describe_block(*this, yielded.block)));
      }
      if (yielded.type != result_types[i]) {
        throw GraphError(fmt::format("yield {} ({}) is {}, but carried value {} is {}", i,
                                     format_value(yields[i]), format_type(yielded.type), i,
                                     format_type(result_types[i])));
      }
    }
    blocks_[body_id.index].yields = std::move(yields);

    std::vector<ValueId> results;
    for (std::uint32_t i = 0; i < result_types.size(); ++i) {
      results.push_back(ValueId{checked_cast<std::uint32_t>(values_.size(), "value count")});
      values_.push_back(Value{result_types[i], parent, id, i});
    }
    operations_[id.index].results = results;
    blocks_[parent.index].operations.push_back(id);
    return results;
  } catch (GraphError& error) {
    open_blocks_.resize(open_before);
    values_.resize(values_before);
    operations_.resize(operations_before);
    blocks_.resize(blocks_before);
    error.add_context(description);
    throw;
  } catch (...) {
    // Errors of the caller's own body code (a file reader's format error)
    // pass through unchanged: they carry their own context.
    open_blocks_.resize(open_before);
    values_.resize(values_before);
    operations_.resize(operations_before);
    blocks_.resize(blocks_before);
    throw;
  }
}

std::optional<OpId> sole_reader(const Graph& graph, ValueId value) {
  const Block& block = graph.block(graph.value(value).block);
  if (std::find(block.yields.begin(), block.yields.end(), value) != block.yields.end()) return std::nullopt;
  std::optional<OpId> reader;
  for (const OpId id : block.operations) {
    const auto& inputs = graph.operation(id).inputs;
    const auto reads = std::count(inputs.begin(), inputs.end(), value);
    if (reads == 0) continue;
    if (reads > 1 || reader.has_value()) return std::nullopt;
    reader = id;
  }
  return reader;
}

}  // namespace tessera::compiler
