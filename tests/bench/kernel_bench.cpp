// Kernel-model benchmark (ARCHITECTURE.md decision 11): for each kernel
// family, the host throughput of its model called through the simulator
// (spans checked once per call against the call site's allocations) and of
// the same model on unchecked memory, the cost of span checking and of the
// kernel's ABI precondition apart, and a whole-chip compute step on one host
// thread and on several. Prints numbers; asserts nothing. Run it from a
// Release build:
//   build-release/tests/bench/tessera_bench_kernels [--calls N] [--threads N]...
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/f143_kernels.hpp"
#include "kernels/gemm.hpp"
#include "kernels/half.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/registry.hpp"
#include "sim/checked_memory.hpp"
#include "sim/chip.hpp"
#include "sim/tile.hpp"
#include "support/thread_pool.hpp"
#include "tests/sim/program.hpp"

namespace {

using namespace tessera;
using namespace tessera::sim::testing;
using kernels::Registers;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kKernelEntry = 0x4D000;  // the kernel symbol; its code never runs
constexpr std::uint32_t kBufferBase = 0x60000;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds of the calling thread: single-thread figures on a shared
// machine, where other processes steal wall time.
double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// One operand buffer of a call: its register, size and initial contents.
struct Operand {
  unsigned reg;
  std::uint32_t bytes;
  std::vector<std::uint8_t> contents;  // empty: written by the kernel
  std::uint32_t address = 0;           // 0: after the previous operand
};

// A kernel call to benchmark: the kernel, its operands (laid out one after
// another from kBufferBase), its scalar registers and the bytes one call
// reads and writes.
struct Workload {
  std::string label;
  std::string_view kernel;
  std::vector<Operand> operands;
  std::vector<std::pair<unsigned, std::uint32_t>> scalars;
  std::uint64_t moved_bytes = 0;
  std::uint64_t flops = 0;  // arithmetic kernels: floating-point operations per call

  Registers registers() const {
    Registers r{};
    std::uint32_t address = kBufferBase;
    for (const Operand& operand : operands) {
      if (operand.address != 0) {
        r[operand.reg] = operand.address;
        continue;
      }
      r[operand.reg] = address;
      address += (operand.bytes + 63) / 64 * 64;
    }
    for (const auto& [reg, value] : scalars) r[reg] = value;
    return r;
  }
};

std::vector<std::uint8_t> random_f32(std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(-4.0F, 4.0F);
  std::vector<std::uint8_t> bytes(count * 4);
  for (std::size_t i = 0; i < count; ++i) {
    const float f = value(rng);
    std::memcpy(bytes.data() + 4 * i, &f, 4);
  }
  return bytes;
}

std::vector<std::uint8_t> random_f16(std::size_t count, std::mt19937& rng) {
  // Finite halves with exponents in a normal range: sign, exponent 10..20, mantissa.
  std::uniform_int_distribution<unsigned> mantissa(0, 0x3FF), exponent(10, 20), sign(0, 1);
  std::vector<std::uint8_t> bytes(count * 2);
  for (std::size_t i = 0; i < count; ++i) {
    const auto h =
        static_cast<std::uint16_t>(sign(rng) << 15 | exponent(rng) << 10 | mantissa(rng));
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

std::vector<std::uint8_t> permutation_table(std::uint32_t n, std::mt19937& rng) {
  std::vector<std::uint32_t> sources(n);
  for (std::uint32_t i = 0; i < n; ++i) sources[i] = i;
  std::shuffle(sources.begin(), sources.end(), rng);
  std::vector<std::uint8_t> table(8 * std::size_t{n});
  for (std::uint32_t i = 0; i < n; ++i) {
    std::memcpy(table.data() + 8 * i, &i, 4);
    std::memcpy(table.data() + 8 * i + 4, &sources[i], 4);
  }
  return table;
}

// The element-wise, activation, layout, F143 and LayerNorm families at
// `bytes` of f16 (or f32) per primary operand: A16/C16 blocks are 64 columns
// wide (LayerNorm rows are 256 wide), row counts follow from the size.
void add_rowwise_workloads(std::vector<Workload>& all, std::uint32_t bytes, const std::string& size,
                           std::mt19937& rng) {
  const std::uint32_t words = bytes / 4, halves = bytes / 2;
  const auto add = [&](std::string label, std::string_view kernel, std::vector<Operand> operands,
                       std::vector<std::pair<unsigned, std::uint32_t>> scalars) {
    std::uint64_t moved = 0;
    for (const Operand& operand : operands) moved += operand.bytes;
    all.push_back({label + " " + size, kernel, std::move(operands), std::move(scalars), moved});
  };
  add("mul_f32", kernels::kMulF32,
      {{2, bytes, {}}, {3, bytes, random_f32(words, rng)}, {4, bytes, random_f32(words, rng)}},
      {{5, words}});
  add("mul_f16", kernels::kMulF16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}, {4, bytes, random_f16(halves, rng)}},
      {{5, halves}});
  add("convert_f32_to_f16", kernels::kConvertF32ToF16,
      {{2, bytes / 2, {}}, {3, bytes, random_f32(words, rng)}}, {{4, words}});
  add("convert_f16_to_f32", kernels::kConvertF16ToF32,
      {{2, bytes * 2, {}}, {3, bytes, random_f16(halves, rng)}}, {{4, halves}});
  const std::uint32_t rows = halves / 64;
  add("add_bias_c16_f16", kernels::kAddBiasC16F16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}, {4, 128, random_f16(64, rng)}},
      {{5, rows}, {6, 64}});
  add("gelu_f16", kernels::kGeluF16, {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}},
      {{4, halves}});
  add("gelu_f32", kernels::kGeluF32, {{2, bytes, {}}, {3, bytes, random_f32(words, rng)}},
      {{4, words}});
  add("gelu_c16_to_a16_f16", kernels::kGeluC16ToA16F16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}}, {{4, rows}, {5, 64}});
  add("relayout_c16_to_a16_f16", kernels::kRelayoutC16ToA16F16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}}, {{4, rows}, {5, 64}});
  add("reblock_a16_to_a16_f16", kernels::kReblockA16ToA16F16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}},
      {{4, rows}, {5, rows}, {6, 0}, {7, 0}, {8, rows}, {9, 64}});
  add("rearrange_left_f16", kernels::kRearrangeLeftF16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}},
      {{4, rows}, {5, 64}, {6, rows}, {7, 64}});
  add("rearrange_transposed_right_f16", kernels::kRearrangeTransposedRightF16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}},
      {{4, rows}, {5, 64}, {6, rows}, {7, 64}});
  add("rearrange_block_major_f16", kernels::kRearrangeBlockMajorF16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}},
      {{4, rows}, {5, 64}, {6, rows}, {7, 64}, {8, 16}});
  add("unpack_output_f16", kernels::kUnpackOutputF16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}},
      {{4, rows}, {5, 64}, {6, rows}, {7, 64}});
  add("quantize_f16_to_f143", kernels::kQuantizeF16ToF143,
      {{2, halves, {}}, {3, bytes, random_f16(halves, rng)}}, {{4, halves}, {5, 0}});
  add("quantize_a16_to_a32_f143", kernels::kQuantizeA16ToA32F143,
      {{2, halves, {}}, {3, bytes, random_f16(halves, rng)}}, {{4, rows}, {5, 64}, {6, 0}});
  // One expand covers at most one 64 x 64 scale block.
  const std::uint32_t codes = std::min<std::uint32_t>(halves, kernels::kExpandMaxElements);
  std::vector<std::uint8_t> code_bytes(codes);
  for (auto& code : code_bytes) code = static_cast<std::uint8_t>(rng() % 0x7F);
  add("expand_f143_to_f16 (<= 1 block)", kernels::kExpandF143ToF16,
      {{2, codes * 2, {}}, {3, codes, code_bytes}}, {{4, codes}, {5, 0}});
  const std::uint32_t norm_rows = halves / 256;
  add("layer_norm_f16 (256 wide)", kernels::kLayerNormF16,
      {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}, {4, 1024, random_f16(512, rng)}},
      {{5, norm_rows}, {6, 256}, {7, 1074}});
  add("add_layer_norm_f16 (256 wide)", kernels::kAddLayerNormF16,
      {{2, bytes, {}},
       {3, bytes, random_f16(halves, rng)},
       {4, bytes, random_f16(halves, rng)},
       {5, 1024, random_f16(512, rng)}},
      {{6, norm_rows}, {7, 256}, {8, 1074}});
}

// The families at `bytes` per primary operand.
std::vector<Workload> workloads(std::uint32_t bytes) {
  std::mt19937 rng(bytes);
  const std::uint32_t words = bytes / 4, halves = bytes / 2;
  const std::string size =
      bytes >= 1024 ? std::to_string(bytes / 1024) + " KiB" : std::to_string(bytes) + " B";
  std::vector<Workload> all;
  all.push_back({"copy_words " + size,
                 kernels::kCopyWords,
                 {{2, bytes, {}}, {3, bytes, random_f32(words, rng)}},
                 {{4, words}},
                 2ull * bytes});
  all.push_back({"fill_words " + size,
                 kernels::kFillWords,
                 {{2, bytes, {}}},
                 {{3, 0x3F800000}, {4, words}},
                 bytes});
  all.push_back(
      {"add_f32 " + size,
       kernels::kAddF32,
       {{2, bytes, {}}, {3, bytes, random_f32(words, rng)}, {4, bytes, random_f32(words, rng)}},
       {{5, words}},
       3ull * bytes});
  all.push_back(
      {"add_f16 " + size,
       kernels::kAddF16,
       {{2, bytes, {}}, {3, bytes, random_f16(halves, rng)}, {4, bytes, random_f16(halves, rng)}},
       {{5, halves}},
       3ull * bytes});
  const std::uint32_t cols = 256, rows = words / cols;
  all.push_back(
      {"add_row_broadcast_f32 " + size,
       kernels::kAddRowBroadcastF32,
       {{2, bytes, {}}, {3, bytes, random_f32(words, rng)}, {4, cols * 4, random_f32(cols, rng)}},
       {{5, rows}, {6, cols}},
       2ull * bytes + cols * 4});
  constexpr std::uint32_t kPartials = 4;
  all.push_back({"sum_f32 (4 partials) " + size,
                 kernels::kSumF32,
                 {{2, bytes, {}}, {3, kPartials * bytes, random_f32(kPartials * words, rng)}},
                 {{4, words}, {5, kPartials}, {6, bytes}},
                 (kPartials + 1ull) * bytes});
  all.push_back({"sum_f16 (4 partials) " + size,
                 kernels::kSumF16,
                 {{2, bytes, {}}, {3, kPartials * bytes, random_f16(kPartials * halves, rng)}},
                 {{4, halves}, {5, kPartials}, {6, bytes}},
                 (kPartials + 1ull) * bytes});
  all.push_back({"move_elements_b32 " + size,
                 kernels::kMoveElementsB32,
                 {{2, bytes, {}},
                  {3, bytes, random_f32(words, rng)},
                  {4, 8 * words, permutation_table(words, rng)}},
                 {{5, words}, {6, words}, {7, words}},
                 4ull * bytes});
  add_rowwise_workloads(all, bytes, size, rng);
  return all;
}

std::vector<std::uint8_t> random_bytes(std::size_t count, std::mt19937& rng) {
  std::uniform_int_distribution<unsigned> byte(0, 255);
  std::vector<std::uint8_t> bytes(count);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(byte(rng));
  return bytes;
}

// One GEMM call of each family at the largest SigLIP row shard for K = 64
// (129 rows at N = 64, 64 for f32) and at the smallest legal one (13 rows):
// A in standard memory, C at the interleaved operand window, the expanded
// family's weights in interleaved memory (kernels/gemm.hpp).
std::vector<Workload> gemm_workloads() {
  using kernels::GemmFamily;
  std::mt19937 rng(17);
  std::vector<Workload> all;
  const struct {
    GemmFamily family;
    std::string_view kernel;
  } families[] = {{GemmFamily::kF32, kernels::kGemmF32Init},
                  {GemmFamily::kF16, kernels::kGemmF16Init},
                  {GemmFamily::kF16ExpandedF143, kernels::kGemmF16ExpandedF143Init},
                  {GemmFamily::kF143, kernels::kGemmF143Init}};
  for (const bool largest : {true, false}) {
    for (const auto& [family, kernel] : families) {
      const kernels::GemmFormat f = kernels::gemm_format(family);
      const std::uint32_t inner = 64, columns = 64;
      const std::uint32_t rows = !largest                                                    ? 13
                                 : kernels::gemm_maximum_rows(family, inner, columns) >= 129 ? 129
                                                                                             : 64;
      const auto left = static_cast<std::uint32_t>(kernels::gemm_left_bytes(family, rows, inner));
      const auto weights =
          static_cast<std::uint32_t>(kernels::gemm_weight_bytes(family, rows, inner, columns));
      const auto out =
          static_cast<std::uint32_t>(kernels::gemm_output_bytes(family, rows, columns));
      const auto contents = [&](std::uint32_t bytes) {
        if (family == GemmFamily::kF32) return random_f32(bytes / 4, rng);
        if (family == GemmFamily::kF143) return random_bytes(bytes, rng);
        return random_f16(bytes / 2, rng);
      };
      std::vector<std::pair<unsigned, std::uint32_t>> scalars = {
          {kernels::kGemmRowsRegister, rows},
          {kernels::kGemmInnerRegister, inner},
          {kernels::kGemmColumnsRegister, columns}};
      if (family == GemmFamily::kF143)
        scalars.emplace_back(kernels::kGemmScaleRegister, static_cast<std::uint32_t>(-16));
      all.push_back(
          {std::string(kernel) + " " + std::to_string(rows) + "x" + std::to_string(inner) + "x" +
               std::to_string(columns),
           kernel,
           {{kernels::kGemmOutputRegister, out, {}, 0x80000},
            {kernels::kGemmLeftRegister, left, contents(left - f.left_tail_bytes), 0x60000},
            {kernels::kGemmWeightRegister, weights, contents(weights),
             f.interleaved_weights ? 0x90000u : 0x68000u}},
           scalars,
           std::uint64_t{left} + weights + out,
           2ull * rows * inner * columns});
    }
  }
  return all;
}

// ---- Attention (kernels/attention.hpp) at the SigLIP shape: 9 query rows
// (padded with zero rows to the GEMM's 12: attention_query_rows), a 92-row
// key block (96 key columns), head dimension 72 padded to 80, the head at
// hidden column 72 of 144-column shards.
constexpr std::uint32_t kAttnQueryRows = 9, kAttnKeyRows = 92, kAttnHeadDim = 72, kAttnHidden = 144,
                        kAttnColumn = 72;

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Halves uniform in [0, 1]: softmax weights.
std::vector<std::uint8_t> unit_f16(std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(0.0F, 1.0F);
  std::vector<std::uint8_t> bytes(count * 2);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint16_t h = kernels::f32_to_f16(value(rng));
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

std::vector<Workload> attention_workloads() {
  using namespace kernels;
  std::mt19937 rng(72);
  const std::uint32_t rows = attention_query_rows(kAttnQueryRows);       // 12
  const std::uint32_t columns = attention_key_columns(kAttnKeyRows);     // 96
  const std::uint32_t padded = attention_padded_head_dim(kAttnHeadDim);  // 80
  constexpr std::uint32_t kQueryShard = 0x60000, kQueryBlock = 0x61000, kKeyShard = 0x62000,
                          kKeyBlock = 0x69000, kValueBlock = 0x6D000, kWeights = 0x71000,
                          kAccumulator = 0x72000, kOutputF16 = 0x73000, kOutShard = 0x74000,
                          kScores = 0x80000;
  const std::uint32_t query_shard_bytes = 13 * kAttnHidden * 2;
  const std::uint32_t key_shard_bytes = kAttnKeyRows * kAttnHidden * 2;
  const auto query_block_bytes =
      static_cast<std::uint32_t>(attention_query_block_bytes(kAttnQueryRows, kAttnHeadDim));
  const auto key_block_bytes = static_cast<std::uint32_t>(
      attention_pack_out_bytes(AttentionPack::kKey, kAttnKeyRows, kAttnHeadDim));
  const auto weights_bytes =
      static_cast<std::uint32_t>(attention_weights_buffer_bytes(kAttnQueryRows, kAttnKeyRows));
  const auto accumulator_bytes =
      static_cast<std::uint32_t>(attention_accumulator_bytes(rows, kAttnHeadDim));
  const auto scores_bytes = static_cast<std::uint32_t>(
      attention_scores_bytes(kAttnQueryRows, kAttnKeyRows, kAttnHeadDim));
  const std::uint32_t f16_out_bytes = rows * kAttnHeadDim * 2;

  // Block weights: P in [0, 1], then the state (max, sum ≥ 1); an
  // accumulator of moderate values with sums ≥ 1.
  auto weights = unit_f16(std::size_t{rows} * columns, rng);
  std::vector<float> state(2 * rows);
  for (std::uint32_t r = 0; r < rows; ++r) {
    state[r] = 0.5F * static_cast<float>(r);
    state[rows + r] = 4.0F + static_cast<float>(r);
  }
  const auto state_bytes = f32_bytes(state);
  weights.insert(weights.end(), state_bytes.begin(), state_bytes.end());
  weights.resize(weights_bytes, 0);
  std::vector<float> accumulator(accumulator_bytes / 4, 0.25F);
  for (std::uint32_t r = 0; r < rows; ++r) accumulator[rows * kAttnHeadDim + rows + r] = 2.0F;

  const auto pack = [&](std::uint32_t block_rows, std::uint32_t source_rows) {
    return std::vector<std::pair<unsigned, std::uint32_t>>{
        {kPackSourceRows, source_rows},     {kPackSourceColumn, kAttnColumn},
        {kPackRowStarts, row_starts(0, 0)}, {kPackCopyRows, block_rows},
        {kPackBlockRows, block_rows},       {kPackHeadDim, kAttnHeadDim}};
  };
  const auto gemm = [](std::uint32_t r, std::uint32_t k, std::uint32_t n) {
    return std::vector<std::pair<unsigned, std::uint32_t>>{
        {kGemmRowsRegister, r}, {kGemmInnerRegister, k}, {kGemmColumnsRegister, n}};
  };
  const std::uint32_t scale = std::bit_cast<std::uint32_t>(1.0F / std::sqrt(72.0F));
  std::vector<Workload> all;
  all.push_back(
      {"pack_query 9 -> 12 x 80",
       kAttentionPackQuery,
       {{kPackOut, query_block_bytes, {}, kQueryBlock},
        {kPackSource, query_shard_bytes, random_f16(query_shard_bytes / 2, rng), kQueryShard}},
       pack(kAttnQueryRows, 13),
       std::uint64_t{rows} * padded * 2 + kAttnQueryRows * kAttnHeadDim * 2});
  for (const auto& [label, kernel, out] :
       {std::tuple{"pack_key 92 -> 80 x 96", kAttentionPackKey, kKeyBlock},
        std::tuple{"pack_value 92 -> 96 x 80", kAttentionPackValue, kValueBlock}}) {
    all.push_back(
        {label,
         kernel,
         {{kPackOut, key_block_bytes, {}, out},
          {kPackSource, key_shard_bytes, random_f16(key_shard_bytes / 2, rng), kKeyShard}},
         pack(kAttnKeyRows, kAttnKeyRows),
         std::uint64_t{key_block_bytes} + kAttnKeyRows * kAttnHeadDim * 2});
  }
  all.push_back(
      {"QK gemm_f16_init 12x80x96",
       kGemmF16Init,
       {{kGemmOutputRegister, scores_bytes, {}, kScores},
        {kGemmLeftRegister, query_block_bytes, random_f16(query_block_bytes / 2, rng), kQueryBlock},
        {kGemmWeightRegister, key_block_bytes, random_f16(key_block_bytes / 2, rng), kKeyBlock}},
       gemm(rows, padded, columns),
       std::uint64_t{query_block_bytes} + key_block_bytes + rows * columns * 2,
       2ull * rows * padded * columns});
  all.push_back({"softmax 12 x 96 (92 keys)",
                 kAttentionSoftmax,
                 {{kSoftmaxOut, weights_bytes, {}, kWeights},
                  {kSoftmaxScores, scores_bytes, random_f16(scores_bytes / 2, rng), kScores}},
                 {{kSoftmaxRows, rows}, {kSoftmaxKeyRows, kAttnKeyRows}, {kSoftmaxScale, scale}},
                 2ull * rows * columns * 2 + 8ull * rows});
  all.push_back(
      {"PV gemm_f16_init 12x96x80",
       kGemmF16Init,
       {{kGemmOutputRegister, scores_bytes, {}, kScores},
        {kGemmLeftRegister, weights_bytes, weights, kWeights},
        {kGemmWeightRegister, key_block_bytes, random_f16(key_block_bytes / 2, rng), kValueBlock}},
       gemm(rows, columns, padded),
       std::uint64_t{rows} * columns * 2 + key_block_bytes + rows * padded * 2,
       2ull * rows * columns * padded});
  all.push_back({"merge_middle 12 x 72",
                 kAttentionMergeMiddle,
                 {{kMergeAccumulator, accumulator_bytes, f32_bytes(accumulator), kAccumulator},
                  {kMergeValues, scores_bytes, random_f16(scores_bytes / 2, rng), kScores},
                  {kMergeWeights, weights_bytes, weights, kWeights}},
                 {{kMergeRows, rows}, {kMergeKeyRows, kAttnKeyRows}, {kMergeHeadDim, kAttnHeadDim}},
                 2ull * accumulator_bytes + rows * padded * 2 + 8ull * rows});
  all.push_back({"f32_to_f16 12 x 72",
                 kAttentionF32ToF16,
                 {{kConvertOut, f16_out_bytes, {}, kOutputF16},
                  {kConvertIn, accumulator_bytes, f32_bytes(accumulator), kAccumulator}},
                 {{kConvertCount, rows * kAttnHeadDim}},
                 6ull * rows * kAttnHeadDim});
  all.push_back({"unpack_head 9 x 72",
                 kAttentionUnpack,
                 {{kUnpackOut, kAttnQueryRows * kAttnHidden * 2, {}, kOutShard},
                  {kUnpackSource, f16_out_bytes, random_f16(f16_out_bytes / 2, rng), kOutputF16}},
                 {{kUnpackOutRows, kAttnQueryRows},
                  {kUnpackOutColumn, kAttnColumn},
                  {kUnpackRowStarts, row_starts(0, 0)},
                  {kUnpackCopyRows, kAttnQueryRows},
                  {kUnpackHeadDim, kAttnHeadDim}},
                 4ull * kAttnQueryRows * kAttnHeadDim});
  return all;
}

// Loads `workload` onto `tiles` tiles of a chip, each calling the kernel
// `calls` times in a supervisor loop, with allocations and a call site so
// that every span is checked.
// The debug records of one call site at `call_pc`: the kernel's symbol, one
// allocation per operand (exactly its buffer), the call site naming them.
schema::TileDebug debug_for(const Workload& workload, std::uint32_t call_pc) {
  const Registers r = workload.registers();
  schema::TileDebug debug;
  debug.symbols = {
      schema::Symbol{std::string(workload.kernel), kKernelEntry, 4, schema::SymbolKind::kKernel}};
  schema::CallSite site{call_pc, std::string(workload.kernel), {}, 0};
  for (std::size_t i = 0; i < workload.operands.size(); ++i) {
    const Operand& operand = workload.operands[i];
    const auto id = static_cast<std::uint32_t>(i + 1);
    debug.allocations.push_back(schema::Allocation{id, "buffer", "%b", r[operand.reg],
                                                   operand.bytes, 0, schema::kLiveToEnd,
                                                   schema::AllocationKind::kTensor, 0});
    site.operands.push_back(schema::CallOperand{static_cast<std::uint8_t>(operand.reg), id,
                                                r[operand.reg], operand.bytes, i == 0});
  }
  debug.call_sites = {site};
  return debug;
}

// Loads `workload` onto every tile of a chip, each calling the kernel `calls`
// times in a supervisor loop, with allocations and a call site so that every
// span is checked.
void load(sim::Chip& chip, const Workload& workload, std::uint32_t calls) {
  const Registers r = workload.registers();
  std::vector<isa::Instruction> program = load_constant(Reg::m1, calls);
  for (unsigned reg = 2; reg <= 9; ++reg)
    program = program + load_constant(static_cast<Reg>(reg), r[reg]);
  const auto loop = target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size());
  const std::uint32_t done = loop + 16;
  program = program +
            std::vector<isa::Instruction>{isa::Call{Reg::m10, kKernelEntry},
                                          isa::Add{Reg::m1, Reg::m1, -1}, isa::Brz{Reg::m1, done},
                                          isa::Bri{loop}} +
            halt();
  schema::TileDebug debug = debug_for(workload, loop);
  for (const auto tile : chip.topology().physical_tiles()) {
    load_program(chip, tile, program);
    load_program(chip, tile, {isa::Br{Reg::m10}}, kKernelEntry);
    for (const Operand& operand : workload.operands) {
      if (!operand.contents.empty())
        chip.load_segment(tile, r[operand.reg], operand.contents, false);
    }
    debug.tile = tile;
    chip.set_debug(tile, debug);
  }
}

// Tile memory with no checks at all: the same model on a plain buffer. With
// `inline_spans`, every register has a window over all of SRAM, so that
// the model reaches its spans inline, as it does on the simulator's memory
// once an operand is prepared (kernels::SpanWindow), and the comparison
// measures the checks, not a virtual call the checked memory skips; without,
// every span goes through the virtual acquire (the bench's baseline until
// the windows existed).
class UncheckedMemory final : public kernels::KernelMemory {
 public:
  explicit UncheckedMemory(bool inline_spans) {
    using kernels::SpanWindow;
    windows_.fill({target::kSramBase, target::kSramEnd,
                   SpanWindow::kReads | SpanWindow::kWrites | SpanWindow::kWholeReads |
                       SpanWindow::kWholeWrites});
    if (inline_spans) set_windows(windows_.data(), sram_.data(), target::kSramBase);
    // As the simulator's memory without --check-uninitialized: reads need
    // no notes.
    set_notes_reads(false);
  }
  std::span<std::uint8_t> acquire(unsigned, std::uint64_t address, std::uint64_t size,
                                  kernels::Access, kernels::SpanUse, unsigned) override {
    return {sram_.data() + (address - target::kSramBase), static_cast<std::size_t>(size)};
  }
  void note_read(unsigned, std::uint64_t, std::uint64_t) override {}
  void note_written(unsigned, std::uint64_t, std::uint64_t) override {}
  void load(std::uint32_t address, const std::vector<std::uint8_t>& bytes) {
    std::memcpy(sram_.data() + (address - target::kSramBase), bytes.data(), bytes.size());
  }

 private:
  std::vector<std::uint8_t> sram_ = std::vector<std::uint8_t>(target::kSramSize, 0xFF);
  std::array<kernels::SpanWindow, kernels::kRegisterCount> windows_{};
};

// The whole simulated call: the supervisor loop, the call, the checks and
// the model (wall time of the run).
double simulated_seconds(const Workload& workload, std::uint32_t calls) {
  sim::Chip chip(target::Topology::from_physical({target::PhysicalTile(0)}));
  load(chip, workload, calls);
  chip.start();
  const auto start = Clock::now();
  const sim::RunResult result = chip.run();
  const double elapsed = seconds_since(start);
  if (result.reason != sim::StopReason::kAllHalted) {
    std::fprintf(
        stderr, "%s: %s\n", workload.label.c_str(),
        chip.faults().empty() ? "did not halt" : sim::describe(chip.faults().all()[0]).c_str());
    std::exit(1);
  }
  return elapsed;
}

// The tile, call site and registers of one workload, set up once so that
// the timed loops below do only what a simulated call does.
struct CheckedSetup {
  const kernels::KernelSpec& spec;
  sim::SimOptions options;
  sim::Tile tile;
  Registers r;
  schema::TileDebug debug;
  sim::TileDebugIndex index;
  sim::ResolvedCallSite site;

  static constexpr std::uint32_t kCallPc = target::kLoadBase;

  explicit CheckedSetup(const Workload& workload)
      : spec(*kernels::KernelRegistry::standard().find(workload.kernel)),
        tile(target::PhysicalTile(0), options, kernels::KernelRegistry::standard()),
        r(workload.registers()),
        debug(debug_for(workload, kCallPc)),
        index(debug, std::vector<std::string>{}) {
    for (const Operand& operand : workload.operands) {
      if (!operand.contents.empty()) tile.load_segment(r[operand.reg], operand.contents, false);
    }
    site = sim::ResolvedCallSite::resolve(spec, &debug.call_sites[0], kCallPc, index);
    tile.set_debug(index);
  }
};

// The model behind the simulator's checked memory, called directly: every
// span checked against the call site's allocations, the commit — what span
// checking costs, without the supervisor around it. The kernel's ABI
// precondition (a check of the registers, not of spans) runs too when
// `with_precondition`, as it does before every simulated call.
double checked_seconds(const Workload& workload, std::uint32_t calls, bool with_precondition) {
  CheckedSetup setup(workload);
  const auto call_once = [&] {
    if (with_precondition && setup.spec.precondition && setup.spec.precondition(setup.r)) {
      std::fprintf(stderr, "%s: precondition failed\n", workload.label.c_str());
      std::exit(1);
    }
    sim::CheckedKernelMemory memory(setup.tile, setup.site, 0);
    kernels::KernelCall call{setup.r, memory, 0, 0};
    setup.spec.model(call);
    memory.commit();
  };
  call_once();  // first touch of the tile's pages, outside the timing
  const double start = thread_cpu_seconds();
  for (std::uint32_t i = 0; i < calls; ++i) call_once();
  return thread_cpu_seconds() - start;
}

// The kernel's ABI precondition alone, `calls` times (thread CPU time).
double precondition_seconds(const Workload& workload, std::uint32_t calls) {
  const kernels::KernelSpec& spec = *kernels::KernelRegistry::standard().find(workload.kernel);
  const Registers r = workload.registers();
  if (!spec.precondition) return 0;
  std::uint32_t failed = 0;
  const double start = thread_cpu_seconds();
  for (std::uint32_t i = 0; i < calls; ++i) failed += spec.precondition(r) ? 1u : 0u;
  const double elapsed = thread_cpu_seconds() - start;
  if (failed != 0) {
    std::fprintf(stderr, "%s: precondition failed\n", workload.label.c_str());
    std::exit(1);
  }
  return elapsed;
}

// Best-of-N host times of one workload, the variants interleaved so that a
// burst of load on the shared machine hits them alike.
struct CallTimes {
  double unchecked = 1e30;     // the model on plain memory (spans reached inline)
  double virtual_spans = 1e30;  // the same, every span through the virtual acquire
  double spans = 1e30;         // the model on checked memory (spans checked, commit)
  double precondition = 1e30;  // the ABI precondition alone
  double simulated = 1e30;     // the whole simulated call (wall time); 0 when not measured
  std::uint64_t cycles = 0;

  double checked() const { return spans + precondition; }
  // What span checking costs, as a share of the call's time without the
  // precondition (the larger, stricter share).
  double span_share() const { return (spans - unchecked) / spans; }
  double precondition_share() const { return precondition / checked(); }
  double total_share() const { return (checked() - unchecked) / checked(); }
};

// The same model on plain memory (thread CPU time); the modelled device
// cycles of one call in *cycles, when asked.
double unchecked_seconds(const Workload& workload, std::uint32_t calls, bool inline_spans,
                         std::uint64_t* cycles = nullptr) {
  const kernels::KernelSpec& spec = *kernels::KernelRegistry::standard().find(workload.kernel);
  UncheckedMemory memory(inline_spans);
  const Registers r = workload.registers();
  for (const Operand& operand : workload.operands) {
    if (!operand.contents.empty()) memory.load(r[operand.reg], operand.contents);
  }
  const double start = thread_cpu_seconds();
  for (std::uint32_t i = 0; i < calls; ++i) {
    kernels::KernelCall call{r, memory, 0, 0};
    spec.model(call);
    if (cycles != nullptr) *cycles = call.cycles;
  }
  return thread_cpu_seconds() - start;
}

// Best of `repetitions` of each variant, interleaved; the simulated call only
// when `simulate`.
CallTimes measure(const Workload& workload, std::uint32_t calls, int repetitions, bool simulate) {
  CallTimes t;
  if (!simulate) t.simulated = 0;
  for (int i = 0; i < repetitions; ++i) {
    t.unchecked = std::min(t.unchecked, unchecked_seconds(workload, calls, true, &t.cycles));
    t.virtual_spans = std::min(t.virtual_spans, unchecked_seconds(workload, calls, false));
    t.spans = std::min(t.spans, checked_seconds(workload, calls, false));
    t.precondition = std::min(t.precondition, precondition_seconds(workload, calls));
    if (simulate) t.simulated = std::min(t.simulated, simulated_seconds(workload, calls));
  }
  return t;
}

// What the overhead columns compare (docs/CONTRIBUTING.md, "Benchmarks").
void explain_overheads() {
  std::printf(
      "  unchecked: the model on plain memory, its spans reached inline (virt: the same with\n"
      "  every span through a virtual call, the baseline before the windows);\n"
      "  spans: the same model on the simulator's checked\n"
      "  memory (every span checked against SRAM, code, the call site's allocation, access and\n"
      "  alignment; the written-byte commit); precond: the kernel's ABI precondition alone (a\n"
      "  check of the registers that runs before every simulated call, not span checking).\n"
      "  span checks = (spans - unchecked) / spans; precond = precond / (spans + precond);\n"
      "  all checks = (spans + precond - unchecked) / (spans + precond). Thread CPU time.\n");
}

void families(std::uint32_t calls, const std::string& only) {
  std::printf(
      "Kernel models on one tile, %u calls each (1 host thread, best of 5); simulated: the\n"
      "whole call as a tile runs it (supervisor loop, call, checks, model; wall time)\n",
      calls);
  explain_overheads();
  std::printf("%-36s %10s %9s %8s %9s %8s %11s %11s %6s %7s %6s %10s %8s\n", "kernel",
              "moved/call", "unchk ns", "virt ns", "spans ns", "pre ns", "unchk GB/s", "check GB/s",
              "spans", "precond", "all", "sim GB/s", "cycles");
  for (const std::uint32_t bytes : {4096u, 65536u}) {
    for (const Workload& workload : workloads(bytes)) {
      if (workload.label.find(only) == std::string::npos) continue;
      const CallTimes t = measure(workload, calls, 5, true);
      const double moved = static_cast<double>(workload.moved_bytes) * calls;
      std::printf(
          "%-36s %10llu %9.1f %8.1f %9.1f %8.1f %11.2f %11.2f %5.1f%% %6.1f%% %5.1f%% %10.2f %8llu\n",
          workload.label.c_str(), static_cast<unsigned long long>(workload.moved_bytes),
          1e9 * t.unchecked / calls, 1e9 * t.virtual_spans / calls, 1e9 * t.spans / calls,
          1e9 * t.precondition / calls,
                  moved / t.unchecked / 1e9, moved / t.checked() / 1e9, 100.0 * t.span_share(),
                  100.0 * t.precondition_share(), 100.0 * t.total_share(),
                  moved / t.simulated / 1e9, static_cast<unsigned long long>(t.cycles));
    }
  }
}

void gemm_families(std::uint32_t calls) {
  std::printf(
      "\nGEMM models on one tile, %u calls each (1 host thread, best of 3; checked (spans +\n"
      "precondition) and unchecked in GFLOP per thread CPU second, i.e. per host core; the\n"
      "simulated call per wall-clock second)\n",
      calls);
  std::printf("%-44s %14s %16s %7s %8s %7s %13s\n", "kernel", "checked GFLOP/s",
              "unchecked GFLOP/s", "spans", "precond", "all", "simulated");
  for (const Workload& workload : gemm_workloads()) {
    const CallTimes t = measure(workload, calls, 3, true);
    const double flops = static_cast<double>(workload.flops) * calls;
    std::printf("%-44s %14.2f %16.2f %6.1f%% %7.1f%% %6.1f%% %13.2f\n", workload.label.c_str(),
                flops / t.checked() / 1e9, flops / t.unchecked / 1e9, 100.0 * t.span_share(),
                100.0 * t.precondition_share(), 100.0 * t.total_share(),
                flops / t.simulated / 1e9);
  }
}

// The attention kernels at the SigLIP shape: host time per call checked and
// unchecked, GB/s of the bytes a call moves, GFLOP per CPU second for the
// GEMMs and for one key block's chain (QK + softmax + PV + merge, useful
// FLOP 4·12·80·96), and the modelled tile cycles per call.
void attention_families(std::uint32_t calls, const std::string& only) {
  const std::vector<Workload> all = attention_workloads();
  if (std::none_of(all.begin(), all.end(), [&](const Workload& workload) {
        return workload.label.find(only) != std::string::npos;
      })) {
    return;
  }
  std::printf(
      "\nAttention models on one tile at the SigLIP shape (9 query rows -> 12, 92 keys -> 96\n"
      "key columns, head 72 -> 80), %u calls each (1 host thread, best of 3; CPU time;\n"
      "checked = spans + precondition)\n",
      calls);
  std::printf("%-28s %10s %12s %14s %9s %10s %12s %7s %8s %7s\n", "kernel", "cycles",
              "checked us", "unchecked us", "virt us", "GB/s", "GFLOP/s", "spans", "precond", "all");
  double chain_seconds = 0;
  std::uint64_t chain_flops = 0;
  for (const Workload& workload : all) {
    if (workload.label.find(only) == std::string::npos) continue;
    const CallTimes t = measure(workload, calls, 3, false);
    const double per_call = t.checked() / calls;
    const bool in_chain =
        workload.label.rfind("QK", 0) == 0 || workload.label.rfind("PV", 0) == 0 ||
        workload.label.rfind("softmax", 0) == 0 || workload.label.rfind("merge", 0) == 0;
    if (in_chain) {
      chain_seconds += per_call;
      chain_flops += workload.flops;
    }
    char gflops[32] = "-";
    if (workload.flops != 0) {
      std::snprintf(gflops, sizeof gflops, "%.2f",
                    static_cast<double>(workload.flops) / per_call / 1e9);
    }
    std::printf("%-28s %10llu %12.3f %14.3f %9.3f %10.2f %12s %6.1f%% %7.1f%% %6.1f%%\n",
                workload.label.c_str(), static_cast<unsigned long long>(t.cycles), 1e6 * per_call,
                1e6 * t.unchecked / calls, 1e6 * t.virtual_spans / calls,
                static_cast<double>(workload.moved_bytes) / per_call / 1e9, gflops,
                100.0 * t.span_share(), 100.0 * t.precondition_share(), 100.0 * t.total_share());
  }
  if (chain_seconds == 0) return;  // --only left out the chain
  std::printf("%-28s %10s %12.2f %14s %10s %12.2f\n", "key block (QK+softmax+PV+merge)", "",
              1e6 * chain_seconds, "", "", static_cast<double>(chain_flops) / chain_seconds / 1e9);
}

// Modelled tile cycles of one call (the cost the simulator charges) for the
// SigLIP GEMM shards: rows 12–129, K = 64, N = 32/64/128; "-" where the shape
// is outside the kernel's limits (its precondition refuses it).
void gemm_cycles_table() {
  using kernels::GemmFamily;
  const std::uint32_t rows_list[] = {12, 13, 19, 24, 48, 64, 96, 128, 129};
  const struct {
    GemmFamily family;
    const char* label;
  } families[] = {{GemmFamily::kF16, "f16"},
                  {GemmFamily::kF16ExpandedF143, "f16 (expanded F143)"},
                  {GemmFamily::kF143, "F143 (native)"},
                  {GemmFamily::kF32, "f32"}};
  std::printf("\nModelled cycles per GEMM call, K = 64\n%-22s %5s", "family", "N");
  for (const std::uint32_t rows : rows_list) std::printf(" %8u", rows);
  std::printf("   (rows)\n");
  for (const auto& [family, label] : families) {
    for (const std::uint32_t columns : {32u, 64u, 128u}) {
      if (!kernels::gemm_columns_supported(family, columns)) continue;
      std::printf("%-22s %5u", label, columns);
      for (const std::uint32_t rows : rows_list) {
        Registers r{};
        r[kernels::kGemmOutputRegister] = 0x80000;
        r[kernels::kGemmLeftRegister] = 0x60000;
        r[kernels::kGemmWeightRegister] = 0x90000;
        r[kernels::kGemmRowsRegister] = rows;
        r[kernels::kGemmInnerRegister] = 64;
        r[kernels::kGemmColumnsRegister] = columns;
        if (kernels::gemm_violation(family, r)) {
          std::printf(" %8s", "-");
        } else {
          std::printf(" %8llu", static_cast<unsigned long long>(
                                    kernels::gemm_cycles(family, rows, 64, columns)));
        }
      }
      std::printf("\n");
    }
  }
}

// Every tile of the C600 runs the same kernel loop: the compute step the
// host pool runs in parallel (wall time: it uses several threads). GB/s of
// the bytes a call moves, and GFLOP/s for the arithmetic kernels.
void whole_chip_step(const Workload& workload, std::uint32_t calls,
                     const std::vector<unsigned>& thread_counts) {
  std::printf("\nWhole-chip compute step: 1472 tiles x %u calls of %s (wall time, best of 3)\n",
              calls, workload.label.c_str());
  double one_thread = 0;
  for (const unsigned threads : thread_counts) {
    sim::SimOptions options;
    options.threads = threads;
    sim::Chip chip(target::Topology::c600(), options);
    double best = 1e30;
    std::uint64_t cycles = 0;
    for (int repetition = 0; repetition < 3; ++repetition) {
      load(chip, workload, calls);
      chip.start();
      const auto start = Clock::now();
      const sim::RunResult result = chip.run();
      best = std::min(best, seconds_since(start));
      if (result.reason != sim::StopReason::kAllHalted) {
        std::fprintf(stderr, "whole chip did not halt\n");
        std::exit(1);
      }
      cycles = chip.report().total_cycles;
    }
    if (one_thread == 0) one_thread = best;
    const double per_run = static_cast<double>(calls) * 1472 / best / 1e9;
    char gflops[48] = "";
    if (workload.flops != 0) {
      std::snprintf(gflops, sizeof gflops, ", %.2f GFLOP/s",
                    static_cast<double>(workload.flops) * per_run);
    }
    std::printf("  %u thread%s: %.3f s, %.2f GB/s%s, %llu simulated cycles, speed-up %.2fx\n",
                threads, threads == 1 ? " " : "s", best,
                static_cast<double>(workload.moved_bytes) * per_run, gflops,
                static_cast<unsigned long long>(cycles), one_thread / best);
  }
}

// The whole-chip step for a memory-speed family (add_f32 on 16 KiB
// operands) and for each GEMM family at its largest SigLIP shard.
void whole_chip(std::uint32_t calls, const std::vector<unsigned>& thread_counts) {
  whole_chip_step(workloads(16384)[2], calls, thread_counts);
  for (const Workload& workload : gemm_workloads()) {
    if (workload.label.find("129x") != std::string::npos ||
        workload.label.find("f32_init 64x") != std::string::npos) {
      whole_chip_step(workload, calls, thread_counts);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint32_t calls = 2000;
  std::string only;
  std::uint32_t chip_calls = 20;
  std::vector<unsigned> thread_counts;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 0));
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (std::strcmp(argv[i], "--chip-calls") == 0 && i + 1 < argc) {
      chip_calls = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 0));
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      thread_counts.push_back(static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 0)));
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--calls N] [--only TEXT] [--chip-calls N] [--threads N]...\n"
          "  --calls N       calls per kernel family on one tile (default 2000)\n"
          "  --only TEXT     only the families and attention kernels whose label\n"
          "                  contains TEXT (no GEMM or cycle tables)\n"
          "  --chip-calls N  calls per tile in the whole-chip step (default 20; 0 skips it)\n"
          "  --threads N     host threads for the whole-chip step (repeatable;\n"
          "                  default: 1 and the machine's cores)\n",
          argv[0]);
      return 2;
    }
  }
  if (calls == 0) {
    std::fprintf(stderr, "--calls must be at least 1\n");
    return 2;
  }
  if (thread_counts.empty()) thread_counts = {1, ThreadPool::machine_threads()};
  families(calls, only);
  if (only.empty()) {  // --only narrows the run to the families it names
    gemm_families(calls);
    gemm_cycles_table();
  }
  attention_families(calls, only);
  if (chip_calls != 0) whole_chip(chip_calls, thread_counts);
  return 0;
}
