#include "models/siglip/compare.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::models::siglip {

Agreement compare_outputs(std::span<const float> got, std::span<const float> expected) {
  if (got.size() != expected.size()) {
    throw UsageError(fmt::format("cannot compare {} values with {}", got.size(), expected.size()));
  }
  Agreement result;
  double dot = 0, got_norm = 0, expected_norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = expected[i];
    if (!std::isfinite(a)) result.finite = false;
    dot += a * b;
    got_norm += a * a;
    expected_norm += b * b;
    result.max_abs_error = std::max(result.max_abs_error, std::abs(a - b));
  }
  result.cosine = got_norm == 0 && expected_norm == 0 ? 1.0 : dot / std::sqrt(got_norm * expected_norm);
  return result;
}

}  // namespace tessera::models::siglip
