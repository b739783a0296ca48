// Device sources of the row-major ↔ AMP rearranges and unpacks (host models
// and ABI: kernels/rearrange.cpp; where each element lives:
// kernels/amp_layout.hpp, the one owner):
//   tessera_rearrange_<layout>_f16: $m2 block, $m3 matrix (row-major), $m4
//     rows, $m5 columns, $m6 padded rows, $m7 padded columns, $m8 row block.
//   tessera_unpack_<layout>_f16: $m2 matrix, $m3 block, scalars as above.
// A rearrange of an even number of columns moves whole words: its workers
// split the padded matrix's column pairs (left, transposed right) or its
// 2 × 2 squares (block-major). Otherwise they split the *padded* rows
// (block-major: columns) balanced contiguous and each writes every element
// of its rows. Either way the logical elements come from the matrix and +0
// past them: the layouts are bijections of the padded extents, so every
// block element is written exactly once and no zero fill races a copy. An unpack's workers split the matrix in whole words.
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

// A16 and transposed-right panels with an even number of columns: a pair
// of logical columns of a matrix row is one 32-bit word in the block too
// (A16 keeps a row's 16 columns in order; a transposed-right panel holds 16
// consecutive columns — its K — of one matrix row per channel), so the
// workers split the padded matrix's pairs (row, pair) — a bijection onto the
// block's words — and each writes its word where the layout (offset<L>,
// amp_layout.hpp's) puts the pair: the matrix word or +0 (the cost model's
// word_pairs_copy_cycles).
template <Layout L>
void rearrange_pairs(const Shape& s, const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t padded_pairs = s.padded_columns / 2;
  const Share mine = balanced_share(s.padded_rows * padded_pairs, worker);
  if (mine.count == 0) return;
  const std::uint32_t pairs = s.columns / 2;  // words per matrix row
  const auto block = memory.array<std::uint32_t>(r[2], s.padded_rows * padded_pairs);
  const auto matrix = memory.array<const std::uint32_t>(r[3], pairs == 0 ? 0 : s.rows * pairs);
  for (std::uint32_t u = mine.first; u < mine.first + mine.count; ++u) {
    const std::uint32_t row = u / padded_pairs, pair = u % padded_pairs;
    block[offset<L>(s, row, 2 * pair) / 2] =
        row < s.rows && pair < pairs ? matrix[row * pairs + pair] : 0;
  }
}

// Block-major with an even number of columns: a block word holds rows k and
// k + 1 of one column, so the workers split 2 × 2 squares of the padded
// matrix (rows k, k + 1 × columns n, n + 1, k and n even) and transpose
// each: two matrix words in, their low halves to column n's word and their
// high halves to column n + 1's (the cost model's
// rearrange_block_major_pairs_cycles). Rows past the matrix read as +0.
void rearrange_block_major_pairs(const Shape& s, const Registers& r, TileMemory& memory,
                                 unsigned worker) {
  const std::uint32_t column_pairs = s.padded_columns / 2;
  const Share mine = balanced_share((s.padded_rows / 2) * column_pairs, worker);
  if (mine.count == 0) return;
  const std::uint32_t pairs = s.columns / 2;
  const auto block = memory.array<std::uint32_t>(r[2], s.padded_rows * s.padded_columns / 2);
  const auto matrix = memory.array<const std::uint32_t>(r[3], pairs == 0 ? 0 : s.rows * pairs);
  const auto word = [&](std::uint32_t row, std::uint32_t pair) -> std::uint32_t {
    return row < s.rows && pair < pairs ? matrix[row * pairs + pair] : 0;
  };
  for (std::uint32_t u = mine.first; u < mine.first + mine.count; ++u) {
    const std::uint32_t k = 2 * (u / column_pairs), n = 2 * (u % column_pairs);
    const std::uint32_t upper = word(k, n / 2), lower = word(k + 1, n / 2);
    block[offset<Layout::kBlockMajor>(s, k, n) / 2] = (upper & 0xFFFFU) | (lower << 16);
    block[offset<Layout::kBlockMajor>(s, k, n + 1) / 2] = (upper >> 16) | (lower & 0xFFFF0000U);
  }
}

// Otherwise element by element. Block-major blocks hold 16 consecutive K
// rows of one column per channel, so two rows share a word: its workers
// split columns, every other layout's rows (a row's elements are contiguous
// there, 32-byte panel rows apart).
template <Layout L>
void rearrange(const Registers& r, TileMemory& memory, unsigned worker) {
  const Shape s(r);
  if (s.padded_rows == 0 || s.padded_columns == 0) return;
  if (s.columns % 2 == 0) {
    if constexpr (L == Layout::kLeft || L == Layout::kTransposedRight) {
      return rearrange_pairs<L>(s, r, memory, worker);
    } else if constexpr (L == Layout::kBlockMajor) {
      return rearrange_block_major_pairs(s, r, memory, worker);
    }
  }
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
