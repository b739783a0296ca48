#pragma once
// A CPU reference interpreter of the compiler's graph IR (compiler/ir): what
// a compiled graph must compute, bit for bit, written independently of the
// compiler so property tests can compare the two.
//
// Tensors are row-major, little-endian bytes of their element type. The
// element arithmetic is the kernels' own (kernels/float_arith.hpp), so the
// reference and the device kernels cannot disagree on a rounding or a NaN:
//   add         NumPy broadcasting; f32 IEEE round-to-nearest-even, f16 the
//               correctly rounded f16 sum; any NaN result is canonical.
//   reduce_sum  per output element, the reduced elements in row-major order of
//               their indices (the reduced axes in increasing order, the last
//               fastest) are accumulated in f32 sequentially from the first
//               one — acc = x0; acc += x1; … — exactly as tessera_sum adds its
//               partials in_0 + in_1 + …, then rounded once to the dtype. A
//               single reduced element is a bit-exact copy (NaN payload kept).
//   data movement (copy, slice, concat, reshape, transpose, broadcast_to)
//               moves whole elements of any dtype, bits untouched.
//   repeat      runs its body `count` times; carried values feed back through
//               the yields, invariant values are bound to the same tensor on
//               every iteration.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace tessera::testing {

// Binding name → row-major little-endian bytes of its type.
using TensorBytes = std::map<std::string, std::vector<std::uint8_t>>;

// Evaluates `graph` (which must pass compiler::verify, checked first) on
// `bindings`: every host input and parameter by name, each exactly
// byte_size(type) bytes. Returns every host output by name.
//
// Throws compiler::GraphError when the graph does not verify, and UsageError
// naming the binding when one is missing, has the wrong size, or names no
// host input or parameter of the graph.
TensorBytes evaluate_graph(const compiler::Graph& graph, const TensorBytes& bindings);

}  // namespace tessera::testing
