#pragma once
// The one f32 → f16 rounding of the attention kernels: every f16 they
// produce goes through AttentionRounding::to_f16. Their exponential is not
// defined here: e^x is kernels/activation_math.hpp's exp_f32 (the merge's
// rescaling factors), and the softmax's f16 exponential of an f16 t is
// exp_f16 there — exp_f32(t) rounded once to f16 under round to nearest even
// (f16v2exp's accuracy is not documented [INF]), looked up in
// exp_f16_nearest_table().
//
// Rounding. Round to nearest, ties to even (half.hpp) is the default and the
// only bit-exact mode. Stochastic rounding — which the device's
// attention_f32_to_f16 sets (§2) — plugs in at AttentionRounding::to_f16,
// which receives the worker that owns the element; until it draws from the
// per-(tile, worker) generator (kernels/rounding.hpp), Rounding::kStochastic
// rounds to nearest even as well. The softmax does not set SR on the device
// (it inherits $FP_ICTL, presumably with ESR clear, §2) [INF]: it always
// rounds to nearest even. Any NaN becomes the canonical quiet NaN 0x7E00 (the
// IPU's NaN payloads are unknown [INF], as for the GEMM and the float
// kernels).

#include <cstdint>
#include <span>

#include "kernels/half.hpp"
#include "kernels/kernel_abi.hpp"

namespace tessera::kernels {

// The one f32 → f16 rounding of the attention kernels.
class AttentionRounding {
 public:
  AttentionRounding(Rounding mode, std::uint32_t tile) noexcept : mode_(mode), tile_(tile) {}

  // The f16 that `value` becomes, rounded on behalf of worker `worker`
  // (0..5) of the tile (the stochastic generator's stream).
  std::uint16_t to_f16(float value, unsigned worker) const noexcept {
    (void)worker;
    const std::uint16_t h = f32_to_f16(value);
    return f16_is_nan(h) ? kF16QuietNan : h;
  }

  // values[i] → out[i] for every i (the sizes must match), in order, all on
  // behalf of `worker`: the same bits as to_f16 one value at a time. Under
  // round to nearest even it uses the host's F16C conversion when the host
  // has one (chosen at run time; its result equals half.hpp's for every
  // non-NaN f32, and NaNs are made canonical either way); a stochastic call
  // rounds one value at a time.
  void to_f16(std::span<const float> values, std::span<std::uint16_t> out,
              unsigned worker) const noexcept;

  Rounding mode() const noexcept { return mode_; }
  std::uint32_t tile() const noexcept { return tile_; }

 private:
  Rounding mode_;
  std::uint32_t tile_;
};

}  // namespace tessera::kernels
