// Row-major ↔ AMP layouts (kernels/amp_layout.hpp owns where every element
// lives; kernels-siglip-f143.md §0.1, §1.6).
//
// tessera_rearrange_<layout>_f16: a row-major matrix of `rows` × `columns`
//   f16 values into the layout's block of padded extents, every padding
//   element written +0 (the AMP multiplies padding too: reference H8).
// tessera_unpack_<layout>_f16: the inverse, the block's logical elements
//   into a row-major `rows` × `columns` matrix (padding is read with its
//   rows, not used).
//   $m2 destination, $m3 source, $m4 rows, $m5 columns (of the row-major
//   matrix), $m6 padded rows, $m7 padded columns (the same axes, padded as
//   the layout needs), $m8 row block (block-major only).
//
// The layouts, for the row-major matrix's element (r, c):
//   left            A16 of padded rows × padded columns (K panels of 16):
//                   the left operand, element (r, k) = (r, c).
//   transposed_right B16×16 of K = padded columns × N = padded rows: the
//                   source is Bᵀ (row n holds column n of B, as the keys of
//                   attention, or a torch [out, in] weight), element (k, n) =
//                   (c, r).
//   block_major     B16×16 blocks of `row block` K rows × N = padded columns
//                   each, one after another: the source is B itself (K × N),
//                   element (k, n) = (r, c) in block k / row_block, so each
//                   K block of a weight is one contiguous GEMM operand.
//   output          C16 of padded rows × padded columns (σ inside panels).
// Padded extents: ≥ the logical ones; padded columns a multiple of 16 (and
// padded rows too for transposed_right, whose rows are B's columns); for
// block_major the row block is a positive multiple of 16 and divides the
// padded rows.
//
// Destination pointers are 8-byte aligned (the AMP layouts move 64-bit
// words), row-major ones 4-byte aligned [INF]; destination and source share
// no byte. A block with no elements touches nothing; a rearrange with no
// logical elements still writes its block's zeros and reads nothing.
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel_shapes.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/shape_checks.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3
constexpr unsigned kRows = 4;               // $m4
constexpr unsigned kColumns = 5;            // $m5
constexpr unsigned kPaddedRows = 6;         // $m6
constexpr unsigned kPaddedColumns = 7;      // $m7
constexpr unsigned kRowBlock = 8;           // $m8

enum class Layout { kLeft, kTransposedRight, kBlockMajor, kOutput };

struct Shape {
  std::uint64_t rows, columns, padded_rows, padded_columns, row_block;
  explicit Shape(const Registers& r)
      : rows(r[kRows]),
        columns(r[kColumns]),
        padded_rows(r[kPaddedRows]),
        padded_columns(r[kPaddedColumns]),
        row_block(r[kRowBlock]) {}
  std::uint64_t logical_elements() const { return saturating_mul(rows, columns); }
  std::uint64_t block_elements() const { return saturating_mul(padded_rows, padded_columns); }
};

// Where the row-major element (r, c) goes, from amp_layout.hpp. Every AMP
// layout is the sum of a part that depends on r only and one that depends on
// c only (the panels' strides do not mix the two), so the models tabulate
// offset(r, 0) and offset(0, c) once per call and add them; the tests check
// every element against an independent derivation.
template <Layout L>
std::uint64_t offset(const Shape& s, std::uint64_t r, std::uint64_t c) {
  if constexpr (L == Layout::kLeft) {
    return amp::left_offset(r, c, s.padded_rows, 16);
  } else if constexpr (L == Layout::kTransposedRight) {
    return amp::weight_offset(c, r, s.padded_columns, 16);
  } else if constexpr (L == Layout::kBlockMajor) {
    const std::uint64_t block = saturating_mul(s.row_block, s.padded_columns);
    return r / s.row_block * block + amp::weight_offset(r % s.row_block, c, s.row_block, 16);
  } else {
    return amp::output_offset(r, c, s.padded_rows);
  }
}

template <Layout L>
struct Offsets {
  std::vector<std::uint64_t> row, column;
  explicit Offsets(const Shape& s) : row(s.rows), column(s.columns) {
    for (std::uint64_t r = 0; r < s.rows; ++r) row[r] = offset<L>(s, r, 0);
    for (std::uint64_t c = 0; c < s.columns; ++c) column[c] = offset<L>(s, 0, c);
  }
};

template <Layout L>
Violation shape_violation(const Shape& s) {
  if (s.rows > s.padded_rows) {
    return fmt::format("$m4 (rows) = {} is more than $m6 (padded rows) = {}", s.rows,
                       s.padded_rows);
  }
  if (s.columns > s.padded_columns) {
    return fmt::format("$m5 (columns) = {} is more than $m7 (padded columns) = {}", s.columns,
                       s.padded_columns);
  }
  if (s.padded_columns % 16 != 0) {
    return fmt::format(
        "$m7 (padded columns) = {} is not a multiple of 16: the layout's panels are "
        "16 wide",
        s.padded_columns);
  }
  if (L == Layout::kTransposedRight && s.padded_rows % 16 != 0) {
    return fmt::format(
        "$m6 (padded rows) = {} is not a multiple of 16: they are the weight "
        "block's columns, in panels of 16",
        s.padded_rows);
  }
  if (L == Layout::kBlockMajor) {
    if (s.row_block == 0 || s.row_block % 16 != 0) {
      return fmt::format(
          "$m8 (row block) = {} is not a positive multiple of 16: a block is whole "
          "16-deep weight panels",
          s.row_block);
    }
    if (s.padded_rows % s.row_block != 0) {
      return fmt::format(
          "$m6 (padded rows) = {} is not a multiple of $m8 (row block) = {}: blocks "
          "are whole",
          s.padded_rows, s.row_block);
    }
  }
  return std::nullopt;
}

std::uint64_t logical_bytes(const Registers& r) {
  return saturating_mul(Shape(r).logical_elements(), 2);
}
std::uint64_t block_bytes(const Registers& r) {
  return saturating_mul(Shape(r).block_elements(), 2);
}
// An unpack with no logical element reads nothing.
std::uint64_t unpacked_block_bytes(const Registers& r) {
  return Shape(r).logical_elements() == 0 ? 0 : block_bytes(r);
}

template <Layout L>
std::uint64_t pack_cycles(const Shape& s) {
  if constexpr (L == Layout::kLeft) return rearrange_left_amp_cycles(s.columns, s.block_elements());
  if constexpr (L == Layout::kTransposedRight) {
    return rearrange_transposed_right_amp_cycles(s.columns, s.block_elements());
  }
  if constexpr (L == Layout::kBlockMajor) return rearrange_block_major_amp_cycles(s.columns, s.block_elements());
  return rearrange_output_cycles(s.block_elements());
}

template <Layout L>
void rearrange(KernelCall& call) {
  const Shape s(call.registers);
  if (s.block_elements() != 0) {
    const auto block = call.memory.write<std::uint16_t>(kOut, call.reg(kOut), s.block_elements());
    std::fill(block.begin(), block.end(), std::uint16_t{0});
    if (s.logical_elements() != 0) {
      const auto matrix = call.memory.read<std::uint16_t>(kIn, call.reg(kIn), s.logical_elements());
      const Offsets<L> offsets(s);
      for (std::uint64_t r = 0; r < s.rows; ++r) {
        const auto row = matrix.subspan(r * s.columns, s.columns);
        const std::uint64_t base = offsets.row[r];
        for (std::uint64_t c = 0; c < s.columns; ++c) block[base + offsets.column[c]] = row[c];
      }
    }
  }
  call.cycles = pack_cycles<L>(s);
}

template <Layout L>
void unpack(KernelCall& call) {
  const Shape s(call.registers);
  if (s.logical_elements() != 0) {
    const auto block = call.memory.read<std::uint16_t>(kIn, call.reg(kIn), s.block_elements());
    const auto matrix =
        call.memory.write<std::uint16_t>(kOut, call.reg(kOut), s.logical_elements());
    const Offsets<L> offsets(s);
    for (std::uint64_t r = 0; r < s.rows; ++r) {
      const auto row = matrix.subspan(r * s.columns, s.columns);
      const std::uint64_t base = offsets.row[r];
      for (std::uint64_t c = 0; c < s.columns; ++c) row[c] = block[base + offsets.column[c]];
    }
  }
  if constexpr (L == Layout::kLeft || L == Layout::kOutput) {
    call.cycles = unpack_amp_cycles(s.rows, s.columns, s.block_elements());
  } else {
    call.cycles = unpack_cycles(s.logical_elements() == 0 ? 0 : s.block_elements());
  }
}

// The AMP-side pointer is 8-byte aligned, the row-major one 4-byte aligned.
template <Layout L>
Violation precondition(const Registers& r, unsigned block_reg, unsigned matrix_reg,
                       std::uint64_t block_footprint) {
  if (auto v = shape_violation<L>(Shape(r))) return v;
  if (auto v = misaligned(r, {block_reg}, 8)) return v;
  if (auto v = misaligned(r, {matrix_reg}, 4)) return v;
  const OperandExtent block{block_reg, "block", block_footprint};
  const OperandExtent matrix{matrix_reg, "matrix", logical_bytes(r)};
  for (const auto& operand : {block, matrix}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  return overlaps_because(r, block, matrix, "the layouts differ, so no alias is element-wise");
}

template <Layout L>
void add_pair(KernelRegistry& registry, std::string_view pack_name, std::string_view unpack_name) {
  registry.add(
      KernelSpec{std::string(pack_name),
                 KernelKind::kKernel,
                 {OperandSpec{kOut, Access::kWrite, "block", block_bytes},
                  OperandSpec{kIn, Access::kRead, "matrix", logical_bytes}},
                 [](const Registers& r) { return precondition<L>(r, kOut, kIn, block_bytes(r)); },
                 rearrange<L>});
  registry.add(KernelSpec{
      std::string(unpack_name),
      KernelKind::kKernel,
      {OperandSpec{kOut, Access::kWrite, "matrix", logical_bytes},
       OperandSpec{kIn, Access::kRead, "block", unpacked_block_bytes}},
      [](const Registers& r) { return precondition<L>(r, kIn, kOut, unpacked_block_bytes(r)); },
      unpack<L>});
}

}  // namespace

void add_rearrange_kernels(KernelRegistry& registry) {
  add_pair<Layout::kLeft>(registry, kRearrangeLeftF16, kUnpackLeftF16);
  add_pair<Layout::kTransposedRight>(registry, kRearrangeTransposedRightF16,
                                     kUnpackTransposedRightF16);
  add_pair<Layout::kBlockMajor>(registry, kRearrangeBlockMajorF16, kUnpackBlockMajorF16);
  add_pair<Layout::kOutput>(registry, kRearrangeOutputF16, kUnpackOutputF16);
}

}  // namespace tessera::kernels
