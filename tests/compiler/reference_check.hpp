#pragma once
// Compile a graph, run it on the simulator on random bindings (moderate
// values with NaN, ±Inf, subnormals, the largest finite values and rounding
// edges among them) and compare every output with the CPU reference within
// its bounds (bit for bit where the semantics is exact). Test code only.

#include <gtest/gtest.h>

#include <bit>
#include <limits>
#include <random>

#include "compiler/compile.hpp"
#include "kernels/half.hpp"
#include "tests/compiler/graph_runner.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler::testing {

using tessera::testing::TensorBytes;

// Element bits of `type`'s dtype: mostly moderate values, with specials
// (about 11 in `one_in` elements: 100 by default, rarer for row-wise ops,
// where one special makes its whole row NaN or unbounded).
inline std::vector<std::uint8_t> random_bytes(const TensorType& type, std::uint32_t seed,
                                              int one_in = 100) {
  std::mt19937 random(seed);
  const std::uint64_t count = element_count(type.shape);
  std::vector<std::uint8_t> bytes;
  std::uniform_real_distribution<float> moderate(-6.0f, 6.0f);
  std::uniform_int_distribution<int> pick(0, one_in - 1);
  for (std::uint64_t e = 0; e < count; ++e) {
    const int p = pick(random);
    if (type.dtype() == DType::kF8F143 || type.dtype() == DType::kU8) {
      bytes.push_back(static_cast<std::uint8_t>(random()));
      continue;
    }
    float value = moderate(random);
    if (p == 0) value = std::numeric_limits<float>::quiet_NaN();
    if (p == 1) value = std::numeric_limits<float>::infinity();
    if (p == 2) value = -std::numeric_limits<float>::infinity();
    if (p == 3) value = type.dtype() == DType::kF16 ? 65504.0f : 3.0e38f;
    if (p == 4) value = type.dtype() == DType::kF16 ? 3.0e-6f : 2.0e-40f;  // subnormal
    if (p == 5) value = -0.0f;
    if (p == 6) value = 70000.0f * moderate(random);  // f32 → f16 overflow
    if (p == 7) value = 1e-3f * moderate(random);      // small
    if (type.dtype() == DType::kF16) {
      std::uint16_t bits = kernels::f32_to_f16(value);
      if (p == 8) bits = 0x7D01;  // a signalling NaN with a payload
      bytes.push_back(static_cast<std::uint8_t>(bits));
      bytes.push_back(static_cast<std::uint8_t>(bits >> 8));
    } else {
      std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
      if (p == 8) bits = 0x7F800001;  // a signalling NaN
      if (p == 9) bits = 0x33000001;  // just above half an f16 subnormal: rounding edge
      if (p == 10) bits = 0x3F801000;  // 1 + 2^-11: a tie to even in f16
      for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
    }
  }
  return bytes;
}

// What a checked run leaves for a test's further checks.
struct CheckedRun {
  CompileResult compiled;
  GraphRun run;
  std::uint64_t constrained = 0;  // output elements exact or within a bound
  std::uint64_t within = 0;       // of those, within a bound
};

// Compiles `graph` with `options`, runs it on `bindings` and compares every
// output with the reference within its bounds; a failure names the output
// and prints the compile report. The one place compiled tests meet the
// reference.
inline CheckedRun check_against_reference(const Graph& graph, const TensorBytes& bindings,
                                          const CompileOptions& options) {
  const auto reference = tessera::testing::evaluate_graph_with_bounds(graph, bindings);
  CheckedRun checked{compile(graph, options), {}, 0, 0};
  checked.run = run_on_simulator(checked.compiled.application, bindings);
  for (const OpId op : graph.top_level(OpKind::kHostOutput)) {
    const auto& name = std::get<BindingAttributes>(graph.operation(op).attributes).name;
    const TensorType& type = graph.type(graph.operation(op).inputs[0]);
    const auto problem = tessera::testing::check_within_bounds(
        type, checked.run.outputs.at(name), reference.outputs.at(name), reference.bounds.at(name));
    EXPECT_FALSE(problem.has_value()) << name << " on " << options.tiles << " tiles: " << *problem
                                      << "\n" << format_report(checked.compiled);
    for (const auto& bound : reference.bounds.at(name)) {
      using Kind = tessera::testing::ElementBound::Kind;
      checked.constrained += bound.kind == Kind::kExact || bound.kind == Kind::kWithin ? 1 : 0;
      checked.within += bound.kind == Kind::kWithin ? 1 : 0;
    }
  }
  return checked;
}

// Compiles `graph` for `tiles`, runs it on random bindings and compares every
// output with the reference within its bounds. Returns how many output
// elements the semantics constrains (exact or within a bound), so a test can
// check that its data did not leave everything unbounded.
// Random bytes (random_bytes) for every host input and parameter of
// `graph`, the k-th binding from seed + k.
inline TensorBytes random_bindings(const Graph& graph, std::uint32_t seed = 1, int one_in = 100) {
  TensorBytes bindings;
  std::uint32_t n = seed;
  for (const OpKind kind : {OpKind::kHostInput, OpKind::kParameter}) {
    for (const OpId op : graph.top_level(kind)) {
      const auto& name = std::get<BindingAttributes>(graph.operation(op).attributes).name;
      bindings[name] = random_bytes(graph.type(graph.operation(op).results[0]), n++, one_in);
    }
  }
  return bindings;
}

inline std::uint64_t expect_reference(const Graph& graph, std::uint32_t tiles, std::uint32_t seed = 1,
                             int one_in = 100) {
  return check_against_reference(graph, random_bindings(graph, seed, one_in), {.tiles = tiles}).constrained;
}

}  // namespace tessera::compiler::testing
