// Issue 18's operations are in the IR and the CPU reference before lowering
// exists for them: compiling one is a LoweringError naming the operation, never
// a crash or a wrong program.
#include <gtest/gtest.h>

#include <functional>

#include "compiler/compile.hpp"
#include "compiler/lower/lower.hpp"

namespace tessera::compiler {
namespace {

struct Case {
  const char* what;
  std::function<void(Graph&)> build;
  const char* message;
};

TEST(NotLoweredYet, EveryNewOperationIsALoweringError) {
  const std::vector<Case> cases = {
      {"matmul",
       [](Graph& g) {
         const ValueId a = g.host_input("a", DType::kF32, {12, 13});
         const ValueId b = g.host_input("b", DType::kF32, {13, 71});
         g.host_output("c", g.matmul(a, b));
       },
       "op 2 (matmul %0, %1): not lowered yet"},
      {"attention",
       [](Graph& g) {
         const ValueId q = g.host_input("q", DType::kF16, {1, 2, 4, 72});
         g.host_output("c", g.attention(q, q, q, 0.125));
       },
       "op 1 (attention %0, %0, %0): not lowered yet"},
      {"block_scale",
       [](Graph& g) {
         const ValueId codes = g.parameter("codes", DType::kU8, {64, 64});
         const ValueId scales = g.parameter("scales", DType::kI32, {1, 1});
         g.host_output("c", g.convert(g.block_scale(codes, scales), DType::kF16));
       },
       "op 2 (block_scale %0, %1): not lowered yet"},
      {"repeat with a sequence",
       [](Graph& g) {
         const ValueId x = g.host_input("x", DType::kF32, {4});
         const ValueId s = g.parameter("s", DType::kF32, {3, 4});
         g.host_output("c", g.repeat(3, {x}, {s}, {},
                                     [](Graph& b, std::span<const ValueId> c,
                                        std::span<const ValueId> q, std::span<const ValueId>) {
                                       return std::vector<ValueId>{b.add(c[0], q[0])};
                                     })[0]);
       },
       "op 2 (repeat %0, %1): a repeat with sequence values is not lowered yet"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g;
    c.build(g);
    try {
      (void)compile(g, {.tiles = 4});
      ADD_FAILURE() << "compiled";
    } catch (const lower::LoweringError& error) {
      EXPECT_NE(std::string(error.what()).find(c.message), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace tessera::compiler
