// Device sources of the attention pieces (host models and ABI:
// kernels/attention.hpp, attention_pack.cpp, attention_softmax.cpp,
// attention_merge.cpp; the layouts: kernels/amp_layout.hpp):
//   tessera_attention_pack_{query,key,value}_f16: $m2 block, $m3 A16 shard,
//     $m4 shard rows, $m5 first hidden column, $m6 source start | destination
//     start << 16, $m7 copy rows, $m8 block rows (q or k), $m9 head dim d.
//   tessera_attention_unpack_head_f16: $m2 A16 shard, $m3 head output
//     (row-major × d), $m4 shard rows, $m5 first hidden column, $m6 row
//     starts, $m7 copy rows, $m8 d.
//   tessera_attention_softmax_f16: $m2 block weights (P in A16, then max[R],
//     sum[R] f32), $m3 scores (C16), $m4 R, $m5 k, $m6 scale (f32 bits).
//   tessera_attention_merge_{initial,middle,final,single}_f16: $m2
//     accumulator (O row-major R × d f32, then m[R], l[R]), $m3 block values
//     (C16, R × D), $m4 block weights (its state is read), $m5 R, $m6 k,
//     $m7 d.
//   tessera_attention_combine_{middle,final}_f32: $m2 accumulator, $m3
//     another part's accumulator (the same layout), $m4 R, $m5 d.
//   tessera_attention_f32_to_f16: $m2 out, $m3 in, $m4 count.
// The padded extents are attention.hpp's: R = max(q, 12) (0 for q = 0),
// D = d and C = k rounded up to 16 — computed here from the same rule
// (attention.cpp owns it on the host; a device build has no host library),
// and the tests compare every byte the two produce.
//
// Partitions (no two workers store into one word): query and key packs split
// the rows they write (copied, then padding) balanced contiguous, the value
// pack its columns; unpack splits its copied rows; softmax and merges
// stride rows over the workers (r mod 6); f32 → f16 strides pairs (the
// model's order for its stochastic draws; to nearest even, as here, the
// order does not change a bit). exp is device_math.hpp's, so the softmax's
// P and the middle/final merges agree with the models within their stated
// bounds rather than bit for bit; everything else is bit for bit. Fast path
// (TESSERA_DEVICE_FAST_PATHS): the softmax's P by the IPU's f16v2exp on
// pairs of real keys (ipu_f16_functions.hpp: P's semantics is exp_f16 of an
// f16, the instruction's; the merges' f32 exps keep device_math.hpp's). Any NaN
// written is canonical (f16 0x7E00 positive, as AttentionRounding makes it).
#include "kernels/amp_layout.hpp"
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/device_math.hpp"
#include "kernels/device/ipu_fast_paths.hpp"

#if TESSERA_DEVICE_FAST_PATHS
#include "kernels/device/canonical_lanes.hpp"
#include "kernels/device/ipu_f16_functions.hpp"
#endif

namespace tessera::device {
namespace {

namespace amp = ::tessera::kernels::amp;

constexpr std::uint32_t kPanel = 16;

std::uint32_t round_up16(std::uint32_t n) { return (n + 15) / 16 * 16; }
std::uint32_t query_rows(std::uint32_t q) { return q == 0 ? 0 : (q < 12 ? 12 : q); }

// Round to nearest even; any NaN the f16 0x7E00 (AttentionRounding's rule).
std::uint16_t to_f16(float value) {
  const std::uint16_t h = narrow_f32(f32_bits(value));
  return (h & 0x7FFFu) > 0x7C00u ? kF16CanonicalNan : h;
}

std::uint32_t at32(std::uint64_t offset) { return static_cast<std::uint32_t>(offset); }

enum class Pack { kQuery, kKey, kValue };

// Packs write the copied rows [t, t + n) and the padding rows [q or k, R or
// C), every column < D. Query and key blocks keep a block row's columns
// contiguous (A16, or a B16×16 channel of one key row): workers split the
// rows. A value block's channel holds 16 consecutive key rows of one column,
// so two rows share a word: its workers split the columns instead.
template <Pack P>
void pack(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t shard_rows = r[4], column = r[5], copy = r[7], block_rows = r[8], d = r[9];
  if (copy == 0) return;  // zero work touches nothing
  const std::uint32_t source_start = r[6] & 0xFFFFu, destination_start = r[6] >> 16;
  const std::uint32_t padded_rows =
      P == Pack::kQuery ? query_rows(block_rows) : round_up16(block_rows);
  const std::uint32_t padded_head = round_up16(d);
  const std::uint32_t written_rows = copy + (padded_rows - block_rows);
  constexpr bool kByColumns = P == Pack::kValue;
  const Share mine = balanced_share(kByColumns ? padded_head : written_rows, worker);
  if (mine.count == 0) return;
  const auto block = memory.array<std::uint16_t>(r[2], padded_rows * padded_head);
  // Written row i (copied rows first, then the padding rows), column c.
  const auto put = [&](std::uint32_t i, std::uint32_t c) {
    const bool copied = i < copy;
    const std::uint32_t row = copied ? destination_start + i : block_rows + (i - copy);
    std::uint16_t value = 0;
    if (copied && c < d) {
      value = memory.array<const std::uint16_t>(
          r[3] + 2 * at32(amp::left_offset(source_start + i, column + c, shard_rows, kPanel)),
          1)[0];
    }
    std::uint64_t to = 0;
    if constexpr (P == Pack::kQuery) {
      to = amp::left_offset(row, c, padded_rows, kPanel);
    } else if constexpr (P == Pack::kKey) {
      to = amp::weight_offset(c, row, padded_head, kPanel);  // B[k = head column][n = key row]
    } else {
      to = amp::weight_offset(row, c, padded_rows, kPanel);  // B[k = key row][n = head column]
    }
    block[at32(to)] = value;
  };
  for (std::uint32_t j = mine.first; j < mine.first + mine.count; ++j) {
    if constexpr (kByColumns) {
      for (std::uint32_t i = 0; i < written_rows; ++i) put(i, j);
    } else {
      for (std::uint32_t c = 0; c < padded_head; ++c) put(j, c);
    }
  }
}

void unpack(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t shard_rows = r[4], column = r[5], copy = r[7], d = r[8];
  const std::uint32_t source_start = r[6] & 0xFFFFu, destination_start = r[6] >> 16;
  const Share mine = balanced_share(copy, worker);
  if (mine.count == 0 || d == 0) return;
  const auto source =
      memory.array<const std::uint16_t>(r[3] + 2 * (source_start + mine.first) * d, mine.count * d);
  for (std::uint32_t i = 0; i < mine.count; ++i) {
    for (std::uint32_t j = 0; j < d; ++j) {
      const std::uint64_t at =
          amp::left_offset(destination_start + mine.first + i, column + j, shard_rows, kPanel);
      memory.array<std::uint16_t>(r[2] + 2 * at32(at), 1)[0] = source[i * d + j];
    }
  }
}

void softmax(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[4], keys = r[5];
  if (rows <= worker) return;
  const std::uint32_t columns = round_up16(keys);
  const float scale = f32_from_bits(r[6]);
  const auto scores = memory.array<const std::uint16_t>(r[3], rows * columns);
  const auto weights = memory.array<std::uint16_t>(r[2], rows * columns);
  const auto state = memory.array<std::uint32_t>(r[2] + 2 * rows * columns, 2 * rows);
  const auto score = [&](std::uint32_t row, std::uint32_t n) {
    return f32_from_bits(widen_f16(scores[at32(amp::output_offset(row, n, rows))]));
  };
  for (std::uint32_t row = worker; row < rows; row += kWorkers) {
    float maximum = f32_from_bits(0xFF800000u);  // −Inf
    bool nan = false;
    for (std::uint32_t n = 0; n < keys; ++n) {
      const float s = score(row, n);
      if (s != s) nan = true;
      if (s > maximum) maximum = s;
    }
    if (nan) maximum = f32_from_bits(kF32CanonicalNan);
    float sum = 0.0f;
    std::uint32_t n = 0;
#if TESSERA_DEVICE_FAST_PATHS
    // Real keys in pairs: the two shifted scores, one f16v2exp (ipu_f16_
    // functions.hpp), the sum still in key order.
    for (; n + 2 <= keys; n += 2) {
      const std::uint16_t t[2] = {to_f16((score(row, n) - maximum) * scale),
                                  to_f16((score(row, n + 1) - maximum) * scale)};
      half2 shifted;
      __builtin_memcpy(&shifted, t, sizeof shifted);
      const half2 exps = canonical_lanes<std::uint16_t>(ipu21::f16v2exp(shifted));
      std::uint16_t p[2];
      __builtin_memcpy(p, &exps, sizeof p);
      for (std::uint32_t i = 0; i < 2; ++i) {
        sum = sum + f32_from_bits(widen_f16(p[i]));
        weights[at32(amp::left_offset(row, n + i, rows, kPanel))] = p[i];
      }
    }
#endif
    for (; n < columns; ++n) {
      std::uint16_t p = 0;  // padding keys: weight +0
      if (n < keys) {
        const std::uint16_t t = to_f16((score(row, n) - maximum) * scale);
        p = to_f16(exp_f32(f32_from_bits(widen_f16(t))));
        sum = sum + f32_from_bits(widen_f16(p));
      }
      weights[at32(amp::left_offset(row, n, rows, kPanel))] = p;
    }
    state[row] = canonical_f32(maximum * scale);
    state[rows + row] = canonical_f32(sum);
  }
}

enum class Stage { kInitial, kMiddle, kFinal, kSingle };

float nan_max(float a, float b) {
  if (a != a || b != b) return f32_from_bits(kF32CanonicalNan);
  return a >= b ? a : b;
}

template <Stage S>
void merge(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[5], keys = r[6], d = r[7];
  if (rows <= worker) return;
  const std::uint32_t padded_head = round_up16(d);
  const auto values = memory.array<const std::uint16_t>(r[3], rows * padded_head);
  const auto block = memory.array<const float>(r[4] + 2 * rows * round_up16(keys), 2 * rows);
  const auto accumulator = memory.array<std::uint32_t>(r[2], (d + 2) * rows);
  const std::uint32_t maxima = rows * d, sums = maxima + rows;
  for (std::uint32_t row = worker; row < rows; row += kWorkers) {
    const auto value = [&](std::uint32_t c) {
      return f32_from_bits(widen_f16(values[at32(amp::output_offset(row, c, rows))]));
    };
    const float block_max = block[row], block_sum = block[rows + row];
    if constexpr (S == Stage::kInitial || S == Stage::kSingle) {
      const float scale = S == Stage::kSingle ? 1.0f / block_sum : 1.0f;
      for (std::uint32_t c = 0; c < d; ++c) {
        accumulator[row * d + c] = canonical_f32(S == Stage::kSingle ? value(c) * scale : value(c));
      }
      accumulator[maxima + row] = canonical_f32(block_max);
      accumulator[sums + row] = canonical_f32(block_sum);
    } else {
      const float m = f32_from_bits(accumulator[maxima + row]);
      const float l = f32_from_bits(accumulator[sums + row]);
      const float merged = nan_max(m, block_max);
      const float alpha = exp_f32(m - merged);
      const float beta = exp_f32(block_max - merged);
      const float sum = l * alpha + block_sum * beta;
      const float scale = S == Stage::kFinal ? 1.0f / sum : 1.0f;
      for (std::uint32_t c = 0; c < d; ++c) {
        const float updated = f32_from_bits(accumulator[row * d + c]) * alpha + value(c) * beta;
        accumulator[row * d + c] = canonical_f32(S == Stage::kFinal ? updated * scale : updated);
      }
      accumulator[maxima + row] = canonical_f32(merged);
      accumulator[sums + row] = canonical_f32(sum);
    }
  }
}

// A key split's part folded in: the middle/final update with the part's
// f32 O, m and l (rows strided, as the merges).
template <bool Final>
void combine(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[4], d = r[5];
  if (rows <= worker) return;
  const auto part = memory.array<const std::uint32_t>(r[3], (d + 2) * rows);
  const auto accumulator = memory.array<std::uint32_t>(r[2], (d + 2) * rows);
  const std::uint32_t maxima = rows * d, sums = maxima + rows;
  for (std::uint32_t row = worker; row < rows; row += kWorkers) {
    const float m = f32_from_bits(accumulator[maxima + row]);
    const float l = f32_from_bits(accumulator[sums + row]);
    const float part_max = f32_from_bits(part[maxima + row]);
    const float part_sum = f32_from_bits(part[sums + row]);
    const float merged = nan_max(m, part_max);
    const float alpha = exp_f32(m - merged);
    const float beta = exp_f32(part_max - merged);
    const float sum = l * alpha + part_sum * beta;
    const float scale = Final ? 1.0f / sum : 1.0f;
    for (std::uint32_t c = 0; c < d; ++c) {
      const float updated =
          f32_from_bits(accumulator[row * d + c]) * alpha + f32_from_bits(part[row * d + c]) * beta;
      accumulator[row * d + c] = canonical_f32(Final ? updated * scale : updated);
    }
    accumulator[maxima + row] = canonical_f32(merged);
    accumulator[sums + row] = canonical_f32(sum);
  }
}

void f32_to_f16(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t count = r[4];
  const std::uint32_t pairs = (count + 1) / 2;
  if (pairs <= worker) return;
  const auto in = memory.array<const std::uint32_t>(r[3], count);
  const auto out = memory.array<std::uint16_t>(r[2], count);
  for (std::uint32_t pair = worker; pair < pairs; pair += kWorkers) {
    for (std::uint32_t i = 2 * pair; i < 2 * pair + 2 && i < count; ++i) {
      out[i] = to_f16(f32_from_bits(in[i]));
    }
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_attention_pack_query_f16,
                      ::tessera::device::pack<::tessera::device::Pack::kQuery>)
TESSERA_DEVICE_KERNEL(tessera_attention_pack_key_f16,
                      ::tessera::device::pack<::tessera::device::Pack::kKey>)
TESSERA_DEVICE_KERNEL(tessera_attention_pack_value_f16,
                      ::tessera::device::pack<::tessera::device::Pack::kValue>)
TESSERA_DEVICE_KERNEL(tessera_attention_unpack_head_f16, ::tessera::device::unpack)
TESSERA_DEVICE_KERNEL(tessera_attention_softmax_f16, ::tessera::device::softmax)
TESSERA_DEVICE_KERNEL(tessera_attention_merge_initial_f16,
                      ::tessera::device::merge<::tessera::device::Stage::kInitial>)
TESSERA_DEVICE_KERNEL(tessera_attention_merge_middle_f16,
                      ::tessera::device::merge<::tessera::device::Stage::kMiddle>)
TESSERA_DEVICE_KERNEL(tessera_attention_merge_final_f16,
                      ::tessera::device::merge<::tessera::device::Stage::kFinal>)
TESSERA_DEVICE_KERNEL(tessera_attention_merge_single_f16,
                      ::tessera::device::merge<::tessera::device::Stage::kSingle>)
TESSERA_DEVICE_KERNEL(tessera_attention_f32_to_f16, ::tessera::device::f32_to_f16)
TESSERA_DEVICE_KERNEL(tessera_attention_combine_middle_f32, ::tessera::device::combine<false>)
TESSERA_DEVICE_KERNEL(tessera_attention_combine_final_f32, ::tessera::device::combine<true>)
