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
      {"mul",
       [](Graph& g) {
         const ValueId a = g.host_input("a", DType::kF16, {4});
         g.host_output("c", g.mul(a, a));
       },
       "op 1 (mul %0, %0): not lowered yet"},
      {"gelu", [](Graph& g) { g.host_output("c", g.gelu(g.host_input("a", DType::kF16, {4}))); },
       "op 1 (gelu %0): not lowered yet"},
      {"layer_norm",
       [](Graph& g) {
         const ValueId x = g.host_input("x", DType::kF32, {2, 8});
         const ValueId w = g.parameter("w", DType::kF32, {8});
         g.host_output("c", g.layer_norm(x, w, w, 1e-6));
       },
       "op 2 (layer_norm %0, %1, %1): not lowered yet"},
      {"softmax",
       [](Graph& g) { g.host_output("c", g.softmax(g.host_input("a", DType::kF32, {4}), 0)); },
       "op 1 (softmax %0): not lowered yet"},
      {"convert",
       [](Graph& g) {
         g.host_output("c", g.convert(g.host_input("a", DType::kF32, {4}), DType::kF16));
       },
       "op 1 (convert %0): not lowered yet"},
      {"block_scale",
       [](Graph& g) {
         const ValueId codes = g.parameter("codes", DType::kU8, {64, 64});
         const ValueId scales = g.parameter("scales", DType::kI32, {1, 1});
         g.host_output("c", g.convert(g.block_scale(codes, scales), DType::kF16));
       },
       "op 2 (block_scale %0, %1): not lowered yet"},
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
