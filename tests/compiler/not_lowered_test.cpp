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
      // block_scale is lowered only as a matmul's weights (matmul_test.cpp).
      {"block_scale feeding a convert",
       [](Graph& g) {
         const ValueId codes = g.parameter("codes", DType::kU8, {64, 64});
         const ValueId scales = g.parameter("scales", DType::kI32, {1, 1});
         g.host_output("c", g.convert(g.block_scale(codes, scales), DType::kF16));
       },
       "op 2 (block_scale %0, %1): its result %2 is input 0 of op 3 (convert"},
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
