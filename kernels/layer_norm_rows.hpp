#pragma once
// How tessera_layer_norm_rows_f16 (row_normalisation.hpp) shares a call's
// work among the workers: the one rule its host model, its cost and its
// device source (kernels/device/layer_norm.cpp) all follow. Header-only and
// free of host types, so the device source can include it.
//
// With at least one row per worker, or rows of odd length (whose words
// straddle rows, and no two workers may store into one word), each worker
// takes whole rows. With fewer rows of an even length — SigLIP's activations
// lie one row per tile — every row is cut into the workers' column shares
// (layer_norm_rows_f16_share: whole words, balanced contiguous): each worker
// sums its share of the row (Σx and Σx² in four lanes by position in the
// share, combined (l0 + l1) + (l2 + l3)), the six share sums are added in
// worker order from +0, and each worker normalises its share with the row's
// statistics (layer_norm.hpp steps 2–4). The device does it in two worker
// runs, the sums between them; one worker summing the whole row would leave
// five idle for most of the call.

#include <cstdint>

namespace tessera::kernels {

constexpr bool layer_norm_rows_f16_splits_rows(std::uint64_t rows, std::uint64_t columns,
                                               std::uint64_t workers) noexcept {
  return rows >= workers || columns % 2 != 0;
}

// Worker `worker`'s columns [first, first + count) of a row of `columns`
// (even) when a call cuts its rows into column shares: the row's words
// balanced contiguous over `workers`, the first ones one word longer.
struct ColumnShare {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};
constexpr ColumnShare layer_norm_rows_f16_share(std::uint32_t columns, std::uint32_t workers,
                                                std::uint32_t worker) noexcept {
  const std::uint32_t words = columns / 2;
  const std::uint32_t each = words / workers, extra = words % workers;
  const std::uint32_t first_word = worker * each + (worker < extra ? worker : extra);
  const std::uint32_t count_words = each + (worker < extra ? 1u : 0u);
  return ColumnShare{2 * first_word, 2 * count_words};
}

}  // namespace tessera::kernels
