// The moves between a hidden-dimension A16 row shard and one head's
// operand blocks (kernels/attention.hpp): pack query (→ A16, the QK GEMM's
// left operand), pack key (→ B16×16 read as the transposed right operand of
// the QK GEMM), pack value (→ B16×16, the PV GEMM's weights), and unpack
// (row-major f16 head output → the hidden A16 shard).
//
// A pack call copies rows [s, s + n) of the shard's head slice — columns
// [h·d, h·d + d) — to block rows [t, t + n), writing each copied row at the
// padded head width D (zeros past d), and rewrites the block's padding rows
// (rows past the block's real rows, up to R for Q or C for K and V) with
// zeros, so that a block assembled from several shards by several calls is
// complete, with finite padding, whichever call runs last. Each element the
// device writes is its own (a store touches only its half-word [INF], as
// kernels/README.md assumes for every f16 kernel), so no call reads its
// output — unlike the prior art's value pack, which read-modify-wrote a half2
// at odd row starts (§1.4, H7).
//
// The models ask once per operand for the span their loop bounds touch: the
// whole destination block (any call may write any padding row) and the
// shard from the slice's first element to its last. Both are sparse — a call
// touches only its rows' elements — and the elements touched are noted as
// maximal runs (a whole panel of the slice is one), reads only when the
// memory takes read notes; except a call that copies every block row, which
// writes the whole block and asks for it as a kWhole span.
#include <algorithm>

#include <fmt/format.h>

#include "kernels/amp_layout.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/touched_elements.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kPanel = amp::kPanelColumns;
constexpr std::uint64_t kF16Bytes = 2;

// Notes the f16 elements of a kSparse span a model touched, through `reg`
// from `base`, as the fewest runs: one note per maximal run of touched
// elements, whatever order the model visited them in.
void note_runs(KernelMemory& memory, unsigned reg, std::uint64_t base, std::uint64_t first,
               const TouchedElements& touched, bool write) {
  touched.for_each_run([&](std::uint64_t begin, std::uint64_t count) {
    const std::uint64_t address = base + (first + begin) * kF16Bytes;
    if (write) {
      memory.note_written(reg, address, count * kF16Bytes);
    } else {
      memory.note_read(reg, address, count * kF16Bytes);
    }
  });
}

// One head's slice of an A16 row shard: element (row, j) for j < head_dim is
// shard element (row, column + j).
struct ShardSlice {
  std::uint32_t shard_rows;
  std::uint32_t column;

  std::uint64_t offset(std::uint64_t row, std::uint64_t j) const {
    return amp::left_offset(row, column + j, shard_rows, kPanel);
  }
};

// The destination block of one pack: where block element (row, column) —
// query or key row `row`, head column `column` — lives.
struct PackBlock {
  AttentionPack pack;
  std::uint32_t padded_rows;  // R (query) or C (key, value)
  std::uint32_t padded_head;  // D

  std::uint64_t offset(std::uint64_t row, std::uint64_t column) const {
    switch (pack) {
      case AttentionPack::kQuery:
        return amp::left_offset(row, column, padded_rows, kPanel);
      case AttentionPack::kKey:
        // B[k][n] = K[n][k]: inner k = head column, output column n = key row.
        return amp::weight_offset(column, row, padded_head, kPanel);
      case AttentionPack::kValue:
        // B[k][n] = V[k][n]: inner k = key row, output column n = head column.
        return amp::weight_offset(row, column, padded_rows, kPanel);
    }
    return 0;
  }
};

// Elements a pack call writes: its copied rows and the padding rows, each at
// the padded head width.
std::uint64_t pack_written_elements(AttentionPack pack, const Registers& r) {
  const std::uint32_t copy = r[kPackCopyRows], block_rows = r[kPackBlockRows];
  if (copy == 0) return 0;
  const std::uint64_t padded_rows = pack == AttentionPack::kQuery
                                        ? attention_query_rows(block_rows)
                                        : attention_key_columns(block_rows);
  return (copy + (padded_rows - block_rows)) *
         std::uint64_t{attention_padded_head_dim(r[kPackHeadDim])};
}

template <AttentionPack P>
void pack(KernelCall& call) {
  const Registers& r = call.registers;
  const std::uint32_t copy = r[kPackCopyRows], block_rows = r[kPackBlockRows],
                      head_dim = r[kPackHeadDim];
  const std::uint32_t source_start = low_half(r[kPackRowStarts]),
                      destination_start = high_half(r[kPackRowStarts]);
  call.cycles = attention_pack_cycles(pack_written_elements(P, r));
  if (copy == 0) return;  // zero work touches nothing (review-findings #3)

  const PackBlock block{P,
                        P == AttentionPack::kQuery ? attention_query_rows(block_rows)
                                                   : attention_key_columns(block_rows),
                        attention_padded_head_dim(head_dim)};
  const ShardSlice slice{r[kPackSourceRows], r[kPackSourceColumn]};

  // A call that copies every block row writes the whole block (its rows
  // and the padding rows, at the padded width): one kWhole span, no notes.
  // Otherwise it writes only its rows and the padding rows, and notes them.
  const bool whole_block = destination_start == 0 && copy == block_rows;
  const std::uint64_t block_elements = std::uint64_t{block.padded_rows} * block.padded_head;
  const auto out = call.memory.write<std::uint16_t>(
      kPackOut, r[kPackOut], block_elements, whole_block ? SpanUse::kWhole : SpanUse::kSparse);
  const std::uint64_t first = slice.offset(source_start, 0);
  const std::uint64_t end =
      attention_shard_slice_bytes(slice.shard_rows, slice.column, source_start, copy, head_dim) /
      kF16Bytes;
  const auto source = call.memory.read<std::uint16_t>(
      kPackSource, r[kPackSource] + first * kF16Bytes, end - first, SpanUse::kSparse);

  // What the call touched, for the notes: only when they are due.
  const bool note_reads = call.memory.notes_reads();
  TouchedElements written(whole_block ? 0 : block_elements),
      read(note_reads ? source.size() : 0);
  // Visit each block row's elements in the order its layout stores them
  // contiguously: across head columns for Q and K (a panel holds 16 of one
  // row's columns), across key rows for V (a channel holds 16 of one
  // column's key rows).
  const auto row_element = [&](std::uint32_t row, std::uint32_t column, bool copied) {
    std::uint16_t value = 0;
    if (copied && column < head_dim) {
      const std::uint64_t at =
          slice.offset(source_start + (row - destination_start), column) - first;
      value = source[at];
      if (note_reads) read.mark(at);
    }
    const std::uint64_t to = block.offset(row, column);
    out[to] = value;
    if (!whole_block) written.mark(to);
  };
  const auto rows = [&](std::uint32_t begin, std::uint32_t end_row, bool copied) {
    if constexpr (P == AttentionPack::kValue) {
      for (std::uint32_t column = 0; column < block.padded_head; ++column) {
        for (std::uint32_t row = begin; row < end_row; ++row) row_element(row, column, copied);
      }
    } else {
      for (std::uint32_t row = begin; row < end_row; ++row) {
        for (std::uint32_t column = 0; column < block.padded_head; ++column) {
          row_element(row, column, copied);
        }
      }
    }
  };
  rows(destination_start, destination_start + copy, true);
  rows(block_rows, block.padded_rows, false);
  if (!whole_block) note_runs(call.memory, kPackOut, r[kPackOut], 0, written, true);
  if (note_reads) note_runs(call.memory, kPackSource, r[kPackSource], first, read, false);
}

void unpack(KernelCall& call) {
  const Registers& r = call.registers;
  const std::uint32_t copy = r[kUnpackCopyRows], head_dim = r[kUnpackHeadDim];
  const std::uint32_t source_start = low_half(r[kUnpackRowStarts]),
                      destination_start = high_half(r[kUnpackRowStarts]);
  call.cycles = attention_unpack_cycles(std::uint64_t{copy} * head_dim);
  if (copy == 0) return;

  const ShardSlice slice{r[kUnpackOutRows], r[kUnpackOutColumn]};
  const std::uint64_t first = slice.offset(destination_start, 0);
  const std::uint64_t end = attention_shard_slice_bytes(slice.shard_rows, slice.column,
                                                        destination_start, copy, head_dim) /
                            kF16Bytes;
  const auto out = call.memory.write<std::uint16_t>(kUnpackOut, r[kUnpackOut] + first * kF16Bytes,
                                                    end - first, SpanUse::kSparse);
  const auto source = call.memory.read<std::uint16_t>(
      kUnpackSource, r[kUnpackSource] + std::uint64_t{source_start} * head_dim * kF16Bytes,
      std::uint64_t{copy} * head_dim);

  // Panel by panel of the slice, so that what a panel's rows write is one
  // run when the slice holds the whole panel (A16: a panel's rows are
  // contiguous), and one run per row otherwise; runs that meet are joined.
  std::uint64_t run_begin = 0, run_end = 0;
  const auto note = [&](std::uint64_t begin, std::uint64_t count) {
    if (begin == run_end && run_end != run_begin) {
      run_end += count;
      return;
    }
    if (run_end != run_begin) {
      call.memory.note_written(kUnpackOut, r[kUnpackOut] + run_begin * kF16Bytes,
                               (run_end - run_begin) * kF16Bytes);
    }
    run_begin = begin;
    run_end = begin + count;
  };
  for (std::uint32_t j0 = 0; j0 < head_dim;) {
    const std::uint32_t j1 =
        std::min(head_dim, j0 + kPanel - (slice.column + j0) % kPanel);  // this panel's end
    const bool whole_panel = j1 - j0 == kPanel;
    for (std::uint32_t i = 0; i < copy; ++i) {
      const std::uint64_t at = slice.offset(destination_start + i, j0);
      const auto row = source.subspan(std::size_t{i} * head_dim + j0, j1 - j0);
      const auto to = out.subspan(at - first, j1 - j0);
      std::copy(row.begin(), row.end(), to.begin());
      if (!whole_panel) note(at, j1 - j0);
    }
    if (whole_panel) note(slice.offset(destination_start, j0), std::uint64_t{copy} * kPanel);
    j0 = j1;
  }
  note(0, 0);  // the last run
}

template <AttentionPack P>
KernelSpec pack_spec(std::string_view name) {
  return KernelSpec{
      std::string(name),
      KernelKind::kKernel,
      {OperandSpec{kPackOut, Access::kWrite, "destination",
                   [](const Registers& r) -> std::uint64_t {
                     if (r[kPackCopyRows] == 0) return 0;
                     return attention_pack_out_bytes(P, r[kPackBlockRows], r[kPackHeadDim]);
                   }},
       OperandSpec{kPackSource, Access::kRead, "source",
                   [](const Registers& r) {
                     return attention_shard_slice_bytes(r[kPackSourceRows], r[kPackSourceColumn],
                                                        low_half(r[kPackRowStarts]),
                                                        r[kPackCopyRows], r[kPackHeadDim]);
                   }}},
      [](const Registers& r) { return attention_pack_violation(P, r); },
      [](KernelCall& call) { pack<P>(call); }};
}

}  // namespace

void attention_detail::add_pack_kernels(KernelRegistry& registry) {
  registry.add(pack_spec<AttentionPack::kQuery>(kAttentionPackQuery));
  registry.add(pack_spec<AttentionPack::kKey>(kAttentionPackKey));
  registry.add(pack_spec<AttentionPack::kValue>(kAttentionPackValue));
  registry.add(KernelSpec{
      std::string(kAttentionUnpack),
      KernelKind::kKernel,
      {OperandSpec{kUnpackOut, Access::kWrite, "destination",
                   [](const Registers& r) {
                     return attention_shard_slice_bytes(r[kUnpackOutRows], r[kUnpackOutColumn],
                                                        high_half(r[kUnpackRowStarts]),
                                                        r[kUnpackCopyRows], r[kUnpackHeadDim]);
                   }},
       OperandSpec{kUnpackSource, Access::kRead, "source",
                   [](const Registers& r) {
                     return attention_head_rows_bytes(low_half(r[kUnpackRowStarts]),
                                                      r[kUnpackCopyRows], r[kUnpackHeadDim]);
                   }}},
      attention_unpack_violation,
      unpack});
}

}  // namespace tessera::kernels
