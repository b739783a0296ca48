#pragma once
// The arithmetic of the AMP GEMM models (kernels/gemm.cpp feeds it), one
// 16-column group of one call at a time, with a scalar path and a vector
// path (AVX2 + FMA + F16C, chosen at run time) that give the same bits.
//
// The modelled AMP order [INF: the reference does not say how the AMP sums
// inside a pass]: for each output element, the accumulator starts from the
// partial (+0 for the init variant's first pass; C's value, widened
// exactly, otherwise) and adds the products in K order, one IEEE f32 add
// each. Then
// - hiho (f16, F143): after every pass of `pass` products the accumulator is
//   rounded to f16 (GemmRounding) and the next pass starts from that f16.
//   Every product is exact in f32 (f16·f16 has ≤ 22 significant bits and
//   ≥ 2^−48; F143·F143·2^ISCL has ≤ 8 and ≥ 2^−52), so a fused multiply-add
//   and a separate multiply and add give the same bits: the vector path uses
//   FMA, the scalar path plain arithmetic.
// - f32: each product is rounded to f32, then added: never fused (the
//   kernels library is built with -ffp-contract=off, and the vector path
//   multiplies and adds separately).
// Any NaN result is the canonical quiet NaN.
//
// Operands, all in f32 (the model widens f16 and decodes F143 first):
// - left: A in its A_d layout (d = pass, amp::left_offset), rows × inner;
// - weights: the group's weight panels transposed to [inner][16], entry
//   (k, c) being B's value for load channel c (logical column σ(c));
// - out: the group's C16 panel, rows × 16, row stride 16, element c of a row
//   being physical column c — the column channel c computes.

#include <cstdint>
#include <span>

#include "kernels/gemm_rounding.hpp"
#include "kernels/kernel_span.hpp"

namespace tessera::kernels::gemm {

enum class Path : std::uint8_t { kScalar, kVector };

// Whether this host runs the vector path (x86-64 with AVX2, FMA and F16C).
bool vector_path_available() noexcept;

struct ColumnGroup {
  std::span<const float> left;     // rows × inner, A_d layout
  std::span<const float> weights;  // inner × 16
  std::uint32_t rows = 0;
  std::uint32_t inner = 0;  // a multiple of pass
  std::uint32_t pass = 0;   // 16 (f16) or 32 (F143); 8 for f32 (layout only)
  bool init = false;        // start from +0, not from `out`
};

// hiho: out holds f16 partials (read unless init) and receives f16 results.
// The vector path needs rounding.nearest_even().
void hiho_column_group(const ColumnGroup& group, KernelSpan<std::uint16_t> out,
                       const GemmRounding& rounding, Path path);

// f32 partials and results.
void f32_column_group(const ColumnGroup& group, KernelSpan<float> out, Path path);

// f16 bits → f32, exactly.
void widen_f16(std::span<const std::uint16_t> in, std::span<float> out, Path path);

}  // namespace tessera::kernels::gemm
