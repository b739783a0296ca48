// The attention kernels' ABI through the simulator: zero work touches
// nothing and costs the launch; each precondition is a KernelPrecondition
// fault with its reason; allocations of exactly the registry's footprints
// suffice, and each one element short is a KernelOverrun naming its
// operand; never-written inputs a model uses are uninitialized reads; a call
// costs its cost function.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <functional>

#include "kernels/attention.hpp"
#include "kernels/attention_costs.hpp"
#include "kernels/costs.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;

const std::uint32_t kScale = std::bit_cast<std::uint32_t>(1.0F / std::sqrt(72.0F));

struct Operand {
  unsigned reg;
  unsigned element_bytes;  // of the operand's last element
};

struct Case {
  std::string_view kernel;
  Registers registers{};
  std::vector<Operand> operands;
  std::uint64_t cycles = 0;  // the cost function's
};

Registers pack_registers(std::uint32_t block_rows, std::uint32_t copy, std::uint32_t source_rows,
                         std::uint32_t source_start, std::uint32_t destination_start) {
  Registers r{};
  r[kPackOut] = 0x70000;
  r[kPackSource] = 0x60000;
  r[kPackSourceRows] = source_rows;
  r[kPackSourceColumn] = 72;
  r[kPackRowStarts] = row_starts(source_start, destination_start);
  r[kPackCopyRows] = copy;
  r[kPackBlockRows] = block_rows;
  r[kPackHeadDim] = 72;
  return r;
}

Registers softmax_registers(std::uint32_t rows = 12, std::uint32_t key_rows = 92) {
  Registers r{};
  r[kSoftmaxOut] = 0x60000;
  r[kSoftmaxScores] = 0x80000;
  r[kSoftmaxRows] = rows;
  r[kSoftmaxKeyRows] = key_rows;
  r[kSoftmaxScale] = kScale;
  return r;
}

Registers merge_registers(std::uint32_t rows = 12) {
  Registers r{};
  r[kMergeAccumulator] = 0x60000;
  r[kMergeValues] = 0x80000;
  r[kMergeWeights] = 0x68000;
  r[kMergeRows] = rows;
  r[kMergeKeyRows] = 92;
  r[kMergeHeadDim] = 72;
  return r;
}

Registers convert_registers(std::uint32_t count = 12 * 72) {
  Registers r{};
  r[kConvertOut] = 0x70000;
  r[kConvertIn] = 0x60000;
  r[kConvertCount] = count;
  return r;
}

Registers unpack_registers(std::uint32_t copy = 9) {
  Registers r{};
  r[kUnpackOut] = 0x60000;
  r[kUnpackSource] = 0x70000;
  r[kUnpackOutRows] = 13;
  r[kUnpackOutColumn] = 72;
  r[kUnpackRowStarts] = row_starts(0, 2);
  r[kUnpackCopyRows] = copy;
  r[kUnpackHeadDim] = 72;
  return r;
}

const std::string_view kMerges[] = {kAttentionMergeInitial, kAttentionMergeMiddle,
                                    kAttentionMergeFinal, kAttentionMergeSingle};
const MergeInstructions kMergeCosts[] = {kMergeInitialInstructions, kMergeMiddleInstructions,
                                         kMergeFinalInstructions, kMergeSingleInstructions};

// One valid call of every attention kernel, at SigLIP's shapes.
std::vector<Case> cases() {
  std::vector<Case> all;
  // Q: 9 rows of a 13-row shard into a 12-row block (3 zero rows).
  all.push_back({kAttentionPackQuery,
                 pack_registers(9, 9, 13, 2, 0),
                 {{2, 2}, {3, 2}},
                 attention_pack_cycles(12 * 80)});
  // K and V: rows 52..91 of a 92-row block from a 40-row shard (and the 4
  // padding rows).
  for (const auto kernel : {kAttentionPackKey, kAttentionPackValue}) {
    all.push_back({kernel,
                   pack_registers(92, 40, 40, 0, 52),
                   {{2, 2}, {3, 2}},
                   attention_pack_cycles(44 * 80)});
  }
  all.push_back(
      {kAttentionSoftmax, softmax_registers(), {{2, 4}, {3, 2}}, attention_softmax_cycles(12, 96)});
  for (std::size_t i = 0; i < std::size(kMerges); ++i) {
    all.push_back({kMerges[i],
                   merge_registers(),
                   {{2, 4}, {3, 2}, {4, 4}},
                   attention_merge_cycles(12, 72, kMergeCosts[i])});
  }
  all.push_back({kAttentionF32ToF16,
                 convert_registers(),
                 {{2, 2}, {3, 4}},
                 attention_f32_to_f16_cycles(12 * 72)});
  all.push_back(
      {kAttentionUnpack, unpack_registers(), {{2, 2}, {3, 2}}, attention_unpack_cycles(9 * 72)});
  return all;
}

std::uint64_t footprint(const KernelSpec& spec, unsigned reg, const Registers& r) {
  for (const OperandSpec& o : spec.operands) {
    if (o.reg == reg) return o.footprint(r);
  }
  return 0;
}

// Allocations of exactly the registry's footprints, filled with zeros
// (finite f16 and f32 values), one of them `short_bytes` short.
std::vector<Buffer> buffers(const Case& c, unsigned short_reg = 0, unsigned short_bytes = 0) {
  const KernelSpec& spec = *KernelRegistry::standard().find(c.kernel);
  std::vector<Buffer> all;
  for (const Operand& operand : c.operands) {
    const auto bytes = static_cast<std::uint32_t>(footprint(spec, operand.reg, c.registers)) -
                       (operand.reg == short_reg ? short_bytes : 0);
    all.push_back(Buffer{fmt::format("m{}", operand.reg), c.registers[operand.reg], bytes,
                         std::vector<std::uint8_t>(bytes, 0)});
  }
  return all;
}

TEST(AttentionAbi, FootprintSizedAllocationsSufficeAndACallCostsItsCostFunction) {
  for (const Case& c : cases()) {
    KernelRun run(c.kernel, c.registers, buffers(c));
    ASSERT_TRUE(run.halted()) << c.kernel << ": " << run.fault_text();
    EXPECT_EQ(run.total_cycles(), run.supervisor_cycles() + c.cycles) << c.kernel;
  }
}

TEST(AttentionAbi, AnOperandOneElementShortIsAnOverrunNamingIt) {
  for (const Case& c : cases()) {
    for (const Operand& operand : c.operands) {
      KernelRun run(c.kernel, c.registers, buffers(c, operand.reg, operand.element_bytes));
      ASSERT_FALSE(run.halted()) << c.kernel << " $m" << operand.reg;
      EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelOverrun) << run.fault_text();
      EXPECT_NE(run.fault().message.find(fmt::format("operand $m{} ", operand.reg)),
                std::string::npos)
          << run.fault().message;
      EXPECT_NE(run.fault().message.find(fmt::format("'m{}'", operand.reg)), std::string::npos)
          << run.fault().message;
    }
  }
}

// Zero rows (zero elements, zero copied rows) touch nothing — the pointers
// here are nowhere near an allocation — and cost the launch.
TEST(AttentionAbi, ZeroWorkTouchesNothingAndCostsTheLaunch) {
  std::vector<Case> zero;
  for (const auto kernel : {kAttentionPackQuery, kAttentionPackKey, kAttentionPackValue}) {
    zero.push_back({kernel, pack_registers(92, 0, 13, 0, 0), {}, 0});
  }
  zero.push_back({kAttentionSoftmax, softmax_registers(0), {}, 0});
  for (const auto kernel : kMerges) zero.push_back({kernel, merge_registers(0), {}, 0});
  zero.push_back({kAttentionF32ToF16, convert_registers(0), {}, 0});
  zero.push_back({kAttentionUnpack, unpack_registers(0), {}, 0});
  for (Case& c : zero) {
    const KernelSpec& spec = *KernelRegistry::standard().find(c.kernel);
    for (const OperandSpec& operand : spec.operands) {
      c.registers[operand.reg] = operand.reg == 2 ? 0 : 0xFFFFFFF8u - 8 * operand.reg;
    }
    KernelRun run(c.kernel, c.registers, {});
    ASSERT_TRUE(run.halted()) << c.kernel << ": " << run.fault_text();
    EXPECT_EQ(run.total_cycles(), run.supervisor_cycles() + kKernelLaunchCycles) << c.kernel;
    for (const OperandSpec& operand : spec.operands) {
      EXPECT_EQ(operand.footprint(c.registers), 0u) << c.kernel << " $m" << operand.reg;
    }
  }
}

struct Refusal {
  std::string_view kernel;
  Registers registers;
  std::string reason;
};

Refusal refused(std::string_view kernel, Registers r, std::string reason,
                const std::function<void(Registers&)>& change) {
  change(r);
  return {kernel, r, std::move(reason)};
}

TEST(AttentionAbi, PreconditionsAreFaultsWithTheirReasons) {
  const auto with = [](unsigned reg, std::uint32_t value) {
    return [=](Registers& r) { r[reg] = value; };
  };
  const Registers q = pack_registers(9, 9, 13, 2, 0), k = pack_registers(92, 40, 40, 0, 52);
  const Refusal refusals[] = {
      refused(kAttentionPackQuery, q,
              "$m9 (head dimension) = 70 is not a positive multiple of 4: the attention kernels "
              "move a head's columns in half4 groups (8-byte accesses)",
              with(kPackHeadDim, 70)),
      refused(kAttentionPackQuery, q, "$m9 (head dimension) = 0 is not a positive multiple of 4",
              with(kPackHeadDim, 0)),
      refused(kAttentionPackValue, k,
              "$m9 (head dimension) = 132 pads to 144 columns, more than 128, the widest output "
              "of the PV GEMM",
              with(kPackHeadDim, 132)),
      refused(kAttentionPackKey, k,
              "$m8 (key rows) = 129 pads to 144 key columns, more than 128, the widest output of "
              "the QK GEMM",
              with(kPackBlockRows, 129)),
      refused(kAttentionPackKey, k, "$m8 (key rows) = 0: a key block holds at least one key row",
              [](Registers& r) { r[kPackBlockRows] = 0; }),
      refused(kAttentionPackQuery, q,
              "$m5 (hidden column) = 70 is not a multiple of 4: the head's half4 groups must be "
              "8-byte aligned",
              with(kPackSourceColumn, 70)),
      refused(kAttentionPackQuery, q,
              "the source rows [10, 19) ($m6 row start, $m7 copy rows) reach past $m4 (source "
              "rows) = 13",
              with(kPackRowStarts, row_starts(10, 0))),
      refused(kAttentionPackValue, k,
              "the destination rows [60, 100) ($m6 row start, $m7 copy rows) reach past $m8 "
              "(block rows) = 92",
              with(kPackRowStarts, row_starts(0, 60))),
      refused(kAttentionPackQuery, q, "$m2 = 0x70004 is not 8-byte aligned",
              with(kPackOut, 0x70004)),
      refused(kAttentionPackKey, k, "$m2 (destination) [0x60100, 0x63d00) overlaps $m3 (source)",
              with(kPackOut, 0x60100)),
      refused(kAttentionSoftmax, softmax_registers(),
              "$m5 (key rows) = 0: a key block holds at least one key row",
              with(kSoftmaxKeyRows, 0)),
      refused(kAttentionSoftmax, softmax_registers(), "$m5 (key rows) = 130 pads to 144",
              with(kSoftmaxKeyRows, 130)),
      refused(kAttentionSoftmax, softmax_registers(),
              "$m6 (scale) = 0 (f32 bits 0x00000000) is not a positive finite number: the block's "
              "largest scaled score scale·s is scale·max(s) only for scale > 0",
              with(kSoftmaxScale, 0)),
      refused(kAttentionSoftmax, softmax_registers(),
              "$m6 (scale) = -0.125 (f32 bits 0xbe000000) is not a positive finite number",
              with(kSoftmaxScale, std::bit_cast<std::uint32_t>(-0.125F))),
      refused(kAttentionSoftmax, softmax_registers(), "(f32 bits 0x7fc00000) is not a positive",
              with(kSoftmaxScale, 0x7FC00000)),
      refused(kAttentionSoftmax, softmax_registers(), "(f32 bits 0x7f800000) is not a positive",
              with(kSoftmaxScale, 0x7F800000)),
      refused(kAttentionSoftmax, softmax_registers(), "$m3 = 0x80002 is not 8-byte aligned",
              with(kSoftmaxScores, 0x80002)),
      refused(kAttentionSoftmax, softmax_registers(),
              "$m2 (block weights) [0x80000, 0x80960) overlaps $m3 (scores)",
              with(kSoftmaxOut, 0x80000)),
      refused(kAttentionMergeMiddle, merge_registers(),
              "$m7 (head dimension) = 6 is not a positive multiple of 4", with(kMergeHeadDim, 6)),
      refused(kAttentionMergeFinal, merge_registers(),
              "$m6 (key rows) = 0: a key block holds at least one key row", with(kMergeKeyRows, 0)),
      refused(kAttentionMergeInitial, merge_registers(),
              "$m2 (accumulator) [0x80000, 0x80de0) overlaps $m3 (block values)",
              with(kMergeAccumulator, 0x80000)),
      refused(kAttentionMergeSingle, merge_registers(),
              "$m2 (accumulator) [0x68000, 0x68de0) overlaps $m4 (block weights)",
              with(kMergeAccumulator, 0x68000)),
      refused(kAttentionF32ToF16, convert_registers(), "$m2 = 0x70002 is not word-aligned",
              with(kConvertOut, 0x70002)),
      refused(kAttentionF32ToF16, convert_registers(),
              "$m2 (output) [0x60800, 0x60ec0) overlaps $m3 (input)", with(kConvertOut, 0x60800)),
      refused(kAttentionUnpack, unpack_registers(),
              "the destination rows [5, 14) ($m6 row start, $m7 copy rows) reach past $m4 "
              "(destination rows) = 13",
              with(kUnpackRowStarts, row_starts(0, 5))),
      refused(kAttentionUnpack, unpack_registers(),
              "$m5 (hidden column) = 2 is not a multiple of 4", with(kUnpackOutColumn, 2)),
      refused(kAttentionUnpack, unpack_registers(), "$m8 (head dimension) = 0",
              with(kUnpackHeadDim, 0)),
  };
  for (const Refusal& r : refusals) {
    const auto violation = KernelRegistry::standard().find(r.kernel)->precondition(r.registers);
    ASSERT_TRUE(violation.has_value()) << r.kernel << ": expected " << r.reason;
    EXPECT_NE(violation->find(r.reason), std::string::npos)
        << r.kernel << ": " << *violation << "\n  expected: " << r.reason;
    // Through the simulator: a KernelPrecondition fault carrying it.
    KernelRun run(r.kernel, r.registers, {});
    ASSERT_FALSE(run.halted()) << r.kernel;
    EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelPrecondition);
    EXPECT_NE(run.fault().message.find(*violation), std::string::npos) << run.fault().message;
  }
}

// Inputs a model uses must have been written: the scores of a softmax, the
// accumulator of a middle merge, the block state of any merge. The merge
// never reads P, and an initial merge never reads the accumulator.
TEST(AttentionAbi, NeverWrittenInputsAreUninitializedReads) {
  sim::SimOptions options;
  options.check_uninitialized = true;
  const auto unwritten = [&](const Case& c, unsigned reg) {
    auto all = buffers(c);
    for (Buffer& b : all) {
      if (b.address == c.registers[reg]) b.contents.clear();
    }
    return all;
  };
  const std::vector<Case> all = cases();
  const auto find = [&](std::string_view kernel) {
    return *std::find_if(all.begin(), all.end(), [&](const Case& c) { return c.kernel == kernel; });
  };
  const struct {
    std::string_view kernel;
    unsigned reg;
  } reads[] = {{kAttentionSoftmax, kSoftmaxScores},  {kAttentionMergeMiddle, kMergeAccumulator},
               {kAttentionMergeFinal, kMergeValues}, {kAttentionMergeInitial, kMergeWeights},
               {kAttentionF32ToF16, kConvertIn},     {kAttentionUnpack, kUnpackSource},
               {kAttentionPackQuery, kPackSource}};
  for (const auto& [kernel, reg] : reads) {
    const Case c = find(kernel);
    KernelRun run(kernel, c.registers, unwritten(c, reg), options);
    ASSERT_FALSE(run.halted()) << kernel << " $m" << reg;
    EXPECT_EQ(run.fault().kind, sim::FaultKind::kUninitializedRead) << run.fault_text();
    EXPECT_NE(run.fault().message.find(fmt::format("operand $m{} ", reg)), std::string::npos)
        << run.fault().message;
  }
  // Outputs are never read: a never-written destination is fine.
  const std::pair<std::string_view, unsigned> writes[] = {
      {kAttentionMergeInitial, kMergeAccumulator},
      {kAttentionSoftmax, kSoftmaxOut},
      {kAttentionPackKey, kPackOut},
      {kAttentionUnpack, kUnpackOut}};
  for (const auto& [kernel, reg] : writes) {
    const Case c = find(kernel);
    KernelRun run(kernel, c.registers, unwritten(c, reg), options);
    EXPECT_TRUE(run.halted()) << kernel << ": " << run.fault_text();
  }
}

}  // namespace
}  // namespace tessera::kernels
