#pragma once
// The typing rules of every operation: the one owner of "what does this op
// produce, and when is it ill-typed". The builder calls it to type new
// results and the verifier calls it again to re-check stored ones, so the two
// cannot disagree.
//
// Rules (docs/GRAPH_FORMAT.md restates them for file authors):
//   host_input, parameter  no inputs; result is the declared type (never block-scaled).
//   host_output            one input, not block-scaled; no result.
//   copy                   one input; same type.
//   slice                  begin/end per axis, begin < end ≤ extent; result extents end − begin.
//   concat                 ≥ 1 inputs of one element type and rank ≥ 1, equal except on `axis`.
//   reshape                the same element count.
//   transpose              a permutation of the axes; result axis i is input axis perm[i].
//   broadcast_to           NumPy broadcast_to: aligned from the last axis, each input
//                          extent equals the target's or is 1; the target rank is ≥ the input's.
//   add, mul               two f32 or two f16 inputs (the same dtype); NumPy broadcasting.
//   reduce_sum             f32 or f16; axes strictly increasing and non-empty. The result has
//                          the input's dtype. f16 is accumulated in f32 and rounded to f16
//                          once at the end, whatever the tiling of the sum: the sum of many
//                          f16 partials in f16 would lose the low bits of every partial.
//   repeat                 count ≥ 1, at least one carried value; results have the carried
//                          values' types. Sequence values have rank ≥ 1 and axis 0 equal to
//                          count; the body's arguments are the carried types, the sequence
//                          types without axis 0, the invariant types (the body is checked by
//                          the builder and verifier).
//   matmul                 a [..., M, K] · b [..., K, N] → [..., M, N], both of rank ≥ 2 (a
//                          1-D operand is refused: reshape it), the leading axes broadcast as
//                          NumPy's matmul does (b may be [K, N]). f32·f32 → f32, f16·f16 → f16,
//                          f16 · block-scaled f8f143 → f16 (the weights expanded on the tile),
//                          f8f143 (tensor-wide scale) · block-scaled f8f143 → f16 (native FP8).
//   gelu                   f32 or f16, approximation tanh; same type.
//   layer_norm             x [..., C] f32 or f16, gamma [C] and beta [C] of x's type;
//                          epsilon finite and > 0; x's type.
//   softmax                f32 or f16 of rank ≥ 1, along the last axis only; same type.
//   attention              q [B, H, S, D], k and v [B, H, T, D], all f32 or all f16; scale
//                          finite and > 0 (the device takes the max of the raw scores, which
//                          is the max of the scaled ones only for a positive scale); q's type.
//   convert                f32 → f16, f16 → f32, f16/f32 → f8f143 at a tensor-wide scale,
//                          f8f143 (either scaling) → f16/f32; every other pair (an identity
//                          included) is refused; same shape.
//   block_scale            codes u8 [..., K, N] and scales i32 [..., ⌈K/64⌉, ⌈N/64⌉] (the same
//                          leading axes) → block-scaled f8f143 [..., K, N]. That each scale is
//                          in [−32, 31] is data: the reference checks it when it evaluates.
//                          With panels m (16 or 32) and matrix [K, N]: codes u8 [...,
//                          ⌈N/16⌉, ⌈K/m⌉, 16, m] (BlockScaleAttributes); that the padding
//                          codes are 0 is data too.
// Data movement (copy … broadcast_to) accepts every dtype and keeps the f8 scale, but refuses
// block-scaled values: their 64 × 64 scale grid would not follow the moved codes. A
// block-scaled value is consumed by matmul (as b), convert and repeat only.

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

// The types of a repeat body's arguments: the carried inputs' types, the
// sequence inputs' types without axis 0, the invariant inputs' types. Throws
// GraphError as infer_result_types does.
std::vector<TensorType> repeat_body_argument_types(std::span<const TensorType> inputs,
                                                   const RepeatAttributes& repeat);

// NumPy broadcasting of two shapes, or nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(std::span<const std::uint32_t> a,
                                      std::span<const std::uint32_t> b);

// Why `name` cannot name a host binding, or nullopt. Names are 1–256 ASCII
// letters, digits and `_ . : / -`: they reach file names and command lines.
std::optional<std::string> binding_name_problem(std::string_view name);
inline constexpr std::size_t kMaxBindingNameLength = 256;

}  // namespace tessera::compiler
