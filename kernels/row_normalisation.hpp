#pragma once
// Row-wise softmax (f32, f16) and f32 LayerNorm on row-major shards: symbol
// names, registration (ABIs in kernels/README.md and row_normalisation.cpp)
// and cycle costs. They exist for the compiler's row-major layouts, where
// every row of the last axis lies whole on one tile (the A16 LayerNorm of
// layer_norm.hpp serves f16; there is no f32 AMP LayerNorm and no row-major
// softmax among the other kernels).
//
// Numerics, per row of `columns` values (docs/GRAPH_FORMAT.md "Numerics"
// bounds every plan of this shape; tests/kernels/row_normalisation_test.cpp
// checks the bits against a CPU reference and the bound against FP64):
//
// softmax  f16 inputs widened exactly; in f32: m = the row's max (a NaN
//          anywhere makes the whole row NaN), e_j = exp_f32(x_j − m)
//          (activation_math.hpp: the one exp), s = Σ e_j sequentially in j
//          from e_0, r = 1/s, y_j = e_j·r; the f16 result rounded once to
//          nearest even (never stochastically). NaN results are canonical.
// layer_norm (f32)
//          Σx and Σx² in f32 in four lanes by column mod 4, combined
//          (l0 + l1) + (l2 + l3) — as layer_norm.hpp's f16 kernel —;
//          mean = Σx/C, var = Σx²/C − mean² clamped ≥ 0, rstd =
//          1/√(var + ε) (f32 square root and division, ε from its Q30
//          register, layer_norm.hpp's encoding), then ((x − mean)·rstd)·γ + β,
//          one f32 rounding per operation. NaN results are canonical.

#include <cstdint>
#include <string_view>

#include "kernels/costs.hpp"
#include "kernels/kernel_shapes.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {

inline constexpr std::string_view kSoftmaxRowsF32 = "tessera_softmax_rows_f32";
inline constexpr std::string_view kSoftmaxRowsF16 = "tessera_softmax_rows_f16";
inline constexpr std::string_view kLayerNormRowsF32 = "tessera_layer_norm_rows_f32";

void add_row_normalisation_kernels(KernelRegistry& registry);

// ---- Costs [INF]: rows balanced contiguous over the six workers, one f32v2
// operation per worker cycle (loads and stores bundled), per pair of columns.

// softmax: max, subtract, exp (about 12 operations: reduction, 7-term
// polynomial, scaling), sum and multiply per element, plus the reciprocal.
inline constexpr std::uint64_t kSoftmaxOperationsPerPair = 16;
inline constexpr std::uint64_t kRowSetupOperations = 20;

constexpr std::uint64_t softmax_rows_cycles(std::uint64_t rows, std::uint64_t columns) noexcept {
  const std::uint64_t per_row =
      saturating_add(saturating_mul((columns + 1) / 2, kSoftmaxOperationsPerPair), kRowSetupOperations);
  return kKernelLaunchCycles + kWorkerBarrierCycles +
         saturating_mul(kWorkerCount, saturating_mul(worker_share(rows, 0), per_row));
}

// layer_norm: the sums (2), then subtract, two multiplies and an add per element.
inline constexpr std::uint64_t kLayerNormRowsOperationsPerPair = 6;

constexpr std::uint64_t layer_norm_rows_cycles(std::uint64_t rows, std::uint64_t columns) noexcept {
  const std::uint64_t per_row = saturating_add(
      saturating_mul((columns + 1) / 2, kLayerNormRowsOperationsPerPair), 2 * kRowSetupOperations);
  return kKernelLaunchCycles + kWorkerBarrierCycles +
         saturating_mul(kWorkerCount, saturating_mul(worker_share(rows, 0), per_row));
}

}  // namespace tessera::kernels
