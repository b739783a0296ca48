// Each attention kernel through a simulated call, bit for bit against its
// CPU reference (tests/kernels/attention_reference.hpp): the packs and the
// unpack on the edge shapes (query rows 1, 6, 7, 9, 12, 13; key rows 1, 16,
// 91, 92; head dimension 72 → 80 and 64; heads starting mid-panel), blocks
// assembled from several shards by several calls, untouched bytes kept;
// the softmax, every merge stage and the f32 → f16 conversion on random data
// and on NaN, ±Inf, ±65504 and subnormal inputs; the conversion's stochastic
// rounding against the tile's worker streams, always one of the two f16s
// around the input and unbiased in mean.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "kernels/activation_math.hpp"
#include "kernels/amp_layout.hpp"
#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/attention_numerics.hpp"
#include "kernels/half.hpp"
#include "kernels/rounding.hpp"
#include "target/topology.hpp"
#include "tests/kernels/attention_reference.hpp"
#include "tests/kernels/f16_oracle.hpp"
#include "tests/kernels/kernel_runner.hpp"
#include "tests/kernels/kernel_sequence.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;

constexpr std::uint32_t kShardAt = 0x60000;    // standard memory
constexpr std::uint32_t kBlockAt = 0x70000;    // standard memory
constexpr std::uint32_t kScoresAt = 0x80000;   // the interleaved operand window
constexpr std::uint32_t kWeightsAt = 0x68000;  // standard memory

const std::uint16_t kSpecials[] = {0x7E00, 0xFE01, 0x7C00, 0xFC00, 0x7BFF, 0xFBFF,
                                   0x0001, 0x83FF, 0x8000, 0x0000, 0x3C00};

// Random f16 bits: moderate values, and a `special` fraction of specials.
class Halves {
 public:
  explicit Halves(std::uint64_t seed, double special = 0.0) : rng_(seed), special_(special) {}
  std::uint16_t next(double range = 4.0) {
    if (std::bernoulli_distribution(special_)(rng_)) {
      return kSpecials[std::uniform_int_distribution<std::size_t>(0,
                                                                  std::size(kSpecials) - 1)(rng_)];
    }
    return f32_to_f16(
        static_cast<float>(std::uniform_real_distribution<double>(-range, range)(rng_)));
  }
  F16Matrix matrix(std::uint32_t rows, std::uint32_t cols, double range = 4.0) {
    F16Matrix m(rows, cols);
    for (auto& h : m.bits) h = next(range);
    return m;
  }
  float f32(double low, double high) {
    return static_cast<float>(std::uniform_real_distribution<double>(low, high)(rng_));
  }

 private:
  std::mt19937_64 rng_;
  double special_;
};

std::uint32_t padded_rows(AttentionPack pack, std::uint32_t block_rows) {
  return pack == AttentionPack::kQuery ? attention_query_rows(block_rows)
                                       : attention_key_columns(block_rows);
}

// ---- Pack

// Runs one pack call with the destination holding `before`; the block after.
F16Matrix run_pack(const PackCall& call, const F16Matrix& before) {
  const auto block = block_bytes(call.pack, before);
  KernelRun run(call.kernel(), call.registers(kBlockAt, kShardAt),
                {Buffer{"shard", kShardAt, static_cast<std::uint32_t>(call.shard.bits.size() * 2),
                        to_a16(call.shard)},
                 Buffer{"block", kBlockAt, static_cast<std::uint32_t>(block.size()), block}});
  EXPECT_TRUE(run.halted()) << call.kernel() << ": " << run.fault_text();
  return block_from_bytes(call.pack, run.read(kBlockAt, static_cast<std::uint32_t>(block.size())),
                          before.rows, before.cols);
}

TEST(AttentionPack, EdgeShapesMatchTheReference) {
  std::uint64_t seed = 1;
  for (const AttentionPack pack :
       {AttentionPack::kQuery, AttentionPack::kKey, AttentionPack::kValue}) {
    const auto block_rows_list = pack == AttentionPack::kQuery
                                     ? std::vector<std::uint32_t>{1, 6, 7, 9, 12, 13}
                                     : std::vector<std::uint32_t>{1, 16, 91, 92};
    for (const std::uint32_t block_rows : block_rows_list) {
      for (const std::uint32_t head_dim : {72u, 64u}) {
        for (const std::uint32_t head : {0u, 1u, 2u}) {
          Halves halves(++seed, 0.05);
          PackCall call;
          call.pack = pack;
          call.head_dim = head_dim;
          call.column = head * head_dim;
          call.block_rows = block_rows;
          call.shard = halves.matrix(block_rows + 3,
                                     static_cast<std::uint32_t>(amp::padded_columns(3 * head_dim)));
          call.source_start = 2;
          call.destination_start = 0;
          call.copy = block_rows;
          // The destination starts as garbage (NaNs among it): every byte of a
          // complete block is the call's.
          const F16Matrix before =
              halves.matrix(padded_rows(pack, block_rows), attention_padded_head_dim(head_dim));
          const F16Matrix got = run_pack(call, before);
          ASSERT_EQ(got, reference_pack(call, before))
              << call.kernel() << " rows " << block_rows << " head " << head_dim << " h " << head;
          // Padding is zero: head columns past d, rows past the block's.
          for (std::uint32_t r = 0; r < got.rows; ++r) {
            for (std::uint32_t c = 0; c < got.cols; ++c) {
              if (r >= block_rows || c >= head_dim) {
                ASSERT_EQ(got.at(r, c), 0) << r << ", " << c;
              }
            }
          }
        }
      }
    }
  }
}

// A call that copies some rows leaves the block's other real rows alone.
RC_GTEST_PROP(AttentionPack, ARandomCallMatchesTheReference, ()) {
  const auto pack =
      *rc::gen::element(AttentionPack::kQuery, AttentionPack::kKey, AttentionPack::kValue);
  const std::uint32_t head_dim = 4 * *rc::gen::inRange(1u, 33u);
  const std::uint32_t block_rows = *rc::gen::inRange(1u, 129u);
  const std::uint32_t copy = *rc::gen::inRange(0u, block_rows + 1);
  const std::uint32_t destination_start = *rc::gen::inRange(0u, block_rows - copy + 1);
  const std::uint32_t source_start = *rc::gen::inRange(0u, 20u);
  const std::uint32_t columns_before = 4 * *rc::gen::inRange(0u, 16u);
  Halves halves(*rc::gen::arbitrary<std::uint64_t>(), 0.02);
  PackCall call;
  call.pack = pack;
  call.head_dim = head_dim;
  call.column = columns_before;
  call.block_rows = block_rows;
  call.shard =
      halves.matrix(source_start + copy + *rc::gen::inRange(0u, 4u),
                    static_cast<std::uint32_t>(amp::padded_columns(columns_before + head_dim)));
  call.source_start = source_start;
  call.destination_start = destination_start;
  call.copy = copy;
  const F16Matrix before =
      halves.matrix(padded_rows(pack, block_rows), attention_padded_head_dim(head_dim));
  RC_ASSERT(run_pack(call, before) == reference_pack(call, before));
}

// A block assembled from several shards, one call per shard it overlaps, in
// either order: the same block as packing it from one shard.
TEST(AttentionPack, BlocksAssembledFromSeveralShardsAreComplete) {
  for (const AttentionPack pack :
       {AttentionPack::kQuery, AttentionPack::kKey, AttentionPack::kValue}) {
    const std::uint32_t block_rows = pack == AttentionPack::kQuery ? 9 : 92;
    const std::uint32_t head_dim = 72, shard_rows = 13, hidden = 160;
    Halves halves(7);
    const F16Matrix rows = halves.matrix(block_rows + 5, hidden);  // the logical source rows
    const std::uint32_t first = 5;  // the block starts at row 5 of shard 0
    for (const bool reversed : {false, true}) {
      std::vector<SequenceCall> calls;
      std::vector<Buffer> buffers;
      const std::uint32_t padded = padded_rows(pack, block_rows);
      const std::uint32_t block_size = padded * 80 * 2;
      buffers.push_back(Buffer{"block", kBlockAt, block_size, {}});  // never written before
      std::uint32_t address = kShardAt;
      for (std::uint32_t s = 0; s * shard_rows < rows.rows; ++s) {
        const std::uint32_t n = std::min(shard_rows, rows.rows - s * shard_rows);
        F16Matrix shard(n, hidden);
        for (std::uint32_t r = 0; r < n; ++r) {
          for (std::uint32_t c = 0; c < hidden; ++c)
            shard.at(r, c) = rows.at(s * shard_rows + r, c);
        }
        const auto bytes = to_a16(shard);
        buffers.push_back(
            Buffer{"shard", address, static_cast<std::uint32_t>(bytes.size()), bytes});
        const std::uint32_t from = std::max(first, s * shard_rows);
        const std::uint32_t to = std::min(first + block_rows, s * shard_rows + n);
        if (from < to) {
          PackCall call;
          call.pack = pack;
          call.shard = shard;
          call.column = 72;
          call.source_start = from - s * shard_rows;
          call.destination_start = from - first;
          call.copy = to - from;
          call.block_rows = block_rows;
          call.head_dim = head_dim;
          calls.push_back({call.kernel(), call.registers(kBlockAt, address)});
        }
        address += (static_cast<std::uint32_t>(bytes.size()) + 63) / 64 * 64;
      }
      ASSERT_GT(calls.size(), pack == AttentionPack::kQuery ? 1u : 7u);
      if (reversed) std::reverse(calls.begin(), calls.end());
      sim::SimOptions options;
      options.check_uninitialized = true;
      KernelSequence run(calls, buffers, options);
      ASSERT_TRUE(run.halted()) << run.fault_text();
      PackCall whole;
      whole.pack = pack;
      whole.shard = rows;
      whole.column = 72;
      whole.source_start = first;
      whole.copy = block_rows;
      whole.block_rows = block_rows;
      whole.head_dim = head_dim;
      const F16Matrix expected = reference_pack(whole, F16Matrix(padded, 80, 0xFFFF));
      EXPECT_EQ(block_from_bytes(pack, run.read(kBlockAt, block_size), padded, 80), expected)
          << whole.kernel() << (reversed ? " (reversed)" : "");
    }
  }
}

// ---- Unpack

F16Matrix run_unpack(const F16Matrix& shard, const std::vector<std::uint16_t>& source,
                     std::uint32_t column, std::uint32_t source_start,
                     std::uint32_t destination_start, std::uint32_t copy, std::uint32_t head_dim) {
  Registers r{};
  r[kUnpackOut] = kShardAt;
  r[kUnpackSource] = kBlockAt;
  r[kUnpackOutRows] = shard.rows;
  r[kUnpackOutColumn] = column;
  r[kUnpackRowStarts] = row_starts(source_start, destination_start);
  r[kUnpackCopyRows] = copy;
  r[kUnpackHeadDim] = head_dim;
  const auto shard_bytes = to_a16(shard);
  const auto source_bytes = f16_bytes(source);
  KernelRun run(
      kAttentionUnpack, r,
      {Buffer{"shard", kShardAt, static_cast<std::uint32_t>(shard_bytes.size()), shard_bytes},
       Buffer{"head", kBlockAt, static_cast<std::uint32_t>(source_bytes.size()), source_bytes}});
  EXPECT_TRUE(run.halted()) << run.fault_text();
  return from_a16(run.read(kShardAt, static_cast<std::uint32_t>(shard_bytes.size())), shard.rows,
                  shard.cols);
}

TEST(AttentionUnpack, EdgeShapesMatchTheReference) {
  std::uint64_t seed = 100;
  for (const std::uint32_t copy : {1u, 6u, 7u, 9u, 12u, 13u}) {
    for (const std::uint32_t head_dim : {72u, 64u}) {
      for (const std::uint32_t head : {0u, 1u, 2u}) {
        Halves halves(++seed, 0.05);
        const F16Matrix shard =
            halves.matrix(copy + 4, static_cast<std::uint32_t>(amp::padded_columns(3 * head_dim)));
        const std::uint32_t source_rows = attention_query_rows(copy);
        const F16Matrix source = halves.matrix(source_rows, head_dim);
        const F16Matrix got = run_unpack(shard, source.bits, head * head_dim, 0, 3, copy, head_dim);
        ASSERT_EQ(got, reference_unpack(shard, source.bits, head * head_dim, 0, 3, copy, head_dim))
            << "copy " << copy << " head " << head_dim << " h " << head;
      }
    }
  }
}

RC_GTEST_PROP(AttentionUnpack, ARandomCallMatchesTheReference, ()) {
  const std::uint32_t head_dim = 4 * *rc::gen::inRange(1u, 33u);
  const std::uint32_t copy = *rc::gen::inRange(0u, 40u);
  const std::uint32_t source_start = *rc::gen::inRange(0u, 5u);
  const std::uint32_t destination_start = *rc::gen::inRange(0u, 5u);
  const std::uint32_t column = 4 * *rc::gen::inRange(0u, 16u);
  Halves halves(*rc::gen::arbitrary<std::uint64_t>(), 0.02);
  const F16Matrix shard =
      halves.matrix(destination_start + copy + *rc::gen::inRange(0u, 3u),
                    static_cast<std::uint32_t>(amp::padded_columns(column + head_dim)));
  const F16Matrix source = halves.matrix(source_start + copy + 1, head_dim);
  RC_ASSERT(run_unpack(shard, source.bits, column, source_start, destination_start, copy,
                       head_dim) == reference_unpack(shard, source.bits, column, source_start,
                                                     destination_start, copy, head_dim));
}

// ---- Softmax

BlockWeights run_softmax(const F16Matrix& scores, std::uint32_t key_rows, float scale) {
  const std::uint32_t rows = scores.rows;
  Registers r{};
  r[kSoftmaxOut] = kWeightsAt;
  r[kSoftmaxScores] = kScoresAt;
  r[kSoftmaxRows] = rows;
  r[kSoftmaxKeyRows] = key_rows;
  r[kSoftmaxScale] = std::bit_cast<std::uint32_t>(scale);
  const auto scores_bytes = to_c16(scores);
  const auto out_bytes = static_cast<std::uint32_t>(attention_block_weights_bytes(rows, key_rows));
  KernelRun run(
      kAttentionSoftmax, r,
      {Buffer{"scores", kScoresAt, static_cast<std::uint32_t>(scores_bytes.size()), scores_bytes},
       Buffer{"weights", kWeightsAt, out_bytes, {}}});
  EXPECT_TRUE(run.halted()) << run.fault_text();
  const auto bytes = run.read(kWeightsAt, out_bytes);
  const auto offset = attention_block_state_offset(rows, key_rows);
  BlockWeights got;
  got.p = from_a16({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(offset)}, rows,
                   scores.cols);
  const auto state = f32_values({bytes.begin() + static_cast<std::ptrdiff_t>(offset), bytes.end()});
  got.max.assign(state.begin(), state.begin() + rows);
  got.sum.assign(state.begin() + rows, state.end());
  return got;
}

void expect_same(const BlockWeights& got, const BlockWeights& expected, const std::string& label) {
  EXPECT_EQ(got.p, expected.p) << label;
  ASSERT_EQ(got.max.size(), expected.max.size());
  for (std::size_t r = 0; r < got.max.size(); ++r) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.max[r]),
              std::bit_cast<std::uint32_t>(expected.max[r]))
        << label << " max, row " << r;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.sum[r]),
              std::bit_cast<std::uint32_t>(expected.sum[r]))
        << label << " sum, row " << r;
  }
}

TEST(AttentionSoftmax, EdgeShapesMatchTheReference) {
  std::uint64_t seed = 200;
  for (const std::uint32_t rows : {1u, 6u, 7u, 9u, 12u, 13u}) {
    for (const std::uint32_t key_rows : {1u, 16u, 91u, 92u}) {
      for (const float scale : {1.0F / std::sqrt(72.0F), 0.125F}) {
        Halves halves(++seed);
        F16Matrix scores = halves.matrix(rows, attention_key_columns(key_rows), 30.0);
        // Past the key block's rows the scores are not the softmax's: NaNs
        // there must not leak into P, the max or the sum.
        for (std::uint32_t r = 0; r < rows; ++r) {
          for (std::uint32_t n = key_rows; n < scores.cols; ++n) scores.at(r, n) = 0x7E00;
        }
        const BlockWeights got = run_softmax(scores, key_rows, scale);
        expect_same(got, reference_softmax(scores, key_rows, scale),
                    "rows " + std::to_string(rows) + " keys " + std::to_string(key_rows));
        // The properties the merge relies on: 0 ≤ P ≤ 1, one P = 1, l ≥ 1.
        for (std::uint32_t r = 0; r < rows; ++r) {
          bool one = false;
          for (std::uint32_t n = 0; n < scores.cols; ++n) {
            const float p = f16_to_f32(got.p.at(r, n));
            EXPECT_TRUE(p >= 0.0F && p <= 1.0F);
            one = one || p == 1.0F;
            if (n >= key_rows) {
              EXPECT_EQ(got.p.at(r, n), 0);
            }
          }
          EXPECT_TRUE(one);
          EXPECT_GE(got.sum[r], 1.0F);
        }
      }
    }
  }
}

RC_GTEST_PROP(AttentionSoftmax, RandomBlocksWithSpecialValuesMatchTheReference, ()) {
  const std::uint32_t rows = *rc::gen::inRange(1u, 40u);
  const std::uint32_t key_rows = *rc::gen::inRange(1u, 129u);
  const double special = *rc::gen::element(0.0, 0.01, 0.1);
  const float scale = *rc::gen::element(1.0F / std::sqrt(72.0F), 0.125F, 1.0F, 3.0F);
  Halves halves(*rc::gen::arbitrary<std::uint64_t>(), special);
  const F16Matrix scores = halves.matrix(rows, attention_key_columns(key_rows), 50.0);
  const BlockWeights got = run_softmax(scores, key_rows, scale);
  const BlockWeights expected = reference_softmax(scores, key_rows, scale);
  RC_ASSERT(got.p == expected.p);
  for (std::uint32_t r = 0; r < rows; ++r) {
    RC_ASSERT(std::bit_cast<std::uint32_t>(got.max[r]) ==
              std::bit_cast<std::uint32_t>(expected.max[r]));
    RC_ASSERT(std::bit_cast<std::uint32_t>(got.sum[r]) ==
              std::bit_cast<std::uint32_t>(expected.sum[r]));
  }
}

// Special scores, row by row: what each does to its row.
TEST(AttentionSoftmax, SpecialScores) {
  const std::uint32_t key_rows = 5, rows = 6;
  F16Matrix scores(rows, 16, 0x3C00);  // 1.0
  scores.at(0, 2) = 0x7E00;            // NaN: the row is NaN
  scores.at(1, 2) = 0x7C00;            // +Inf: max = Inf, Inf − Inf = NaN
  scores.at(2, 2) = 0xFC00;            // −Inf: weight 0, the others as if it were absent
  scores.at(3, 0) = 0x7BFF;            // 65504 against 1.0: the others underflow to 0
  scores.at(3, 1) = 0xFBFF;            // −65504
  for (std::uint32_t n = 0; n < key_rows; ++n) scores.at(4, n) = 0xFBFF;  // all −65504: uniform
  scores.at(5, 3) = 0x0001;  // a subnormal: e^(scale·(2^−24 − 1)) like any other
  const float scale = 1.0F / std::sqrt(72.0F);
  const BlockWeights got = run_softmax(scores, key_rows, scale);
  expect_same(got, reference_softmax(scores, key_rows, scale), "specials");
  for (std::uint32_t n = 0; n < key_rows; ++n) EXPECT_EQ(got.p.at(0, n), kF16QuietNan);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(got.sum[0]), 0x7FC00000u);
  EXPECT_EQ(got.p.at(1, 2), kF16QuietNan);
  EXPECT_EQ(got.p.at(1, 0), 0);  // e^−Inf
  EXPECT_EQ(got.max[1], INFINITY);
  EXPECT_EQ(got.p.at(2, 2), 0);
  EXPECT_EQ(got.p.at(2, 0), 0x3C00);
  EXPECT_EQ(got.sum[2], 4.0F);
  EXPECT_EQ(got.p.at(3, 0), 0x3C00);
  EXPECT_EQ(got.p.at(3, 1), 0);
  EXPECT_EQ(got.p.at(3, 2), 0);  // e^(scale·(1 − 65504)) underflows
  EXPECT_EQ(got.sum[3], 1.0F);
  EXPECT_EQ(got.max[3], 65504.0F * scale);
  for (std::uint32_t n = 0; n < key_rows; ++n) EXPECT_EQ(got.p.at(4, n), 0x3C00);
  EXPECT_EQ(got.sum[4], 5.0F);
  EXPECT_EQ(got.max[4], -65504.0F * scale);
}

// ---- Merge

struct MergeInputs {
  Accumulator before;
  F16Matrix values;  // R × D
  std::vector<float> block_max, block_sum;
  std::uint32_t key_rows = 0, head_dim = 0;
};

Accumulator run_merge(AttentionMergeStage stage, const MergeInputs& in) {
  const std::uint32_t rows = in.values.rows;
  Registers r{};
  r[kMergeAccumulator] = kShardAt;
  r[kMergeValues] = kScoresAt;
  r[kMergeWeights] = kWeightsAt;
  r[kMergeRows] = rows;
  r[kMergeKeyRows] = in.key_rows;
  r[kMergeHeadDim] = in.head_dim;
  const auto accumulator_bytes =
      static_cast<std::uint32_t>(attention_accumulator_bytes(rows, in.head_dim));
  const bool reads = stage == AttentionMergeStage::kMiddle || stage == AttentionMergeStage::kFinal;
  // The block weights: P (NaN patterns: the merge must not use them), then
  // the state.
  const auto offset = static_cast<std::uint32_t>(attention_block_state_offset(rows, in.key_rows));
  std::vector<std::uint8_t> weights(offset, 0xFF);
  std::vector<float> state = in.block_max;
  state.insert(state.end(), in.block_sum.begin(), in.block_sum.end());
  const auto state_bytes = f32_bytes(state);
  weights.insert(weights.end(), state_bytes.begin(), state_bytes.end());
  const auto values = to_c16(in.values);
  // An initial or single merge never reads the accumulator: leave it never
  // written and check that no read of it happens.
  sim::SimOptions options;
  options.check_uninitialized = true;
  KernelRun run(
      merge_kernel(stage), r,
      {Buffer{"accumulator", kShardAt, accumulator_bytes,
              reads ? in.before.bytes() : std::vector<std::uint8_t>{}},
       Buffer{"values", kScoresAt, static_cast<std::uint32_t>(values.size()), values},
       Buffer{"weights", kWeightsAt, static_cast<std::uint32_t>(weights.size()), weights}},
      options);
  EXPECT_TRUE(run.halted()) << merge_kernel(stage) << ": " << run.fault_text();
  return Accumulator::from_bytes(run.read(kShardAt, accumulator_bytes), rows, in.head_dim);
}

void expect_same(const Accumulator& got, const Accumulator& expected, const std::string& label) {
  ASSERT_EQ(got.o.size(), expected.o.size());
  for (std::size_t i = 0; i < got.o.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got.o[i]), std::bit_cast<std::uint32_t>(expected.o[i]))
        << label << " O[" << i << "]: " << got.o[i] << " vs " << expected.o[i];
  }
  for (std::size_t r = 0; r < got.max.size(); ++r) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.max[r]),
              std::bit_cast<std::uint32_t>(expected.max[r]))
        << label << " max, row " << r;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.sum[r]),
              std::bit_cast<std::uint32_t>(expected.sum[r]))
        << label << " sum, row " << r;
  }
}

// A plausible state: O within the values' range, m an f32 score, l ≥ 1.
MergeInputs random_merge(std::uint32_t rows, std::uint32_t key_rows, std::uint32_t head_dim,
                         std::uint64_t seed, double special = 0.0) {
  Halves halves(seed, special);
  MergeInputs in;
  in.key_rows = key_rows;
  in.head_dim = head_dim;
  in.values = halves.matrix(rows, attention_padded_head_dim(head_dim), 8.0);
  // Columns past the head are the PV GEMM's padding: NaNs there must not
  // reach O.
  for (std::uint32_t r = 0; r < rows; ++r) {
    for (std::uint32_t c = head_dim; c < in.values.cols; ++c) in.values.at(r, c) = 0x7E00;
  }
  in.before.rows = rows;
  in.before.head_dim = head_dim;
  for (std::uint32_t i = 0; i < rows * head_dim; ++i) in.before.o.push_back(halves.f32(-8, 8));
  for (std::uint32_t r = 0; r < rows; ++r) {
    in.before.max.push_back(halves.f32(-10, 10));
    in.before.sum.push_back(halves.f32(1, 300));
    in.block_max.push_back(halves.f32(-10, 10));
    in.block_sum.push_back(halves.f32(1, 96));
  }
  return in;
}

constexpr AttentionMergeStage kStages[] = {
    AttentionMergeStage::kInitial, AttentionMergeStage::kMiddle, AttentionMergeStage::kFinal,
    AttentionMergeStage::kSingle};

TEST(AttentionMerge, EveryStageOnEdgeShapesMatchesTheReference) {
  std::uint64_t seed = 300;
  for (const AttentionMergeStage stage : kStages) {
    for (const std::uint32_t rows : {1u, 6u, 7u, 9u, 12u, 13u}) {
      for (const std::uint32_t key_rows : {1u, 16u, 91u, 92u}) {
        for (const std::uint32_t head_dim : {72u, 64u}) {
          const MergeInputs in = random_merge(rows, key_rows, head_dim, ++seed);
          expect_same(
              run_merge(stage, in),
              reference_merge(stage, in.before, in.values, in.block_max, in.block_sum, head_dim),
              std::string(merge_kernel(stage)) + " rows " + std::to_string(rows));
        }
      }
    }
  }
}

RC_GTEST_PROP(AttentionMerge, RandomStatesWithSpecialValuesMatchTheReference, ()) {
  const AttentionMergeStage stage =
      *rc::gen::elementOf(std::vector<AttentionMergeStage>(std::begin(kStages), std::end(kStages)));
  const std::uint32_t rows = *rc::gen::inRange(1u, 40u);
  const std::uint32_t head_dim = 4 * *rc::gen::inRange(1u, 33u);
  MergeInputs in =
      random_merge(rows, *rc::gen::inRange(1u, 129u), head_dim,
                   *rc::gen::arbitrary<std::uint64_t>(), *rc::gen::element(0.0, 0.01, 0.1));
  // Special states: NaN and infinite maxima and sums, zero sums.
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0F, 65504.0F, -65504.0F};
  for (std::uint32_t r = 0; r < rows; ++r) {
    if (*rc::gen::inRange(0, 8) == 0)
      in.block_max[r] =
          *rc::gen::elementOf(std::vector<float>(std::begin(specials), std::end(specials)));
    if (*rc::gen::inRange(0, 8) == 0)
      in.before.max[r] =
          *rc::gen::elementOf(std::vector<float>(std::begin(specials), std::end(specials)));
    if (*rc::gen::inRange(0, 8) == 0)
      in.block_sum[r] =
          *rc::gen::elementOf(std::vector<float>(std::begin(specials), std::end(specials)));
  }
  const Accumulator got = run_merge(stage, in);
  const Accumulator expected =
      reference_merge(stage, in.before, in.values, in.block_max, in.block_sum, head_dim);
  for (std::size_t i = 0; i < got.o.size(); ++i) {
    RC_ASSERT(std::bit_cast<std::uint32_t>(got.o[i]) ==
              std::bit_cast<std::uint32_t>(expected.o[i]));
  }
  for (std::uint32_t r = 0; r < rows; ++r) {
    RC_ASSERT(std::bit_cast<std::uint32_t>(got.max[r]) ==
              std::bit_cast<std::uint32_t>(expected.max[r]));
    RC_ASSERT(std::bit_cast<std::uint32_t>(got.sum[r]) ==
              std::bit_cast<std::uint32_t>(expected.sum[r]));
  }
}

// The online update by hand: the block holding the larger max keeps its
// weight exactly (e^0 = 1), the other is rescaled by e^(−gap).
TEST(AttentionMerge, TheOnlineUpdateByHand) {
  MergeInputs in = random_merge(1, 16, 4, 1);
  in.before.o = {2.0F, -4.0F, 0.5F, 0.0F};
  in.before.max = {3.0F};
  in.before.sum = {2.0F};
  in.values = F16Matrix(1, 16, 0);
  in.values.at(0, 0) = 0x3C00;  // 1
  in.values.at(0, 1) = 0x4000;  // 2
  in.block_max = {1.0F};
  in.block_sum = {4.0F};
  const float beta = exp_f32(-2.0F);
  const Accumulator middle = run_merge(AttentionMergeStage::kMiddle, in);
  EXPECT_EQ(middle.max[0], 3.0F);
  EXPECT_EQ(middle.sum[0], 2.0F + 4.0F * beta);
  EXPECT_EQ(middle.o[0], 2.0F + 1.0F * beta);
  EXPECT_EQ(middle.o[1], -4.0F + 2.0F * beta);
  EXPECT_EQ(middle.o[2], 0.5F);
  const Accumulator final = run_merge(AttentionMergeStage::kFinal, in);
  EXPECT_EQ(final.o[0], (2.0F + 1.0F * beta) * (1.0F / (2.0F + 4.0F * beta)));
  const Accumulator single = run_merge(AttentionMergeStage::kSingle, in);
  EXPECT_EQ(single.o[1], 2.0F * 0.25F);
  EXPECT_EQ(single.max[0], 1.0F);
  EXPECT_EQ(single.sum[0], 4.0F);
}

// ---- Combine (a key split's parts)

Accumulator run_combine(bool final, const Accumulator& before, const Accumulator& part) {
  Registers r{};
  r[kCombineAccumulator] = kShardAt;
  r[kCombinePart] = kScoresAt;
  r[kCombineRows] = before.rows;
  r[kCombineHeadDim] = before.head_dim;
  const auto bytes = static_cast<std::uint32_t>(attention_accumulator_bytes(before.rows, before.head_dim));
  const std::string_view kernel = final ? kAttentionCombineFinal : kAttentionCombineMiddle;
  KernelRun run(kernel, r,
                {Buffer{"accumulator", kShardAt, bytes, before.bytes()},
                 Buffer{"part", kScoresAt, bytes, part.bytes()}});
  EXPECT_TRUE(run.halted()) << kernel << ": " << run.fault_text();
  EXPECT_EQ(run.total_cycles() - run.supervisor_cycles(),
            attention_merge_cycles(before.rows, before.head_dim,
                                   final ? kMergeFinalInstructions : kMergeMiddleInstructions));
  return Accumulator::from_bytes(run.read(kShardAt, bytes), before.rows, before.head_dim);
}

Accumulator random_accumulator(std::uint32_t rows, std::uint32_t head_dim, Halves& halves) {
  Accumulator a;
  a.rows = rows;
  a.head_dim = head_dim;
  for (std::uint32_t i = 0; i < rows * head_dim; ++i) a.o.push_back(halves.f32(-8, 8));
  for (std::uint32_t r = 0; r < rows; ++r) {
    a.max.push_back(halves.f32(-10, 10));
    a.sum.push_back(halves.f32(1, 300));
  }
  return a;
}

TEST(AttentionCombine, BothStagesOnEdgeShapesMatchTheReference) {
  std::uint64_t seed = 700;
  for (const bool final : {false, true}) {
    for (const std::uint32_t rows : {1u, 6u, 7u, 12u, 13u, 46u}) {
      for (const std::uint32_t head_dim : {72u, 64u, 4u}) {
        Halves halves(++seed, 0.0);
        const Accumulator before = random_accumulator(rows, head_dim, halves);
        const Accumulator part = random_accumulator(rows, head_dim, halves);
        expect_same(run_combine(final, before, part), reference_combine(final, before, part),
                    std::string(final ? "combine final" : "combine middle") + " rows " +
                        std::to_string(rows) + " d " + std::to_string(head_dim));
      }
    }
  }
}

RC_GTEST_PROP(AttentionCombine, RandomStatesWithSpecialValuesMatchTheReference, ()) {
  const bool final = *rc::gen::arbitrary<bool>();
  const std::uint32_t rows = *rc::gen::inRange(1u, 40u);
  const std::uint32_t head_dim = 4 * *rc::gen::inRange(1u, 33u);
  Halves halves(*rc::gen::arbitrary<std::uint64_t>(), 0.0);
  Accumulator before = random_accumulator(rows, head_dim, halves);
  Accumulator part = random_accumulator(rows, head_dim, halves);
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0F, 65504.0F, -65504.0F};
  const auto special = [&] { return *rc::gen::elementOf(std::vector<float>(std::begin(specials), std::end(specials))); };
  for (std::uint32_t r = 0; r < rows; ++r) {
    if (*rc::gen::inRange(0, 8) == 0) before.max[r] = special();
    if (*rc::gen::inRange(0, 8) == 0) part.max[r] = special();
    if (*rc::gen::inRange(0, 8) == 0) part.sum[r] = special();
    if (*rc::gen::inRange(0, 16) == 0) part.o[std::size_t{r} * head_dim] = special();
  }
  const Accumulator got = run_combine(final, before, part);
  const Accumulator expected = reference_combine(final, before, part);
  for (std::size_t i = 0; i < got.o.size(); ++i) {
    RC_ASSERT(std::bit_cast<std::uint32_t>(got.o[i]) == std::bit_cast<std::uint32_t>(expected.o[i]));
  }
  for (std::uint32_t r = 0; r < rows; ++r) {
    RC_ASSERT(std::bit_cast<std::uint32_t>(got.max[r]) == std::bit_cast<std::uint32_t>(expected.max[r]));
    RC_ASSERT(std::bit_cast<std::uint32_t>(got.sum[r]) == std::bit_cast<std::uint32_t>(expected.sum[r]));
  }
}

// Two parts of one row, by hand: the part with the larger max keeps its
// weight exactly, the other is rescaled by e^(−gap); combining the parts
// is the same as merging their blocks one after another.
TEST(AttentionCombine, TheOnlineUpdateByHand) {
  Accumulator before{1, 4, {2.0F, -4.0F, 0.5F, 0.0F}, {3.0F}, {2.0F}};
  const Accumulator part{1, 4, {1.0F, 2.0F, 0.0F, 0.0F}, {1.0F}, {4.0F}};
  const float beta = exp_f32(-2.0F);
  const Accumulator middle = run_combine(false, before, part);
  EXPECT_EQ(middle.max[0], 3.0F);
  EXPECT_EQ(middle.sum[0], 2.0F + 4.0F * beta);
  EXPECT_EQ(middle.o[0], 2.0F + 1.0F * beta);
  EXPECT_EQ(middle.o[1], -4.0F + 2.0F * beta);
  EXPECT_EQ(middle.o[2], 0.5F);
  const Accumulator final = run_combine(true, before, part);
  EXPECT_EQ(final.o[0], (2.0F + 1.0F * beta) * (1.0F / (2.0F + 4.0F * beta)));
}

TEST(AttentionCombine, TheOutputSharesNoByteWithThePart) {
  Registers r{};
  r[kCombineAccumulator] = kShardAt;
  r[kCombinePart] = kShardAt + 16;
  r[kCombineRows] = 2;
  r[kCombineHeadDim] = 4;
  const auto violation = attention_combine_violation(r);
  ASSERT_TRUE(violation.has_value());
  EXPECT_NE(violation->find("overlaps"), std::string::npos) << *violation;
  r[kCombinePart] = kShardAt + 0x1000;
  EXPECT_FALSE(attention_combine_violation(r).has_value());
}

// ---- f32 → f16

std::vector<std::uint16_t> run_convert(const std::vector<float>& values,
                                       sim::SimOptions options = {}) {
  Registers r{};
  r[kConvertOut] = kBlockAt;
  r[kConvertIn] = kShardAt;
  r[kConvertCount] = static_cast<std::uint32_t>(values.size());
  const auto in = f32_bytes(values);
  const auto out_bytes = static_cast<std::uint32_t>(values.size() * 2);
  KernelRun run(kAttentionF32ToF16, r,
                {Buffer{"accumulator", kShardAt, static_cast<std::uint32_t>(in.size()), in},
                 Buffer{"out", kBlockAt, out_bytes, {}}},
                options);
  EXPECT_TRUE(run.halted()) << run.fault_text();
  return f16_values(run.read(kBlockAt, out_bytes));
}

TEST(AttentionConvert, CountsAndSpecialValuesMatchTheReference) {
  std::mt19937 rng(9);
  for (const std::uint32_t count : {1u, 2u, 7u, 11u, 12u * 72u, 13u * 64u + 1u}) {
    std::vector<float> values;
    std::uniform_real_distribution<float> value(-70000.0F, 70000.0F), small(-1e-4F, 1e-4F);
    for (std::uint32_t i = 0; i < count; ++i)
      values.push_back(i % 2 == 0 ? value(rng) : small(rng));
    EXPECT_EQ(run_convert(values), reference_f32_to_f16(values)) << count;
  }
  const std::vector<float> specials = {NAN,       -NAN,
                                       INFINITY,  -INFINITY,
                                       65504.0F,  -65504.0F,
                                       65519.0F,  65520.0F,
                                       0x1p-25F,  0x1.8p-25F,
                                       -0x1p-24F, -0.0F,
                                       0.0F,      std::bit_cast<float>(0x7F800001u)};
  const auto got = run_convert(specials);
  EXPECT_EQ(got, reference_f32_to_f16(specials));
  EXPECT_EQ(got[0], kF16QuietNan);
  EXPECT_EQ(got[1], kF16QuietNan);
  EXPECT_EQ(got[13], kF16QuietNan);
  EXPECT_EQ(got[6], kF16MaxFinite);
  EXPECT_EQ(got[7], kF16Infinity);
  EXPECT_EQ(got[8], 0x0000);  // a tie with zero: to even
  EXPECT_EQ(got[9], 0x0001);
}

// ---- f32 → f16, stochastically (the device sets SR for this kernel, §2)

sim::SimOptions stochastic_options() {
  sim::SimOptions options;
  options.rounding = Rounding::kStochastic;
  return options;
}

// Worker w rounds pairs w, w + 6, … low element first, one draw each from its
// stream of the tile's generator (the one-tile harness runs logical tile 0);
// every result is one of the two f16s around its input, NaNs canonical, and
// a second run on a fresh chip gives the same bits.
TEST(AttentionConvert, StochasticRoundingDrawsFromTheTilesWorkerStreams) {
  std::mt19937 rng(21);
  for (const std::uint32_t count : {1u, 2u, 7u, 12u, 13u * 64u + 1u, 12u * 72u}) {
    std::vector<float> values;
    std::uniform_real_distribution<float> value(-70000.0F, 70000.0F), small(-1e-4F, 1e-4F);
    for (std::uint32_t i = 0; i < count; ++i) {
      values.push_back(i % 2 == 0 ? value(rng) : small(rng));
    }
    if (count > 2) values[count / 2] = NAN;
    const auto got = run_convert(values, stochastic_options());
    EXPECT_EQ(run_convert(values, stochastic_options()), got) << count;  // deterministic

    TilePrng prng(target::c600_physical(target::LogicalTile(0)).value);
    std::vector<std::uint16_t> expected(count);
    for (unsigned w = 0; w < kWorkerCount; ++w) {
      for (std::uint32_t pair = w; 2 * pair < count; pair += kWorkerCount) {
        for (std::uint32_t i = 2 * pair; i < std::min(2 * pair + 2, count); ++i) {
          const std::uint16_t h =
              round_f16_stochastic(std::bit_cast<std::uint32_t>(values[i]), prng.worker(w).next());
          expected[i] = values[i] != values[i] ? kF16QuietNan : h;
        }
      }
    }
    EXPECT_EQ(got, expected) << count;
    for (std::uint32_t i = 0; i < count; ++i) {
      if (values[i] != values[i]) {
        ASSERT_EQ(got[i], kF16QuietNan) << i;
        continue;
      }
      const auto [toward, away] = f16_neighbours(values[i]);
      ASSERT_TRUE(got[i] == toward || got[i] == away)
          << values[i] << " -> " << std::hex << got[i] << " (" << toward << ", " << away << ")";
    }
    // The draws matter: not every element is its nearest f16.
    if (count >= 12) {
      EXPECT_NE(got, reference_f32_to_f16(values)) << count;
    }
  }
}

// The mean of many stochastic roundings of v is v: per value, 2400 copies,
// the mean within 4 of its standard deviations of v.
TEST(AttentionConvert, StochasticRoundingIsUnbiasedInMean) {
  const std::vector<float> cases = {1.0F + 0.3F / 1024,            // normal, p = 0.3
                                    -3.1415926F,                   // negative
                                    0.7F * std::ldexp(1.0F, -24),  // the subnormal step
                                    65510.0F,                      // between 65504 and Inf
                                    0.09999F};
  constexpr std::uint32_t kCopies = 2400;
  std::vector<float> values;
  for (const float v : cases) values.insert(values.end(), kCopies, v);
  const auto got = run_convert(values, stochastic_options());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto first = got.begin() + static_cast<std::ptrdiff_t>(c * kCopies);
    const std::vector<std::uint16_t> samples(first, first + kCopies);
    const auto [toward, away] = f16_neighbours(cases[c]);
    ASSERT_NE(toward, away) << cases[c];  // a value stochastic rounding moves
    for (const std::uint16_t h : samples) ASSERT_TRUE(h == toward || h == away) << cases[c];
    EXPECT_LE(f16_mean_error_in_sigmas(cases[c], samples), 4.0) << cases[c];
  }
}

}  // namespace
}  // namespace tessera::kernels
