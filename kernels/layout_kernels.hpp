#pragma once
// Symbol names and registration of the layout kernels: relayout and reblock
// between the AMP output and activation layouts, and the rearranges between
// row-major and every AMP layout (ABIs in kernels/README.md and at the top of
// kernels/reblock.cpp and kernels/rearrange.cpp).

#include <string_view>

#include "kernels/registry.hpp"

namespace tessera::kernels {

// C16 → A16 (undoing σ) and row ranges between row shards (kernels/reblock.cpp).
inline constexpr std::string_view kRelayoutC16ToA16F16 = "tessera_relayout_c16_to_a16_f16";
inline constexpr std::string_view kReblockA16ToA16F16 = "tessera_reblock_a16_to_a16_f16";
inline constexpr std::string_view kReblockC16ToA16F16 = "tessera_reblock_c16_to_a16_f16";

void add_reblock_kernels(KernelRegistry& registry);

// Row-major ↔ AMP layouts (kernels/rearrange.cpp): the left operand (A16),
// the transposed right operand (B16×16 from Bᵀ row-major), block-major
// weights (B16×16 blocks of a K-row block each, from B row-major) and the
// output layout (C16).
inline constexpr std::string_view kRearrangeLeftF16 = "tessera_rearrange_left_f16";
inline constexpr std::string_view kRearrangeTransposedRightF16 =
    "tessera_rearrange_transposed_right_f16";
inline constexpr std::string_view kRearrangeBlockMajorF16 = "tessera_rearrange_block_major_f16";
inline constexpr std::string_view kRearrangeOutputF16 = "tessera_rearrange_output_f16";
inline constexpr std::string_view kUnpackLeftF16 = "tessera_unpack_left_f16";
inline constexpr std::string_view kUnpackTransposedRightF16 = "tessera_unpack_transposed_right_f16";
inline constexpr std::string_view kUnpackBlockMajorF16 = "tessera_unpack_block_major_f16";
inline constexpr std::string_view kUnpackOutputF16 = "tessera_unpack_output_f16";

void add_rearrange_kernels(KernelRegistry& registry);

}  // namespace tessera::kernels
