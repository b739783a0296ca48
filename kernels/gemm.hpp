#pragma once
// The AMP GEMM kernels (kernels-siglip-f143.md §1.1, §1.2, §2, §3): one call
// computes one output block C (rows × N) from a left block A (rows × K) and a
// weight block B (K × N) with one tile's AMP, in the device's layouts
// (kernels/amp_layout.hpp) and numerics (ARCHITECTURE.md decision 12).
//
// Families; a "pass" is the K depth one AMP pass consumes, which is also the
// inner panel width m of the A_m and B_m×16 layouts:
//   f32                f32sisov2amp   A8 f32  / B8×16 f32  / C16 f32, pass 8:
//                      f32 partials.
//   f16                f16v4hihov4amp A16 f16 / B16×16 f16 / C16 f16, pass 16:
//                      f32 inside a pass, f16 partials between passes and
//                      between calls (the device's "hiho").
//   f16_expanded_f143  the f16 GEMM reading its weights from interleaved
//                      memory with ld128putcs: the B16×16 f16 block that
//                      expand_f143_to_f16 calls (one per 64 × 64 scale block)
//                      wrote there. Same numerics as f16, cheaper weight loads.
//   f143               f8v8hihov4amp  A32 F143 / B32×16 F143 / C16 f16, pass
//                      32: hiho with products a·b·2^ISCL, ISCL = activation
//                      scale + weight scale.
// Each family has an init variant (C = A·B) and an accumulate variant
// (C += A·B: C's partials are read first). The semantics, the error bound of
// the hiho families and the costs are documented in kernels/README.md.
//
// Register ABI (every family):
//   $m2 C, $m3 A, $m4 B, $m5 rows, $m6 K, $m7 N,
//   $m8 ISCL (f143 only: signed 32-bit, in [−32, 31]).
// K is the padded inner extent, a multiple of the pass: the producer pads
// A's and B's K with zeros (finite padding: the AMP multiplies it, reference
// H8). rows = 0 is legal zero work and touches nothing; otherwise 12 ≤ rows ≤
// gemm_maximum_rows (§1.1, review-findings #5).

#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/f143.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {

inline constexpr std::string_view kGemmF32Init = "tessera_gemm_f32_init";
inline constexpr std::string_view kGemmF32Accumulate = "tessera_gemm_f32_accumulate";
inline constexpr std::string_view kGemmF16Init = "tessera_gemm_f16_init";
inline constexpr std::string_view kGemmF16Accumulate = "tessera_gemm_f16_accumulate";
inline constexpr std::string_view kGemmF16ExpandedF143Init = "tessera_gemm_f16_expanded_f143_init";
inline constexpr std::string_view kGemmF16ExpandedF143Accumulate =
    "tessera_gemm_f16_expanded_f143_accumulate";
inline constexpr std::string_view kGemmF143Init = "tessera_gemm_f143_init";
inline constexpr std::string_view kGemmF143Accumulate = "tessera_gemm_f143_accumulate";

// Registers every GEMM kernel (kernels/gemm.cpp).
void add_gemm_kernels(KernelRegistry& registry);

enum class GemmFamily : std::uint8_t { kF32, kF16, kF16ExpandedF143, kF143 };
enum class GemmVariant : std::uint8_t { kInit, kAccumulate };

inline constexpr unsigned kGemmOutputRegister = 2;   // $m2 C
inline constexpr unsigned kGemmLeftRegister = 3;     // $m3 A
inline constexpr unsigned kGemmWeightRegister = 4;   // $m4 B
inline constexpr unsigned kGemmRowsRegister = 5;     // $m5 rows
inline constexpr unsigned kGemmInnerRegister = 6;    // $m6 K
inline constexpr unsigned kGemmColumnsRegister = 7;  // $m7 N
inline constexpr unsigned kGemmScaleRegister = 8;    // $m8 ISCL (f143)

// The facts of one family's memory ABI (§1.1, §1.2).
struct GemmFormat {
  std::string_view name;      // "f32", "f16", …
  unsigned left_bytes;        // bytes of one A element
  unsigned weight_bytes;      // bytes of one B element
  unsigned output_bytes;      // bytes of one C element
  unsigned pass;              // K depth of one AMP pass = inner panel width
  unsigned left_tail_bytes;   // bytes the AMP's priming loads read past A
  unsigned weight_alignment;  // 16 for ld128putcs, else 8
  bool interleaved_weights;   // B must lie in interleaved memory (ld128putcs)
};

constexpr GemmFormat gemm_format(GemmFamily family) noexcept {
  switch (family) {
    case GemmFamily::kF32:
      return {"f32", 4, 4, 4, 8, 32, 8, false};
    case GemmFamily::kF16:
      return {"f16", 2, 2, 2, 16, 16, 8, false};
    case GemmFamily::kF16ExpandedF143:
      return {"f16 (expanded F143 weights)", 2, 2, 2, 16, 16, 16, true};
    case GemmFamily::kF143:
      return {"F143", 1, 1, 2, 32, 16, 8, false};
  }
  return {};
}

// The output widths a family computes: 32, 64 or 128 columns, and only 64 for
// f32 (its device kernel is specialised on 64, §1.2). The f16 family also
// computes every other multiple of 16 up to 128: its device kernel is
// specialised on GEMM_OUTPUT_COLUMNS, a multiple of 16, and the prior art
// built its attention QK (N = key block columns, 96 for SigLIP's 92-row key
// blocks) and PV (N = padded head dimension, 80) from the same source (§1.1,
// §1.4; kernels/attention.hpp).
constexpr bool gemm_columns_supported(GemmFamily family, std::uint32_t columns) noexcept {
  if (family == GemmFamily::kF32) return columns == 64;
  if (family == GemmFamily::kF16) return columns != 0 && columns % 16 == 0 && columns <= 128;
  return columns == 32 || columns == 64 || columns == 128;
}

// Row limits (§1.1). The minimum: six workers split the rows balanced
// contiguous and each needs two, or the device's worker loop count wraps
// (f32: rpt rows_per_worker − 2; f16/F143: the planner's 12-row shard minimum
// for the same pipeline). The maximum: the A block arrives in one exchange
// transfer of ≤ 4148 words, and C fits the 32 KiB interleaved operand window.
inline constexpr std::uint32_t kGemmMinimumRows = 12;
std::uint32_t gemm_maximum_rows(GemmFamily family, std::uint32_t inner, std::uint32_t columns);

// Footprints: the bytes each operand's pointer may touch, the one definition
// the compiler's allocation check and the simulator share (review-findings
// #1). A includes the AMP's read tail; zero rows touch nothing at all.
std::uint64_t gemm_left_bytes(GemmFamily family, std::uint32_t rows, std::uint32_t inner);
std::uint64_t gemm_weight_bytes(GemmFamily family, std::uint32_t rows, std::uint32_t inner,
                                std::uint32_t columns);
std::uint64_t gemm_output_bytes(GemmFamily family, std::uint32_t rows, std::uint32_t columns);

// Why a call's registers violate the family's ABI, or nullopt.
std::optional<std::string> gemm_violation(GemmFamily family, const Registers& registers);

// Tile cycles of one call (kernels/costs.hpp, §5).
std::uint64_t gemm_cycles(GemmFamily family, std::uint32_t rows, std::uint32_t inner,
                          std::uint32_t columns);

// The ISCL of a native F143 call (review-findings #19: the kernel's side of
// the block-scale contract). The call multiplies activations quantised at
// `activation_scale` by the weight block [k_begin, k_begin + inner) ×
// [n_begin, n_begin + columns) of a weight quantised with `weight_scales`;
// the device applies one weight scale per call, so every 64 × 64 scale block
// the call's block touches (inside the weight; padding past it is zero) must
// hold the same scale, and ISCL = activation scale + that scale must lie in
// [−32, 31]. Returns ISCL; UsageError naming the blocks or the sum otherwise
// (the planner then splits the call or requantises the weight).
int gemm_f143_product_scale(int activation_scale, const f143::BlockScales& weight_scales,
                            std::uint32_t k_begin, std::uint32_t n_begin, std::uint32_t inner,
                            std::uint32_t columns);

}  // namespace tessera::kernels
