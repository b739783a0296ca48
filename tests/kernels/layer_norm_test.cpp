// LayerNorm and the fused residual add + LayerNorm through the simulator,
// bit for bit against a CPU reference written here from the documented
// numerics (kernels/layer_norm.hpp), within a stated bound of FP64, with
// padding, edge shapes, specials, stochastic rounding, the ε encoding, zero
// work, overruns and preconditions.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "kernels/half.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/registry.hpp"
#include "kernels/row_normalisation.hpp"
#include "tests/kernels/footprint_check.hpp"
#include "tests/kernels/kernel_case.hpp"
#include "tests/kernels/layout_reference.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;
namespace ref = testing::reference;

constexpr std::uint32_t kEdgeRows[] = {0, 1, 6, 7, 11, 12, 13, 61};
constexpr std::uint32_t kEdgeColumns[] = {1, 15, 16, 17, 40, 64, 72};

// ---- The reference: one row at a time, logical row-major data.

struct Problem {
  Problem(std::uint32_t r, std::uint32_t c, std::uint32_t q = 1074)
      : rows(r), columns(c), epsilon_q30(q) {}
  std::uint32_t rows = 0, columns = 0, epsilon_q30 = 1074;
  std::vector<std::uint16_t> x, right, gamma, beta;  // x is the residual when right is set
  bool fused() const { return !right.empty(); }
};

struct Expected {
  std::vector<std::uint16_t> y, residual;  // logical row-major
};

// How a row's Σx and Σx² are summed (kernels/layer_norm.hpp step 1;
// kernels/layer_norm_rows.hpp for the column shares).
enum class Sums {
  kWholeRow,      // four lanes by column mod 4 over the row, (l0 + l1) + (l2 + l3)
  kColumnShares,  // the same in each of six shares of whole words (the first
                  // shares a word longer), the share sums added in order from +0
};

// The four-lane sums of x[first, first + count), lanes by position.
std::pair<float, float> lane_sums(const std::vector<std::uint16_t>& x, std::size_t first,
                                  std::size_t count) {
  float lanes[4] = {}, square_lanes[4] = {};
  for (std::size_t i = 0; i < count; ++i) {
    const auto v = static_cast<float>(ref::f16(x[first + i]));
    lanes[i % 4] += v;
    square_lanes[i % 4] += v * v;
  }
  return {(lanes[0] + lanes[1]) + (lanes[2] + lanes[3]),
          (square_lanes[0] + square_lanes[1]) + (square_lanes[2] + square_lanes[3])};
}

std::pair<float, float> row_sums(const std::vector<std::uint16_t>& x, Sums how) {
  if (how == Sums::kWholeRow) return lane_sums(x, 0, x.size());
  const std::size_t words = x.size() / 2;
  float sum = 0, squares = 0;
  std::size_t first = 0;
  for (std::size_t w = 0; w < 6; ++w) {
    const std::size_t count = 2 * (words / 6 + (w < words % 6 ? 1 : 0));
    const auto [s, q] = lane_sums(x, first, count);
    sum += s;
    squares += q;
    first += count;
  }
  return {sum, squares};
}

Expected reference(const Problem& p, Sums how = Sums::kWholeRow) {
  Expected e{std::vector<std::uint16_t>(p.x.size()), p.x};
  const float epsilon = static_cast<float>(p.epsilon_q30) / 1073741824.0F;  // 2^30
  for (std::size_t r = 0; r < p.rows; ++r) {
    std::vector<std::uint16_t> x(p.x.begin() + static_cast<std::ptrdiff_t>(r * p.columns),
                                 p.x.begin() + static_cast<std::ptrdiff_t>((r + 1) * p.columns));
    if (p.fused()) {
      for (std::size_t c = 0; c < p.columns; ++c) {
        x[c] = ref::f16_add(x[c], p.right[r * p.columns + c]);
        e.residual[r * p.columns + c] = x[c];
      }
    }
    const auto [sum, squares] = row_sums(x, how);
    const float mean = sum / static_cast<float>(p.columns);
    float variance = squares / static_cast<float>(p.columns) - mean * mean;
    if (variance < 0) variance = 0;
    const std::uint16_t m = ref::f16_round(static_cast<double>(mean));
    const std::uint16_t s =
        ref::f16_round(static_cast<double>(1.0F / std::sqrt(variance + epsilon)));
    for (std::size_t c = 0; c < p.columns; ++c) {
      const std::uint16_t scaled = ref::f16_mul(ref::f16_sub(x[c], m), s);
      e.y[r * p.columns + c] = ref::f16_add(ref::f16_mul(scaled, p.gamma[c]), p.beta[c]);
    }
  }
  return e;
}

// Logical row-major → A16 (padding filled with `padding`), and back.
std::vector<std::uint16_t> to_a16(const std::vector<std::uint16_t>& m, std::size_t rows,
                                  std::size_t columns, std::uint16_t padding = 0x7E00) {
  std::vector<std::uint16_t> block(rows * ref::round_up(columns, 16), padding);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < columns; ++c)
      block[ref::left_index(r, c, rows)] = m[r * columns + c];
  }
  return block;
}

std::vector<std::uint16_t> a16_with_zero_padding(const std::vector<std::uint16_t>& m,
                                                 std::size_t rows, std::size_t columns) {
  return to_a16(m, rows, columns, 0);
}

KernelCase kernel_case(const Problem& p, bool in_place = false) {
  std::vector<std::uint16_t> affine = p.gamma;
  affine.insert(affine.end(), p.beta.begin(), p.beta.end());
  const auto block = to_a16(p.x, p.rows, p.columns);
  const auto bytes = static_cast<std::uint32_t>(block.size() * 2);
  if (!p.fused()) {
    KernelCase c{kLayerNormF16, {}, {{5, p.rows}, {6, p.columns}, {7, p.epsilon_q30}}};
    c.operands.push_back(input(3, "in", 2, bytes_of(block)));
    c.operands.push_back(input(4, "affine", 2, bytes_of(affine)));
    c.operands.push_back(in_place ? alias(2, "out", 2, 3) : output(2, "out", 2, bytes));
    return c;
  }
  KernelCase c{kAddLayerNormF16, {}, {{6, p.rows}, {7, p.columns}, {8, p.epsilon_q30}}};
  c.operands.push_back(input(3, "residual", 2, bytes_of(block)));
  c.operands.push_back(input(4, "right", 2, bytes_of(to_a16(p.right, p.rows, p.columns))));
  c.operands.push_back(input(5, "affine", 2, bytes_of(affine)));
  c.operands.push_back(output(2, "out", 2, bytes));
  return c;
}

// Activations around N(0.5, 1), γ around 1, β around 0, with a sprinkling of
// subnormals, ±65504, ±Inf and NaN when `specials`.
Problem any_problem(bool fused, std::uint32_t rows, std::uint32_t columns, bool specials) {
  Problem p{rows, columns};
  p.epsilon_q30 = *rc::gen::element<std::uint32_t>(1074, 0, 1, 1u << 20);
  const auto seed = *rc::gen::arbitrary<std::uint32_t>();
  std::mt19937 rng(seed);
  std::normal_distribution<float> activation(0.5F, 1.0F), gain(1.0F, 0.2F), shift(0.0F, 0.5F);
  const std::uint16_t special[] = {0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x8000};
  const auto value = [&](float v) {
    if (specials && rng() % 97 == 0) return special[rng() % 8];
    return f32_to_f16(v);
  };
  for (std::size_t i = 0; i < std::size_t{rows} * columns; ++i)
    p.x.push_back(value(activation(rng)));
  if (fused) {
    for (std::size_t i = 0; i < std::size_t{rows} * columns; ++i)
      p.right.push_back(value(activation(rng)));
  }
  for (std::size_t c = 0; c < columns; ++c) {
    p.gamma.push_back(value(gain(rng)));
    p.beta.push_back(value(shift(rng)));
  }
  return p;
}

RC_GTEST_PROP(LayerNorm, MatchesTheReferenceBitForBit, ()) {
  const bool fused = *rc::gen::arbitrary<bool>();
  const std::uint32_t rows =
      *rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kEdgeRows), std::end(kEdgeRows)));
  const std::uint32_t columns = *rc::gen::weightedOneOf<std::uint32_t>(
      {{3, rc::gen::elementOf(
               std::vector<std::uint32_t>(std::begin(kEdgeColumns), std::end(kEdgeColumns)))},
       {1, rc::gen::inRange(1u, 300u)}});
  const Problem p = any_problem(fused, rows, columns, *rc::gen::arbitrary<bool>());
  const bool in_place = !fused && *rc::gen::arbitrary<bool>();
  const CaseResult result = run_case(kernel_case(p, in_place));
  RC_ASSERT(result.halted);
  if (rows == 0) return;
  const Expected e = reference(p);
  RC_ASSERT(result.values<std::uint16_t>(in_place ? 3 : 2) ==
            a16_with_zero_padding(e.y, rows, columns));
  if (fused)
    RC_ASSERT(result.values<std::uint16_t>(3) == a16_with_zero_padding(e.residual, rows, columns));
  RC_ASSERT(result.kernel_cycles == layer_norm_cycles(rows, columns, fused));
}

// tessera_layer_norm_rows_f16: the same numerics on row-major rows, so the
// same reference bit for bit — with the sums in column shares when the call
// has fewer rows than workers, of an even length.
KernelCase rows_case(const Problem& p) {
  std::vector<std::uint16_t> affine = p.gamma;
  affine.insert(affine.end(), p.beta.begin(), p.beta.end());
  KernelCase c{kLayerNormRowsF16, {}, {{5, p.rows}, {6, p.columns}, {7, p.epsilon_q30}}};
  c.operands.push_back(input(3, "in", 2, bytes_of(p.x)));
  c.operands.push_back(input(4, "affine", 2, bytes_of(affine)));
  c.operands.push_back(output(2, "out", 2, static_cast<std::uint32_t>(p.x.size() * 2)));
  return c;
}

RC_GTEST_PROP(LayerNorm, RowMajorRowsMatchTheReferenceBitForBit, ()) {
  const std::uint32_t rows = *rc::gen::elementOf(std::vector<std::uint32_t>{0, 1, 2, 5, 6, 7, 13});
  const std::uint32_t columns = *rc::gen::weightedOneOf<std::uint32_t>(
      {{3, rc::gen::elementOf(std::vector<std::uint32_t>{1, 2, 3, 15, 16, 17, 72, 1152})},
       {1, rc::gen::inRange(1u, 300u)}});
  const Problem p = any_problem(false, rows, columns, *rc::gen::arbitrary<bool>());
  const CaseResult result = run_case(rows_case(p));
  RC_ASSERT(result.halted);
  RC_ASSERT(result.kernel_cycles == layer_norm_rows_f16_cycles(rows, columns));
  if (rows == 0) return;
  const bool shares = rows < 6 && columns % 2 == 0;
  RC_ASSERT(result.values<std::uint16_t>(2) ==
            reference(p, shares ? Sums::kColumnShares : Sums::kWholeRow).y);
}

// A SigLIP row whose statistics round differently summed in column shares
// than over the whole row: the kernel gives the shares' bits (and so would
// fail above if it summed the whole row), its six-row form the whole row's.
// Large values that cancel between the row's ends make the running sums
// large, so the small values between them round away differently in the two
// orders, and the (small) mean moves by f16 steps.
TEST(LayerNorm, FewerRowsThanWorkersSumTheirStatisticsInColumnShares) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> large(500, 1900);
  std::uniform_real_distribution<float> small(-0.1F, 0.1F);
  std::optional<Problem> found;
  for (int attempt = 0; attempt < 200 && !found; ++attempt) {
    Problem p{1, 1152, 1074};
    p.x.assign(1152, 0);
    for (std::size_t i = 0; i < 400; ++i) {
      const auto value = static_cast<float>(32 * large(rng));
      p.x[i] = f32_to_f16(value);
      p.x[752 + i] = f32_to_f16(-value);
    }
    for (std::size_t c = 400; c < 752; ++c) p.x[c] = f32_to_f16(small(rng));
    p.gamma.assign(1152, f32_to_f16(1.0F));
    p.beta.assign(1152, 0);
    if (reference(p, Sums::kColumnShares).y != reference(p, Sums::kWholeRow).y) found = p;
  }
  ASSERT_TRUE(found) << "no row tells the two summations apart";
  const CaseResult one = run_case(rows_case(*found));
  ASSERT_TRUE(one.halted) << one.fault;
  EXPECT_EQ(one.values<std::uint16_t>(2), reference(*found, Sums::kColumnShares).y);
  EXPECT_NE(one.values<std::uint16_t>(2), reference(*found, Sums::kWholeRow).y);
  Problem six = *found;
  six.rows = 6;
  for (int r = 1; r < 6; ++r) six.x.insert(six.x.end(), found->x.begin(), found->x.end());
  const CaseResult whole = run_case(rows_case(six));
  ASSERT_TRUE(whole.halted) << whole.fault;
  EXPECT_EQ(whole.values<std::uint16_t>(2), reference(six, Sums::kWholeRow).y);
}

TEST(LayerNorm, RowMajorRowsFewerThanTheWorkersAreSplitByColumns) {
  // One SigLIP row: two worker runs, each ending in a barrier; in the first
  // every worker sums its 96 pairs (2 each) and stores its lanes' sums (8),
  // in the second it adds the six (16), takes the row's 40 and normalises its
  // 96 pairs (4 each). Six rows go one per worker (6·576 + 40).
  EXPECT_EQ(layer_norm_rows_f16_cycles(1, 1152),
            kKernelLaunchCycles + 2 * kWorkerBarrierCycles + 6 * (2 * 96 + 8 + 16 + 40 + 4 * 96));
  EXPECT_EQ(layer_norm_rows_f16_cycles(2, 1152), kKernelLaunchCycles + 4 * kWorkerBarrierCycles +
                                                     6 * 2 * (2 * 96 + 8 + 16 + 40 + 4 * 96));
  EXPECT_EQ(layer_norm_rows_f16_cycles(6, 1152), kSixWorkerCallCycles + 6 * (6 * 576 + 40));
  // Odd rows go to the workers in pairs of rows: 5 rows of 77 → 2 on worker 0.
  EXPECT_EQ(layer_norm_rows_f16_cycles(5, 77), kSixWorkerCallCycles + 6 * 2 * (6 * 39 + 40));
  EXPECT_EQ(layer_norm_rows_f16_cycles(0, 77), kSixWorkerCallCycles);
  EXPECT_EQ(layer_norm_rows_f16_cycles(0, 1152), kKernelLaunchCycles);
  // The A16 kernel on one row keeps one worker busy with all of it.
  EXPECT_LT(5 * layer_norm_rows_f16_cycles(1, 1152), layer_norm_cycles(1, 1152, false));
}

// Against FP64 (exact mean and variance, no f16 steps), on the SigLIP width:
// |y − y64| ≤ 2^−7·(1 + |y64|) — a few f16 ulps of y, plus the mean's and
// 1/σ's own roundings (measured: below 2^−8·(1 + |y64|)).
TEST(LayerNorm, IsWithinItsBoundOfFp64) {
  std::mt19937 rng(1);
  std::normal_distribution<float> activation(0.5F, 1.0F), gain(1.0F, 0.2F), shift(0.0F, 0.5F);
  Problem p{13, 1152, 1074};
  for (std::size_t i = 0; i < 13u * 1152; ++i) p.x.push_back(f32_to_f16(activation(rng)));
  for (std::size_t c = 0; c < 1152; ++c) {
    p.gamma.push_back(f32_to_f16(gain(rng)));
    p.beta.push_back(f32_to_f16(shift(rng)));
  }
  const CaseResult result = run_case(kernel_case(p));
  ASSERT_TRUE(result.halted) << result.fault;
  const auto out = result.values<std::uint16_t>(2);
  double worst = 0;
  for (std::size_t r = 0; r < p.rows; ++r) {
    double mean = 0, squares = 0;
    for (std::size_t c = 0; c < p.columns; ++c) mean += ref::f16(p.x[r * p.columns + c]);
    mean /= p.columns;
    for (std::size_t c = 0; c < p.columns; ++c)
      squares += std::pow(ref::f16(p.x[r * p.columns + c]) - mean, 2);
    const double rstd = 1.0 / std::sqrt(squares / p.columns + 1074.0 / 1073741824.0);
    for (std::size_t c = 0; c < p.columns; ++c) {
      const double expected =
          (ref::f16(p.x[r * p.columns + c]) - mean) * rstd * ref::f16(p.gamma[c]) +
          ref::f16(p.beta[c]);
      const double error = std::fabs(ref::f16(out[ref::left_index(r, c, p.rows)]) - expected);
      ASSERT_LE(error, std::ldexp(1.0 + std::fabs(expected), -7)) << r << ", " << c;
      worst = std::max(worst, error / (1.0 + std::fabs(expected)));
    }
  }
  EXPECT_LT(worst, std::ldexp(1.0, -8));
}

TEST(LayerNorm, AConstantRowIsBetaAndTheVarianceIsClamped) {
  // Σx²/n − mean² of a constant row may round below zero; clamped, the row
  // normalises to 0 and the output is β.
  Problem p{1, 48, 1074};
  p.x.assign(48, f32_to_f16(0.1F));
  p.gamma.assign(48, 0x3C00);
  p.beta.assign(48, f32_to_f16(-2.5F));
  const CaseResult result = run_case(kernel_case(p));
  ASSERT_TRUE(result.halted) << result.fault;
  const auto out = result.values<std::uint16_t>(2);
  for (std::size_t c = 0; c < 48; ++c)
    EXPECT_EQ(out[ref::left_index(0, c, 1)], f32_to_f16(-2.5F)) << c;
}

// ---- stochastic rounding

TEST(LayerNorm, StochasticRoundingIsDeterministicNearTheNearestOneAndDrawsAsDocumented) {
  std::mt19937 rng(3);
  std::normal_distribution<float> activation(0.5F, 1.0F);
  Problem p{13, 40, 1074};
  for (std::size_t i = 0; i < 13u * 40 * 2; ++i)
    (i < 520 ? p.x : p.right).push_back(f32_to_f16(activation(rng)));
  p.gamma.assign(40, 0x3C00);
  p.beta.assign(40, 0x0000);
  sim::SimOptions stochastic;
  stochastic.rounding = Rounding::kStochastic;
  const CaseResult a = run_case(kernel_case(p), stochastic),
                   b = run_case(kernel_case(p), stochastic);
  const CaseResult nearest = run_case(kernel_case(p));
  ASSERT_TRUE(a.halted && b.halted && nearest.halted) << a.fault;
  EXPECT_EQ(a.operands.at(2), b.operands.at(2));
  EXPECT_EQ(a.operands.at(3), b.operands.at(3));
  EXPECT_NE(a.operands.at(2), nearest.operands.at(2));
  const auto sr = a.values<std::uint16_t>(2), rn = nearest.values<std::uint16_t>(2);
  for (std::size_t i = 0; i < sr.size(); ++i) {
    EXPECT_LE(std::fabs(ref::f16(sr[i]) - ref::f16(rn[i])),
              std::ldexp(1.0 + std::fabs(ref::f16(rn[i])), -7))
        << i;
  }
  // Draws: rows strided over the workers; per row 1 per column (the residual
  // add), 2 for the statistics, 4 per column.
  const KernelSpec& spec = *KernelRegistry::standard().find(kAddLayerNormF16);
  Registers r{};
  r[2] = 0x100000;
  r[3] = 0x200000;
  r[4] = 0x300000;
  r[5] = 0x400000;
  r[6] = 13;
  r[7] = 40;
  r[8] = 1074;
  RecordingMemory memory(0, {});
  TilePrng prng(9), expected(9);
  KernelCall call{r, memory, 0, 0, 9, Rounding::kStochastic};
  call.prng = &prng;
  spec.model(call);
  for (unsigned w = 0; w < 6; ++w)
    expected.worker(w).skip((13 / 6 + (w < 13 % 6 ? 1 : 0)) * (40 + 2 + 4 * 40));
  EXPECT_EQ(prng, expected);
}

// ---- ε

TEST(LayerNorm, EpsilonIsQ30) {
  EXPECT_EQ(epsilon_q30(1e-6), 1074u);  // the reference's SigLIP value
  EXPECT_NEAR(static_cast<double>(epsilon_value(1074)), 1.00024e-6, 1e-11);
  EXPECT_EQ(epsilon_q30(0.0), 0u);
  EXPECT_EQ(epsilon_q30(1.0), 1u << 30);
  EXPECT_EQ(epsilon_value(1u << 30), 1.0F);
  EXPECT_EQ(epsilon_q30(1.5 / 1073741824.0), 2u);  // halves away from zero
  EXPECT_EQ(epsilon_q30(4294967295.0 / 1073741824.0), 4294967295u);
  for (const double bad : {-1e-9, 4.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_THROW(epsilon_q30(bad), std::invalid_argument) << bad;
  }
}

// ---- zero work, overruns, preconditions

TEST(LayerNorm, ZeroWorkTouchesNothing) {
  for (const auto& [rows, columns] :
       {std::pair{0u, 64u}, std::pair{13u, 0u}, std::pair{0xFFFFFFFFu, 0u}}) {
    Registers plain{};
    plain[2] = kBufferBase;
    plain[3] = kBufferBase + 0x100;
    plain[4] = kBufferBase + 0x200;
    plain[5] = rows;
    plain[6] = columns;
    {
      KernelRun run(kLayerNormF16, plain, {});  // one simulated chip at a time
      ASSERT_TRUE(run.halted()) << run.fault_text();
    }
    Registers fused = plain;
    fused[5] = kBufferBase + 0x300;
    fused[6] = rows;
    fused[7] = columns;
    KernelRun run_fused(kAddLayerNormF16, fused, {});
    ASSERT_TRUE(run_fused.halted()) << run_fused.fault_text();
  }
}

TEST(LayerNorm, AnOperandOneElementShortIsAnOverrunNamingIt) {
  Problem p{7, 20, 1074};
  p.x.assign(140, 0x3C00);
  p.gamma.assign(20, 0x3C00);
  p.beta.assign(20, 0x3C00);
  expect_each_short_operand_overruns(kernel_case(p));
  p.right.assign(140, 0x3C00);
  expect_each_short_operand_overruns(kernel_case(p));
}

Registers regs(std::initializer_list<std::pair<unsigned, std::uint32_t>> values) {
  Registers r{};
  for (const auto& [reg, value] : values) r[reg] = value;
  return r;
}

TEST(LayerNorm, PreconditionViolationsAreFaultsWithTheReason) {
  constexpr std::uint32_t a = kBufferBase, b = kBufferBase + 0x4000, c = kBufferBase + 0x8000;
  expect_precondition_failure(kLayerNormF16, regs({{2, b}, {3, a + 4}, {4, c}, {5, 1}, {6, 16}}),
                              "$m3 = 0x60004 is not 8-byte aligned");
  expect_precondition_failure(
      kLayerNormF16, regs({{2, a + 32}, {3, a}, {4, c}, {5, 2}, {6, 16}}),
      "$m2 (normalised) [0x60020, 0x60060) partially overlaps $m3 (source)");
  expect_precondition_failure(
      kLayerNormF16, regs({{2, c}, {3, a}, {4, c}, {5, 2}, {6, 16}}),
      "overlaps $m4 (affine) [0x68000, 0x68040): every row re-reads the affine parameters");
  expect_precondition_failure(
      kAddLayerNormF16, regs({{2, a}, {3, a}, {4, b}, {5, c}, {6, 2}, {7, 16}}),
      "$m2 (normalised) [0x60000, 0x60040) overlaps $m3 (residual) [0x60000, 0x60040): the "
      "output and the residual are written");
  expect_precondition_failure(kAddLayerNormF16,
                              regs({{2, c + 0x1000}, {3, a}, {4, a + 32}, {5, c}, {6, 2}, {7, 16}}),
                              "$m3 (residual) [0x60000, 0x60040) overlaps $m4 (right)");
  expect_precondition_failure(kAddLayerNormF16,
                              regs({{2, c + 0x1000}, {3, a}, {4, b + 2}, {5, c}, {6, 2}, {7, 16}}),
                              "$m4 = 0x64002 is not 8-byte aligned");
  expect_precondition_failure(
      kLayerNormRowsF16, regs({{2, a}, {3, a}, {4, c}, {5, 1}, {6, 16}}),
      "$m2 (normalised) [0x60000, 0x60020) overlaps $m3 (source) [0x60000, 0x60020): a short "
      "row's columns are split over the workers");
}

}  // namespace
}  // namespace tessera::kernels
