#include "tests/kernels/attention_task.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <stdexcept>

#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half.hpp"
#include "target/memory_map.hpp"

namespace tessera::kernels::testing {
namespace {

// Places buffers one after another from `next`, 64-byte aligned, below `end`.
class Placer {
 public:
  Placer(std::uint32_t begin, std::uint32_t end) : next_(begin), end_(end) {}
  std::uint32_t place(std::uint64_t bytes) {
    const std::uint32_t at = next_;
    const std::uint64_t after = (std::uint64_t{next_} + bytes + 63) / 64 * 64;
    if (after > end_) throw std::invalid_argument("attention task: buffers do not fit");
    next_ = static_cast<std::uint32_t>(after);
    return at;
  }

 private:
  std::uint32_t next_;
  std::uint32_t end_;
};

Registers gemm_registers(std::uint32_t c, std::uint32_t a, std::uint32_t b, std::uint32_t rows,
                         std::uint32_t inner, std::uint32_t columns) {
  Registers r{};
  r[kGemmOutputRegister] = c;
  r[kGemmLeftRegister] = a;
  r[kGemmWeightRegister] = b;
  r[kGemmRowsRegister] = rows;
  r[kGemmInnerRegister] = inner;
  r[kGemmColumnsRegister] = columns;
  return r;
}

}  // namespace

std::vector<std::pair<std::uint32_t, std::uint32_t>> key_blocks(std::uint32_t key_rows,
                                                                std::uint32_t block_rows) {
  const std::uint32_t count = (key_rows + block_rows - 1) / block_rows;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> blocks;
  std::uint32_t first = 0;
  for (std::uint32_t b = 0; b < count; ++b) {
    const std::uint32_t rows = key_rows / count + (b < key_rows % count ? 1 : 0);
    blocks.emplace_back(first, first + rows);
    first += rows;
  }
  return blocks;
}

AttentionTask build_attention_task(const AttentionTaskShape& s, const AttentionTaskData& data) {
  AttentionTask task;
  const std::uint32_t rows = attention_query_rows(s.query_rows);
  const std::uint32_t padded_head = attention_padded_head_dim(s.head_dim);
  const std::uint32_t column = s.head * s.head_dim;
  const auto blocks = key_blocks(s.key_rows, s.key_block_rows);
  std::uint32_t largest = 0;
  for (const auto& [first, end] : blocks) largest = std::max(largest, end - first);

  // A and the blocks in standard memory, the scores at the interleaved
  // operand window (the GEMMs' C, in another element than A), the K and V
  // source shards in the rest of interleaved memory.
  Placer standard(kBufferBase, target::kStandardRegion.end);
  Placer interleaved(target::kInterleavedOperandWindow.end, target::kSram.end);
  const auto add = [&](std::string name, std::uint32_t address, std::uint64_t bytes,
                       std::vector<std::uint8_t> contents = {}) {
    task.buffers.push_back(
        Buffer{std::move(name), address, static_cast<std::uint32_t>(bytes), std::move(contents)});
    return address;
  };

  const std::uint32_t query_shard = standard.place(to_a16(data.query).size());
  add("q.shard", query_shard, to_a16(data.query).size(), to_a16(data.query));
  task.output_address = standard.place(to_a16(data.output_before).size());
  add("out.shard", task.output_address, to_a16(data.output_before).size(),
      to_a16(data.output_before));
  const std::uint64_t query_bytes = attention_query_block_bytes(s.query_rows, s.head_dim);
  const std::uint32_t query_block = add("q.block", standard.place(query_bytes), query_bytes);
  const std::uint64_t key_bytes =
      attention_pack_out_bytes(AttentionPack::kKey, largest, s.head_dim);
  const std::uint32_t key_block = add("k.block", standard.place(key_bytes), key_bytes);
  const std::uint32_t value_block = add("v.block", standard.place(key_bytes), key_bytes);
  const std::uint64_t weights_bytes = attention_weights_buffer_bytes(s.query_rows, largest);
  const std::uint32_t weights = add("weights", standard.place(weights_bytes), weights_bytes);
  const std::uint64_t accumulator_bytes = attention_accumulator_bytes(rows, s.head_dim);
  const std::uint32_t accumulator =
      add("accumulator", standard.place(accumulator_bytes), accumulator_bytes);
  const std::uint64_t f16_bytes = std::uint64_t{rows} * s.head_dim * 2;
  const std::uint32_t output_f16 = add("o.f16", standard.place(f16_bytes), f16_bytes);
  task.scores_address = target::kInterleavedOperandWindow.begin;
  task.scores_bytes =
      s.scores_bytes != 0
          ? s.scores_bytes
          : static_cast<std::uint32_t>(attention_scores_bytes(s.query_rows, largest, s.head_dim));
  add("scores", task.scores_address, task.scores_bytes);

  // K and V source shards of key_shard_rows rows each (the last may be shorter).
  struct Shard {
    std::uint32_t first, rows, key_address, value_address;
  };
  std::vector<Shard> shards;
  for (std::uint32_t first = 0; first < s.key_rows; first += s.key_shard_rows) {
    const std::uint32_t n = std::min(s.key_shard_rows, s.key_rows - first);
    F16Matrix k(n, s.hidden), v(n, s.hidden);
    for (std::uint32_t r = 0; r < n; ++r) {
      for (std::uint32_t c = 0; c < s.hidden; ++c) {
        k.at(r, c) = data.key.at(first + r, c);
        v.at(r, c) = data.value.at(first + r, c);
      }
    }
    const auto kb = to_a16(k), vb = to_a16(v);
    const std::uint32_t ka =
        add(fmt::format("k.shard[{}]", shards.size()), interleaved.place(kb.size()), kb.size(), kb);
    const std::uint32_t va =
        add(fmt::format("v.shard[{}]", shards.size()), interleaved.place(vb.size()), vb.size(), vb);
    shards.push_back({first, n, ka, va});
  }

  const auto call = [&](std::string name, std::string_view kernel, const Registers& r) {
    task.calls.push_back({kernel, r});
    task.call_names.push_back(std::move(name));
  };
  const auto pack = [&](std::uint32_t out, std::uint32_t source, std::uint32_t source_rows,
                        std::uint32_t source_start, std::uint32_t destination_start,
                        std::uint32_t copy, std::uint32_t block_rows) {
    Registers r{};
    r[kPackOut] = out;
    r[kPackSource] = source;
    r[kPackSourceRows] = source_rows;
    r[kPackSourceColumn] = column;
    r[kPackRowStarts] = row_starts(source_start, destination_start);
    r[kPackCopyRows] = copy;
    r[kPackBlockRows] = block_rows;
    r[kPackHeadDim] = s.head_dim;
    return r;
  };

  call("pack query", kAttentionPackQuery,
       pack(query_block, query_shard, s.query_shard_rows, s.query_start, 0, s.query_rows,
            s.query_rows));
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto [first, end] = blocks[b];
    const std::uint32_t block_rows = end - first;
    const std::uint32_t columns = attention_key_columns(block_rows);
    for (const Shard& shard : shards) {
      const std::uint32_t from = std::max(first, shard.first);
      const std::uint32_t to = std::min(end, shard.first + shard.rows);
      if (from >= to) continue;
      call(fmt::format("pack key, block {}", b), kAttentionPackKey,
           pack(key_block, shard.key_address, shard.rows, from - shard.first, from - first,
                to - from, block_rows));
      call(fmt::format("pack value, block {}", b), kAttentionPackValue,
           pack(value_block, shard.value_address, shard.rows, from - shard.first, from - first,
                to - from, block_rows));
    }
    call(fmt::format("QK GEMM, block {}", b), kGemmF16Init,
         gemm_registers(task.scores_address, query_block, key_block, rows, padded_head, columns));
    Registers softmax{};
    softmax[kSoftmaxOut] = weights;
    softmax[kSoftmaxScores] = task.scores_address;
    softmax[kSoftmaxRows] = rows;
    softmax[kSoftmaxKeyRows] = block_rows;
    softmax[kSoftmaxScale] = std::bit_cast<std::uint32_t>(s.scale);
    call(fmt::format("softmax, block {}", b), kAttentionSoftmax, softmax);
    call(fmt::format("PV GEMM, block {}", b), kGemmF16Init,
         gemm_registers(task.scores_address, weights, value_block, rows, columns, padded_head));
    Registers merge{};
    merge[kMergeAccumulator] = accumulator;
    merge[kMergeValues] = task.scores_address;
    merge[kMergeWeights] = weights;
    merge[kMergeRows] = rows;
    merge[kMergeKeyRows] = block_rows;
    merge[kMergeHeadDim] = s.head_dim;
    const AttentionMergeStage stage = blocks.size() == 1       ? AttentionMergeStage::kSingle
                                      : b == 0                 ? AttentionMergeStage::kInitial
                                      : b + 1 == blocks.size() ? AttentionMergeStage::kFinal
                                                               : AttentionMergeStage::kMiddle;
    call(fmt::format("merge, block {}", b), merge_kernel(stage), merge);
  }
  Registers convert{};
  convert[kConvertOut] = output_f16;
  convert[kConvertIn] = accumulator;
  convert[kConvertCount] = rows * s.head_dim;
  call("f32 to f16", kAttentionF32ToF16, convert);
  Registers unpack{};
  unpack[kUnpackOut] = task.output_address;
  unpack[kUnpackSource] = output_f16;
  unpack[kUnpackOutRows] = s.query_shard_rows;
  unpack[kUnpackOutColumn] = column;
  unpack[kUnpackRowStarts] = row_starts(0, s.query_start);
  unpack[kUnpackCopyRows] = s.query_rows;
  unpack[kUnpackHeadDim] = s.head_dim;
  call("unpack", kAttentionUnpack, unpack);
  return task;
}

AttentionTaskData random_attention_data(const AttentionTaskShape& s, std::uint64_t seed,
                                        double qk_range, double value_range) {
  std::mt19937_64 rng(seed);
  const auto matrix = [&](std::uint32_t rows, double range) {
    std::uniform_real_distribution<double> value(-range, range);
    F16Matrix m(rows, s.hidden);
    for (auto& h : m.bits) h = f32_to_f16(static_cast<float>(value(rng)));
    return m;
  };
  AttentionTaskData data;
  data.query = matrix(s.query_shard_rows, qk_range);
  data.key = matrix(s.key_rows, qk_range);
  data.value = matrix(s.key_rows, value_range);
  data.output_before = matrix(s.query_shard_rows, 100.0);
  return data;
}

AttentionTaskResult run_attention_task(const AttentionTask& task, const AttentionTaskShape& s,
                                       sim::SimOptions options) {
  KernelSequence run(task.calls, task.buffers, options);
  AttentionTaskResult result;
  result.halted = run.halted();
  result.fault = run.fault_text();
  result.faulting_call = run.faulting_call();
  result.cycles = run.total_cycles();
  const auto bytes = run.read(task.output_address, s.query_shard_rows * s.hidden * 2);
  result.output = from_a16(bytes, s.query_shard_rows, s.hidden);
  return result;
}

}  // namespace tessera::kernels::testing
