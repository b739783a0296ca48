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

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "kernels/costs.hpp"
#include "kernels/kernel_shapes.hpp"
#include "kernels/layer_norm_rows.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {

inline constexpr std::string_view kSoftmaxRowsF32 = "tessera_softmax_rows_f32";
inline constexpr std::string_view kSoftmaxRowsF16 = "tessera_softmax_rows_f16";
inline constexpr std::string_view kLayerNormRowsF32 = "tessera_layer_norm_rows_f32";
// The f16 LayerNorm on row-major rows: layer_norm.hpp's numerics, the same
// bits as tessera_layer_norm_f16 on the A16 form of the rows.
inline constexpr std::string_view kLayerNormRowsF16 = "tessera_layer_norm_rows_f16";

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

// tessera_layer_norm_rows_f16, as layer_norm.hpp's A16 kernel is priced
// (pointwise_costs.hpp layer_norm_cycles: six operations per pair, 40 per
// row) but on the row's logical pairs. With six rows or more (or rows of odd
// length, in pairs) the rows go to the workers balanced, each a whole row's
// statistics (Σx and Σx²: two operations per pair, and the row's 40) and
// normalisation (four per pair). With fewer rows of an even length — SigLIP's
// activations lie one row per tile — each row is cut into the workers' column
// shares (layer_norm_rows.hpp) and the workers run twice per row: first
// each sums its share (two per pair, and kLayerNormF16ShareInstructions to
// combine its lanes and store them), then each adds the six shares' sums
// (kLayerNormF16CombineInstructions), takes the row's 40 and normalises its
// share; each run ends in a barrier.
inline constexpr std::uint64_t kLayerNormF16StatisticsPerPair = 2;
inline constexpr std::uint64_t kLayerNormF16NormalisePerPair = 4;
inline constexpr std::uint64_t kLayerNormF16RowInstructions = 40;
inline constexpr std::uint64_t kLayerNormF16ShareInstructions = 8;
inline constexpr std::uint64_t kLayerNormF16CombineInstructions = 2 * 6 + 4;

constexpr std::uint64_t layer_norm_rows_f16_cycles(std::uint64_t rows,
                                                   std::uint64_t columns) noexcept {
  const std::uint64_t pairs = (columns + 1) / 2;
  if (layer_norm_rows_f16_splits_rows(rows, columns, kWorkerCount)) {
    const std::uint64_t per_row = saturating_add(
        saturating_mul(pairs, kLayerNormF16StatisticsPerPair + kLayerNormF16NormalisePerPair),
        kLayerNormF16RowInstructions);
    const std::uint64_t unit = columns % 2 == 0 ? 1 : 2;  // rows per share
    const std::uint64_t mine =
        std::min(rows, saturating_mul(worker_share((rows + unit - 1) / unit, 0), unit));
    return kKernelLaunchCycles + kWorkerBarrierCycles +
           saturating_mul(kWorkerCount, saturating_mul(mine, per_row));
  }
  // Worker 0 holds the largest share (the first ones are one word longer).
  const std::uint64_t share_pairs = worker_share(pairs, 0);
  const std::uint64_t sums = saturating_add(
      saturating_mul(share_pairs, kLayerNormF16StatisticsPerPair), kLayerNormF16ShareInstructions);
  const std::uint64_t normalise =
      saturating_add(saturating_mul(share_pairs, kLayerNormF16NormalisePerPair),
                     kLayerNormF16CombineInstructions + kLayerNormF16RowInstructions);
  return kKernelLaunchCycles + saturating_mul(2 * rows, kWorkerBarrierCycles) +
         saturating_mul(kWorkerCount, saturating_mul(rows, saturating_add(sums, normalise)));
}

}  // namespace tessera::kernels
