// The verifier, one broken rule per test: each starts from a valid graph,
// breaks one thing through the unchecked edit accessors, and expects the
// problem that names it.

#include <algorithm>

#include <gtest/gtest.h>

#include "compiler/ir/graph.hpp"
#include "compiler/ir/printer.hpp"
#include "compiler/ir/verifier.hpp"

namespace tessera::compiler {
namespace {

TensorType f32(Shape shape) { return {{DType::kF32, 0}, std::move(shape)}; }

// op 0: %0 = host_input "x" f32[4, 8]
// op 1: %1 = parameter "w" f32[8]
// op 2: %2 = add %0, %1
// op 3: %6 = repeat 3 carried %2 invariant %1, body block 1 (%3, %4):
//   op 4: %5 = add %3, %4; yield %5
// op 5: host_output "y" %6
Graph base() {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  const ValueId w = g.parameter("w", DType::kF32, {8});
  const ValueId y = g.add(x, w);
  const auto r =
      g.repeat(3, {y}, {w}, [](Graph& b, std::span<const ValueId> c, std::span<const ValueId> i) {
        return std::vector<ValueId>{b.add(c[0], i[0])};
      });
  g.host_output("y", r[0]);
  return g;
}

void expect_problem(const Graph& g, const std::string& expected) {
  const auto problems = verification_problems(g);
  const bool found = std::find(problems.begin(), problems.end(), expected) != problems.end();
  std::string all;
  for (const auto& problem : problems) all += "\n  " + problem;
  EXPECT_TRUE(found) << "expected: " << expected << "\nfound:" << all << "\n" << print_graph(g);
  EXPECT_THROW(verify(g), GraphError);
}

TEST(Verifier, AcceptsTheBaseGraph) {
  EXPECT_EQ(verification_problems(base()), std::vector<std::string>{});
  EXPECT_NO_THROW(verify(base()));
}

TEST(Verifier, ResultTypeMustBeTheInferredOne) {
  Graph g = base();
  g.value_for_edit(ValueId{2}).type = f32({4});
  expect_problem(g,
                 "op 2 (add %0, %1): result 0 (%2) is f32[4], but the operation makes "
                 "f32[4, 8]");
}

TEST(Verifier, OperandsMustTypeCheck) {
  Graph g = base();
  g.value_for_edit(ValueId{1}).type = f32({3});
  std::get<BindingAttributes>(g.operation_for_edit(OpId{1}).attributes).type = f32({3});
  expect_problem(g, "op 2 (add %0, %1): shapes [4, 8] and [3] do not broadcast");
}

TEST(Verifier, UsesComeAfterDefinitions) {
  Graph g = base();
  auto& top = g.block_for_edit(kTopBlock).operations;
  std::swap(top[1], top[2]);
  expect_problem(g, "op 2 (add %0, %1): %1 is used before it is defined");
}

TEST(Verifier, BlocksAreIsolated) {
  Graph g = base();
  g.operation_for_edit(OpId{4}).inputs[1] = ValueId{1};
  expect_problem(g,
                 "op 4 (add %3, %1): %1 is defined in block 0, outside block 1 where it is "
                 "used");
}

TEST(Verifier, InputsMustExist) {
  Graph g = base();
  g.operation_for_edit(OpId{2}).inputs[1] = ValueId{99};
  expect_problem(g, "op 2 (add %0, %99): input 1 is %99, which is not a value of the graph");
}

TEST(Verifier, AttributesMustMatchTheKind) {
  Graph g = base();
  g.operation_for_edit(OpId{2}).attributes = ConcatAttributes{0};
  expect_problem(g, "op 2 (add %0, %1): the attributes are not those of add");
}

TEST(Verifier, ValuesAreDefinedOnce) {
  Graph g = base();
  g.operation_for_edit(OpId{2}).results = {ValueId{1}};
  expect_problem(g, "%1 is defined more than once (again as result 0 of op 2 (add %0, %1))");
  expect_problem(g, "%2 is defined by nothing");
}

TEST(Verifier, ValueTypesAreValid) {
  Graph g = base();
  g.value_for_edit(ValueId{0}).type.element.scale = 1;
  expect_problem(g, "%0 (result 0 of op 0 (host_input \"x\")): f32 has no scale, but scale is 1");
}

TEST(Verifier, OperationsSitInExactlyOneBlock) {
  Graph listed_twice = base();
  listed_twice.block_for_edit(kTopBlock).operations.push_back(OpId{2});
  expect_problem(listed_twice, "op 2 (add %0, %1) is listed in more than one place");

  Graph unlisted = base();
  auto& top = unlisted.block_for_edit(kTopBlock).operations;
  top.erase(top.begin() + 2);
  expect_problem(unlisted, "op 2 (add %0, %1) is in no block reachable from the top level");
}

TEST(Verifier, RepeatCountIsPositive) {
  Graph g = base();
  std::get<RepeatAttributes>(g.operation_for_edit(OpId{3}).attributes).count = 0;
  expect_problem(g, "op 3 (repeat %2, %1): repeats at least once (count 0)");
}

TEST(Verifier, BodyArgumentsMatchTheInputs) {
  Graph arity = base();
  arity.block_for_edit(BlockId{1}).arguments.pop_back();
  expect_problem(arity, "op 3 (repeat %2, %1): the body has 1 arguments for 2 inputs");

  Graph types = base();
  types.value_for_edit(ValueId{4}).type = f32({4, 8});
  expect_problem(types,
                 "op 3 (repeat %2, %1): body argument 1 (%4) is f32[4, 8], but input 1 is f32[8]");
}

TEST(Verifier, YieldsMatchTheCarriedValues) {
  Graph count = base();
  count.block_for_edit(BlockId{1}).yields.push_back(ValueId{5});
  expect_problem(count, "op 3 (repeat %2, %1): the body yields 2 values for 1 carried values");

  Graph type = base();
  type.block_for_edit(BlockId{1}).yields = {ValueId{4}};
  expect_problem(type,
                 "op 3 (repeat %2, %1): yield 0 (%4) is f32[8], but carried value 0 is "
                 "f32[4, 8]");

  Graph outside = base();
  outside.block_for_edit(BlockId{1}).yields = {ValueId{2}};
  expect_problem(outside, "op 3 (repeat %2, %1): yield 0 (%2) is not defined in the body");
}

TEST(Verifier, BodiesHaveOneOwner) {
  Graph g = base();
  g.block_for_edit(BlockId{1}).owner = OpId{2};
  expect_problem(g, "op 3 (repeat %2, %1): its body, block 1, names another owner");
}

TEST(Verifier, BindingNamesAreUnique) {
  Graph g = base();
  std::get<BindingAttributes>(g.operation_for_edit(OpId{1}).attributes).name = "x";
  expect_problem(g,
                 "op 1 (parameter \"x\"): the name \"x\" is already used by op 0 (host_input "
                 "\"x\")");
}

TEST(Verifier, BindingsLiveAtTheTopLevel) {
  Graph g = base();
  auto& top = g.block_for_edit(kTopBlock).operations;
  top.pop_back();
  g.block_for_edit(BlockId{1}).operations.push_back(OpId{5});
  Operation& output = g.operation_for_edit(OpId{5});
  output.block = BlockId{1};
  output.inputs = {ValueId{5}};
  expect_problem(g, "op 5 (host_output \"y\" %5): host bindings live only at the top level");
}

TEST(Verifier, EveryGraphHasAHostOutput) {
  Graph g = base();
  g.block_for_edit(kTopBlock).operations.pop_back();
  expect_problem(g, "the graph has no host output, so it computes nothing anyone can see");
}

TEST(Verifier, VerifyReportsTheFirstProblemAndHowManyMore) {
  Graph g = base();
  g.operation_for_edit(OpId{2}).results = {ValueId{1}};
  try {
    verify(g);
    ADD_FAILURE() << "accepted";
  } catch (const GraphError& error) {
    EXPECT_NE(std::string(error.what()).find("more problem"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tessera::compiler
