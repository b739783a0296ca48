#include "compiler/ir/shape_inference.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/ir/graph_error.hpp"
#include "support/checked.hpp"

namespace tessera::compiler {
namespace {

[[noreturn]] void fail(std::string message) { throw GraphError(std::move(message)); }

template <typename T>
const T& attributes_of(OpKind kind, const Attributes& attributes) {
  const T* typed = std::get_if<T>(&attributes);
  if (typed == nullptr) {
    fail(fmt::format("the attributes are not those of {}", op_kind_name(kind)));
  }
  return *typed;
}

void expect_inputs(std::span<const TensorType> inputs, std::size_t count) {
  if (inputs.size() != count) {
    fail(fmt::format("takes {} input{}, not {}", count, count == 1 ? "" : "s", inputs.size()));
  }
}

void check_valid(const TensorType& type, std::string_view what) {
  if (auto problem = tensor_type_problem(type)) fail(fmt::format("{}: {}", what, *problem));
}

// The result shape of a shape-changing op must itself be a valid shape.
TensorType with_shape(const TensorType& input, Shape shape) {
  TensorType result{input.element, std::move(shape)};
  check_valid(result, "result");
  return result;
}

bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16; }

TensorType infer_binding(OpKind kind, std::span<const TensorType> inputs,
                         const BindingAttributes& binding) {
  if (auto problem = binding_name_problem(binding.name)) fail(*problem);
  expect_inputs(inputs, 0);
  check_valid(binding.type, fmt::format("\"{}\"", binding.name));
  (void)kind;
  return binding.type;
}

TensorType infer_slice(const TensorType& input, const SliceAttributes& slice) {
  const std::size_t rank = input.shape.size();
  if (slice.begin.size() != rank || slice.end.size() != rank) {
    fail(fmt::format("begin {} and end {} must have one entry per axis of {}",
                     format_shape(slice.begin), format_shape(slice.end), format_type(input)));
  }
  Shape shape(rank);
  for (std::size_t axis = 0; axis < rank; ++axis) {
    if (!(slice.begin[axis] < slice.end[axis] && slice.end[axis] <= input.shape[axis])) {
      fail(fmt::format("axis {}: [{}, {}) is not a non-empty range inside [0, {})", axis,
                       slice.begin[axis], slice.end[axis], input.shape[axis]));
    }
    shape[axis] = slice.end[axis] - slice.begin[axis];
  }
  return with_shape(input, std::move(shape));
}

TensorType infer_concat(std::span<const TensorType> inputs, const ConcatAttributes& concat) {
  if (inputs.empty()) fail("takes at least one input");
  const TensorType& first = inputs[0];
  if (first.shape.empty()) fail("cannot concatenate scalars");
  if (concat.axis >= first.shape.size()) {
    fail(fmt::format("axis {} is not an axis of {}", concat.axis, format_type(first)));
  }
  Shape shape = first.shape;
  shape[concat.axis] = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& input = inputs[i];
    if (input.element != first.element) {
      fail(fmt::format("input {} is {}, input 0 is {}", i, format_element_type(input.element),
                       format_element_type(first.element)));
    }
    bool same_other_axes = input.shape.size() == first.shape.size();
    for (std::size_t axis = 0; same_other_axes && axis < first.shape.size(); ++axis) {
      same_other_axes = axis == concat.axis || input.shape[axis] == first.shape[axis];
    }
    if (!same_other_axes) {
      fail(fmt::format("input {} has shape {}, which differs from input 0's {} off axis {}", i,
                       format_shape(input.shape), format_shape(first.shape), concat.axis));
    }
    try {
      shape[concat.axis] =
          checked_add(shape[concat.axis], input.shape[concat.axis], "concatenated extent");
    } catch (const ArithmeticError& error) {
      fail(error.message());
    }
  }
  return with_shape(first, std::move(shape));
}

TensorType infer_reshape(const TensorType& input, const ShapeAttributes& reshape) {
  if (auto problem = shape_problem(reshape.shape)) fail(*problem);
  if (element_count(reshape.shape) != element_count(input.shape)) {
    fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)",
                     format_shape(input.shape), element_count(input.shape),
                     format_shape(reshape.shape), element_count(reshape.shape)));
  }
  return with_shape(input, reshape.shape);
}

TensorType infer_transpose(const TensorType& input, const TransposeAttributes& transpose) {
  const auto& permutation = transpose.permutation;
  std::vector<bool> seen(input.shape.size(), false);
  bool valid = permutation.size() == input.shape.size();
  for (std::size_t i = 0; valid && i < permutation.size(); ++i) {
    valid = permutation[i] < seen.size() && !seen[permutation[i]];
    if (valid) seen[permutation[i]] = true;
  }
  if (!valid) {
    fail(fmt::format("{} is not a permutation of the {} axes of {}", format_shape(permutation),
                     input.shape.size(), format_type(input)));
  }
  Shape shape(permutation.size());
  for (std::size_t i = 0; i < permutation.size(); ++i) shape[i] = input.shape[permutation[i]];
  return with_shape(input, std::move(shape));
}

TensorType infer_broadcast_to(const TensorType& input, const ShapeAttributes& target) {
  if (auto problem = shape_problem(target.shape)) fail(*problem);
  const std::size_t rank = input.shape.size();
  bool valid = rank <= target.shape.size();
  for (std::size_t i = 1; valid && i <= rank; ++i) {
    const std::uint32_t from = input.shape[rank - i];
    valid = from == 1 || from == target.shape[target.shape.size() - i];
  }
  if (!valid) {
    fail(fmt::format("cannot broadcast {} to {}", format_shape(input.shape),
                     format_shape(target.shape)));
  }
  return with_shape(input, target.shape);
}

TensorType infer_add(std::span<const TensorType> inputs) {
  expect_inputs(inputs, 2);
  const TensorType& a = inputs[0];
  const TensorType& b = inputs[1];
  if (!is_float(a.dtype()) || a.element != b.element) {
    fail(fmt::format("adds two f32 or two f16 tensors, not {} and {}",
                     format_element_type(a.element), format_element_type(b.element)));
  }
  auto shape = broadcast_shapes(a.shape, b.shape);
  if (!shape) {
    fail(fmt::format("shapes {} and {} do not broadcast", format_shape(a.shape),
                     format_shape(b.shape)));
  }
  return with_shape(a, std::move(*shape));
}

TensorType infer_reduce_sum(const TensorType& input, const ReduceAttributes& reduce) {
  if (!is_float(input.dtype())) {
    fail(fmt::format("sums f32 or f16, not {}", format_element_type(input.element)));
  }
  if (reduce.axes.empty()) fail("needs at least one axis");
  for (std::size_t i = 0; i < reduce.axes.size(); ++i) {
    if (reduce.axes[i] >= input.shape.size() || (i > 0 && reduce.axes[i] <= reduce.axes[i - 1])) {
      fail(fmt::format("axes {} are not strictly increasing axes of {}", format_shape(reduce.axes),
                       format_type(input)));
    }
  }
  Shape shape;
  for (std::uint32_t axis = 0; axis < input.shape.size(); ++axis) {
    const bool reduced = std::binary_search(reduce.axes.begin(), reduce.axes.end(), axis);
    if (!reduced) {
      shape.push_back(input.shape[axis]);
    } else if (reduce.keep_dims) {
      shape.push_back(1);
    }
  }
  return with_shape(input, std::move(shape));
}

std::vector<TensorType> infer_repeat(std::span<const TensorType> inputs,
                                     const RepeatAttributes& repeat) {
  if (repeat.count == 0) fail("repeats at least once (count 0)");
  if (repeat.carried == 0) fail("carries at least one value");
  if (repeat.carried > inputs.size()) {
    fail(fmt::format("carries {} values but has only {} inputs", repeat.carried, inputs.size()));
  }
  return {inputs.begin(), inputs.begin() + repeat.carried};
}

}  // namespace

std::optional<Shape> broadcast_shapes(std::span<const std::uint32_t> a,
                                      std::span<const std::uint32_t> b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape shape(rank);
  for (std::size_t i = 1; i <= rank; ++i) {
    const std::uint32_t x = i <= a.size() ? a[a.size() - i] : 1;
    const std::uint32_t y = i <= b.size() ? b[b.size() - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    shape[rank - i] = x == 1 ? y : x;
  }
  return shape;
}

std::optional<std::string> binding_name_problem(std::string_view name) {
  if (name.empty()) return "a binding name must not be empty";
  if (name.size() > kMaxBindingNameLength) {
    return fmt::format("binding name of {} characters is longer than {}", name.size(),
                       kMaxBindingNameLength);
  }
  for (const char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' || c == '/' ||
                         c == '-';
    if (!allowed) {
      return fmt::format(
          "binding name \"{}\" has the character {:#04x}; names use letters, "
          "digits and _ . : / -",
          name.size() <= 64 ? name : name.substr(0, 64), static_cast<unsigned char>(c));
    }
  }
  return std::nullopt;
}

std::vector<TensorType> infer_result_types(OpKind kind, std::span<const TensorType> inputs,
                                           const Attributes& attributes) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check_valid(inputs[i], fmt::format("input {}", i));
  }
  switch (kind) {
    case OpKind::kHostInput:
    case OpKind::kParameter:
      return {infer_binding(kind, inputs, attributes_of<BindingAttributes>(kind, attributes))};
    case OpKind::kHostOutput: {
      const auto& binding = attributes_of<BindingAttributes>(kind, attributes);
      if (auto problem = binding_name_problem(binding.name)) fail(*problem);
      if (binding.type != TensorType{}) fail("a host output declares no type of its own");
      expect_inputs(inputs, 1);
      return {};
    }
    case OpKind::kCopy:
      (void)attributes_of<NoAttributes>(kind, attributes);
      expect_inputs(inputs, 1);
      return {inputs[0]};
    case OpKind::kSlice:
      expect_inputs(inputs, 1);
      return {infer_slice(inputs[0], attributes_of<SliceAttributes>(kind, attributes))};
    case OpKind::kConcat:
      return {infer_concat(inputs, attributes_of<ConcatAttributes>(kind, attributes))};
    case OpKind::kReshape:
      expect_inputs(inputs, 1);
      return {infer_reshape(inputs[0], attributes_of<ShapeAttributes>(kind, attributes))};
    case OpKind::kTranspose:
      expect_inputs(inputs, 1);
      return {infer_transpose(inputs[0], attributes_of<TransposeAttributes>(kind, attributes))};
    case OpKind::kBroadcastTo:
      expect_inputs(inputs, 1);
      return {infer_broadcast_to(inputs[0], attributes_of<ShapeAttributes>(kind, attributes))};
    case OpKind::kAdd:
      (void)attributes_of<NoAttributes>(kind, attributes);
      return {infer_add(inputs)};
    case OpKind::kReduceSum:
      expect_inputs(inputs, 1);
      return {infer_reduce_sum(inputs[0], attributes_of<ReduceAttributes>(kind, attributes))};
    case OpKind::kRepeat:
      return infer_repeat(inputs, attributes_of<RepeatAttributes>(kind, attributes));
  }
  fail(fmt::format("unknown operation kind {}", static_cast<unsigned>(kind)));
}

}  // namespace tessera::compiler
