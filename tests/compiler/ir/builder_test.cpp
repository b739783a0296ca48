// The Graph builder: ids, structure, repeat regions, and errors that name the
// operation and leave the graph unchanged (review finding #8).

#include <gtest/gtest.h>

#include "compiler/ir/graph.hpp"
#include "compiler/ir/verifier.hpp"

namespace tessera::compiler {
namespace {

TensorType f32(Shape shape) { return {{DType::kF32, 0}, std::move(shape)}; }

// Expects `call` to throw GraphError with exactly `message` and to leave `graph` unchanged.
template <typename F>
void expect_refused(Graph& graph, F&& call, const std::string& message) {
  const Graph before = graph;
  try {
    call();
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const GraphError& error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
  EXPECT_TRUE(graph == before) << "a refused call changed the graph";
}

TEST(GraphBuilder, AssignsIdsInConstructionOrder) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  const ValueId w = g.parameter("w", DType::kF32, {8});
  const ValueId y = g.add(x, w);
  const OpId out = g.host_output("y", y);
  EXPECT_EQ(x.index, 0u);
  EXPECT_EQ(w.index, 1u);
  EXPECT_EQ(y.index, 2u);
  EXPECT_EQ(out.index, 3u);
  EXPECT_EQ(g.type(y), f32({4, 8}));
  EXPECT_EQ(g.operation(OpId{2}).kind, OpKind::kAdd);
  EXPECT_EQ(g.operation(OpId{2}).inputs, (std::vector<ValueId>{x, w}));
  EXPECT_EQ(g.value(y).op, OpId{2});
  EXPECT_EQ(g.top().operations.size(), 4u);
  EXPECT_EQ(g.top_level(OpKind::kHostInput), std::vector<OpId>{OpId{0}});
  EXPECT_EQ(g.top_level(OpKind::kHostOutput), std::vector<OpId>{out});
  EXPECT_EQ(g.describe(OpId{2}), "op 2 (add %0, %1)");
  EXPECT_EQ(g.describe(OpId{0}), "op 0 (host_input \"x\")");
  EXPECT_EQ(g.describe(out), "op 3 (host_output \"y\" %2)");
  verify(g);
}

TEST(GraphBuilder, EveryOperationTypesItsResult) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {4, 8});
  EXPECT_EQ(g.type(g.copy(x)).shape, (Shape{4, 8}));
  EXPECT_EQ(g.type(g.slice(x, {1, 0}, {3, 4})).shape, (Shape{2, 4}));
  EXPECT_EQ(g.type(g.concat({x, x, x}, 0)).shape, (Shape{12, 8}));
  EXPECT_EQ(g.type(g.reshape(x, {32})).shape, (Shape{32}));
  EXPECT_EQ(g.type(g.transpose(x, {1, 0})).shape, (Shape{8, 4}));
  EXPECT_EQ(g.type(g.broadcast_to(x, {3, 4, 8})).shape, (Shape{3, 4, 8}));
  EXPECT_EQ(g.type(g.reduce_sum(x, {1})).shape, (Shape{4}));
  EXPECT_EQ(g.type(g.reduce_sum(x, {1}, true)).shape, (Shape{4, 1}));
  EXPECT_EQ(g.type(x).dtype(), DType::kF16);
  g.host_output("y", x);
  verify(g);
}

TEST(GraphBuilder, ErrorsNameTheOperationAndValues) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  const ValueId v = g.parameter("v", DType::kF32, {3});
  expect_refused(
      g, [&] { g.add(x, v); }, "op 2 (add %0, %1): shapes [4, 8] and [3] do not broadcast");
  expect_refused(
      g,
      [&] {
        g.slice(x, {0, 0}, {5, 8});
      },
      "op 2 (slice %0): axis 0: [0, 5) is not a non-empty range inside [0, 4)");
  expect_refused(
      g, [&] { g.add(x, ValueId{99}); },
      "op 2 (add %0, %99): %99 is not a value of this graph (2 values)");
  expect_refused(
      g, [&] { g.parameter("x", DType::kF32, {1}); },
      "op 2 (parameter \"x\"): the name \"x\" is already used by op 0 (host_input "
      "\"x\")");
  expect_refused(
      g, [&] { g.host_output("v", x); },
      "op 2 (host_output \"v\" %0): the name \"v\" is already used by op 1 "
      "(parameter \"v\")");
  expect_refused(
      g, [&] { g.host_input("z", DType::kF32, {0}); },
      "op 2 (host_input \"z\"): \"z\": shape [0] has a zero extent on axis 0");
  expect_refused(
      g, [&] { g.concat({}, 0); }, "op 2 (concat): takes at least one input");
  // The graph is still usable after refusals, and ids stay dense.
  EXPECT_EQ(g.copy(x).index, 2u);
}

TEST(GraphBuilder, RepeatKeepsItsBodyStructured) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  const ValueId w = g.parameter("w", DType::kF32, {8});
  const auto results = g.repeat(
      27, {x}, {w},
      [](Graph& body, std::span<const ValueId> carried, std::span<const ValueId> invariant) {
        EXPECT_EQ(carried.size(), 1u);
        EXPECT_EQ(invariant.size(), 1u);
        return std::vector<ValueId>{body.add(carried[0], invariant[0])};
      });
  g.host_output("y", results[0]);
  verify(g);

  // Pre-order ids: the repeat (op 2) before its body's add (op 3); body
  // arguments %2, %3, the add %4, the result %5.
  const Operation& repeat = g.operation(OpId{2});
  ASSERT_EQ(repeat.kind, OpKind::kRepeat);
  const auto& attributes = std::get<RepeatAttributes>(repeat.attributes);
  EXPECT_EQ(attributes.count, 27u);
  EXPECT_EQ(attributes.carried, 1u);
  const Block& body = g.block(attributes.body);
  EXPECT_EQ(body.owner, OpId{2});
  EXPECT_EQ(body.arguments, (std::vector<ValueId>{ValueId{2}, ValueId{3}}));
  EXPECT_EQ(body.operations, std::vector<OpId>{OpId{3}});
  EXPECT_EQ(body.yields, std::vector<ValueId>{ValueId{4}});
  EXPECT_EQ(results, std::vector<ValueId>{ValueId{5}});
  EXPECT_EQ(g.value(ValueId{4}).block, attributes.body);
  // Never unrolled: one add in the whole graph, whatever the count.
  EXPECT_EQ(g.operation_count(), 5u);
}

TEST(GraphBuilder, NestedRepeats) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {2, 2});
  const auto outer = g.repeat(
      3, {x}, {}, [](Graph& b, std::span<const ValueId> carried, std::span<const ValueId>) {
        const auto inner = b.repeat(
            4, {carried[0]}, {carried[0]},
            [](Graph& c, std::span<const ValueId> carried2, std::span<const ValueId> invariant2) {
              return std::vector<ValueId>{c.add(carried2[0], invariant2[0])};
            });
        return inner;
      });
  g.host_output("y", outer[0]);
  verify(g);
  EXPECT_EQ(g.block_count(), 3u);
}

TEST(GraphBuilder, RepeatBodiesSeeOnlyTheirArguments) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4});
  const ValueId w = g.parameter("w", DType::kF32, {4});
  expect_refused(
      g,
      [&] {
        g.repeat(2, {x}, {},
                 [&](Graph& body, std::span<const ValueId> carried, std::span<const ValueId>) {
                   return std::vector<ValueId>{body.add(carried[0], w)};
                 });
      },
      "op 2 (repeat %0): op 3 (add %2, %1): %1 is defined in the top level, but this add is "
      "being built in the body of op 2; a repeat body sees only its arguments and its own "
      "results (pass outer values as invariants)");
}

TEST(GraphBuilder, RepeatChecksItsBody) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4});
  const ValueId w = g.parameter("w", DType::kF32, {2});
  const auto body_returning = [](std::function<std::vector<ValueId>(Graph&, ValueId)> make) {
    return [make](Graph& body, std::span<const ValueId> carried, std::span<const ValueId>) {
      return make(body, carried[0]);
    };
  };
  expect_refused(
      g,
      [&] {
        g.repeat(0, {x}, {},
                 body_returning([](Graph&, ValueId a) { return std::vector<ValueId>{a}; }));
      },
      "op 2 (repeat %0): repeats at least once (count 0)");
  expect_refused(
      g,
      [&] {
        g.repeat(2, {}, {x},
                 body_returning([](Graph&, ValueId a) { return std::vector<ValueId>{a}; }));
      },
      "op 2 (repeat %0): carries at least one value");
  expect_refused(
      g,
      [&] {
        g.repeat(2, {x}, {}, body_returning([](Graph&, ValueId a) {
                   return std::vector<ValueId>{a, a};
                 }));
      },
      "op 2 (repeat %0): the body yields 2 values for 1 carried values");
  expect_refused(
      g,
      [&] {
        g.repeat(2, {x}, {}, body_returning([](Graph& b, ValueId a) {
                   return std::vector<ValueId>{b.slice(a, {0}, {2})};
                 }));
      },
      "op 2 (repeat %0): yield 0 (%3) is f32[2], but carried value 0 is f32[4]");
  expect_refused(
      g,
      [&] {
        g.repeat(2, {x}, {},
                 body_returning([&](Graph&, ValueId) { return std::vector<ValueId>{x}; }));
      },
      "op 2 (repeat %0): yield 0 (%0) is defined in the top level, not in the body");
  expect_refused(
      g,
      [&] {
        g.repeat(2, {x}, {}, body_returning([](Graph& b, ValueId a) {
                   b.host_output("inner", a);
                   return std::vector<ValueId>{a};
                 }));
      },
      "op 2 (repeat %0): op 3 (host_output \"inner\" %2): host bindings live only at "
      "the top level, not in the body of op 2");
  // A failing operation deep inside a body also leaves no trace.
  expect_refused(
      g,
      [&] {
        g.repeat(2, {x}, {w}, [](Graph& b, std::span<const ValueId> c, std::span<const ValueId> i) {
          const ValueId ok = b.copy(c[0]);
          return std::vector<ValueId>{b.add(ok, i[0])};
        });
      },
      "op 2 (repeat %0, %1): op 4 (add %4, %3): shapes [4] and [2] do not broadcast");
  // Exceptions of the caller's own body code pass through unchanged, and roll back too.
  const Graph before = g;
  EXPECT_THROW(g.repeat(2, {x}, {},
                        [](Graph& b, std::span<const ValueId> c,
                           std::span<const ValueId>) -> std::vector<ValueId> {
                          b.copy(c[0]);
                          throw std::runtime_error("caller's own failure");
                        }),
               std::runtime_error);
  EXPECT_TRUE(g == before);
}

TEST(GraphBuilder, SameCallsGiveEqualGraphs) {
  const auto build = [] {
    Graph g;
    const ValueId x = g.host_input("x", DType::kF32, {2, 3});
    const auto r =
        g.repeat(5, {x}, {}, [](Graph& b, std::span<const ValueId> c, std::span<const ValueId>) {
          return std::vector<ValueId>{b.add(c[0], c[0])};
        });
    g.host_output("y", g.transpose(r[0], {1, 0}));
    return g;
  };
  EXPECT_TRUE(build() == build());
  Graph other = build();
  other.copy(ValueId{0});
  EXPECT_FALSE(build() == other);
}

}  // namespace
}  // namespace tessera::compiler
