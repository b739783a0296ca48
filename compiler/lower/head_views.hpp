#pragma once
// Attention reads its heads through the reshape and transpose that split
// them out of a [B, S, heads·d] value, and writes its result through the
// transpose and reshape that merge them back (issue 18 item 3: a layout
// change that costs no relayout phase where the layouts allow). Lowered as
// operations, each of those copies every element through an exchange phase
// of its own — seven phases of an encoder layer that move data and compute
// nothing; as views, attention's gathers and output moves address the [B, S,
// heads·d] value directly.
//
// The split, for an attention input q [B, heads, S, d]:
//   q = transpose(r, {0, 2, 1, 3}),  r = reshape(x, [B, S, heads, d]),
//   x [B, S, heads·d], or x = slice(y, {0, 0, c0}, {B, S, c0 + heads·d}) of a
//   y [B, S, W] (the fused q/k/v GEMM's third);
// q[b, h, s, c] is then y[b, s, c0 + h·d + c]. The merge, for the result o:
//   t = transpose(o, {0, 2, 1, 3}),  m = reshape(t, [B, S, heads·d]);
// o[b, h, s, c] is then m[b, s, h·d + c]. Every value between is read by the
// next step alone (no other reader, no yield): the views' operations are
// lowered with the attention and their values get no storage.
#include <optional>
#include <vector>

#include "compiler/ir/graph.hpp"

namespace tessera::compiler::lower {

struct HeadView {
  ValueId value;              // y (split) or m (merge): the [B, S, W] value addressed
  std::uint32_t column0 = 0;  // c0: where the heads start in its last axis
  std::uint32_t head_dim = 0; // d
  std::vector<OpId> ops;      // the view's operations, in graph order
};

// The split view attention input `input` (its q, k or v value) is read
// through, or nullopt.
std::optional<HeadView> split_heads_view(const Graph& graph, ValueId input);
// The merge view `attention`'s result is written through, or nullopt.
std::optional<HeadView> merged_heads_view(const Graph& graph, OpId attention);

// Whether `op` (a slice, reshape or transpose) is part of an attention's
// split or merge view, and so lowered by the attention.
bool in_head_view(const Graph& graph, OpId op);

}  // namespace tessera::compiler::lower
