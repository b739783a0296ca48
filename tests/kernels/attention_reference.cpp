#include "tests/kernels/attention_reference.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kernels/activation_math.hpp"
#include "kernels/amp_layout.hpp"
#include "kernels/half.hpp"

namespace tessera::kernels::testing {
namespace {

constexpr unsigned kPanel = 16;

void put16(std::vector<std::uint8_t>& bytes, std::uint64_t element, std::uint16_t value) {
  bytes.at(2 * element) = static_cast<std::uint8_t>(value);
  bytes.at(2 * element + 1) = static_cast<std::uint8_t>(value >> 8);
}

std::uint16_t get16(const std::vector<std::uint8_t>& bytes, std::uint64_t element) {
  return static_cast<std::uint16_t>(bytes.at(2 * element) | bytes.at(2 * element + 1) << 8);
}

// f32 → f16 by the kernels' rule: round to nearest even, NaN canonical.
std::uint16_t round_f16(float value) {
  if (std::isnan(value)) return kF16QuietNan;
  return f32_to_f16(value);
}

float canonical(float value) {
  return std::isnan(value) ? std::bit_cast<float>(0x7FC00000u) : value;
}

}  // namespace

// ---- Layouts

std::vector<std::uint8_t> to_a16(const F16Matrix& m) {
  std::vector<std::uint8_t> bytes(m.bits.size() * 2);
  for (std::uint32_t r = 0; r < m.rows; ++r) {
    for (std::uint32_t c = 0; c < m.cols; ++c) {
      put16(bytes, amp::left_offset(r, c, m.rows, kPanel), m.at(r, c));
    }
  }
  return bytes;
}

F16Matrix from_a16(const std::vector<std::uint8_t>& bytes, std::uint32_t rows, std::uint32_t cols) {
  F16Matrix m(rows, cols);
  for (std::uint32_t r = 0; r < rows; ++r) {
    for (std::uint32_t c = 0; c < cols; ++c)
      m.at(r, c) = get16(bytes, amp::left_offset(r, c, rows, kPanel));
  }
  return m;
}

std::vector<std::uint8_t> to_c16(const F16Matrix& m) {
  std::vector<std::uint8_t> bytes(m.bits.size() * 2);
  for (std::uint32_t r = 0; r < m.rows; ++r) {
    for (std::uint32_t c = 0; c < m.cols; ++c)
      put16(bytes, amp::output_offset(r, c, m.rows), m.at(r, c));
  }
  return bytes;
}

F16Matrix from_c16(const std::vector<std::uint8_t>& bytes, std::uint32_t rows, std::uint32_t cols) {
  F16Matrix m(rows, cols);
  for (std::uint32_t r = 0; r < rows; ++r) {
    for (std::uint32_t c = 0; c < cols; ++c)
      m.at(r, c) = get16(bytes, amp::output_offset(r, c, rows));
  }
  return m;
}

std::vector<std::uint8_t> to_b16(const F16Matrix& m) {
  std::vector<std::uint8_t> bytes(m.bits.size() * 2);
  for (std::uint32_t k = 0; k < m.rows; ++k) {
    for (std::uint32_t n = 0; n < m.cols; ++n) {
      put16(bytes, amp::weight_offset(k, n, m.rows, kPanel), m.at(k, n));
    }
  }
  return bytes;
}

F16Matrix from_b16(const std::vector<std::uint8_t>& bytes, std::uint32_t inner,
                   std::uint32_t columns) {
  F16Matrix m(inner, columns);
  for (std::uint32_t k = 0; k < inner; ++k) {
    for (std::uint32_t n = 0; n < columns; ++n) {
      m.at(k, n) = get16(bytes, amp::weight_offset(k, n, inner, kPanel));
    }
  }
  return m;
}

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> f32_values(const std::vector<std::uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

std::vector<std::uint8_t> f16_bytes(const std::vector<std::uint16_t>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 2);
  for (std::size_t i = 0; i < values.size(); ++i) put16(bytes, i, values[i]);
  return bytes;
}

std::vector<std::uint16_t> f16_values(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint16_t> values(bytes.size() / 2);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = get16(bytes, i);
  return values;
}

// ---- Pack

std::string_view PackCall::kernel() const {
  switch (pack) {
    case AttentionPack::kQuery:
      return kAttentionPackQuery;
    case AttentionPack::kKey:
      return kAttentionPackKey;
    case AttentionPack::kValue:
      return kAttentionPackValue;
  }
  return {};
}

Registers PackCall::registers(std::uint32_t out, std::uint32_t source) const {
  Registers r{};
  r[kPackOut] = out;
  r[kPackSource] = source;
  r[kPackSourceRows] = shard.rows;
  r[kPackSourceColumn] = column;
  r[kPackRowStarts] = row_starts(source_start, destination_start);
  r[kPackCopyRows] = copy;
  r[kPackBlockRows] = block_rows;
  r[kPackHeadDim] = head_dim;
  return r;
}

F16Matrix reference_pack(const PackCall& call, F16Matrix block) {
  // Padded extents by their definitions: at least 12 query rows (the GEMM
  // minimum); key rows and the head dimension up to a multiple of 16.
  const std::uint32_t padded_head = (call.head_dim + 15) / 16 * 16;
  const std::uint32_t padded_rows = call.pack == AttentionPack::kQuery
                                        ? std::max<std::uint32_t>(call.block_rows, 12)
                                        : (call.block_rows + 15) / 16 * 16;
  if (block.rows != padded_rows || block.cols != padded_head) {
    throw std::invalid_argument("reference_pack: the block's shape");
  }
  if (call.copy == 0) return block;
  for (std::uint32_t i = 0; i < call.copy; ++i) {
    for (std::uint32_t c = 0; c < padded_head; ++c) {
      block.at(call.destination_start + i, c) =
          c < call.head_dim ? call.shard.at(call.source_start + i, call.column + c) : 0;
    }
  }
  for (std::uint32_t row = call.block_rows; row < padded_rows; ++row) {
    for (std::uint32_t c = 0; c < padded_head; ++c) block.at(row, c) = 0;
  }
  return block;
}

std::vector<std::uint8_t> block_bytes(AttentionPack pack, const F16Matrix& block) {
  if (pack == AttentionPack::kQuery) return to_a16(block);
  if (pack == AttentionPack::kValue) return to_b16(block);
  // K: the transposed right operand, B = Kᵀ (D × C).
  F16Matrix transposed(block.cols, block.rows);
  for (std::uint32_t n = 0; n < block.rows; ++n) {
    for (std::uint32_t c = 0; c < block.cols; ++c) transposed.at(c, n) = block.at(n, c);
  }
  return to_b16(transposed);
}

F16Matrix block_from_bytes(AttentionPack pack, const std::vector<std::uint8_t>& bytes,
                           std::uint32_t padded_rows, std::uint32_t padded_head) {
  if (pack == AttentionPack::kQuery) return from_a16(bytes, padded_rows, padded_head);
  if (pack == AttentionPack::kValue) return from_b16(bytes, padded_rows, padded_head);
  const F16Matrix transposed = from_b16(bytes, padded_head, padded_rows);
  F16Matrix block(padded_rows, padded_head);
  for (std::uint32_t n = 0; n < padded_rows; ++n) {
    for (std::uint32_t c = 0; c < padded_head; ++c) block.at(n, c) = transposed.at(c, n);
  }
  return block;
}

// ---- Softmax

BlockWeights reference_softmax(const F16Matrix& scores, std::uint32_t key_rows, float scale) {
  BlockWeights out{F16Matrix(scores.rows, scores.cols), {}, {}};
  for (std::uint32_t r = 0; r < scores.rows; ++r) {
    std::vector<float> s;
    for (std::uint32_t n = 0; n < key_rows; ++n) s.push_back(f16_to_f32(scores.at(r, n)));
    float m = -std::numeric_limits<float>::infinity();
    for (const float v : s) {
      if (std::isnan(v)) {
        m = std::numeric_limits<float>::quiet_NaN();
        break;
      }
      m = std::max(m, v);
    }
    float l = 0.0F;
    for (std::uint32_t n = 0; n < key_rows; ++n) {
      const float shifted = s[n] - m;
      const std::uint16_t t = round_f16(shifted * scale);
      const std::uint16_t p = round_f16(exp_f32(f16_to_f32(t)));
      out.p.at(r, n) = p;
      l += f16_to_f32(p);
    }
    out.max.push_back(canonical(m * scale));
    out.sum.push_back(canonical(l));
  }
  return out;
}

// ---- Merge

std::vector<std::uint8_t> Accumulator::bytes() const {
  std::vector<float> all = o;
  all.insert(all.end(), max.begin(), max.end());
  all.insert(all.end(), sum.begin(), sum.end());
  return f32_bytes(all);
}

Accumulator Accumulator::from_bytes(const std::vector<std::uint8_t>& bytes, std::uint32_t rows,
                                    std::uint32_t head_dim) {
  const std::vector<float> all = f32_values(bytes);
  Accumulator a;
  a.rows = rows;
  a.head_dim = head_dim;
  const std::size_t n = std::size_t{rows} * head_dim;
  a.o.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
  a.max.assign(all.begin() + static_cast<std::ptrdiff_t>(n),
               all.begin() + static_cast<std::ptrdiff_t>(n + rows));
  a.sum.assign(all.begin() + static_cast<std::ptrdiff_t>(n + rows),
               all.begin() + static_cast<std::ptrdiff_t>(n + 2 * rows));
  return a;
}

Accumulator reference_merge(AttentionMergeStage stage, const Accumulator& before,
                            const F16Matrix& values, const std::vector<float>& block_max,
                            const std::vector<float>& block_sum, std::uint32_t head_dim) {
  Accumulator after;
  after.rows = values.rows;
  after.head_dim = head_dim;
  after.o.resize(std::size_t{values.rows} * head_dim);
  for (std::uint32_t r = 0; r < values.rows; ++r) {
    const auto v = [&](std::uint32_t c) { return f16_to_f32(values.at(r, c)); };
    float* o = after.o.data() + std::size_t{r} * head_dim;
    if (stage == AttentionMergeStage::kInitial) {
      for (std::uint32_t c = 0; c < head_dim; ++c) o[c] = canonical(v(c));
      after.max.push_back(canonical(block_max[r]));
      after.sum.push_back(canonical(block_sum[r]));
      continue;
    }
    if (stage == AttentionMergeStage::kSingle) {
      const float inverse = 1.0F / block_sum[r];
      for (std::uint32_t c = 0; c < head_dim; ++c) o[c] = canonical(v(c) * inverse);
      after.max.push_back(canonical(block_max[r]));
      after.sum.push_back(canonical(block_sum[r]));
      continue;
    }
    const float m = before.max[r], l = before.sum[r];
    const float merged = std::isnan(m) || std::isnan(block_max[r])
                             ? std::numeric_limits<float>::quiet_NaN()
                             : std::max(m, block_max[r]);
    const float alpha = exp_f32(m - merged);
    const float beta = exp_f32(block_max[r] - merged);
    const float la = l * alpha, lb = block_sum[r] * beta;
    const float sum = la + lb;
    for (std::uint32_t c = 0; c < head_dim; ++c) {
      const float oa = before.o[std::size_t{r} * head_dim + c] * alpha;
      const float vb = v(c) * beta;
      float updated = oa + vb;
      if (stage == AttentionMergeStage::kFinal) updated = updated * (1.0F / sum);
      o[c] = canonical(updated);
    }
    after.max.push_back(canonical(merged));
    after.sum.push_back(canonical(sum));
  }
  return after;
}

Accumulator reference_combine(bool final, const Accumulator& before, const Accumulator& part) {
  Accumulator after = before;
  for (std::uint32_t r = 0; r < before.rows; ++r) {
    const float m = before.max[r], l = before.sum[r];
    const float merged = std::isnan(m) || std::isnan(part.max[r]) ? std::numeric_limits<float>::quiet_NaN()
                                                                  : std::max(m, part.max[r]);
    const float alpha = exp_f32(m - merged);
    const float beta = exp_f32(part.max[r] - merged);
    const float la = l * alpha, lb = part.sum[r] * beta;
    const float sum = la + lb;
    for (std::uint32_t c = 0; c < before.head_dim; ++c) {
      const std::size_t at = std::size_t{r} * before.head_dim + c;
      const float oa = before.o[at] * alpha;
      const float ob = part.o[at] * beta;
      float updated = oa + ob;
      if (final) updated = updated * (1.0F / sum);
      after.o[at] = canonical(updated);
    }
    after.max[r] = canonical(merged);
    after.sum[r] = canonical(sum);
  }
  return after;
}

std::vector<std::uint16_t> reference_f32_to_f16(const std::vector<float>& values) {
  std::vector<std::uint16_t> out;
  for (const float v : values) out.push_back(round_f16(v));
  return out;
}

F16Matrix reference_unpack(F16Matrix shard, const std::vector<std::uint16_t>& source,
                           std::uint32_t column, std::uint32_t source_start,
                           std::uint32_t destination_start, std::uint32_t copy,
                           std::uint32_t head_dim) {
  for (std::uint32_t i = 0; i < copy; ++i) {
    for (std::uint32_t c = 0; c < head_dim; ++c) {
      shard.at(destination_start + i, column + c) =
          source.at(std::size_t{source_start + i} * head_dim + c);
    }
  }
  return shard;
}

std::string_view merge_kernel(AttentionMergeStage stage) {
  switch (stage) {
    case AttentionMergeStage::kInitial:
      return kAttentionMergeInitial;
    case AttentionMergeStage::kMiddle:
      return kAttentionMergeMiddle;
    case AttentionMergeStage::kFinal:
      return kAttentionMergeFinal;
    case AttentionMergeStage::kSingle:
      return kAttentionMergeSingle;
  }
  return {};
}

bool same_f32(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

}  // namespace tessera::kernels::testing
