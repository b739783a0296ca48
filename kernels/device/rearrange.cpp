// Device sources of the row-major ↔ AMP rearranges and unpacks (host models
// and ABI: kernels/rearrange.cpp; where each element lives:
// kernels/amp_layout.hpp, the one owner):
//   tessera_rearrange_<layout>_f16: $m2 block, $m3 matrix (row-major), $m4
//     rows, $m5 columns, $m6 padded rows, $m7 padded columns, $m8 row block.
//   tessera_unpack_<layout>_f16: $m2 matrix, $m3 block, scalars as above.
// A rearrange's workers split the *padded* rows (block-major: columns)
// balanced contiguous and each writes every element of its rows, the logical
// ones from the matrix and +0 past them: the layouts are bijections of the
// padded extents, so every block element is written exactly once and no zero
// fill races a copy. An unpack's workers split the matrix in whole words.
// No two workers store into one word (kernels/README.md's sub-word
// assumption need not hold). An empty block (or, for an
// unpack, an empty matrix) touches nothing.
#include "kernels/amp_layout.hpp"
#include "kernels/device/device_abi.hpp"

namespace tessera::device {
namespace {

namespace amp = ::tessera::kernels::amp;

enum class Layout { kLeft, kTransposedRight, kBlockMajor, kOutput };

struct Shape {
  std::uint32_t rows, columns, padded_rows, padded_columns, row_block;
  explicit Shape(const Registers& r)
      : rows(r[4]), columns(r[5]), padded_rows(r[6]), padded_columns(r[7]), row_block(r[8]) {}
};

// The block element of matrix element (r, c) (amp_layout.hpp's functions,
// the same as the model's; that the functions are right is amp_layout_test's).
template <Layout L>
std::uint32_t offset(const Shape& s, std::uint32_t r, std::uint32_t c) {
  std::uint64_t at = 0;
  if constexpr (L == Layout::kLeft) {
    at = amp::left_offset(r, c, s.padded_rows, 16);
  } else if constexpr (L == Layout::kTransposedRight) {
    at = amp::weight_offset(c, r, s.padded_columns, 16);
  } else if constexpr (L == Layout::kBlockMajor) {
    at = std::uint64_t{r / s.row_block} * s.row_block * s.padded_columns +
         amp::weight_offset(r % s.row_block, c, s.row_block, 16);
  } else {
    at = amp::output_offset(r, c, s.padded_rows);
  }
  return static_cast<std::uint32_t>(at);  // inside the block: < 2^31 elements by the precondition
}

// Block-major blocks hold 16 consecutive K rows of one column per channel,
// so two rows share a word: its workers split columns, every other layout's
// rows (a row's elements are contiguous there, 32-byte panel rows apart).
template <Layout L>
void rearrange(const Registers& r, TileMemory& memory, unsigned worker) {
  const Shape s(r);
  if (s.padded_rows == 0 || s.padded_columns == 0) return;
  constexpr bool kByColumns = L == Layout::kBlockMajor;
  const Share mine = balanced_share(kByColumns ? s.padded_columns : s.padded_rows, worker);
  if (mine.count == 0) return;
  const auto block = memory.array<std::uint16_t>(r[2], s.padded_rows * s.padded_columns);
  const std::uint32_t logical_rows = s.columns == 0 ? 0 : s.rows;
  const auto matrix = memory.array<const std::uint16_t>(r[3], logical_rows * s.columns);
  const auto put = [&](std::uint32_t row, std::uint32_t c) {
    block[offset<L>(s, row, c)] =
        row < s.rows && c < s.columns ? matrix[row * s.columns + c] : std::uint16_t{0};
  };
  for (std::uint32_t i = mine.first; i < mine.first + mine.count; ++i) {
    if constexpr (kByColumns) {
      for (std::uint32_t row = 0; row < s.padded_rows; ++row) put(row, i);
    } else {
      for (std::uint32_t c = 0; c < s.padded_columns; ++c) put(i, c);
    }
  }
}

// A16 and C16 with an even number of columns: every logical column pair
// is one 32-bit word on both sides (σ permutes pairs), so a worker copies
// its words — a panel row's eight from a fixed table of physical pairs —
// with one load and one store each (the cost model's unpack_pairs_cycles).
template <Layout L>
void unpack_pairs(const Shape& s, const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t pairs = s.columns / 2;
  const Share mine = balanced_share(s.rows * pairs, worker);
  if (mine.count == 0) return;
  constexpr std::uint32_t kPanelPairs = amp::kPanelColumns / 2;
  // The word of a panel row that logical pair p (0..7) lives in.
  std::uint32_t slot[kPanelPairs];
  for (std::uint32_t p = 0; p < kPanelPairs; ++p) {
    slot[p] = L == Layout::kOutput ? amp::physical_pair(p) : p;
  }
  const std::uint32_t panel_words = s.padded_rows * kPanelPairs;  // one panel of the block
  const auto block = memory.array<const std::uint32_t>(r[3], s.padded_rows * s.padded_columns / 2);
  const auto matrix = memory.array<std::uint32_t>(r[2] + 4 * mine.first, mine.count);
  std::uint32_t row = mine.first / pairs;
  std::uint32_t p = mine.first % pairs;
  for (std::uint32_t i = 0; i < mine.count; ++i) {
    matrix[i] = block[(p / kPanelPairs) * panel_words + row * kPanelPairs + slot[p % kPanelPairs]];
    if (++p == pairs) {
      p = 0;
      ++row;
    }
  }
}

// The row-major matrix's elements split in whole words (an odd row length
// ends mid-word).
template <Layout L>
void unpack(const Registers& r, TileMemory& memory, unsigned worker) {
  const Shape s(r);
  if (s.rows == 0 || s.columns == 0) return;
  if constexpr (L == Layout::kLeft || L == Layout::kOutput) {
    if (s.columns % 2 == 0) return unpack_pairs<L>(s, r, memory, worker);
  }
  const Share mine = word_share(s.rows * s.columns, 2, worker);
  if (mine.count == 0) return;
  const auto block = memory.array<const std::uint16_t>(r[3], s.padded_rows * s.padded_columns);
  const auto matrix = memory.array<std::uint16_t>(r[2] + 2 * mine.first, mine.count);
  for (std::uint32_t i = 0, row = mine.first / s.columns, c = mine.first % s.columns;
       i < mine.count; ++i) {
    matrix[i] = block[offset<L>(s, row, c)];
    if (++c == s.columns) {
      c = 0;
      ++row;
    }
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_rearrange_left_f16,
                      ::tessera::device::rearrange<::tessera::device::Layout::kLeft>)
TESSERA_DEVICE_KERNEL(tessera_rearrange_transposed_right_f16,
                      ::tessera::device::rearrange<::tessera::device::Layout::kTransposedRight>)
TESSERA_DEVICE_KERNEL(tessera_rearrange_block_major_f16,
                      ::tessera::device::rearrange<::tessera::device::Layout::kBlockMajor>)
TESSERA_DEVICE_KERNEL(tessera_rearrange_output_f16,
                      ::tessera::device::rearrange<::tessera::device::Layout::kOutput>)
TESSERA_DEVICE_KERNEL(tessera_unpack_left_f16,
                      ::tessera::device::unpack<::tessera::device::Layout::kLeft>)
TESSERA_DEVICE_KERNEL(tessera_unpack_transposed_right_f16,
                      ::tessera::device::unpack<::tessera::device::Layout::kTransposedRight>)
TESSERA_DEVICE_KERNEL(tessera_unpack_block_major_f16,
                      ::tessera::device::unpack<::tessera::device::Layout::kBlockMajor>)
TESSERA_DEVICE_KERNEL(tessera_unpack_output_f16,
                      ::tessera::device::unpack<::tessera::device::Layout::kOutput>)
