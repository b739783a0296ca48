#pragma once
// The F143 kernels' symbol names and registration (ABIs in kernels/README.md
// and kernels/f143_kernels.cpp), and the one fact that ties an expand call to
// the quantizer's block scales (review-findings #19, reference H6): which
// elements of a B16×16 weight block one 64 × 64 scale block owns.

#include <cstdint>
#include <string_view>

#include "kernels/registry.hpp"

namespace tessera::kernels {

inline constexpr std::string_view kQuantizeF16ToF143 = "tessera_quantize_f16_to_f143";
inline constexpr std::string_view kQuantizeA16ToA32F143 = "tessera_quantize_a16_to_a32_f143";
inline constexpr std::string_view kExpandF143ToF16 = "tessera_expand_f143_to_f16";

void add_f143_kernels(KernelRegistry& registry);

// An expand call takes one scale, so its span must lie inside one scale
// block (H6): at most 64 × 64 elements, and a whole number of the device's
// 4-code groups.
inline constexpr std::uint32_t kExpandMaxElements = 64 * 64;
inline constexpr std::uint32_t kF143GroupElements = 4;

// Elements [offset, offset + count) of a B16×16 weight block (kernels/
// amp_layout.hpp) that scale block column j covers: the block holds one
// quantizer K block (`inner` ≤ 64 padded K rows, a multiple of 16, starting at
// a multiple of 64) and `columns` padded N columns (a multiple of 16); scale
// block j is N columns [64j, 64j + 64). B16×16 is column-group major, so the
// span is contiguous. std::invalid_argument for any other shape.
struct ExpandSpan {
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};
ExpandSpan expand_span(std::uint32_t inner, std::uint32_t columns, std::uint32_t scale_block);

}  // namespace tessera::kernels
