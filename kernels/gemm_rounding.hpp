#pragma once
// The one rounding of the GEMM kernels: every f16 partial (after each AMP
// pass) and every f16 result of the hiho families goes through
// GemmRounding::to_f16. The f32 family rounds only in its f32 adds; the
// prior art's f32 kernel did not set stochastic rounding (§2) [INF].
//
// Round to nearest, ties to even, is the default and the only bit-exact mode.
// Stochastic rounding — the device runs its f16/F143 GEMMs with ESR set —
// draws from the tile's deterministic per-worker generator
// (kernels/rounding.hpp), one draw per rounded partial. The models take
// their vector fast path only when nearest_even() holds (its conversion
// instruction is RNE), so stochastic rounding runs the scalar path, which
// calls to_f16 for every partial, on the worker that owns the row.
//
// Any NaN becomes the canonical quiet NaN 0x7E00: the IPU's NaN payloads are
// unknown [INF], as for the float kernels (float_arith.hpp).

#include <cstdint>

#include "kernels/half.hpp"
#include "kernels/kernel_abi.hpp"
#include "kernels/rounding.hpp"

namespace tessera::kernels {

class GemmRounding {
 public:
  // Round to nearest even (no generator needed).
  GemmRounding(Rounding mode, std::uint32_t tile) noexcept : mode_(mode), tile_(tile) {}
  // The call's mode; stochastic rounding draws from the call's tile streams.
  explicit GemmRounding(KernelCall& call) noexcept
      : mode_(call.rounding), tile_(call.tile), call_(&call) {}

  // The f16 an f32 partial becomes, rounded on behalf of worker `worker`
  // (0..5) of the tile.
  std::uint16_t to_f16(float partial, unsigned worker) const {
    if (mode_ == Rounding::kStochastic && call_ != nullptr) {
      return F16Rounding(mode_, worker_stream(*call_, worker)).round_result(partial);
    }
    const std::uint16_t h = f32_to_f16(partial);
    return f16_is_nan(h) ? kF16QuietNan : h;
  }

  // Whether to_f16 is round-to-nearest-even for this call, so that a vector
  // conversion with the same rounding gives the same bits.
  bool nearest_even() const noexcept { return mode_ == Rounding::kNearestEven; }

  Rounding mode() const noexcept { return mode_; }
  std::uint32_t tile() const noexcept { return tile_; }

 private:
  Rounding mode_;
  std::uint32_t tile_;
  KernelCall* call_ = nullptr;  // the streams' owner, for stochastic rounding
};

}  // namespace tessera::kernels
