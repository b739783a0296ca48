// A matmul graph through `tessera compile --report` (which prints the GEMM's
// plan) and `tessera run`: small integers, so the f32 result is exact in any
// summation order and is compared with a plain C++ product.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

using runtime::HostTensor;
using testing::run_tessera;

constexpr const char* kGraph = R"({
  "format": "tessera.graph", "version": 1,
  "operations": [
    {"op": "host_input", "name": "a", "dtype": "f32", "shape": [13, 20], "result": "a"},
    {"op": "host_input", "name": "b", "dtype": "f32", "shape": [20, 71], "result": "b"},
    {"op": "matmul", "inputs": ["a", "b"], "result": "c"},
    {"op": "host_output", "name": "c", "inputs": ["c"]}
  ]
})";

std::string write_f32(const tessera::testing::ScratchDirectory& scratch, const std::string& name,
                      const std::vector<float>& values, std::vector<std::uint64_t> shape) {
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  const std::string path = scratch.path(name + ".npy");
  runtime::write_tensor_file(path, HostTensor(schema::DType::kF32, std::move(shape), bytes));
  return path;
}

TEST(MatmulCommand, CompilesReportsThePlanAndRuns) {
  tessera::testing::ScratchDirectory scratch;
  const std::string graph = scratch.path("matmul.json");
  std::ofstream(graph) << kGraph;
  const std::string package = scratch.path("matmul.ipuexe");
  const auto compiled = run_tessera({"compile", graph, "-o", package, "--tiles", "8", "--report"});
  ASSERT_EQ(compiled.exit_status, 0) << compiled.err;
  EXPECT_NE(compiled.out.find("plan: op 2 (matmul): f32 GEMM 13×20·20×71 (batch 1)"), std::string::npos)
      << compiled.out;
  EXPECT_NE(compiled.out.find("vs FLOP bound"), std::string::npos) << compiled.out;

  std::vector<float> a(13 * 20), b(20 * 71);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i * 7 % 9) - 4);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i * 5 % 7) - 3);
  const std::string c = scratch.path("c.npy");
  const auto run = run_tessera({"run", package, "-i", "a=" + write_f32(scratch, "a", a, {13, 20}), "-i",
                                "b=" + write_f32(scratch, "b", b, {20, 71}), "-o", "c=" + c});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const HostTensor result = runtime::read_npy_file(c);
  ASSERT_EQ(result.shape(), (std::vector<std::uint64_t>{13, 71}));
  std::vector<float> values(13 * 71);
  std::memcpy(values.data(), result.bytes().data(), values.size() * 4);
  for (std::size_t i = 0; i < 13; ++i) {
    for (std::size_t j = 0; j < 71; ++j) {
      float expected = 0;
      for (std::size_t k = 0; k < 20; ++k) expected += a[i * 20 + k] * b[k * 71 + j];
      EXPECT_EQ(values[i * 71 + j], expected) << i << ", " << j;
    }
  }
}

}  // namespace
}  // namespace tessera
