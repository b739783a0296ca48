// The layout kernels through the simulator, brute force against the layouts
// derived in tests/kernels/layout_reference.hpp: every element of every
// rearrange lands where the reference says and padding is +0; row-major →
// layout → row-major is the identity for every layout (and through C16 →
// A16 relayout and reblock); reblock moves exactly the rows it names between
// shards of different row counts and keeps the others; zero work touches
// nothing; each operand one element short is a KernelOverrun naming it;
// preconditions fail with their reasons.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <functional>

#include "kernels/layout_kernels.hpp"
#include "kernels/pointwise_costs.hpp"
#include "tests/kernels/kernel_case.hpp"
#include "tests/kernels/layout_reference.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;
namespace ref = testing::reference;

constexpr std::uint32_t kEdgeRows[] = {0, 1, 6, 7, 11, 12, 13, 61};

// Distinct, recognisable f16 patterns (never 0, so padding zeros show):
// element i of a matrix.
std::vector<std::uint16_t> distinct(std::size_t n, std::uint16_t salt = 0) {
  std::vector<std::uint16_t> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = static_cast<std::uint16_t>((i * 7 + salt) % 0xFFFF + 1);
  return values;
}

// ---- rearrange / unpack

enum class Layout { kLeft, kTransposedRight, kBlockMajor, kOutput };

struct LayoutKernels {
  Layout layout;
  std::string_view rearrange, unpack;
  const char* name;
};
constexpr LayoutKernels kLayouts[] = {
    {Layout::kLeft, kRearrangeLeftF16, kUnpackLeftF16, "left"},
    {Layout::kTransposedRight, kRearrangeTransposedRightF16, kUnpackTransposedRightF16,
     "transposed right"},
    {Layout::kBlockMajor, kRearrangeBlockMajorF16, kUnpackBlockMajorF16, "block major"},
    {Layout::kOutput, kRearrangeOutputF16, kUnpackOutputF16, "output"},
};

struct PackShape {
  std::uint32_t rows, columns, padded_rows, padded_columns, row_block = 0;
  std::size_t block_elements() const { return std::size_t{padded_rows} * padded_columns; }
};

// The reference index of row-major element (r, c) in each layout's block.
std::size_t reference_index(Layout layout, const PackShape& s, std::size_t r, std::size_t c) {
  switch (layout) {
    case Layout::kLeft:
      return ref::left_index(r, c, s.padded_rows);
    case Layout::kTransposedRight:  // B(k, n) = source(n, k)
      return ref::weight_index(c, r, s.padded_columns);
    case Layout::kBlockMajor:  // B(k, n) = source(k, n), in blocks of row_block K rows
      return (r / s.row_block) * s.row_block * s.padded_columns +
             ref::weight_index(r % s.row_block, c, s.row_block);
    case Layout::kOutput:
      return ref::output_index(r, c, s.padded_rows);
  }
  return 0;
}

std::vector<std::pair<unsigned, std::uint32_t>> scalars(const PackShape& s) {
  return {{4, s.rows}, {5, s.columns}, {6, s.padded_rows}, {7, s.padded_columns}, {8, s.row_block}};
}

KernelCase rearrange_case(const LayoutKernels& k, const PackShape& s,
                          const std::vector<std::uint16_t>& matrix) {
  KernelCase c{k.rearrange, {}, scalars(s)};
  c.operands.push_back(input(3, "matrix", 2, bytes_of(matrix)));
  // The block is pre-filled with NaNs: the kernel must write every padding element.
  c.operands.push_back(
      input(2, "block", 2, bytes_of(std::vector<std::uint16_t>(s.block_elements(), 0x7E00))));
  return c;
}

KernelCase unpack_case(const LayoutKernels& k, const PackShape& s,
                       const std::vector<std::uint16_t>& block) {
  KernelCase c{k.unpack, {}, scalars(s)};
  c.operands.push_back(input(3, "block", 2, bytes_of(block)));
  c.operands.push_back(output(2, "matrix", 2, s.rows * s.columns * 2));
  return c;
}

PackShape any_shape(Layout layout) {
  PackShape s{};
  s.rows = *rc::gen::weightedOneOf<std::uint32_t>(
      {{1,
        rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kEdgeRows), std::end(kEdgeRows)))},
       {1, rc::gen::inRange(0u, 90u)}});
  s.columns = *rc::gen::weightedOneOf<std::uint32_t>(
      {{1, rc::gen::element<std::uint32_t>(0, 1, 15, 16, 17, 72, 80)},
       {1, rc::gen::inRange(0u, 90u)}});
  s.padded_columns =
      static_cast<std::uint32_t>(ref::round_up(s.columns, 16)) + 16 * *rc::gen::inRange(0u, 2u);
  s.padded_rows = s.rows + *rc::gen::inRange(0u, 5u);
  if (layout == Layout::kTransposedRight)
    s.padded_rows = static_cast<std::uint32_t>(ref::round_up(s.padded_rows, 16));
  if (layout == Layout::kBlockMajor) {
    s.row_block = 16 * *rc::gen::inRange(1u, 5u);
    s.padded_rows = static_cast<std::uint32_t>(ref::round_up(s.padded_rows, s.row_block));
  }
  return s;
}

RC_GTEST_PROP(LayoutKernels, EveryRearrangedElementIsWhereTheReferenceSaysAndPaddingIsZero, ()) {
  const LayoutKernels& k =
      *rc::gen::elementOf(std::vector<LayoutKernels>(std::begin(kLayouts), std::end(kLayouts)));
  const PackShape s = any_shape(k.layout);
  const auto matrix = distinct(std::size_t{s.rows} * s.columns);
  const CaseResult packed = run_case(rearrange_case(k, s, matrix));
  RC_ASSERT(packed.halted);
  const auto block = packed.values<std::uint16_t>(2);
  std::vector<std::uint16_t> expected(s.block_elements(), 0);
  for (std::size_t r = 0; r < s.rows; ++r) {
    for (std::size_t c = 0; c < s.columns; ++c)
      expected[reference_index(k.layout, s, r, c)] = matrix[r * s.columns + c];
  }
  RC_ASSERT(block == expected);
  RC_ASSERT(packed.kernel_cycles == [&] {
    switch (k.layout) {
      case Layout::kLeft:
        return rearrange_left_amp_cycles(s.columns, s.block_elements());
      case Layout::kTransposedRight:
        return rearrange_transposed_right_amp_cycles(s.columns, s.block_elements());
      case Layout::kBlockMajor:
        return rearrange_block_major_amp_cycles(s.columns, s.block_elements());
      case Layout::kOutput:
        return rearrange_output_cycles(s.block_elements());
    }
    return std::uint64_t{0};
  }());

  // And back: the identity on the logical matrix.
  const CaseResult unpacked = run_case(unpack_case(k, s, block));
  RC_ASSERT(unpacked.halted);
  RC_ASSERT(unpacked.values<std::uint16_t>(2) == matrix);
}

// Every layout pair: packing in one layout and reading back through the
// C16 → A16 conversions gives the same matrix.
RC_GTEST_PROP(LayoutKernels, OutputToLeftThroughRelayoutAndReblockIsTheIdentity, ()) {
  const std::uint32_t rows = *rc::gen::elementOf(
      std::vector<std::uint32_t>(std::begin(kEdgeRows) + 1, std::end(kEdgeRows)));
  const std::uint32_t columns = *rc::gen::element<std::uint32_t>(1, 15, 16, 17, 40, 64, 72);
  const std::uint32_t padded = static_cast<std::uint32_t>(ref::round_up(columns, 16));
  const auto matrix = distinct(std::size_t{rows} * columns, 3);
  const PackShape s{rows, columns, rows, padded};
  const CaseResult c16 = run_case(rearrange_case(kLayouts[3], s, matrix));
  RC_ASSERT(c16.halted);
  const auto c16_block = c16.values<std::uint16_t>(2);

  KernelCase relayout{kRelayoutC16ToA16F16, {}, {{4, rows}, {5, columns}}};
  relayout.operands.push_back(input(3, "c16", 2, bytes_of(c16_block)));
  relayout.operands.push_back(output(2, "a16", 2, rows * padded * 2));
  const CaseResult a16 = run_case(relayout);
  RC_ASSERT(a16.halted);
  RC_ASSERT(a16.kernel_cycles == panel_copy_cycles(rows, columns));
  const CaseResult back = run_case(unpack_case(kLayouts[0], s, a16.values<std::uint16_t>(2)));
  RC_ASSERT(back.halted);
  RC_ASSERT(back.values<std::uint16_t>(2) == matrix);

  // The same through a full-range C16 → A16 reblock.
  KernelCase reblock{
      kReblockC16ToA16F16, {}, {{4, rows}, {5, rows}, {6, 0}, {7, 0}, {8, rows}, {9, columns}}};
  reblock.operands.push_back(input(3, "c16", 2, bytes_of(c16_block)));
  reblock.operands.push_back(output(2, "a16", 2, rows * padded * 2));
  const CaseResult reblocked = run_case(reblock);
  RC_ASSERT(reblocked.halted);
  RC_ASSERT(reblocked.operands.at(2) == a16.operands.at(2));
}

// ---- reblock: a row range between shards of different row counts (§1.3).

struct ReblockCall {
  bool from_c16;
  std::uint32_t source_rows, destination_rows, source_start, destination_start, copy, columns;

  std::uint32_t padded() const { return static_cast<std::uint32_t>(ref::round_up(columns, 16)); }
  std::vector<std::uint16_t> source() const {
    return distinct(std::size_t{source_rows} * padded(), 11);
  }
  std::vector<std::uint16_t> destination() const {
    return distinct(std::size_t{destination_rows} * padded(), 5000);
  }
  KernelCase kernel_case() const {
    KernelCase c{from_c16 ? kReblockC16ToA16F16 : kReblockA16ToA16F16,
                 {},
                 {{4, source_rows},
                  {5, destination_rows},
                  {6, source_start},
                  {7, destination_start},
                  {8, copy},
                  {9, columns}}};
    c.operands.push_back(input(3, "source", 2, bytes_of(source())));
    c.operands.push_back(input(2, "destination", 2, bytes_of(destination())));
    return c;
  }
  std::vector<std::uint16_t> expected() const {
    const auto src = source();
    auto dst = destination();
    for (std::size_t i = 0; i < copy; ++i) {
      const std::size_t from = source_start + i, to = destination_start + i;
      for (std::size_t n = 0; n < padded(); ++n) {
        std::uint16_t value = 0;
        if (!from_c16) {
          value = src[ref::left_index(from, n, source_rows)];  // padding copied too
        } else if (n < columns) {
          value = src[ref::output_index(from, n, source_rows)];
        }
        dst[ref::left_index(to, n, destination_rows)] = value;
      }
    }
    return dst;
  }
};

RC_GTEST_PROP(LayoutKernels, ReblockMovesExactlyTheNamedRows, ()) {
  ReblockCall call{};
  call.from_c16 = *rc::gen::arbitrary<bool>();
  call.source_rows =
      *rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kEdgeRows), std::end(kEdgeRows)));
  call.destination_rows =
      *rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kEdgeRows), std::end(kEdgeRows)));
  call.copy = *rc::gen::inRange(0u, std::min(call.source_rows, call.destination_rows) + 1);
  call.source_start = *rc::gen::inRange(0u, call.source_rows - call.copy + 1);
  call.destination_start = *rc::gen::inRange(0u, call.destination_rows - call.copy + 1);
  call.columns = *rc::gen::element<std::uint32_t>(1, 15, 16, 17, 40, 64, 72);
  const CaseResult result = run_case(call.kernel_case());
  RC_ASSERT(result.halted);
  RC_ASSERT(result.values<std::uint16_t>(2) == call.expected());
  RC_ASSERT(result.kernel_cycles == panel_copy_cycles(call.copy, call.columns));
}

TEST(LayoutKernels, AttentionShardsReblockedBetweenTwelveAndThirteenRows) {
  // The SigLIP row shards: 729 rows in 57 shards of 12 and 13 (§4); rows
  // 5..12 of a 13-row shard to rows 0..7 of a 12-row one, hidden 1152.
  const ReblockCall call{false, 13, 12, 5, 0, 8, 1152};
  const CaseResult result = run_case(call.kernel_case());
  ASSERT_TRUE(result.halted) << result.fault;
  EXPECT_EQ(result.values<std::uint16_t>(2), call.expected());
}

// ---- zero work, overruns, preconditions

TEST(LayoutKernels, ZeroWorkTouchesNothing) {
  for (const auto& k : kLayouts) {
    for (const std::string_view kernel : {k.rearrange, k.unpack}) {
      for (const PackShape& s :
           {PackShape{0, 0, 0, 0, 16}, PackShape{0, 5, 0, 16, 16}, PackShape{7, 0, 16, 0, 16}}) {
        Registers r{};
        r[2] = kBufferBase;
        r[3] = kBufferBase + 0x100;
        for (const auto& [reg, value] : scalars(s)) r[reg] = value;
        KernelRun run(kernel, r, {});
        ASSERT_TRUE(run.halted()) << kernel << ": " << run.fault_text();
      }
    }
  }
  for (const std::string_view kernel : {kReblockA16ToA16F16, kReblockC16ToA16F16}) {
    for (const auto& [copy, columns] : {std::pair{0u, 64u}, std::pair{5u, 0u}}) {
      Registers r{};
      r[2] = kBufferBase;
      r[3] = kBufferBase + 0x100;
      r[4] = 12;
      r[5] = 13;
      r[8] = copy;
      r[9] = columns;
      KernelRun run(kernel, r, {});
      ASSERT_TRUE(run.halted()) << kernel << ": " << run.fault_text();
    }
  }
  Registers r{};
  r[2] = kBufferBase;
  r[3] = kBufferBase + 0x100;
  r[4] = 0xFFFFFFFF;  // rows, with no columns
  KernelRun run(kRelayoutC16ToA16F16, r, {});
  ASSERT_TRUE(run.halted()) << run.fault_text();
}

TEST(LayoutKernels, AnOperandOneElementShortIsAnOverrunNamingIt) {
  for (const auto& k : kLayouts) {
    const PackShape s{13, 20, 16, 32, 16};
    expect_each_short_operand_overruns(rearrange_case(k, s, distinct(13 * 20)));
    expect_each_short_operand_overruns(unpack_case(k, s, distinct(16 * 32)));
  }
  for (const bool c16 : {false, true}) {
    expect_each_short_operand_overruns(ReblockCall{c16, 13, 12, 5, 4, 8, 20}.kernel_case());
  }
  KernelCase relayout{kRelayoutC16ToA16F16, {}, {{4, 7}, {5, 20}}};
  relayout.operands.push_back(input(3, "c16", 2, std::vector<std::uint8_t>(7 * 32 * 2)));
  relayout.operands.push_back(output(2, "a16", 2, 7 * 32 * 2));
  expect_each_short_operand_overruns(relayout);
}

Registers regs(std::initializer_list<std::pair<unsigned, std::uint32_t>> values) {
  Registers r{};
  for (const auto& [reg, value] : values) r[reg] = value;
  return r;
}

TEST(LayoutKernels, PreconditionViolationsAreFaultsWithTheReason) {
  constexpr std::uint32_t a = kBufferBase, b = kBufferBase + 0x4000;
  expect_precondition_failure(
      kReblockA16ToA16F16,
      regs({{2, b}, {3, a}, {4, 12}, {5, 13}, {6, 5}, {7, 0}, {8, 8}, {9, 16}}),
      "rows [5, 13) are not inside the source's 12 rows ($m6 + $m8 > $m4)");
  expect_precondition_failure(
      kReblockC16ToA16F16,
      regs({{2, b}, {3, a}, {4, 13}, {5, 12}, {6, 0}, {7, 6}, {8, 7}, {9, 16}}),
      "rows [6, 13) are not inside the destination's 12 rows ($m7 + $m8 > $m5)");
  expect_precondition_failure(
      kReblockA16ToA16F16,
      regs({{2, a + 32}, {3, a}, {4, 4}, {5, 4}, {6, 0}, {7, 0}, {8, 4}, {9, 16}}),
      "$m2 (destination) [0x60020, 0x600a0) overlaps $m3 (source) [0x60000, 0x60080): rows are "
      "moved by six workers at once");
  expect_precondition_failure(kRelayoutC16ToA16F16, regs({{2, b + 4}, {3, a}, {4, 1}, {5, 16}}),
                              "$m2 = 0x64004 is not 8-byte aligned");
  expect_precondition_failure(kRearrangeLeftF16,
                              regs({{2, b}, {3, a}, {4, 5}, {5, 20}, {6, 4}, {7, 32}}),
                              "$m4 (rows) = 5 is more than $m6 (padded rows) = 4");
  expect_precondition_failure(kRearrangeLeftF16,
                              regs({{2, b}, {3, a}, {4, 5}, {5, 20}, {6, 5}, {7, 24}}),
                              "$m7 (padded columns) = 24 is not a multiple of 16");
  expect_precondition_failure(kUnpackOutputF16,
                              regs({{2, b}, {3, a}, {4, 5}, {5, 40}, {6, 5}, {7, 32}}),
                              "$m5 (columns) = 40 is more than $m7 (padded columns) = 32");
  expect_precondition_failure(kRearrangeTransposedRightF16,
                              regs({{2, b}, {3, a}, {4, 5}, {5, 16}, {6, 8}, {7, 16}}),
                              "$m6 (padded rows) = 8 is not a multiple of 16");
  expect_precondition_failure(kRearrangeBlockMajorF16,
                              regs({{2, b}, {3, a}, {4, 64}, {5, 16}, {6, 64}, {7, 16}, {8, 24}}),
                              "$m8 (row block) = 24 is not a positive multiple of 16");
  expect_precondition_failure(kRearrangeBlockMajorF16,
                              regs({{2, b}, {3, a}, {4, 64}, {5, 16}, {6, 80}, {7, 16}, {8, 64}}),
                              "$m6 (padded rows) = 80 is not a multiple of $m8 (row block) = 64");
  expect_precondition_failure(kUnpackBlockMajorF16,
                              regs({{2, b}, {3, a}, {4, 64}, {5, 16}, {6, 64}, {7, 16}, {8, 0}}),
                              "$m8 (row block) = 0 is not a positive multiple of 16");
  expect_precondition_failure(kRearrangeOutputF16,
                              regs({{2, a}, {3, a + 8}, {4, 2}, {5, 16}, {6, 2}, {7, 16}}),
                              "the layouts differ, so no alias is element-wise");
  expect_precondition_failure(kUnpackLeftF16,
                              regs({{2, a + 2}, {3, b}, {4, 2}, {5, 16}, {6, 2}, {7, 16}}),
                              "$m2 = 0x60002 is not word-aligned");
}

}  // namespace
}  // namespace tessera::kernels
