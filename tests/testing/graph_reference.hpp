#pragma once
// A CPU reference interpreter of the compiler's graph IR (compiler/ir): what
// a compiled graph must compute — bit for bit where the semantics is exact,
// within docs/GRAPH_FORMAT.md's bounds where it depends on the plan — written
// independently of the compiler so property tests can compare the two.
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
//               every iteration, and sequence values give iteration i their
//               entry i along axis 0 (a block-scaled one with its scales).
//   mul         NumPy broadcasting; the correctly rounded product (f16 exact in
//               f32, rounded once), canonical NaNs (kernels/float_arith.hpp).
//   convert     f32 → f16 round to nearest even; f16 → f32 exact; to f8f143
//               and back through kernels/f143.hpp's codec (its rules, its
//               rounding), F143 → f16 as decode(code)·2^scale in f32, rounded
//               once to f16.
//   block_scale the codes with their i32 scales, each checked in [−32, 31]
//               when evaluated (UsageError naming the scale otherwise).
//   matmul, gelu, layer_norm, softmax, attention
//               computed in f64 from the exact operand values (the F143 forms
//               of matmul on the operands' f16 expansions, convert's rule;
//               f16-product matmuls exactly, in 128-bit fixed point) and
//               rounded once to the result dtype. Their device results are
//               plan-dependent: docs/GRAPH_FORMAT.md ("Numerics") states the
//               bound every plan meets, graph_bounds.hpp owns its formulas,
//               and evaluate_graph_with_bounds gives it per output element.

#include <cstdint>
#include <map>
#include <optional>
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

// How a compiled result element must relate to the reference's.
struct ElementBound {
  enum class Kind : std::uint8_t {
    kExact,          // the same bits
    kWithin,         // |device − reference| ≤ max_error (both finite)
    kNan,            // a NaN (any payload): the element depends on a NaN input
    kUnconstrained,  // the semantics does not bound it (see docs/GRAPH_FORMAT.md)
  };
  Kind kind = Kind::kExact;
  double max_error = 0;
  friend bool operator==(const ElementBound&, const ElementBound&) = default;
};

struct ReferenceResult {
  TensorBytes outputs;
  // Per host output, one bound per element (row-major). A plan-dependent
  // op's element is kWithin its graph_bounds.hpp bound against exact
  // arithmetic, widened by the reference's own distance from exact (its one
  // final rounding, u·|reference| + eta, and 2^-20 of the bound for its f64
  // arithmetic). Bounds follow their elements through data movement and
  // f16 → f32 converts, and through add, mul and f32 → f16 converts with one
  // more rounding (|s' − s| + u·(2|s| + |s' − s|) + 2·eta, s the exact
  // result of the reference values, |s' − s| from the inputs' bounds); any
  // other op that consumes a kWithin or kUnconstrained element makes its
  // result elements kUnconstrained (compare such chains op by op).
  std::map<std::string, std::vector<ElementBound>> bounds;
};

// evaluate_graph, with the bounds of every output element.
ReferenceResult evaluate_graph_with_bounds(const compiler::Graph& graph,
                                           const TensorBytes& bindings);

// Whether `device` (bytes of `type`, as a compiled graph returns it) meets
// `bounds` against `reference`; nullopt when it does, else the first element
// that does not, with both values and its bound.
std::optional<std::string> check_within_bounds(const compiler::TensorType& type,
                                               const std::vector<std::uint8_t>& device,
                                               const std::vector<std::uint8_t>& reference,
                                               const std::vector<ElementBound>& bounds);

}  // namespace tessera::testing
