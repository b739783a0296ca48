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
// contiguous runs.
#include <fmt/format.h>

#include "kernels/amp_layout.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kPanel = amp::kPanelColumns;
constexpr std::uint64_t kF16Bytes = 2;

// Notes the f16 elements a model touches, coalesced into contiguous runs.
// flush() notes the last run; a note may throw (the simulator's fault), so
// the destructor does not flush.
class RunNotes {
 public:
  RunNotes(KernelMemory& memory, unsigned reg, std::uint64_t base, bool write)
      : memory_(memory), reg_(reg), base_(base), write_(write) {}
  RunNotes(const RunNotes&) = delete;
  RunNotes& operator=(const RunNotes&) = delete;
  ~RunNotes() = default;

  void add(std::uint64_t element) {
    if (element == end_ && end_ != begin_) {
      ++end_;
      return;
    }
    flush();
    begin_ = element;
    end_ = element + 1;
  }
  void flush() {
    if (end_ == begin_) return;
    const std::uint64_t address = base_ + begin_ * kF16Bytes;
    const std::uint64_t size = (end_ - begin_) * kF16Bytes;
    if (write_) {
      memory_.note_written(reg_, address, size);
    } else {
      memory_.note_read(reg_, address, size);
    }
    begin_ = end_ = 0;
  }

 private:
  KernelMemory& memory_;
  unsigned reg_;
  std::uint64_t base_;
  bool write_;
  std::uint64_t begin_ = 0, end_ = 0;
};

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

  const auto out = call.memory.write<std::uint16_t>(
      kPackOut, r[kPackOut], std::uint64_t{block.padded_rows} * block.padded_head,
      SpanUse::kSparse);
  const std::uint64_t first = slice.offset(source_start, 0);
  const std::uint64_t end =
      attention_shard_slice_bytes(slice.shard_rows, slice.column, source_start, copy, head_dim) /
      kF16Bytes;
  const auto source = call.memory.read<std::uint16_t>(
      kPackSource, r[kPackSource] + first * kF16Bytes, end - first, SpanUse::kSparse);

  RunNotes written(call.memory, kPackOut, r[kPackOut], true);
  RunNotes read(call.memory, kPackSource, r[kPackSource], false);
  // Visit each block row's elements in the order its layout stores them
  // contiguously: across head columns for Q and K (a panel holds 16 of one
  // row's columns), across key rows for V (a channel holds 16 of one
  // column's key rows).
  const auto row_element = [&](std::uint32_t row, std::uint32_t column, bool copied) {
    std::uint16_t value = 0;
    if (copied && column < head_dim) {
      const std::uint64_t at = slice.offset(source_start + (row - destination_start), column);
      value = source[at - first];
      read.add(at);
    }
    const std::uint64_t to = block.offset(row, column);
    out[to] = value;
    written.add(to);
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
  written.flush();
  read.flush();
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

  RunNotes written(call.memory, kUnpackOut, r[kUnpackOut], true);
  for (std::uint32_t i = 0; i < copy; ++i) {
    const auto row = source.subspan(std::size_t{i} * head_dim, head_dim);
    for (std::uint32_t j = 0; j < head_dim; ++j) {
      const std::uint64_t at = slice.offset(destination_start + i, j);
      out[at - first] = row[j];
      written.add(at);
    }
  }
  written.flush();
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
