#pragma once
// How close a tower's outputs are to the reference's: the figures
// `tessera siglip run --reference` prints and the acceptance bounds are
// stated in (cosine similarity and max abs error, in f64).

#include <span>

namespace tessera::models::siglip {

struct Agreement {
  double cosine = 0;         // of the two outputs as flat vectors (1 when both are all zero)
  double max_abs_error = 0;  // max |got − expected|
  bool finite = true;        // every value of `got` is finite
};

// UsageError when the sizes differ.
Agreement compare_outputs(std::span<const float> got, std::span<const float> expected);

}  // namespace tessera::models::siglip
