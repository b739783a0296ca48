#pragma once
// What a GEMM applies to its result rows before they leave its tiles: the
// bias add of a linear layer, and the GeLU after it when one follows
// (issue 18 item 5: bias and GeLU fused into their neighbour). Lowered as
// separate operations they each run on the result's row shards alone — a
// [729, 4304] GeLU on 729 of 1472 tiles — behind an exchange phase of their
// own; inside the GEMM every part applies them to the rows it reduced,
// with the same kernels in the same order (tessera_add_row_broadcast, then
// tessera_gelu), so the values are bit for bit those of the separate ops.
//
// The pattern, all in the matmul's block: the matmul's f16 result feeds
// exactly one operation and nothing else (no yield, no host output): an add
// of it and a [N] value of its dtype (either order) whose result has the
// matmul result's type; and if that sum in turn feeds exactly one
// operation, a GeLU of the same type, that too.
#include <optional>

#include "compiler/ir/graph.hpp"

namespace tessera::compiler::lower {

struct GemmEpilogue {
  OpId add;                  // the bias add
  ValueId bias;              // its [N] operand
  std::optional<OpId> gelu;  // the GeLU of the sum, when it follows alone
  ValueId result;            // what the GEMM writes: the GeLU's result, else the add's
};

// nullopt when `matmul`'s result does not fit the pattern.
std::optional<GemmEpilogue> gemm_epilogue(const Graph& graph, OpId matmul);

}  // namespace tessera::compiler::lower
