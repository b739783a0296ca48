#pragma once
// One flash-attention task on one tile, kernel by kernel, as the compiler
// will schedule it (kernels/attention.hpp): pack query, then per key block
// {pack key and pack value from every K/V source shard the block overlaps,
// QK GEMM, softmax, PV GEMM, merge}, f32 → f16, unpack into the hidden
// output shard. Every buffer is an allocation and every call a call site, so
// the simulator checks every access of every model.

#include <cstdint>
#include <string>
#include <vector>

#include "tests/kernels/attention_reference.hpp"
#include "tests/kernels/kernel_sequence.hpp"

namespace tessera::kernels::testing {

struct AttentionTaskShape {
  std::uint32_t query_rows = 9;
  std::uint32_t key_rows = 729;
  std::uint32_t head_dim = 72;
  std::uint32_t head = 0;              // the head's hidden columns start at head·head_dim
  std::uint32_t hidden = 80;           // hidden columns of every shard (a multiple of 16)
  std::uint32_t key_block_rows = 92;   // the largest key block; blocks are balanced
  std::uint32_t key_shard_rows = 13;   // rows of each K and V source shard
  std::uint32_t query_shard_rows = 9;  // rows of the query (and output) shard
  std::uint32_t query_start = 0;       // the query block's first row in that shard
  float scale = 0.0F;                  // 1/√head_dim unless a test says otherwise
  // The scores allocation's size; 0: attention_scores_bytes (the true size).
  std::uint32_t scores_bytes = 0;
};

// Logical inputs: the query shard (query_shard_rows × hidden), K and V
// (key_rows × hidden), and the output shard's contents before the task.
struct AttentionTaskData {
  F16Matrix query, key, value, output_before;
};

struct AttentionTask {
  std::vector<SequenceCall> calls;
  std::vector<std::string> call_names;  // "QK GEMM, block 3", …
  std::vector<Buffer> buffers;
  std::uint32_t output_address = 0;  // the output shard
  std::uint32_t scores_address = 0;
  std::uint32_t scores_bytes = 0;
};

// The key blocks of `key_rows` keys with at most `block_rows` each, balanced
// (the first ones one row longer): [first, end) per block.
std::vector<std::pair<std::uint32_t, std::uint32_t>> key_blocks(std::uint32_t key_rows,
                                                                std::uint32_t block_rows);

AttentionTask build_attention_task(const AttentionTaskShape& shape, const AttentionTaskData& data);

// Random inputs: query and key values uniform in ±qk_range, values in
// ±value_range, the output shard random finite halves.
AttentionTaskData random_attention_data(const AttentionTaskShape& shape, std::uint64_t seed,
                                        double qk_range, double value_range);

struct AttentionTaskResult {
  bool halted = false;
  std::string fault;
  std::size_t faulting_call = 0;
  F16Matrix output;  // the output shard after the task
  std::uint64_t cycles = 0;
};
AttentionTaskResult run_attention_task(const AttentionTask& task, const AttentionTaskShape& shape,
                                       sim::SimOptions options = {});

}  // namespace tessera::kernels::testing
