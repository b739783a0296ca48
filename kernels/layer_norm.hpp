#pragma once
// LayerNorm kernels' symbol names and registration (ABIs in kernels/README.md
// and kernels/layer_norm.cpp), and the one encoding of their ε, which the
// compiler uses to set the register and the models use to read it.
//
// Numerics (kernels-siglip-f143.md §2, the device's LayerNorm), per row of
// `columns` logical f16 values x with affine γ, β (f16) and ε:
//  1. Σx and Σx² in f32, in four lanes — lane j sums the columns c ≡ j
//     (mod 4) in increasing c (x² is exact in f32) — combined as
//     (l0 + l1) + (l2 + l3) [INF: the lane count is the reference's, the
//     combination order ours].
//  2. mean = Σx / columns and var = Σx² / columns − mean·mean in f32 (one
//     pass), clamped to ≥ 0 (a NaN stays NaN).
//  3. mean and 1/√(var + ε) (f32 square root and division) rounded to f16.
//  4. y = ((x − mean)·rstd)·γ + β, each operation in f16 (one rounding each)
//     [INF: the order of the four operations].
// The fused kernel first forms residual' = residual + right in f16 and writes
// it back to the residual, then normalises residual'. Every f16 rounding is
// under the call's mode (the device's LayerNorm sets ESR); NaN results are the
// canonical 0x7E00.
//
// ε travels as Q30 fixed point in a register: round(ε·2^30), so SigLIP's 1e−6
// is 1074, i.e. 1.00024e−6 (the prior art's encoding, rowwise.rs).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernels/registry.hpp"

namespace tessera::kernels {

inline constexpr std::string_view kLayerNormF16 = "tessera_layer_norm_f16";
inline constexpr std::string_view kAddLayerNormF16 = "tessera_add_layer_norm_f16";

void add_layer_norm_kernels(KernelRegistry& registry);

// Steps 1–4 to nearest on one row of n values (x: the f16 row widened to
// f32; γ, β likewise): out ← the row's f16 results, NaNs canonical. The A16
// kernels and tessera_layer_norm_rows_f16 (row_normalisation.hpp) on whole
// rows both run it, so their bits are the same.
void layer_norm_f16_row(const float* x, std::size_t n, const float* gamma, const float* beta,
                        float epsilon, std::uint16_t* out);

// The same with step 1 summed in column shares (layer_norm_rows.hpp): each of
// `workers` shares' Σx and Σx² in four lanes by position in the share,
// combined (l0 + l1) + (l2 + l3), the shares' sums added in worker order from
// +0; then steps 2–4. tessera_layer_norm_rows_f16 runs it on calls of fewer
// rows than workers of an even length (n even): their bits may differ from
// the A16 kernels' in the last place of a sum.
void layer_norm_f16_row_in_shares(const float* x, std::size_t n, const float* gamma,
                                  const float* beta, float epsilon, std::uint16_t* out,
                                  std::uint32_t workers);

inline constexpr int kEpsilonFractionBits = 30;

// ε → its register value round(ε·2^30), halves away from zero. ε must be
// finite and in [0, (2^32 − 1)·2^−30] (std::invalid_argument otherwise).
std::uint32_t epsilon_q30(double epsilon);
// The f32 ε a call adds: q·2^−30 (q rounded to f32 to nearest, exact below 2^24).
float epsilon_value(std::uint32_t q30) noexcept;

}  // namespace tessera::kernels
