#include "tests/testing/graph_reference.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "compiler/ir/verifier.hpp"
#include "kernels/float_arith.hpp"
#include "support/error.hpp"

namespace tessera::testing {
namespace {

using compiler::Block;
using compiler::BlockId;
using compiler::DType;
using compiler::Graph;
using compiler::OpKind;
using compiler::Operation;
using compiler::Shape;
using compiler::TensorType;
using compiler::ValueId;

struct Tensor {
  TensorType type;
  std::vector<std::uint8_t> bytes;
};

std::size_t element_bytes(const TensorType& type) { return schema::dtype_size(type.dtype()); }

// Row-major element strides.
std::vector<std::uint64_t> strides_of(const Shape& shape) {
  std::vector<std::uint64_t> strides(shape.size(), 1);
  for (std::size_t axis = shape.size(); axis-- > 1;) {
    strides[axis - 1] = strides[axis] * shape[axis];
  }
  return strides;
}

// Steps `index` to the next row-major index of `shape`; false after the last.
bool next_index(std::vector<std::uint32_t>& index, const Shape& shape) {
  for (std::size_t axis = shape.size(); axis-- > 0;) {
    if (++index[axis] < shape[axis]) return true;
    index[axis] = 0;
  }
  return false;
}

// Calls visit(index) for every index of `shape` in row-major order (once, with
// the empty index, for a scalar).
template <typename Visit>
void for_each_index(const Shape& shape, Visit visit) {
  std::vector<std::uint32_t> index(shape.size(), 0);
  do {
    visit(index);
  } while (next_index(index, shape));
}

// The element of an input of shape `input` that NumPy broadcasting reads for
// the result index `index` (the input's axes align with the result's last).
std::uint64_t broadcast_source(const Shape& input, const std::vector<std::uint64_t>& strides,
                               const std::vector<std::uint32_t>& index) {
  const std::size_t lead = index.size() - input.size();
  std::uint64_t element = 0;
  for (std::size_t axis = 0; axis < input.size(); ++axis) {
    if (input[axis] != 1) element += index[lead + axis] * strides[axis];
  }
  return element;
}

std::uint32_t load_bits(const Tensor& tensor, std::uint64_t element) {
  const std::size_t size = element_bytes(tensor.type);
  std::uint32_t bits = 0;
  for (std::size_t b = 0; b < size; ++b) {
    bits |= std::uint32_t{tensor.bytes[element * size + b]} << (8 * b);
  }
  return bits;
}

void store_bits(Tensor& tensor, std::uint64_t element, std::uint32_t bits) {
  const std::size_t size = element_bytes(tensor.type);
  for (std::size_t b = 0; b < size; ++b) {
    tensor.bytes[element * size + b] = static_cast<std::uint8_t>(bits >> (8 * b));
  }
}

Tensor empty_tensor(const TensorType& type) {
  return Tensor{type, std::vector<std::uint8_t>(compiler::byte_size(type))};
}

// Data movement: result element at row-major `index` is element `source(index)`
// of `from(index)`, whole bytes copied.
template <typename Source>
Tensor gather(const TensorType& type, Source source) {
  Tensor result = empty_tensor(type);
  const std::size_t size = element_bytes(type);
  std::uint64_t element = 0;
  for_each_index(type.shape, [&](const std::vector<std::uint32_t>& index) {
    const auto [input, input_element] = source(index);
    std::memcpy(&result.bytes[element * size], &input->bytes[input_element * size], size);
    ++element;
  });
  return result;
}

Tensor slice(const Tensor& input, const compiler::SliceAttributes& slice,
             const TensorType& type) {
  const auto strides = strides_of(input.type.shape);
  return gather(type, [&](const std::vector<std::uint32_t>& index) {
    std::uint64_t element = 0;
    for (std::size_t axis = 0; axis < index.size(); ++axis) {
      element += (slice.begin[axis] + index[axis]) * strides[axis];
    }
    return std::pair{&input, element};
  });
}

Tensor concat(const std::vector<const Tensor*>& inputs, std::uint32_t axis,
              const TensorType& type) {
  std::vector<std::vector<std::uint64_t>> strides;
  for (const Tensor* input : inputs) strides.push_back(strides_of(input->type.shape));
  return gather(type, [&](const std::vector<std::uint32_t>& index) {
    std::uint32_t offset = index[axis];
    std::size_t part = 0;
    while (offset >= inputs[part]->type.shape[axis]) offset -= inputs[part++]->type.shape[axis];
    std::uint64_t element = 0;
    for (std::size_t a = 0; a < index.size(); ++a) {
      element += (a == axis ? offset : index[a]) * strides[part][a];
    }
    return std::pair{inputs[part], element};
  });
}

Tensor transpose(const Tensor& input, const std::vector<std::uint32_t>& permutation,
                 const TensorType& type) {
  const auto strides = strides_of(input.type.shape);
  return gather(type, [&](const std::vector<std::uint32_t>& index) {
    // Result axis i is input axis permutation[i].
    std::uint64_t element = 0;
    for (std::size_t i = 0; i < index.size(); ++i) element += index[i] * strides[permutation[i]];
    return std::pair{&input, element};
  });
}

Tensor broadcast_to(const Tensor& input, const TensorType& type) {
  const auto strides = strides_of(input.type.shape);
  return gather(type, [&](const std::vector<std::uint32_t>& index) {
    return std::pair{&input, broadcast_source(input.type.shape, strides, index)};
  });
}

template <typename E>
Tensor add(const Tensor& a, const Tensor& b, const TensorType& type) {
  Tensor result = empty_tensor(type);
  const auto a_strides = strides_of(a.type.shape);
  const auto b_strides = strides_of(b.type.shape);
  std::uint64_t element = 0;
  for_each_index(type.shape, [&](const std::vector<std::uint32_t>& index) {
    const std::uint32_t x = load_bits(a, broadcast_source(a.type.shape, a_strides, index));
    const std::uint32_t y = load_bits(b, broadcast_source(b.type.shape, b_strides, index));
    using Bits = typename E::Bits;
    store_bits(result, element++, E::add(static_cast<Bits>(x), static_cast<Bits>(y)));
  });
  return result;
}

// tessera_sum's arithmetic (kernels/reduction.cpp): widen, accumulate in f32
// from the first element, narrow once.
template <typename E>
Tensor reduce_sum(const Tensor& input, const std::vector<std::uint32_t>& axes,
                  const TensorType& type) {
  const Shape& shape = input.type.shape;
  const auto strides = strides_of(shape);
  Shape kept_shape, reduced_shape;
  std::vector<std::uint64_t> kept_strides, reduced_strides;
  for (std::uint32_t axis = 0; axis < shape.size(); ++axis) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), axis);
    (reduced ? reduced_shape : kept_shape).push_back(shape[axis]);
    (reduced ? reduced_strides : kept_strides).push_back(strides[axis]);
  }
  Tensor result = empty_tensor(type);
  std::uint64_t element = 0;
  // Kept indices in row-major order are the result's order, keep_dims or not.
  for_each_index(kept_shape, [&](const std::vector<std::uint32_t>& kept) {
    std::uint64_t base = 0;
    for (std::size_t i = 0; i < kept.size(); ++i) base += kept[i] * kept_strides[i];
    std::optional<std::uint32_t> accumulator;
    for_each_index(reduced_shape, [&](const std::vector<std::uint32_t>& reduced) {
      std::uint64_t source = base;
      for (std::size_t i = 0; i < reduced.size(); ++i) source += reduced[i] * reduced_strides[i];
      const std::uint32_t value =
          E::widen(static_cast<typename E::Bits>(load_bits(input, source)));
      accumulator = accumulator ? kernels::add_f32_bits(*accumulator, value) : value;
    });
    store_bits(result, element++, E::narrow(*accumulator));
  });
  return result;
}

class Evaluator {
 public:
  Evaluator(const Graph& graph, const TensorBytes& bindings)
      : graph_(graph), bindings_(bindings), values_(graph.value_count()) {}

  TensorBytes run() {
    check_binding_names();
    evaluate_block(compiler::kTopBlock);
    return std::move(outputs_);
  }

 private:
  void check_binding_names() const {
    std::set<std::string> declared;
    for (const OpKind kind : {OpKind::kHostInput, OpKind::kParameter}) {
      for (const compiler::OpId id : graph_.top_level(kind)) {
        declared.insert(std::get<compiler::BindingAttributes>(graph_.operation(id).attributes).name);
      }
    }
    for (const auto& [name, bytes] : bindings_) {
      if (!declared.contains(name)) {
        throw UsageError(fmt::format("binding \"{}\" names no host input or parameter of the graph",
                                     name));
      }
    }
  }

  const Tensor& input(const Operation& op, std::size_t i) const { return *values_[op.inputs[i].index]; }

  void evaluate_block(BlockId id) {
    for (const compiler::OpId op_id : graph_.block(id).operations) {
      try {
        evaluate(graph_.operation(op_id));
      } catch (Error& error) {
        error.add_context(fmt::format("evaluating {}", graph_.describe(op_id)));
        throw;
      }
    }
  }

  void evaluate(const Operation& op) {
    const TensorType* type = op.results.empty() ? nullptr : &graph_.type(op.results[0]);
    switch (op.kind) {
      case OpKind::kHostInput:
      case OpKind::kParameter:
        return define(op, bound(std::get<compiler::BindingAttributes>(op.attributes)));
      case OpKind::kHostOutput:
        outputs_[std::get<compiler::BindingAttributes>(op.attributes).name] = input(op, 0).bytes;
        return;
      case OpKind::kCopy:
        return define(op, input(op, 0));
      case OpKind::kReshape:
        return define(op, Tensor{*type, input(op, 0).bytes});
      case OpKind::kSlice:
        return define(op, slice(input(op, 0), std::get<compiler::SliceAttributes>(op.attributes),
                                *type));
      case OpKind::kConcat: {
        std::vector<const Tensor*> inputs;
        for (std::size_t i = 0; i < op.inputs.size(); ++i) inputs.push_back(&input(op, i));
        return define(op, concat(inputs, std::get<compiler::ConcatAttributes>(op.attributes).axis,
                                 *type));
      }
      case OpKind::kTranspose:
        return define(op, transpose(input(op, 0),
                                    std::get<compiler::TransposeAttributes>(op.attributes).permutation,
                                    *type));
      case OpKind::kBroadcastTo:
        return define(op, broadcast_to(input(op, 0), *type));
      case OpKind::kAdd:
        return define(op, type->dtype() == DType::kF16
                              ? add<kernels::F16Element>(input(op, 0), input(op, 1), *type)
                              : add<kernels::F32Element>(input(op, 0), input(op, 1), *type));
      case OpKind::kReduceSum: {
        const auto& axes = std::get<compiler::ReduceAttributes>(op.attributes).axes;
        return define(op, type->dtype() == DType::kF16
                              ? reduce_sum<kernels::F16Element>(input(op, 0), axes, *type)
                              : reduce_sum<kernels::F32Element>(input(op, 0), axes, *type));
      }
      case OpKind::kRepeat:
        return repeat(op);
    }
    throw Error(fmt::format("unknown operation kind {}", static_cast<unsigned>(op.kind)));
  }

  void define(const Operation& op, Tensor tensor) { values_[op.results[0].index] = std::move(tensor); }

  Tensor bound(const compiler::BindingAttributes& binding) const {
    const auto found = bindings_.find(binding.name);
    const std::uint64_t size = compiler::byte_size(binding.type);
    if (found == bindings_.end()) {
      throw UsageError(fmt::format("binding \"{}\" ({}, {} bytes) is missing", binding.name,
                                   compiler::format_type(binding.type), size));
    }
    if (found->second.size() != size) {
      throw UsageError(fmt::format("binding \"{}\" ({}) has {} bytes, not {}", binding.name,
                                   compiler::format_type(binding.type), found->second.size(),
                                   size));
    }
    return Tensor{binding.type, found->second};
  }

  void repeat(const Operation& op) {
    const auto& attributes = std::get<compiler::RepeatAttributes>(op.attributes);
    const Block& body = graph_.block(attributes.body);
    std::vector<Tensor> carried;
    for (std::size_t i = 0; i < attributes.carried; ++i) carried.push_back(input(op, i));
    for (std::size_t i = attributes.carried; i < op.inputs.size(); ++i) {
      values_[body.arguments[i].index] = input(op, i);
    }
    for (std::uint32_t iteration = 0; iteration < attributes.count; ++iteration) {
      for (std::size_t i = 0; i < carried.size(); ++i) {
        values_[body.arguments[i].index] = std::move(carried[i]);
      }
      evaluate_block(attributes.body);
      for (std::size_t i = 0; i < carried.size(); ++i) carried[i] = *values_[body.yields[i].index];
    }
    for (std::size_t i = 0; i < carried.size(); ++i) {
      values_[op.results[i].index] = std::move(carried[i]);
    }
  }

  const Graph& graph_;
  const TensorBytes& bindings_;
  std::vector<std::optional<Tensor>> values_;  // by value id
  TensorBytes outputs_;
};

}  // namespace

TensorBytes evaluate_graph(const compiler::Graph& graph, const TensorBytes& bindings) {
  compiler::verify(graph);
  return Evaluator(graph, bindings).run();
}

}  // namespace tessera::testing
