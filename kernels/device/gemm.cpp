// Device sources of the AMP GEMM family (host models and ABI: kernels/gemm.hpp,
// gemm.cpp, gemm_core.cpp; semantics and error bound: kernels/README.md "GEMM";
// layouts: kernels/amp_layout.hpp, the one owner):
//   tessera_gemm_{f32,f16,f16_expanded_f143,f143}_{init,accumulate}:
//   $m2 C (C16), $m3 A (A_m), $m4 B (B_m×16), $m5 rows, $m6 K (padded, a
//   multiple of the pass m), $m7 N, $m8 ISCL (F143 only, signed).
//
// The portable part is the algorithm the models define, per output element:
// the accumulator starts at +0 (init) or C's partial (accumulate, widened
// exactly), adds the products a·b in K order with one f32 rounding each
// (f32: each product rounded to f32 first; f16 and F143: products are exact
// in f32), and — the "hiho" families — rounds to f16 (nearest even) after
// every pass of m = 16 (f16) or 32 (F143) K values, going on from that f16;
// F143 products are decode(a)·decode(b)·2^ISCL. NaN results are canonical.
// Rows go to the workers balanced contiguous (the model's partition).
// rows = 0 touches nothing.
//
// Not here: the device fast path. On silicon each (column group, pass) is
// one supervisor step — 512 bytes of weights into the CWEI registers
// (ld64putcs, ld128putcs for the expanded family's interleaved weights), a
// runall whose workers stream their rows through f32sisov2amp /
// f16v4hihov4amp / f8v8hihov4amp with paced loads (ld2x64pace: A and the C
// partials from two memory elements), FP_INFMT and ISCL set — the prior
// art's gemm_f16_64_amp.S structure (docs/reference/kernels-siglip-f143.md
// §1.1). That assembly is not written yet: under __IPU__ this source builds
// the portable loop, correct but without the AMP. The AMP's summation order
// inside a pass is unknown [INF]; silicon is expected to match the model
// within the hiho bound, not bit for bit.
#include "kernels/amp_layout.hpp"
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/device_math.hpp"

namespace tessera::device {
namespace {

namespace amp = ::tessera::kernels::amp;

// F143 code → its value · 2^scale, exact in f32 (≤ 4 significant bits,
// exponents in [−45, 35]); the NaN code 0x80 → NaN.
float f143_value(std::uint8_t code, int scale) {
  if (code == 0x80) return f32_from_bits(kF32CanonicalNan);
  const std::uint32_t e = (code >> 3) & 0xFu;
  const std::uint32_t q = e == 0 ? (code & 0x7u) : 8 + (code & 0x7u);
  const int k = (e == 0 ? -10 : static_cast<int>(e) - 11) + scale;
  const float magnitude = static_cast<float>(q) * exact_power_of_two(k);
  return (code & 0x80u) != 0 ? -magnitude : magnitude;
}

struct F32Family {
  using Left = std::uint32_t;
  using Weight = std::uint32_t;
  using Output = std::uint32_t;
  static constexpr std::uint32_t kPass = 8;
  static constexpr bool kHiho = false;
  static float left(Left a, int) { return f32_from_bits(a); }
  static float weight(Weight b, int) { return f32_from_bits(b); }
  static float partial(Output c) { return f32_from_bits(c); }
};
struct F16Family {
  using Left = std::uint16_t;
  using Weight = std::uint16_t;
  using Output = std::uint16_t;
  static constexpr std::uint32_t kPass = 16;
  static constexpr bool kHiho = true;
  static float left(Left a, int) { return f32_from_bits(widen_f16(a)); }
  static float weight(Weight b, int) { return f32_from_bits(widen_f16(b)); }
  static float partial(Output c) { return f32_from_bits(widen_f16(c)); }
};
struct F143Family {
  using Left = std::uint8_t;
  using Weight = std::uint8_t;
  using Output = std::uint16_t;
  static constexpr std::uint32_t kPass = 32;
  static constexpr bool kHiho = true;
  static float left(Left a, int) { return f143_value(a, 0); }
  static float weight(Weight b, int iscl) { return f143_value(b, iscl); }
  static float partial(Output c) { return f32_from_bits(widen_f16(c)); }
};

template <typename F, bool kInit>
void gemm(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[5], inner = r[6], columns = r[7];
  const Share mine = balanced_share(rows, worker);
  if (mine.count == 0) return;
  const int iscl = static_cast<std::int32_t>(r[8]);
  const auto a = memory.array<const typename F::Left>(r[3], rows * inner);
  const auto b = memory.array<const typename F::Weight>(r[4], inner * columns);
  const auto c = memory.array<typename F::Output>(r[2], rows * columns);
  const std::uint32_t passes = inner / F::kPass;
  for (std::uint32_t row = mine.first; row < mine.first + mine.count; ++row) {
    for (std::uint32_t n = 0; n < columns; ++n) {
      const auto at = static_cast<std::uint32_t>(amp::output_offset(row, n, rows));
      float acc = kInit ? 0.0f : F::partial(c[at]);
      for (std::uint32_t p = 0; p < passes; ++p) {
        for (std::uint32_t k = p * F::kPass; k < (p + 1) * F::kPass; ++k) {
          const float x =
              F::left(a[static_cast<std::uint32_t>(amp::left_offset(row, k, rows, F::kPass))], 0);
          const float y = F::weight(
              b[static_cast<std::uint32_t>(amp::weight_offset(k, n, inner, F::kPass))], iscl);
          const float product = x * y;  // f32: rounded; f16, F143: exact
          acc = acc + product;
        }
        if constexpr (F::kHiho) {
          const std::uint16_t partial = narrow_f32(canonical_f32(acc));
          if (p + 1 == passes) {
            c[at] = partial;
          } else {
            acc = f32_from_bits(widen_f16(partial));
          }
        }
      }
      if constexpr (!F::kHiho) c[at] = canonical_f32(acc);
    }
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_gemm_f32_init,
                      (::tessera::device::gemm<::tessera::device::F32Family, true>))
TESSERA_DEVICE_KERNEL(tessera_gemm_f32_accumulate,
                      (::tessera::device::gemm<::tessera::device::F32Family, false>))
TESSERA_DEVICE_KERNEL(tessera_gemm_f16_init,
                      (::tessera::device::gemm<::tessera::device::F16Family, true>))
TESSERA_DEVICE_KERNEL(tessera_gemm_f16_accumulate,
                      (::tessera::device::gemm<::tessera::device::F16Family, false>))
// The expanded family is the f16 arithmetic on weights an expand wrote; only
// the device's weight stream (ld128putcs from interleaved memory) differs.
TESSERA_DEVICE_KERNEL(tessera_gemm_f16_expanded_f143_init,
                      (::tessera::device::gemm<::tessera::device::F16Family, true>))
TESSERA_DEVICE_KERNEL(tessera_gemm_f16_expanded_f143_accumulate,
                      (::tessera::device::gemm<::tessera::device::F16Family, false>))
TESSERA_DEVICE_KERNEL(tessera_gemm_f143_init,
                      (::tessera::device::gemm<::tessera::device::F143Family, true>))
TESSERA_DEVICE_KERNEL(tessera_gemm_f143_accumulate,
                      (::tessera::device::gemm<::tessera::device::F143Family, false>))
