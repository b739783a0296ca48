#include "compiler/ir/shape_inference.hpp"

#include <algorithm>
#include <numeric>

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/ir/graph_error.hpp"
#include "kernels/f143.hpp"
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

// f32 or f16 (which carry no scale).
bool is_float(const ElementType& element) { return is_float(element.dtype); }

// Data movement and bindings move codes only; a block-scaled value's scales
// live with it (block_scale), so its codes may not be moved apart from them.
void refuse_block_scaled(const TensorType& input, std::string_view what) {
  if (input.element.block_scaled()) {
    fail(fmt::format(
        "{} {}: a block-scaled value feeds only matmul (as b), convert and repeat (move the "
        "codes and scales before block_scale, or convert it first)",
        what, format_type(input)));
  }
}

void expect_float(const TensorType& input, std::string_view does) {
  if (!is_float(input.element)) {
    fail(fmt::format("{} f32 or f16, not {}", does, format_element_type(input.element)));
  }
}

void expect_rank_at_least(const TensorType& input, std::size_t rank, std::string_view what) {
  if (input.shape.size() < rank) {
    fail(fmt::format("{} must have rank ≥ {}, not {}", what, rank, format_type(input)));
  }
}

void expect_finite_positive(double number, std::string_view what) {
  if (!std::isfinite(number) || !(number > 0)) {
    fail(fmt::format("{} must be a finite number > 0, not {}", what, number));
  }
}

TensorType infer_binding(OpKind kind, std::span<const TensorType> inputs,
                         const BindingAttributes& binding) {
  if (auto problem = binding_name_problem(binding.name)) fail(*problem);
  expect_inputs(inputs, 0);
  check_valid(binding.type, fmt::format("\"{}\"", binding.name));
  if (binding.type.element.block_scaled()) {
    fail(
        fmt::format("\"{}\" is declared {}: block-scaled values come only from block_scale "
                    "(bind the u8 codes and the i32 scales)",
                    binding.name, format_type(binding.type)));
  }
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

// add and mul: elementwise, NumPy broadcasting.
TensorType infer_elementwise(std::span<const TensorType> inputs, std::string_view does) {
  expect_inputs(inputs, 2);
  const TensorType& a = inputs[0];
  const TensorType& b = inputs[1];
  if (!is_float(a.dtype()) || a.element != b.element) {
    fail(fmt::format("{} two f32 or two f16 tensors, not {} and {}", does,
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
  (void)repeat_body_argument_types(inputs, repeat);
  return {inputs.begin(), inputs.begin() + repeat.carried};
}

// The names NumPy's matmul docs use: a [..., M, K] · b [..., K, N].
TensorType infer_matmul(std::span<const TensorType> inputs) {
  expect_inputs(inputs, 2);
  const TensorType& a = inputs[0];
  const TensorType& b = inputs[1];
  for (const auto& [operand, name] : {std::pair{&a, "a"}, std::pair{&b, "b"}}) {
    if (operand->shape.size() < 2) {
      fail(
          fmt::format("operand {} is {}: matmul takes operands of rank ≥ 2 (a 1-D operand is "
                      "refused: reshape it to [1, K] or [K, 1])",
                      name, format_type(*operand)));
    }
  }
  const ElementType& x = a.element;
  const ElementType& y = b.element;
  const bool f8_activations = x.dtype == DType::kF8F143 && !x.block_scaled();
  DType result;
  if (x == y && is_float(x)) {
    result = x.dtype;  // f32·f32 → f32, f16·f16 → f16
  } else if (y.block_scaled() && (x.dtype == DType::kF16 || f8_activations)) {
    result = DType::kF16;  // on-tile expansion, or the native FP8 GEMM
  } else {
    fail(fmt::format("multiplies f32·f32, f16·f16, f16·{0} or f8f143(2^s)·{0}, not {1}·{2}",
                     format_element_type(kBlockScaledF8), format_element_type(x),
                     format_element_type(y)));
  }
  const std::size_t ra = a.shape.size(), rb = b.shape.size();
  const std::uint32_t m = a.shape[ra - 2], k = a.shape[ra - 1];
  const std::uint32_t k_b = b.shape[rb - 2], n = b.shape[rb - 1];
  if (k != k_b) {
    fail(
        fmt::format("the inner extents differ: a {} is [..., M = {}, K = {}] and b {} is "
                    "[..., K = {}, N = {}]",
                    format_shape(a.shape), m, k, format_shape(b.shape), k_b, n));
  }
  const std::span<const std::uint32_t> lead_a(a.shape.data(), ra - 2);
  const std::span<const std::uint32_t> lead_b(b.shape.data(), rb - 2);
  auto shape = broadcast_shapes(lead_a, lead_b);
  if (!shape) {
    fail(fmt::format("the leading axes {} of a and {} of b do not broadcast", format_shape(lead_a),
                     format_shape(lead_b)));
  }
  shape->push_back(m);
  shape->push_back(n);
  TensorType out{{result, 0}, std::move(*shape)};
  check_valid(out, "result");
  return out;
}

TensorType infer_layer_norm(std::span<const TensorType> inputs,
                            const LayerNormAttributes& layer_norm) {
  expect_inputs(inputs, 3);
  const TensorType& x = inputs[0];
  expect_float(x, "normalises");
  expect_rank_at_least(x, 1, "x");
  const std::uint32_t channels = x.shape.back();
  for (const auto& [i, name] :
       {std::pair{std::size_t{1}, "gamma"}, std::pair{std::size_t{2}, "beta"}}) {
    const TensorType& affine = inputs[i];
    if (affine != TensorType{x.element, {channels}}) {
      fail(fmt::format("{} is {}, but x {} needs {}", name, format_type(affine), format_type(x),
                       format_type(TensorType{x.element, {channels}})));
    }
  }
  expect_finite_positive(layer_norm.epsilon, "epsilon");
  return x;
}

TensorType infer_softmax(const TensorType& input, const SoftmaxAttributes& softmax) {
  expect_float(input, "normalises");
  expect_rank_at_least(input, 1, "the input");
  const auto last = static_cast<std::uint32_t>(input.shape.size() - 1);
  if (softmax.axis > last) {
    fail(fmt::format("axis {} is not an axis of {}", softmax.axis, format_type(input)));
  }
  if (softmax.axis != last) {
    fail(
        fmt::format("softmax runs along the last axis only (axis {} of {}), not axis {}: "
                    "transpose the axis last",
                    last, format_type(input), softmax.axis));
  }
  return input;
}

TensorType infer_attention(std::span<const TensorType> inputs,
                           const AttentionAttributes& attention) {
  expect_inputs(inputs, 3);
  const TensorType& q = inputs[0];
  const TensorType& k = inputs[1];
  const TensorType& v = inputs[2];
  expect_float(q, "attends over");
  if (k.element != q.element || v.element != q.element) {
    fail(fmt::format("q, k and v are all f32 or all f16, not {}, {} and {}",
                     format_element_type(q.element), format_element_type(k.element),
                     format_element_type(v.element)));
  }
  const char* names[] = {"q", "k", "v"};
  for (std::size_t i = 0; i < 3; ++i) {
    if (inputs[i].shape.size() != 4) {
      fail(fmt::format("{} is {}: q is [B, H, S, D], k and v are [B, H, T, D]", names[i],
                       format_type(inputs[i])));
    }
  }
  if (k.shape != v.shape || k.shape[0] != q.shape[0] || k.shape[1] != q.shape[1] ||
      k.shape[3] != q.shape[3]) {
    fail(
        fmt::format("q {} is [B, H, S, D], so k {} and v {} must both be [B = {}, H = {}, T, "
                    "D = {}]",
                    format_shape(q.shape), format_shape(k.shape), format_shape(v.shape), q.shape[0],
                    q.shape[1], q.shape[3]));
  }
  expect_finite_positive(attention.scale, "scale");
  return q;
}

TensorType infer_convert(const TensorType& input, const ConvertAttributes& convert) {
  const ElementType& from = input.element;
  const ElementType& to = convert.to;
  if (auto problem = element_type_problem(to)) fail(fmt::format("target: {}", *problem));
  const bool allowed = (from.dtype == DType::kF32 && to.dtype == DType::kF16) ||
                       (from.dtype == DType::kF16 && to.dtype == DType::kF32) ||
                       (is_float(from) && to.dtype == DType::kF8F143 && !to.block_scaled()) ||
                       (from.dtype == DType::kF8F143 && is_float(to));
  if (!allowed) {
    fail(
        fmt::format("converts f32 ↔ f16, f16/f32 → f8f143(2^s) and f8f143 → f16/f32, not {} → "
                    "{}{}",
                    format_element_type(from), format_element_type(to),
                    to.block_scaled() ? " (block-scaled values come only from block_scale)" : ""));
  }
  return TensorType{to, input.shape};
}

TensorType infer_block_scale(std::span<const TensorType> inputs, const BlockScaleAttributes& packing) {
  expect_inputs(inputs, 2);
  const TensorType& codes = inputs[0];
  const TensorType& scales = inputs[1];
  std::uint32_t k = 0, n = 0;
  Shape lead;
  if (packing.panels == 0) {
    if (!packing.matrix.empty()) fail("a matrix shape is given only with panels");
    if (codes.element != ElementType{DType::kU8, 0} || codes.shape.size() < 2) {
      fail(fmt::format("codes are u8 [..., K, N] (F143 bit patterns), not {}", format_type(codes)));
    }
    k = codes.shape[codes.shape.size() - 2];
    n = codes.shape[codes.shape.size() - 1];
    lead.assign(codes.shape.begin(), codes.shape.end() - 2);
  } else {
    const std::uint32_t m = packing.panels;
    if (m != 16 && m != 32) fail(fmt::format("panels of {} inner values: the weight panels hold 16 or 32", m));
    if (packing.matrix.size() != 2 || packing.matrix[0] == 0 || packing.matrix[1] == 0) {
      fail(fmt::format("matrix {} is not a [K, N] of positive extents", format_shape(packing.matrix)));
    }
    k = packing.matrix[0];
    n = packing.matrix[1];
    if (codes.element != ElementType{DType::kU8, 0} || codes.shape.size() < 4) {
      fail(fmt::format("panel codes are u8 [..., ⌈N/16⌉, ⌈K/{}⌉, 16, {}], not {}", m, m, format_type(codes)));
    }
    lead.assign(codes.shape.begin(), codes.shape.end() - 4);
    Shape wanted_codes = lead;
    for (const std::uint32_t extent : {(n + 15) / 16, (k + m - 1) / m, 16u, m}) wanted_codes.push_back(extent);
    if (codes.shape != wanted_codes) {
      fail(fmt::format("a [{}, {}] matrix in panels of {} × 16 is codes {}, not {}", k, n, m,
                       format_shape(wanted_codes), format_shape(codes.shape)));
    }
  }
  Shape expected = lead;
  expected.push_back((k + kernels::f143::kBlockRows - 1) / kernels::f143::kBlockRows);
  expected.push_back((n + kernels::f143::kBlockColumns - 1) / kernels::f143::kBlockColumns);
  const TensorType wanted{{DType::kI32, 0}, expected};
  if (scales != wanted) {
    fail(fmt::format("codes {} have {} × {} blocks of {} × {}, so the scales must be {}, not {}",
                     format_type(codes), expected[expected.size() - 2], expected[expected.size() - 1],
                     kernels::f143::kBlockRows, kernels::f143::kBlockColumns, format_type(wanted),
                     format_type(scales)));
  }
  Shape result = lead;
  result.push_back(k);
  result.push_back(n);
  return TensorType{kBlockScaledF8, result};
}

}  // namespace

std::vector<TensorType> repeat_body_argument_types(std::span<const TensorType> inputs,
                                                   const RepeatAttributes& repeat) {
  if (repeat.count == 0) fail("repeats at least once (count 0)");
  if (repeat.carried == 0) fail("carries at least one value");
  if (std::uint64_t{repeat.carried} + repeat.sequence > inputs.size()) {
    fail(fmt::format("carries {} values and takes {} sequences but has only {} inputs",
                     repeat.carried, repeat.sequence, inputs.size()));
  }
  std::vector<TensorType> arguments(inputs.begin(), inputs.end());
  for (std::size_t i = repeat.carried; i < repeat.carried + repeat.sequence; ++i) {
    const TensorType& sequence = inputs[i];
    const std::size_t index = i - repeat.carried;
    if (sequence.shape.empty() || sequence.shape[0] != repeat.count) {
      fail(
          fmt::format("sequence value {} is {}, but a sequence has one entry per iteration "
                      "along axis 0 ({} of them)",
                      index, format_type(sequence), repeat.count));
    }
    if (sequence.element.block_scaled() && sequence.shape.size() < 3) {
      fail(
          fmt::format("sequence value {} is {}: its entries would lose the block-scaled [K, N] "
                      "axes",
                      index, format_type(sequence)));
    }
    arguments[i].shape.erase(arguments[i].shape.begin());
  }
  return arguments;
}

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
  const bool moves_data = kind == OpKind::kCopy || kind == OpKind::kSlice ||
                          kind == OpKind::kConcat || kind == OpKind::kReshape ||
                          kind == OpKind::kTranspose || kind == OpKind::kBroadcastTo ||
                          kind == OpKind::kHostOutput;
  if (moves_data) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      refuse_block_scaled(inputs[i], fmt::format("input {} is", i));
    }
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
      return {infer_elementwise(inputs, "adds")};
    case OpKind::kMul:
      (void)attributes_of<NoAttributes>(kind, attributes);
      return {infer_elementwise(inputs, "multiplies")};
    case OpKind::kReduceSum:
      expect_inputs(inputs, 1);
      return {infer_reduce_sum(inputs[0], attributes_of<ReduceAttributes>(kind, attributes))};
    case OpKind::kRepeat:
      return infer_repeat(inputs, attributes_of<RepeatAttributes>(kind, attributes));
    case OpKind::kMatmul:
      (void)attributes_of<NoAttributes>(kind, attributes);
      return {infer_matmul(inputs)};
    case OpKind::kGelu:
      (void)attributes_of<GeluAttributes>(kind, attributes);
      expect_inputs(inputs, 1);
      expect_float(inputs[0], "applies to");
      return {inputs[0]};
    case OpKind::kLayerNorm:
      return {infer_layer_norm(inputs, attributes_of<LayerNormAttributes>(kind, attributes))};
    case OpKind::kSoftmax:
      expect_inputs(inputs, 1);
      return {infer_softmax(inputs[0], attributes_of<SoftmaxAttributes>(kind, attributes))};
    case OpKind::kAttention:
      return {infer_attention(inputs, attributes_of<AttentionAttributes>(kind, attributes))};
    case OpKind::kConvert:
      expect_inputs(inputs, 1);
      return {infer_convert(inputs[0], attributes_of<ConvertAttributes>(kind, attributes))};
    case OpKind::kBlockScale:
      return {infer_block_scale(inputs, attributes_of<BlockScaleAttributes>(kind, attributes))};
  }
  fail(fmt::format("unknown operation kind {}", static_cast<unsigned>(kind)));
}

}  // namespace tessera::compiler
