// AttentionRounding's batch form (kernels/attention_numerics.hpp).
#include "kernels/attention_numerics.hpp"

#include <algorithm>

#include "kernels/f16_vector.hpp"
#include "kernels/half.hpp"

namespace tessera::kernels {

void AttentionRounding::to_f16(std::span<const float> values, std::span<std::uint16_t> out,
                               unsigned worker) const {
  const std::size_t count = std::min(values.size(), out.size());
  if (mode_ == Rounding::kNearestEven) {
    narrow_f16(values.data(), out.data(), count);
    for (std::size_t i = 0; i < count; ++i) {
      if (f16_is_nan(out[i])) out[i] = kF16QuietNan;
    }
    return;
  }
  F16Rounding rounding(mode_, stream(worker));
  for (std::size_t i = 0; i < count; ++i) out[i] = rounding.round_result(values[i]);
}

}  // namespace tessera::kernels
