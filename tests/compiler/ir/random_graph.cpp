#include "random_graph.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <rapidcheck.h>

namespace tessera::compiler::testing {
namespace {

template <typename T>
T in_range(T low, T high_exclusive) {
  // Uniform whatever RapidCheck's current size, so early cases are not all tiny.
  return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(low, high_exclusive));
}

bool chance(int percent) { return in_range(0, 100) < percent; }

ElementType random_element() {
  switch (in_range(0, 8)) {
    case 0:
      return {DType::kF16, 0};
    case 1:
      return {DType::kF8F143, in_range(kMinF8Scale, kMaxF8Scale + 1)};
    case 2:
      return {DType::kU32, 0};
    case 3:
      return {DType::kI32, 0};
    case 4:
      return {DType::kU8, 0};
    default:
      return {DType::kF32, 0};
  }
}

Shape random_shape() {
  Shape shape(in_range<std::size_t>(0, 4));
  for (auto& extent : shape) extent = in_range<std::uint32_t>(1, 6);
  return shape;
}

class RandomBuilder {
 public:
  RandomBuilder(Graph& graph, std::vector<ValueId> pool, int depth)
      : graph_(graph), pool_(std::move(pool)), depth_(depth) {}

  void steps(int count) {
    for (int i = 0; i < count; ++i) {
      try {
        step();
      } catch (const GraphError&) {
        // A random combination the builder refuses; it left the graph unchanged.
      }
    }
  }

  const std::vector<ValueId>& pool() const { return pool_; }

  ValueId pick() const { return pool_[in_range<std::size_t>(0, pool_.size())]; }

 private:
  const Shape& shape_of(ValueId value) const { return graph_.type(value).shape; }

  void step() {
    const ValueId v = pick();
    const Shape& shape = shape_of(v);
    const auto rank = static_cast<std::uint32_t>(shape.size());
    switch (in_range(0, 12)) {
      case 0:
        pool_.push_back(graph_.copy(v));
        return;
      case 1: {
        std::vector<std::uint32_t> begin(rank), end(rank);
        for (std::uint32_t a = 0; a < rank; ++a) {
          begin[a] = in_range<std::uint32_t>(0, shape[a]);
          end[a] = in_range<std::uint32_t>(begin[a] + 1, shape[a] + 1);
        }
        pool_.push_back(graph_.slice(v, begin, end));
        return;
      }
      case 2: {
        if (rank == 0) return;
        std::vector<ValueId> inputs(in_range<std::size_t>(1, 4), v);
        if (chance(50)) inputs.push_back(pick());  // often refused: a different type
        pool_.push_back(graph_.concat(inputs, in_range<std::uint32_t>(0, rank)));
        return;
      }
      case 3: {
        Shape target = shape;
        if (chance(50)) {
          target = {static_cast<std::uint32_t>(element_count(shape))};
        } else {
          target.insert(target.begin() + in_range<std::ptrdiff_t>(0, rank + 1), 1);
        }
        pool_.push_back(graph_.reshape(v, target));
        return;
      }
      case 4: {
        std::vector<std::uint32_t> permutation(rank);
        std::iota(permutation.begin(), permutation.end(), 0u);
        std::mt19937 shuffle(*rc::gen::arbitrary<std::uint32_t>());
        std::shuffle(permutation.begin(), permutation.end(), shuffle);
        pool_.push_back(graph_.transpose(v, permutation));
        return;
      }
      case 5: {
        Shape target = shape;
        for (auto& extent : target) {
          if (extent == 1) extent = in_range<std::uint32_t>(1, 4);
        }
        if (target.size() < 3 && chance(50)) {
          target.insert(target.begin(), in_range<std::uint32_t>(1, 4));
        }
        pool_.push_back(graph_.broadcast_to(v, target));
        return;
      }
      case 6:
      case 7:
        pool_.push_back(graph_.add(v, chance(40) ? v : pick()));
        return;
      case 8: {
        std::vector<std::uint32_t> axes;
        for (std::uint32_t a = 0; a < rank; ++a) {
          if (chance(50)) axes.push_back(a);
        }
        pool_.push_back(graph_.reduce_sum(v, axes, chance(50)));
        return;
      }
      case 9:
      case 10:
        transformer_step(v);
        return;
      default:
        if (depth_ < 2) repeat();
        return;
    }
  }

  // Issue 18's operations, built so that they often type-check.
  void transformer_step(ValueId v) {
    const Shape shape = shape_of(v);
    const auto rank = static_cast<std::uint32_t>(shape.size());
    switch (in_range(0, 8)) {
      case 0: {
        if (rank < 2) return;
        std::vector<std::uint32_t> swap_last(rank);
        std::iota(swap_last.begin(), swap_last.end(), 0u);
        std::swap(swap_last[rank - 1], swap_last[rank - 2]);
        // v · vᵀ always has matching inner extents; a random partner rarely does.
        const ValueId b = chance(70) ? graph_.transpose(v, swap_last) : pick();
        pool_.push_back(graph_.matmul(v, b));
        return;
      }
      case 1:
        pool_.push_back(graph_.mul(v, chance(50) ? v : pick()));
        return;
      case 2:
        pool_.push_back(graph_.gelu(v));
        return;
      case 3:
        pool_.push_back(graph_.softmax(v, rank == 0 ? 0 : rank - 1));
        return;
      case 4: {
        if (rank == 0) return;
        // gamma and beta: the first row of v, as [C].
        std::vector<std::uint32_t> begin(rank, 0), end(rank, 1);
        end.back() = shape.back();
        const ValueId row = graph_.reshape(graph_.slice(v, begin, end), {shape.back()});
        pool_.push_back(graph_.layer_norm(v, row, row, chance(50) ? 1e-6 : 0.25));
        return;
      }
      case 5: {
        if (rank == 0) return;
        const std::uint32_t d = shape.back();
        const auto rows = static_cast<std::uint32_t>(element_count(shape) / d);
        const ValueId q = graph_.reshape(v, {1, 1, rows, d});
        pool_.push_back(graph_.attention(q, q, q, chance(50) ? 0.125 : 1.0));
        return;
      }
      case 6: {
        const ElementType targets[] = {
            {DType::kF32, 0}, {DType::kF16, 0}, {DType::kF8F143, in_range(-4, 5)}};
        pool_.push_back(graph_.convert(v, targets[in_range(0, 3)]));
        return;
      }
      default:
        pool_.push_back(graph_.matmul(pick(), v));  // block-scaled weights, when v is one
        return;
    }
  }

  void repeat() {
    std::vector<ValueId> carried(in_range<std::size_t>(1, 3));
    for (auto& value : carried) value = pick();
    std::vector<ValueId> invariant(in_range<std::size_t>(0, 3));
    for (auto& value : invariant) value = pick();
    std::uint32_t count = in_range<std::uint32_t>(1, 30);
    // Sometimes sequences: values whose axis 0 is the count (often refused).
    std::vector<ValueId> sequence;
    if (chance(40)) {
      const ValueId first = pick();
      if (!shape_of(first).empty()) count = shape_of(first)[0];
      sequence.push_back(first);
      if (chance(30)) sequence.push_back(pick());
    }
    const int body_steps = in_range(0, 6);
    const auto results = graph_.repeat(
        count, carried, sequence, invariant,
        [&](Graph& graph, std::span<const ValueId> carried_arguments,
            std::span<const ValueId> sequence_arguments,
            std::span<const ValueId> invariant_arguments) {
          std::vector<ValueId> pool(carried_arguments.begin(), carried_arguments.end());
          pool.insert(pool.end(), sequence_arguments.begin(), sequence_arguments.end());
          pool.insert(pool.end(), invariant_arguments.begin(), invariant_arguments.end());
          RandomBuilder body(graph, pool, depth_ + 1);
          body.steps(body_steps);
          // Yield the latest body value of each carried type (often a new one).
          std::vector<ValueId> yields;
          for (const ValueId argument : carried_arguments) {
            ValueId yielded = argument;
            for (const ValueId candidate : body.pool()) {
              if (graph.type(candidate) == graph.type(argument)) yielded = candidate;
            }
            yields.push_back(yielded);
          }
          return yields;
        });
    pool_.insert(pool_.end(), results.begin(), results.end());
  }

  Graph& graph_;
  std::vector<ValueId> pool_;
  int depth_;
};

}  // namespace

Graph random_graph() {
  Graph graph;
  std::vector<ValueId> pool;
  const int bindings = in_range(1, 4);
  for (int i = 0; i < bindings; ++i) {
    const TensorType type{random_element(), random_shape()};
    pool.push_back(chance(50) ? graph.host_input(fmt::format("in{}", i), type)
                              : graph.parameter(fmt::format("w{}", i), type));
  }
  if (chance(30)) {
    // Block-scaled F143 weights [K, N] from codes and scales, with the
    // activations that multiply them.
    const auto k = in_range<std::uint32_t>(1, 130);
    const auto n = in_range<std::uint32_t>(1, 70);
    const ValueId scales = graph.parameter("scales", DType::kI32, {(k + 63) / 64, (n + 63) / 64});
    if (chance(50)) {
      pool.push_back(graph.block_scale(graph.parameter("codes", DType::kU8, {k, n}), scales));
    } else {
      // Codes the host packed in weight panels.
      const std::uint32_t m = chance(50) ? 16 : 32;
      const ValueId codes = graph.parameter("codes", DType::kU8, {(n + 15) / 16, (k + m - 1) / m, 16, m});
      pool.push_back(graph.block_scale_panels(codes, scales, m, {k, n}));
    }
    pool.push_back(
        graph.host_input("activations", DType::kF16, {in_range<std::uint32_t>(1, 5), k}));
  }
  if (chance(30)) {
    // Activations and a weight of issue 18's extents (the small ones, and a
    // head dimension of 72), multiplied once, for the other steps to build on.
    const std::uint32_t extents[] = {1, 12, 13, 72};
    const DType dtype = chance(50) ? DType::kF16 : DType::kF32;
    const std::uint32_t rows = extents[in_range(0, 3)];
    const std::uint32_t inner = extents[in_range(0, 4)];
    const std::uint32_t columns = extents[in_range(0, 4)];
    const ValueId tokens = graph.host_input("tokens", dtype, {rows, inner});
    const ValueId weight = graph.parameter("weight", dtype, {inner, columns});
    pool.push_back(tokens);
    pool.push_back(weight);
    pool.push_back(graph.matmul(tokens, weight));
  }
  RandomBuilder builder(graph, pool, 0);
  builder.steps(in_range(0, 12));
  const int outputs = in_range(1, 3);
  for (int i = 0; i < outputs; ++i) {
    ValueId value = builder.pick();
    // A block-scaled value is not a host output; its expansion is.
    if (graph.type(value).element.block_scaled()) value = graph.convert(value, DType::kF16);
    graph.host_output(fmt::format("out{}", i), value);
  }
  return graph;
}

}  // namespace tessera::compiler::testing
