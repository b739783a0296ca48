#include "kernels/activation_math.hpp"

#include "kernels/half.hpp"

namespace tessera::kernels {

std::uint16_t exp_f16(std::uint16_t x, F16Rounding& rounding) noexcept {
  return rounding.round_result(exp_f32(f16_to_f32(x)));
}

std::uint16_t tanh_f16(std::uint16_t x, F16Rounding& rounding) noexcept {
  return rounding.round_result(tanh_f32(f16_to_f32(x)));
}

std::uint16_t gelu_f16(std::uint16_t x, F16Rounding& rounding) noexcept {
  constexpr std::uint16_t kOne = 0x3C00;
  constexpr std::uint16_t kHalf = 0x3800;
  const std::uint16_t x2 = rounding.mul(x, x);
  const std::uint16_t x3 = rounding.mul(x2, x);
  const std::uint16_t a = rounding.mul(kGeluF16C1, x3);
  const std::uint16_t u = rounding.add(x, a);
  const std::uint16_t v = rounding.mul(kGeluF16C0, u);
  const std::uint16_t t = tanh_f16(v, rounding);
  const std::uint16_t s = rounding.add(kOne, t);
  const std::uint16_t h = rounding.mul(kHalf, x);
  return rounding.mul(h, s);
}

const std::array<std::uint16_t, 65536>& gelu_f16_nearest_table() {
  static const std::array<std::uint16_t, 65536> table = [] {
    std::array<std::uint16_t, 65536> result{};
    F16Rounding nearest(Rounding::kNearestEven, nullptr);
    for (std::uint32_t h = 0; h < result.size(); ++h) {
      result[h] = gelu_f16(static_cast<std::uint16_t>(h), nearest);
    }
    return result;
  }();
  return table;
}

}  // namespace tessera::kernels
