#pragma once
// The typing rules of every operation: the one owner of "what does this op
// produce, and when is it ill-typed". The builder calls it to type new
// results and the verifier calls it again to re-check stored ones, so the two
// cannot disagree.
//
// Rules (docs/GRAPH_FORMAT.md restates them for file authors):
//   host_input, parameter  no inputs; result is the declared type.
//   host_output            one input; no result.
//   copy                   one input; same type.
//   slice                  begin/end per axis, begin < end ≤ extent; result extents end − begin.
//   concat                 ≥ 1 inputs of one element type and rank ≥ 1, equal except on `axis`.
//   reshape                the same element count.
//   transpose              a permutation of the axes; result axis i is input axis perm[i].
//   broadcast_to           NumPy broadcast_to: aligned from the last axis, each input
//                          extent equals the target's or is 1; the target rank is ≥ the input's.
//   add                    two f32 or two f16 inputs (the same dtype); NumPy broadcasting.
//   reduce_sum             f32 or f16; axes strictly increasing and non-empty. The result has
//                          the input's dtype. f16 is accumulated in f32 and rounded to f16
//                          once at the end, whatever the tiling of the sum: the sum of many
//                          f16 partials in f16 would lose the low bits of every partial.
//   repeat                 count ≥ 1, at least one carried value; results have the carried
//                          values' types (the body is checked by the builder and verifier).
// Data movement (copy … broadcast_to) accepts every dtype and keeps the f8 scale.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/operation.hpp"

namespace tessera::compiler {

// The types of the results of an operation of `kind` with inputs of the given
// types and these attributes. Throws GraphError with the bare reason (the
// caller adds which operation it is as context).
std::vector<TensorType> infer_result_types(OpKind kind, std::span<const TensorType> inputs,
                                           const Attributes& attributes);

// NumPy broadcasting of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(std::span<const std::uint32_t> a,
                                      std::span<const std::uint32_t> b);

// Why `name` cannot name a host binding, or nullopt. Names are 1–256 ASCII
// letters, digits and `_ . : / -`: they reach file names and command lines.
std::optional<std::string> binding_name_problem(std::string_view name);
inline constexpr std::size_t kMaxBindingNameLength = 256;

}  // namespace tessera::compiler
