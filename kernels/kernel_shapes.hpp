#pragma once
// Shape arithmetic the element-wise, layout, F143 and LayerNorm kernels share:
// footprints computed from 32-bit registers without wrapping, the 16-column
// panels of the A16 / C16 layouts (kernels/amp_layout.hpp owns where each
// element lives), and the two ways a kernel splits its items over the six
// workers (kernels-siglip-f143.md §0: balanced contiguous and strided).

#include <algorithm>
#include <cstdint>

#include "kernels/amp_layout.hpp"
#include "kernels/costs.hpp"

namespace tessera::kernels {

// a·b, or the largest u64 when it does not fit: a footprint that large is
// past the 32-bit address space, which every precondition refuses, so a wild
// register never wraps into a small footprint.
constexpr std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? ~std::uint64_t{0} : product;
}
constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? ~std::uint64_t{0} : sum;
}

// 16-column panels holding `columns` logical columns (the last one padded).
constexpr std::uint64_t column_panels(std::uint64_t columns) noexcept {
  return amp::padded_columns(columns) / amp::kPanelColumns;
}

// Elements of an A16 or C16 block of `rows` rows and `columns` logical
// columns: rows × the padded width.
constexpr std::uint64_t panel_block_elements(std::uint64_t rows, std::uint64_t columns) noexcept {
  return saturating_mul(rows, amp::padded_columns(columns));
}

// Balanced contiguous partition: worker w's first item (its count is
// worker_share(items, w), costs.hpp).
constexpr std::uint64_t worker_begin(std::uint64_t items, unsigned worker) noexcept {
  return items / kWorkerCount * worker + std::min<std::uint64_t>(worker, items % kWorkerCount);
}

// Strided partition: item i belongs to worker i mod 6.
constexpr unsigned strided_worker(std::uint64_t item) noexcept {
  return static_cast<unsigned>(item % kWorkerCount);
}
// Worker 0's count under the strided partition (the largest).
constexpr std::uint64_t strided_share(std::uint64_t items) noexcept {
  return (items + kWorkerCount - 1) / kWorkerCount;
}

}  // namespace tessera::kernels
