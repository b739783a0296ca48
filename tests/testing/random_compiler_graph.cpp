#include "tests/testing/random_compiler_graph.hpp"

#include <algorithm>
#include <exception>
#include <ostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/ir/printer.hpp"
#include "compiler/ir/shape_inference.hpp"
#include "compiler/lower/layout_policy.hpp"

namespace tessera::testing {
namespace {

using compiler::DType;
using compiler::Graph;
using compiler::Shape;
using compiler::ValueId;

bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16; }

// The recipe's numbers as a builder reads them: the k-th choice, 0 past the end.
class Choices {
 public:
  explicit Choices(const std::vector<std::uint32_t>& choices) : choices_(choices) {}
  std::uint32_t next() { return index_ < choices_.size() ? choices_[index_++] : (++index_, 0); }
  // The next choice reduced to [0, bound).
  std::uint32_t below(std::uint64_t bound) { return static_cast<std::uint32_t>(next() % bound); }

 private:
  const std::vector<std::uint32_t>& choices_;
  std::size_t index_ = 0;
};

class RecipeBuilder {
 public:
  explicit RecipeBuilder(const GraphRecipe& recipe) : recipe_(recipe) {}

  Graph build() {
    const std::uint32_t max_extent = std::max<std::uint32_t>(recipe_.max_extent, 1);
    std::vector<Shape> shapes;
    for (std::size_t i = 0; i < std::max<std::size_t>(recipe_.inputs.size(), 1); ++i) {
      const InputRecipe input = i < recipe_.inputs.size() ? recipe_.inputs[i] : InputRecipe{};
      Shape shape;
      if (input.derived && i > 0) {
        const Shape& base = shapes[input.derive_from % i];
        const std::size_t drop = std::min<std::size_t>(input.drop_leading, base.size() - 1);
        shape.assign(base.begin() + static_cast<std::ptrdiff_t>(drop), base.end());
        for (std::size_t axis = 0; axis < shape.size(); ++axis) {
          if ((input.ones_mask >> axis) & 1u) shape[axis] = 1;
        }
      } else {
        for (std::size_t axis = 0; axis < std::min<std::size_t>(input.shape.size(), 3); ++axis) {
          shape.push_back(std::clamp<std::uint32_t>(input.shape[axis], 1, max_extent));
        }
        if (shape.empty()) shape.push_back(1);
        while (too_large(shape)) {  // halve the largest extent until the input fits
          auto& largest = *std::max_element(shape.begin(), shape.end());
          largest = (largest + 1) / 2;
        }
      }
      shapes.push_back(shape);
      const compiler::TensorType type{{recipe_.dtype, 0}, shape};
      pool_.push_back(input.parameter ? graph_.parameter(fmt::format("p{}", i), type)
                                      : graph_.host_input(fmt::format("in{}", i), type));
    }
    for (const StepRecipe& step : recipe_.steps) pool_.push_back(build_step(step));
    const std::size_t outputs = std::max<std::size_t>(recipe_.outputs.size(), 1);
    for (std::size_t i = 0; i < outputs; ++i) {
      graph_.host_output(fmt::format("out{}", i),
                         back(i < recipe_.outputs.size() ? recipe_.outputs[i] : 0));
    }
    return std::move(graph_);
  }

 private:
  ValueId back(std::uint32_t from_latest) const {
    return pool_[pool_.size() - 1 - from_latest % pool_.size()];
  }

  const Shape& shape_of(ValueId value) const { return graph_.type(value).shape; }

  bool too_large(const Shape& shape) const {
    std::uint64_t count = 1;
    for (const std::uint32_t extent : shape) count *= extent;  // ≤ 3 axes of small extents
    return count > recipe_.max_elements;
  }

  ValueId build_step(const StepRecipe& step) {
    const ValueId v = back(step.operand);
    const Shape shape = shape_of(v);
    const auto rank = static_cast<std::uint32_t>(shape.size());
    Choices choices(step.choices);
    switch (step.kind) {
      case StepKind::kCopy:
        break;
      case StepKind::kSlice: {
        if (rank == 0) break;
        std::vector<std::uint32_t> begin(rank), end(rank);
        for (std::uint32_t axis = 0; axis < rank; ++axis) {
          begin[axis] = choices.below(shape[axis]);
          end[axis] = shape[axis] - choices.below(shape[axis] - begin[axis]);
        }
        return graph_.slice(v, begin, end);
      }
      case StepKind::kConcat: {
        if (rank == 0) break;
        const std::uint32_t axis = choices.below(rank);
        std::vector<ValueId> compatible;
        for (const ValueId candidate : pool_) {
          const Shape& other = shape_of(candidate);
          bool fits = other.size() == rank;
          for (std::uint32_t a = 0; fits && a < rank; ++a) fits = a == axis || other[a] == shape[a];
          if (fits) compatible.push_back(candidate);
        }
        std::vector<ValueId> inputs{v};
        Shape result = shape;
        const std::uint32_t extra = choices.below(3);
        for (std::uint32_t i = 0; i < extra; ++i) {
          inputs.push_back(compatible[choices.below(compatible.size())]);
          result[axis] += shape_of(inputs.back())[axis];
        }
        if (too_large(result)) break;
        return graph_.concat(inputs, axis);
      }
      case StepKind::kReshape: {
        std::uint64_t remaining = compiler::element_count(shape);
        const std::uint32_t target_rank = 1 + choices.below(3);
        Shape target;
        for (std::uint32_t i = 0; i + 1 < target_rank; ++i) {
          std::vector<std::uint32_t> divisors;
          for (std::uint64_t d = 1; d <= remaining; ++d) {
            if (remaining % d == 0) divisors.push_back(static_cast<std::uint32_t>(d));
          }
          target.push_back(divisors[choices.below(divisors.size())]);
          remaining /= target.back();
        }
        target.push_back(static_cast<std::uint32_t>(remaining));
        return graph_.reshape(v, target);
      }
      case StepKind::kTranspose: {
        // A Lehmer code: all zeros is the identity.
        std::vector<std::uint32_t> remaining(rank);
        for (std::uint32_t axis = 0; axis < rank; ++axis) remaining[axis] = axis;
        std::vector<std::uint32_t> permutation;
        while (!remaining.empty()) {
          const auto pick = static_cast<std::ptrdiff_t>(choices.below(remaining.size()));
          permutation.push_back(remaining[static_cast<std::size_t>(pick)]);
          remaining.erase(remaining.begin() + pick);
        }
        return graph_.transpose(v, permutation);
      }
      case StepKind::kBroadcastTo: {
        const std::uint32_t extent_bound = std::max<std::uint32_t>(recipe_.max_extent, 1);
        const std::uint32_t lead = rank < 3 ? choices.below(3 - rank + 1) : 0;
        Shape target;
        for (std::uint32_t i = 0; i < lead; ++i) target.push_back(1 + choices.below(extent_bound));
        for (const std::uint32_t extent : shape) {
          target.push_back(extent == 1 ? 1 + choices.below(extent_bound) : extent);
        }
        if (too_large(target)) break;
        return graph_.broadcast_to(v, target);
      }
      case StepKind::kAdd: {
        if (!is_float(recipe_.dtype)) break;
        std::vector<ValueId> partners;
        for (const ValueId candidate : pool_) {
          const auto result = compiler::broadcast_shapes(shape, shape_of(candidate));
          if (result && !too_large(*result)) partners.push_back(candidate);
        }
        const ValueId partner = partners[choices.below(partners.size())];  // v itself fits
        return choices.below(2) == 0 ? graph_.add(v, partner) : graph_.add(partner, v);
      }
      case StepKind::kReduceSum: {
        if (!is_float(recipe_.dtype) || rank == 0) break;
        const std::uint32_t mask = 1 + choices.below((1u << rank) - 1);
        std::vector<std::uint32_t> axes;
        for (std::uint32_t axis = 0; axis < rank; ++axis) {
          if ((mask >> axis) & 1u) axes.push_back(axis);
        }
        return graph_.reduce_sum(v, axes, choices.below(2) == 1);
      }
      case StepKind::kMul: {
        if (!is_float(recipe_.dtype)) break;
        std::vector<ValueId> partners;
        for (const ValueId candidate : pool_) {
          const auto result = compiler::broadcast_shapes(shape, shape_of(candidate));
          if (result && !too_large(*result)) partners.push_back(candidate);
        }
        const ValueId partner = partners[choices.below(partners.size())];  // v itself fits
        return choices.below(2) == 0 ? graph_.mul(v, partner) : graph_.mul(partner, v);
      }
      case StepKind::kGelu:
        if (!is_float(recipe_.dtype)) break;
        return graph_.gelu(v);
      case StepKind::kConvert: {
        // Out of the graph's dtype and back, so every value keeps it: 0 through
        // the other float dtype, 1 through f8f143 at a scale in [−14, 8]
        // (from f16; an f32 graph goes f32 → f16 → f8f143 → f32).
        if (!is_float(recipe_.dtype)) break;
        const DType other = recipe_.dtype == DType::kF32 ? DType::kF16 : DType::kF32;
        if (choices.below(2) == 0) return graph_.convert(graph_.convert(v, other), recipe_.dtype);
        const compiler::ElementType f8{DType::kF8F143, static_cast<std::int32_t>(choices.below(23)) - 14};
        const ValueId halves = recipe_.dtype == DType::kF16 ? v : graph_.convert(v, DType::kF16);
        return graph_.convert(graph_.convert(halves, f8), recipe_.dtype);
      }
      case StepKind::kLayerNorm: {
        if (!is_float(recipe_.dtype) || rank == 0) break;
        const compiler::TensorType affine{{recipe_.dtype, 0}, {shape.back()}};
        const std::size_t k = parameters_++;
        const ValueId gamma = graph_.parameter(fmt::format("gamma{}", k), affine);
        const ValueId beta = graph_.parameter(fmt::format("beta{}", k), affine);
        constexpr double kEpsilons[] = {1e-5, 1e-2, 1e-6};
        return graph_.layer_norm(v, gamma, beta, kEpsilons[choices.below(3)]);
      }
      case StepKind::kSoftmax:
        if (!is_float(recipe_.dtype) || rank == 0) break;
        return graph_.softmax(v, rank - 1);
      case StepKind::kMatmul: {
        if (!is_float(recipe_.dtype) || rank == 0) break;
        const std::uint32_t n = 1 + choices.below(std::max<std::uint32_t>(recipe_.max_extent, 1));
        Shape result = shape;
        result.back() = n;
        if (rank == 1) result.insert(result.begin(), 1);
        if (too_large(result) || too_large({shape.back(), n})) break;
        const ValueId a = rank == 1 ? graph_.reshape(v, {1, shape[0]}) : v;
        const compiler::TensorType weight{{recipe_.dtype, 0}, {shape.back(), n}};
        return graph_.matmul(a, graph_.parameter(fmt::format("w{}", weights_++), weight));
      }
      case StepKind::kAttention: {
        if (recipe_.dtype != DType::kF16 || rank == 0) break;
        // The value as S rows of its last axis, one batch and one head, cut
        // to the head dimensions the kernels take (multiples of 4 up to 128).
        const std::uint32_t d = std::min<std::uint32_t>(shape.back(), 128) / 4 * 4;
        if (d == 0) break;
        ValueId rows = v;
        if (d != shape.back()) {
          std::vector<std::uint32_t> begin(rank, 0), end(shape.begin(), shape.end());
          end.back() = d;
          rows = graph_.slice(v, begin, end);
        }
        const auto s = static_cast<std::uint32_t>(compiler::element_count(shape) / shape.back());
        const ValueId q = graph_.reshape(rows, {1, 1, s, d});
        constexpr double kScales[] = {0.125, 1.0, 0.35};
        return graph_.attention(q, q, q, kScales[choices.below(3)]);
      }
      case StepKind::kRepeat:
        return build_repeat(v, choices);
    }
    return graph_.copy(v);
  }

  // A repeat carrying `v` through 1–3 iterations; iteration i combines it
  // with entry i of a new sequence parameter (the sequence's axis 0 is the
  // iteration): an add, a mul, or a matmul by a [C, C] entry (C the last
  // axis, so the carried type is kept). A u32 graph's body moves data only:
  // the entry replaces the carried value.
  ValueId build_repeat(ValueId v, Choices& choices) {
    const Shape shape = shape_of(v);
    const std::uint32_t count = 1 + choices.below(3);
    enum { kAdd, kMul, kMatmul } combine = is_float(recipe_.dtype)
                                               ? static_cast<decltype(kAdd)>(choices.below(3))
                                               : kAdd;
    if (combine == kMatmul && shape.size() < 2) combine = kAdd;
    Shape entry = combine == kMatmul ? Shape{shape.back(), shape.back()} : shape;
    Shape sequence = entry;
    sequence.insert(sequence.begin(), count);
    const compiler::TensorType type{{recipe_.dtype, 0}, sequence};
    // The lowering's own rule for which sequences it takes (sub-word scalar
    // entries are not lowered yet; whatever the tile count).
    if (too_large(sequence) || !compiler::lower::sequence_layout(type, 1, 0)) return graph_.copy(v);
    const ValueId s = graph_.parameter(fmt::format("s{}", sequences_++), type);
    const bool data_only = !is_float(recipe_.dtype);
    return graph_.repeat(count, {v}, {s}, {},
                         [&](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> entries,
                             std::span<const ValueId>) -> std::vector<ValueId> {
                           if (data_only) return {body.copy(entries[0])};
                           switch (combine) {
                             case kMul:
                               return {body.mul(carried[0], entries[0])};
                             case kMatmul:
                               return {body.matmul(carried[0], entries[0])};
                             case kAdd:
                               break;
                           }
                           return {body.add(carried[0], entries[0])};
                         })[0];
  }

  std::size_t parameters_ = 0;  // layer_norm's gamma/beta pairs so far
  std::size_t weights_ = 0;     // matmul's weights so far
  std::size_t sequences_ = 0;   // repeat's sequences so far

  const GraphRecipe& recipe_;
  Graph graph_;
  std::vector<ValueId> pool_;
};

template <typename T>
T uniform(T low, T high_exclusive) {
  // Uniform whatever RapidCheck's current size, so early cases are not all tiny.
  return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(low, high_exclusive));
}

// Always an explicit shape: the first input uses it even when derived.
InputRecipe random_input(std::uint32_t max_extent) {
  InputRecipe input;
  input.parameter = uniform(0, 5) == 4;
  input.shape.resize(uniform<std::size_t>(1, 4));
  for (auto& extent : input.shape) extent = uniform<std::uint32_t>(1, max_extent + 1);
  input.derived = uniform(0, 2) == 1;
  if (input.derived) {
    input.derive_from = uniform<std::uint32_t>(0, 3);
    input.drop_leading = uniform<std::uint32_t>(0, 3);
    input.ones_mask = uniform<std::uint32_t>(0, 8);
  }
  return input;
}

StepRecipe random_step() {
  StepRecipe step;
  step.kind = static_cast<StepKind>(uniform<std::uint8_t>(0, kStepKindCount));
  // Mostly the previous result: a chain, with a look further back now and then.
  step.operand = uniform(0, 3) == 0 ? uniform<std::uint32_t>(0, 8) : 0;
  step.choices.resize(8);  // the most any kind reads (broadcast_to of a rank-3 value)
  for (auto& choice : step.choices) choice = uniform<std::uint32_t>(0, 1000);
  return step;
}

// f32 bits: mostly ±m·2^e with |e| ≤ 8, sometimes a special or any pattern.
rc::Gen<std::uint32_t> f32_bits() {
  return rc::gen::weightedOneOf<std::uint32_t>({
      {24, rc::gen::apply(
               [](bool negative, int exponent, std::uint32_t mantissa) {
                 return (negative ? 0x80000000u : 0u) |
                        (static_cast<std::uint32_t>(127 + exponent) << 23) | mantissa;
               },
               rc::gen::arbitrary<bool>(), rc::gen::inRange(-8, 9),
               rc::gen::inRange<std::uint32_t>(0, 1u << 23))},
      {1, rc::gen::element<std::uint32_t>(0x00000000, 0x80000000,  // ±0
                                          0x00000001, 0x807FFFFF,  // subnormals
                                          0x7F800000, 0xFF800000,  // ±Inf
                                          0x7FC00000, 0xFFC00001,  // quiet NaNs
                                          0x7F800001,              // a signalling NaN
                                          0x7F7FFFFF, 0xFF7FFFFF)},  // ±max finite
      {1, rc::gen::arbitrary<std::uint32_t>()},
  });
}

// f16 bits: mostly ±m·2^e with |e| ≤ 4, sometimes a special or any pattern.
rc::Gen<std::uint32_t> f16_bits() {
  return rc::gen::weightedOneOf<std::uint32_t>({
      {24, rc::gen::apply(
               [](bool negative, int exponent, std::uint32_t mantissa) {
                 return (negative ? 0x8000u : 0u) |
                        (static_cast<std::uint32_t>(15 + exponent) << 10) | mantissa;
               },
               rc::gen::arbitrary<bool>(), rc::gen::inRange(-4, 5),
               rc::gen::inRange<std::uint32_t>(0, 1u << 10))},
      {1, rc::gen::element<std::uint32_t>(0x0000, 0x8000,  // ±0
                                          0x0001, 0x83FF,  // subnormals
                                          0x7C00, 0xFC00,  // ±Inf
                                          0x7E00, 0xFE01,  // quiet NaNs
                                          0x7C01,          // a signalling NaN
                                          0x7BFF, 0xFBFF)},  // ±65504
      {1, rc::gen::inRange<std::uint32_t>(0, 0x10000)},
  });
}

rc::Gen<std::uint32_t> element_bits(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return f32_bits();
    case DType::kF16:
      return f16_bits();
    default:
      return rc::gen::arbitrary<std::uint32_t>();
  }
}

}  // namespace

compiler::Graph build_graph(const GraphRecipe& recipe) { return RecipeBuilder(recipe).build(); }

rc::Gen<GraphRecipe> graph_recipe(RandomGraphOptions options) {
  return rc::gen::exec([options] {
    GraphRecipe recipe;
    recipe.max_extent = std::max<std::uint32_t>(options.max_extent, 1);
    recipe.max_elements = options.max_elements;
    // Shrinks toward f32 (the first).
    const int dtype = uniform(0, options.allow_u32 ? 20 : 18);
    recipe.dtype = dtype < 9 ? DType::kF32 : dtype < 18 ? DType::kF16 : DType::kU32;
    // Containers of up to `size` elements, so that shrinking removes any
    // input or step, not only the last ones (a derived input whose source is
    // gone derives from another: the index is read modulo). Not nonEmpty():
    // its retries grow the size past the bound.
    const auto max_extent = recipe.max_extent;
    const auto input = rc::gen::exec([max_extent] { return random_input(max_extent); });
    const std::size_t max_inputs = std::max<std::size_t>(options.max_inputs, 1);
    recipe.inputs = *rc::gen::resize(static_cast<int>(max_inputs),
                                     rc::gen::container<std::vector<InputRecipe>>(input));
    if (recipe.inputs.empty()) recipe.inputs.push_back(*input);
    recipe.inputs.resize(std::min(recipe.inputs.size(), max_inputs));
    const auto step = rc::gen::exec(random_step);
    const std::size_t max_steps = std::max<std::size_t>(options.max_steps, 1);
    recipe.steps = *rc::gen::resize(static_cast<int>(max_steps),
                                    rc::gen::container<std::vector<StepRecipe>>(step));
    if (recipe.steps.empty()) recipe.steps.push_back(*step);
    recipe.steps.resize(std::min(recipe.steps.size(), max_steps));
    recipe.outputs.resize(uniform<std::size_t>(1, 3));
    for (auto& output : recipe.outputs) output = uniform(0, 3) == 0 ? uniform<std::uint32_t>(0, 4) : 0;
    return recipe;
  });
}

rc::Gen<TensorBytes> binding_bytes(const compiler::Graph& graph) {
  std::vector<compiler::BindingAttributes> bindings;
  for (const compiler::OpKind kind : {compiler::OpKind::kHostInput, compiler::OpKind::kParameter}) {
    for (const compiler::OpId id : graph.top_level(kind)) {
      bindings.push_back(std::get<compiler::BindingAttributes>(graph.operation(id).attributes));
    }
  }
  return rc::gen::exec([bindings] {
    TensorBytes bytes;
    for (const auto& binding : bindings) {
      const auto count = static_cast<std::size_t>(compiler::element_count(binding.type.shape));
      const std::uint32_t size = schema::dtype_size(binding.type.dtype());
      const auto elements = *rc::gen::container<std::vector<std::uint32_t>>(
          count, element_bits(binding.type.dtype()));
      auto& out = bytes[binding.name];
      for (const std::uint32_t element : elements) {
        for (std::uint32_t b = 0; b < size; ++b) {
          out.push_back(static_cast<std::uint8_t>(element >> (8 * b)));
        }
      }
    }
    return bytes;
  });
}

std::string step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kCopy:
      return "copy";
    case StepKind::kSlice:
      return "slice";
    case StepKind::kConcat:
      return "concat";
    case StepKind::kReshape:
      return "reshape";
    case StepKind::kTranspose:
      return "transpose";
    case StepKind::kBroadcastTo:
      return "broadcast_to";
    case StepKind::kAdd:
      return "add";
    case StepKind::kReduceSum:
      return "reduce_sum";
    case StepKind::kMul:
      return "mul";
    case StepKind::kGelu:
      return "gelu";
    case StepKind::kConvert:
      return "convert";
    case StepKind::kLayerNorm:
      return "layer_norm";
    case StepKind::kSoftmax:
      return "softmax";
    case StepKind::kMatmul:
      return "matmul";
    case StepKind::kAttention:
      return "attention";
    case StepKind::kRepeat:
      return "repeat";
  }
  return fmt::format("step kind {}", static_cast<unsigned>(kind));
}

std::ostream& operator<<(std::ostream& out, const GraphRecipe& recipe) {
  out << fmt::format("GraphRecipe {} (max extent {}, max elements {})\n",
                     schema::dtype_name(recipe.dtype), recipe.max_extent, recipe.max_elements);
  for (std::size_t i = 0; i < recipe.inputs.size(); ++i) {
    const InputRecipe& input = recipe.inputs[i];
    out << fmt::format("  input {}{}: ", i, input.parameter ? " (parameter)" : "");
    if (input.derived) {
      out << fmt::format("from input {} drop {} ones {:#b}\n", input.derive_from,
                         input.drop_leading, input.ones_mask);
    } else {
      out << compiler::format_shape(input.shape) << "\n";
    }
  }
  for (const StepRecipe& step : recipe.steps) {
    out << fmt::format("  {} operand -{} choices {}\n", step_kind_name(step.kind), step.operand,
                       step.choices);
  }
  out << fmt::format("  outputs {}\n", recipe.outputs);
  try {
    out << compiler::print_graph(build_graph(recipe));
  } catch (const std::exception& error) {
    out << "  (the recipe does not build: " << error.what() << ")";
  }
  return out;
}

}  // namespace tessera::testing
