#pragma once
// Bulk f16 <-> f32 conversion for the host models: the same bits as
// half.hpp's scalar conversions for every input (NaN payloads included), so
// results never depend on the host. When the host has AVX2 and F16C (checked
// at run time, never assumed at build time), the conversions use the F16C
// instructions, whose round-to-nearest-even agrees with half.hpp on every
// non-NaN value; NaN lanes, where F16C quiets signalling NaNs, fall back to
// the scalar rule. The arithmetic between conversions is plain f32 code,
// which is IEEE-exact whether or not the compiler vectorises it: the kernels
// library builds with -ffp-contract=off and no FMA target, so no
// multiply-add is ever fused.

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {

// out[i] = the f32 value of f16 in[i] (exact).
void widen_f16(const std::uint16_t* in, float* out, std::size_t count) noexcept;
// out[i] = in[i] rounded to f16, to nearest even (half.hpp's f32_to_f16).
void narrow_f16(const float* in, std::uint16_t* out, std::size_t count) noexcept;
// Every value replaced by its f16 rounding (to nearest even), as an f32; a
// NaN stays a NaN of unspecified payload.
void round_to_f16_grid(float* values, std::size_t count) noexcept;
// out[i] = a[i] + b[i] by float_arith.hpp's rule (add_f16_bits: IEEE binary16
// addition, any NaN result the canonical 0x7E00). `out` may be `a` or `b`
// exactly (an in-place residual add), but not overlap them otherwise.
void add_f16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out,
             std::size_t count) noexcept;
// Every NaN replaced by the canonical quiet NaN 0x7FC00000, which narrows to
// the f16 quiet NaN 0x7E00 (float_arith.hpp's rule for arithmetic results).
void canonicalize_nans(float* values, std::size_t count) noexcept;

// LayerNorm's affine step on f16 values held as f32 (kernels/layer_norm.hpp):
// out[i] = (((x[i] − m)·s)·g[i]) + b[i], each of the four operations rounded
// to nearest even f16, any NaN result the canonical 0x7E00.
void normalise_affine_f16(const float* x, float m, float s, const float* g, const float* b,
                          std::uint16_t* out, std::size_t count) noexcept;

namespace f16_vector_detail {
// The two implementations, for tests that compare them on the same inputs.
bool host_has_f16c() noexcept;
void widen_scalar(const std::uint16_t* in, float* out, std::size_t count) noexcept;
void narrow_scalar(const float* in, std::uint16_t* out, std::size_t count) noexcept;
void round_scalar(float* values, std::size_t count) noexcept;
void add_scalar(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out,
                std::size_t count) noexcept;
void normalise_affine_scalar(const float* x, float m, float s, const float* g, const float* b,
                             std::uint16_t* out, std::size_t count) noexcept;
// Only when host_has_f16c().
void normalise_affine_f16c(const float* x, float m, float s, const float* g, const float* b,
                           std::uint16_t* out, std::size_t count) noexcept;
void widen_f16c(const std::uint16_t* in, float* out, std::size_t count) noexcept;
void narrow_f16c(const float* in, std::uint16_t* out, std::size_t count) noexcept;
void round_f16c(float* values, std::size_t count) noexcept;
void add_f16c(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out,
              std::size_t count) noexcept;
}  // namespace f16_vector_detail

}  // namespace tessera::kernels
