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
    switch (in_range(0, 10)) {
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
      default:
        if (depth_ < 2) repeat();
        return;
    }
  }

  void repeat() {
    std::vector<ValueId> carried(in_range<std::size_t>(1, 3));
    for (auto& value : carried) value = pick();
    std::vector<ValueId> invariant(in_range<std::size_t>(0, 3));
    for (auto& value : invariant) value = pick();
    const int body_steps = in_range(0, 6);
    const auto results = graph_.repeat(
        in_range<std::uint32_t>(1, 30), carried, invariant,
        [&](Graph& graph, std::span<const ValueId> carried_arguments,
            std::span<const ValueId> invariant_arguments) {
          std::vector<ValueId> pool(carried_arguments.begin(), carried_arguments.end());
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
  RandomBuilder builder(graph, pool, 0);
  builder.steps(in_range(0, 12));
  const int outputs = in_range(1, 3);
  for (int i = 0; i < outputs; ++i) graph.host_output(fmt::format("out{}", i), builder.pick());
  return graph;
}

}  // namespace tessera::compiler::testing
