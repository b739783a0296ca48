// The text form: a golden rendering, and that malformed graphs still print.

#include <gtest/gtest.h>

#include "compiler/ir/graph.hpp"
#include "compiler/ir/printer.hpp"

namespace tessera::compiler {
namespace {

TEST(Printer, Golden) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4, 8});
  const ValueId w = g.parameter("w", TensorType{{DType::kF8F143, -3}, {8}});
  const ValueId b = g.parameter("b", DType::kF32, {8});
  const auto r = g.repeat(12, {x}, {b},
                          [](Graph& body, std::span<const ValueId> c, std::span<const ValueId> i) {
                            return std::vector<ValueId>{body.add(c[0], i[0])};
                          });
  const ValueId s = g.slice(r[0], {0, 2}, {4, 6});
  const ValueId t = g.transpose(g.concat({s, s}, 1), {1, 0});
  g.host_output("y", g.reduce_sum(t, {1}, true));
  g.host_output("z", g.broadcast_to(g.reshape(g.copy(w), {1, 8}), {2, 8}));
  EXPECT_EQ(print_graph(g), R"(graph {
  %0 = host_input "x" : f32[4, 8]  // op 0
  %1 = parameter "w" : f8f143(2^-3)[8]  // op 1
  %2 = parameter "b" : f32[8]  // op 2
  %6 = repeat 12 carried %0 invariant %2 {  // op 3
  ^(%3: f32[4, 8], %4: f32[8]):
    %5 = add %3, %4 : f32[4, 8]  // op 4
    yield %5
  } : f32[4, 8]
  %7 = slice %6 begin [0, 2] end [4, 6] : f32[4, 4]  // op 5
  %8 = concat %7, %7 axis 1 : f32[4, 8]  // op 6
  %9 = transpose %8 permutation [1, 0] : f32[8, 4]  // op 7
  %10 = reduce_sum %9 axes [1] keep_dims : f32[8, 1]  // op 8
  host_output "y" %10  // op 9
  %11 = copy %1 : f8f143(2^-3)[8]  // op 10
  %12 = reshape %11 : f8f143(2^-3)[1, 8]  // op 11
  %13 = broadcast_to %12 : f8f143(2^-3)[2, 8]  // op 12
  host_output "z" %13  // op 13
}
)");
}

TEST(Printer, PrintsMalformedGraphs) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {4});
  g.host_output("y", x);
  g.operation_for_edit(OpId{1}).inputs = {ValueId{42}};
  g.block_for_edit(kTopBlock).operations.push_back(OpId{7});
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("host_output \"y\" %42"), std::string::npos) << text;
  EXPECT_NE(text.find("<op 7 does not exist>"), std::string::npos) << text;
}

}  // namespace
}  // namespace tessera::compiler
