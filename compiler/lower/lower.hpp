#pragma once
// Lowering: a verified graph → the address-free per-tile program
// (program.hpp). Each value gets the layout layout_policy.hpp decides and a
// buffer; each operation becomes an exchange step and/or a compute step:
//
//   copy, slice, concat, reshape, transpose, broadcast_to
//       element moves (moves.hpp) from the inputs' shards into the result's;
//   add  each operand brought to the result's layout (moves, when its shape
//       differs: a broadcast is materialised), then tessera_add_{f32,f16} on
//       every shard;
//   reduce_sum
//       every contribution of a result element gathered in a partials buffer
//       on the result's tile (row k = the k-th reduced element, in row-major
//       order of the reduced axes), then tessera_sum_{f32,f16}: the sum
//       accumulates in f32 in exactly that order and rounds once;
//   matmul (f32·f32, f16·f16)
//       planned by plan/gemm_plan.hpp; per wave and K block, each task's A
//       rows and B block gathered into the AMP layouts on its tile, then
//       tessera_gemm_*_{init,accumulate}; K-split partials added on the
//       owner; each wave's C16 blocks moved into the result (matmul.cpp);
//   attention (f16)
//       the plan of compiler/plan/attention_plan.hpp: (batch, head, query
//       block) tasks, K/V blocks packed once per head and multicast (or
//       streamed), QK GEMM, softmax, PV GEMM and merge per key block, then
//       f32 → f16 and the rows moved into the result (attention.cpp);
//   host_input, parameter, host_output
//       bindings: slices of the value's shards. Parameters come in through
//       the host call "load_parameters", host inputs and outputs through "run";
//   repeat
//       never unrolled: loop-state buffers for the carried values, the body's
//       steps once between a loop begin and end, the yields copied into the
//       state at the end of each iteration (in an order that reads each state
//       before it is overwritten; a permutation saves one state first). A
//       sequence value lies entry-major (layout_policy.hpp) and each
//       iteration begins by copying entry i into the body's argument on every
//       tile (tessera_copy_words from base + i·stride: a PointerOperand with
//       a stride, which the emitted code advances every iteration).

#include <cstdint>

#include <optional>

#include "compiler/ir/graph.hpp"
#include "compiler/lower/program.hpp"
#include "compiler/plan/attention_plan.hpp"
#include "support/error.hpp"
#include "target/topology.hpp"

namespace tessera::compiler::lower {

class LoweringError : public Error {
 public:
  using Error::Error;
};

inline constexpr std::string_view kLoadParametersCall = "load_parameters";
inline constexpr std::string_view kRunCall = "run";

struct LowerOptions {
  std::uint32_t tiles = target::kTileCount;  // tensors spread over logical tiles 0 … tiles − 1
  std::uint64_t min_shard_bytes = 0;         // but no shard smaller than this (layout_policy.hpp)
  // Whether GEMMs gather their A blocks through home tiles
  // (plan::GemmProblem::a_homes): nullopt lets each GEMM's planner choose;
  // tests fix it to exercise both gathers.
  std::optional<bool> gemm_a_homes = std::nullopt;
  // What every attention's plan must be (plan::AttentionPlanOptions: query
  // and key blocks, key parts, packing); the default lets the planner
  // choose, tests force blockings it would not pick (uneven key parts).
  plan::AttentionPlanOptions attention = {};
};

Program lower_graph(const Graph& graph, const LowerOptions& options);

}  // namespace tessera::compiler::lower
