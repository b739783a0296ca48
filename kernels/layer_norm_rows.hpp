#pragma once
// How tessera_layer_norm_rows_f16 (row_normalisation.hpp) shares a call's
// work among the workers: the one rule its host model's cost and its device
// source (kernels/device/row_normalisation.cpp) both follow. Header-only and
// free of host types, so the device source can include it.
//
// With at least one row per worker, or rows of odd length (whose words
// straddle rows, and no two workers may store into one word), each worker
// takes whole rows; with fewer rows of an even length — SigLIP's activations
// lie one row per tile — every worker computes each row's statistics itself
// and normalises its share of the row's words.

#include <cstdint>

namespace tessera::kernels {

constexpr bool layer_norm_rows_f16_splits_rows(std::uint64_t rows, std::uint64_t columns,
                                               std::uint64_t workers) noexcept {
  return rows >= workers || columns % 2 != 0;
}

}  // namespace tessera::kernels
