#pragma once
// Random valid graphs of issue 8's and issue 18's operations, for properties (JSON round
// trip, printer stability). Draws its choices from RapidCheck generators, so
// call it inside a property: failures shrink and replay with the seed.

#include "compiler/ir/graph.hpp"

namespace tessera::compiler::testing {

// Host inputs and parameters of random types (sometimes block-scaled F143
// weights from codes and scales, sometimes f16 or f32 activations [S, D] and
// a weight [D, N] with extents of 1, 12, 13 and 72), a random sequence of data movement, add,
// reduce_sum, issue 18's operations and (nested) repeat operations, some with
// sequences, and one or two host outputs. Always passes verify().
Graph random_graph();

}  // namespace tessera::compiler::testing
