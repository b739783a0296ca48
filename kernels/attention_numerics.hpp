#pragma once
// The one f32 → f16 rounding of the attention kernels: every f16 they
// produce goes through AttentionRounding::to_f16. Their exponential is not
// defined here: e^x is kernels/activation_math.hpp's exp_f32 (the merge's
// rescaling factors), and the softmax's f16 exponential of an f16 t is
// exp_f16 there — exp_f32(t) rounded once to f16 under round to nearest even
// (f16v2exp's accuracy is not documented [INF]), looked up in
// exp_f16_nearest_table().
//
// Rounding. AttentionRounding is kernels/rounding.hpp's F16Rounding under a
// mode and a worker's stream. Round to nearest, ties to even (half.hpp) is
// the default and the only bit-exact mode. Stochastic rounding — which the
// device's attention_f32_to_f16 sets (kernels-siglip-f143.md §2) — takes one
// draw per rounded value from the stream of the worker that owns the element,
// out of the tile's per-(tile, worker) generator (KernelCall::prng; not the
// IPU's, so not bit-identical to silicon). The softmax does not set SR on the
// device (it inherits $FP_ICTL, presumably with ESR clear, §2) [INF]: it
// always rounds to nearest even. Any NaN becomes the canonical quiet NaN
// 0x7E00 (the IPU's NaN payloads are unknown [INF], as for the GEMM and the
// float kernels).

#include <cstdint>
#include <span>

#include "kernels/kernel_abi.hpp"
#include "kernels/rounding.hpp"

namespace tessera::kernels {

class AttentionRounding {
 public:
  // Round to nearest even, whatever the call's mode (the softmax).
  explicit AttentionRounding(std::uint32_t tile) noexcept
      : mode_(Rounding::kNearestEven), tile_(tile) {}
  // The call's mode; stochastic rounding draws from the call's tile streams
  // (a stochastic call without them is a harness bug: std::logic_error).
  explicit AttentionRounding(KernelCall& call) noexcept
      : mode_(call.rounding), tile_(call.tile), call_(&call) {}

  // The f16 that `value` becomes, rounded on behalf of worker `worker`
  // (0..5) of the tile: one draw of that worker's stream when stochastic
  // (NaNs included, so the number of draws never depends on the data).
  std::uint16_t to_f16(float value, unsigned worker) const {
    return F16Rounding(mode_, stream(worker)).round_result(value);
  }

  // values[i] → out[i] for every i (the sizes must match), in order, all on
  // behalf of `worker`: the same bits as to_f16 one value at a time. Under
  // round to nearest even it is kernels/f16_vector.hpp's narrow_f16 (F16C
  // where the host has it) with NaNs made canonical; a stochastic call
  // rounds one value at a time, drawing in index order.
  void to_f16(std::span<const float> values, std::span<std::uint16_t> out, unsigned worker) const;

  Rounding mode() const noexcept { return mode_; }
  std::uint32_t tile() const noexcept { return tile_; }

 private:
  RandomStream* stream(unsigned worker) const {
    return call_ == nullptr ? nullptr : worker_stream(*call_, worker);
  }

  Rounding mode_;
  std::uint32_t tile_;
  KernelCall* call_ = nullptr;  // the streams' owner, for stochastic rounding
};

}  // namespace tessera::kernels
