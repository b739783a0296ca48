// The float add and sum kernels called through the simulator, as emitted code
// calls them: results bit-equal to a CPU reference for the worker-partition
// edge counts (review-findings.md #3), overruns named by operand, and
// precondition violations with their reasons.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "kernels/costs.hpp"
#include "kernels/half.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/f16_generators.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;

constexpr std::uint32_t kCounts[] = {0, 1, 5, 6, 7, 100};
constexpr std::uint32_t kA = kBufferBase;            // buffers 64 KiB apart
constexpr std::uint32_t kB = kBufferBase + 0x10000;
constexpr std::uint32_t kOut = kBufferBase + 0x20000;

// ---- The CPU reference, written from the documented semantics: compute in
// host f32, canonical quiet NaN for any NaN an add produces, round once.

std::uint32_t reference_f32_add(std::uint32_t a, std::uint32_t b) {
  const float sum = std::bit_cast<float>(a) + std::bit_cast<float>(b);
  return std::isnan(sum) ? 0x7FC00000u : std::bit_cast<std::uint32_t>(sum);
}

std::uint32_t reference_widen(bool f16, std::uint32_t bits) {
  return f16 ? f16_to_f32_bits(static_cast<std::uint16_t>(bits)) : bits;
}
std::uint32_t reference_narrow(bool f16, std::uint32_t bits) {
  return f16 ? f32_bits_to_f16(bits) : bits;
}

std::vector<std::uint32_t> reference_add(bool f16, const std::vector<std::uint32_t>& a,
                                         const std::vector<std::uint32_t>& b, std::size_t cols) {
  std::vector<std::uint32_t> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    out[i] = reference_narrow(
        f16, reference_f32_add(reference_widen(f16, a[i]), reference_widen(f16, b[i % cols])));
  }
  return out;
}

std::vector<std::uint32_t> reference_sum(bool f16, const std::vector<std::vector<std::uint32_t>>& partials) {
  std::vector<std::uint32_t> out(partials.at(0).size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t accumulator = reference_widen(f16, partials[0][i]);
    for (std::size_t k = 1; k < partials.size(); ++k) {
      accumulator = reference_f32_add(accumulator, reference_widen(f16, partials[k][i]));
    }
    out[i] = reference_narrow(f16, accumulator);
  }
  return out;
}

unsigned size_of(bool f16) { return f16 ? 2 : 4; }

std::vector<std::uint32_t> any_values(bool f16, std::size_t n) {
  if (f16) {
    const auto values = *rc::gen::container<std::vector<std::uint16_t>>(n, f16_pattern());
    return {values.begin(), values.end()};
  }
  return *rc::gen::container<std::vector<std::uint32_t>>(n, f32_pattern());
}

std::uint32_t any_count() {
  return *rc::gen::weightedOneOf<std::uint32_t>(
      {{2, rc::gen::elementOf(std::vector<std::uint32_t>(std::begin(kCounts), std::end(kCounts)))},
       {1, rc::gen::inRange(0u, 3000u)}});
}

std::uint32_t padded(std::uint64_t bytes) { return static_cast<std::uint32_t>((bytes + 3) / 4 * 4); }

// ---- Calls

struct AddCall {
  bool f16;
  std::vector<std::uint32_t> a, b;
  std::uint32_t rows = 0, cols = 0;  // row broadcast when cols != 0
  bool in_place = false;             // out = a

  std::string_view kernel() const {
    if (cols != 0) return f16 ? kAddRowBroadcastF16 : kAddRowBroadcastF32;
    return f16 ? kAddF16 : kAddF32;
  }
  Registers registers() const {
    Registers r{};
    r[2] = in_place ? kA : kOut;
    r[3] = kA;
    r[4] = kB;
    r[5] = cols != 0 ? rows : static_cast<std::uint32_t>(a.size());
    r[6] = cols;
    return r;
  }
  std::vector<Buffer> buffers(int shrink_reg = 0) const {
    const unsigned s = size_of(f16);
    const auto size = [&](unsigned reg, std::size_t elements) {
      return static_cast<std::uint32_t>((elements - (shrink_reg == static_cast<int>(reg) ? 1 : 0)) * s);
    };
    std::vector<Buffer> result = {Buffer{"a", kA, size(in_place ? 2 : 3, a.size()), to_bytes(a, s)},
                                  Buffer{"b", kB, size(4, b.size()), to_bytes(b, s)}};
    if (!in_place) result.push_back(Buffer{"out", kOut, size(2, a.size()), {}});
    // Shrinking never truncates the initial contents' meaning: what lies past
    // a shrunk allocation is simply no longer its bytes.
    for (auto& buffer : result) buffer.contents.resize(std::min<std::size_t>(buffer.contents.size(), padded(buffer.size)));
    return result;
  }
  std::vector<std::uint32_t> expected() const { return reference_add(f16, a, b, cols != 0 ? cols : a.size() + 1); }
};

struct SumCall {
  bool f16;
  std::vector<std::vector<std::uint32_t>> partials;
  std::uint32_t count = 0;
  std::uint32_t stride = 0;
  bool in_place = false;

  Registers registers() const {
    Registers r{};
    r[2] = in_place ? kA : kOut;
    r[3] = kA;
    r[4] = count;
    r[5] = static_cast<std::uint32_t>(partials.size());
    r[6] = stride;
    return r;
  }
  std::vector<Buffer> buffers(int shrink_reg = 0) const {
    const unsigned s = size_of(f16);
    std::vector<std::uint8_t> gathered(stride * (partials.size() - 1) + count * s, 0);
    for (std::size_t k = 0; k < partials.size(); ++k) {
      const auto bytes = to_bytes(partials[k], s);
      std::copy(bytes.begin(), bytes.end(), gathered.begin() + static_cast<std::ptrdiff_t>(k * stride));
    }
    const auto in_size = static_cast<std::uint32_t>(gathered.size() - (shrink_reg == 3 ? s : 0));
    gathered.resize(padded(in_size));
    std::vector<Buffer> result = {Buffer{"partials", kA, in_size, gathered}};
    if (!in_place) result.push_back(Buffer{"out", kOut, (count - (shrink_reg == 2 ? 1 : 0)) * s, {}});
    return result;
  }
  std::string_view kernel() const { return f16 ? kSumF16 : kSumF32; }
};

std::vector<std::uint32_t> run_add(const AddCall& call) {
  KernelRun run(call.kernel(), call.registers(), call.buffers());
  EXPECT_TRUE(run.halted()) << run.fault_text();
  const auto out = call.registers()[2];
  return from_bytes(run.read(out, static_cast<std::uint32_t>(call.a.size() * size_of(call.f16))),
                    size_of(call.f16));
}

std::vector<std::uint32_t> run_sum(const SumCall& call) {
  KernelRun run(call.kernel(), call.registers(), call.buffers());
  EXPECT_TRUE(run.halted()) << run.fault_text();
  return from_bytes(run.read(call.registers()[2], call.count * size_of(call.f16)), size_of(call.f16));
}

SumCall any_sum(bool f16, std::uint32_t count) {
  SumCall call{f16, {}, count, padded(count * size_of(f16)) + 4 * *rc::gen::inRange(0u, 3u),
               *rc::gen::arbitrary<bool>()};
  const auto k = *rc::gen::inRange(1u, 6u);
  for (std::uint32_t i = 0; i < k; ++i) call.partials.push_back(any_values(f16, count));
  return call;
}

// ---- Results

RC_GTEST_PROP(FloatKernels, AddMatchesTheReference, ()) {
  const bool f16 = *rc::gen::arbitrary<bool>();
  const std::uint32_t count = any_count();
  const AddCall call{f16, any_values(f16, count), any_values(f16, count), 0, 0,
                     *rc::gen::arbitrary<bool>()};
  RC_ASSERT(run_add(call) == call.expected());
}

RC_GTEST_PROP(FloatKernels, RowBroadcastAddMatchesTheReference, ()) {
  const bool f16 = *rc::gen::arbitrary<bool>();
  const std::uint32_t rows = *rc::gen::elementOf(std::vector<std::uint32_t>{0, 1, 5, 6, 7, 13});
  const std::uint32_t cols = *rc::gen::elementOf(std::vector<std::uint32_t>{1, 5, 6, 7, 100});
  const AddCall call{f16, any_values(f16, std::size_t{rows} * cols), any_values(f16, cols), rows,
                     cols, *rc::gen::arbitrary<bool>()};
  RC_ASSERT(run_add(call) == call.expected());
}

RC_GTEST_PROP(FloatKernels, SumMatchesTheReference, ()) {
  const bool f16 = *rc::gen::arbitrary<bool>();
  const SumCall call = any_sum(f16, any_count());
  RC_ASSERT(run_sum(call) == reference_sum(f16, call.partials));
}

TEST(FloatKernels, EveryEdgeCountOfEveryKernel) {
  for (const bool f16 : {false, true}) {
    for (const std::uint32_t count : kCounts) {
      std::vector<std::uint32_t> a(count), b(count);
      for (std::uint32_t i = 0; i < count; ++i) {
        const float value = 0.25f * static_cast<float>(i);
        a[i] = f16 ? f32_to_f16(value) : std::bit_cast<std::uint32_t>(value);
        b[i] = f16 ? f32_to_f16(-1.5f) : std::bit_cast<std::uint32_t>(-1.5f);
      }
      const AddCall add{f16, a, b};
      EXPECT_EQ(run_add(add), add.expected()) << count;
      SumCall sum{f16, {a, b, a}, count, padded(count * size_of(f16))};
      EXPECT_EQ(run_sum(sum), reference_sum(f16, sum.partials)) << count;
      if (count >= 5) {  // rows of five
        const std::uint32_t rows = count / 5;
        const AddCall broadcast{f16, std::vector<std::uint32_t>(a.begin(), a.begin() + rows * 5),
                                std::vector<std::uint32_t>(b.begin(), b.begin() + 5), rows, 5};
        EXPECT_EQ(run_add(broadcast), broadcast.expected()) << count;
      }
    }
  }
}

TEST(FloatKernels, ZeroElementsTouchNothingAndCostTheLaunch) {
  for (const std::string_view kernel : {kAddF32, kAddF16, kAddRowBroadcastF32, kAddRowBroadcastF16}) {
    Registers r{};
    r[2] = kOut;
    r[3] = kA;
    r[4] = kB;
    r[6] = 9;  // cols; rows = 0
    KernelRun run(kernel, r, {});
    ASSERT_TRUE(run.halted()) << kernel << ": " << run.fault_text();
    EXPECT_EQ(run.total_cycles(), run.supervisor_cycles() + kKernelLaunchCycles + kWorkerBarrierCycles);
  }
  {
    Registers empty_rows{};
    empty_rows[5] = 0xFFFFFFFF;  // rows, with cols = 0: no work, and no 2^32-step loop
    KernelRun huge(kAddRowBroadcastF32, empty_rows, {});  // one simulated chip at a time
    ASSERT_TRUE(huge.halted()) << huge.fault_text();
  }
  Registers r{};
  r[2] = kOut;
  r[3] = kA;
  r[5] = 3;  // K
  KernelRun run(kSumF16, r, {});
  ASSERT_TRUE(run.halted()) << run.fault_text();
}

TEST(FloatKernels, F16SumAccumulatesInF32AndRoundsOnce) {
  // 65504 + 65504 - 65504: an f16 accumulator would overflow to Inf.
  const std::uint32_t max = 0x7BFF, minus_max = 0xFBFF, one = 0x3C00, tiny = 0x0001;
  SumCall call{true, {{max, one}, {max, tiny}, {minus_max, tiny}}, 2, 4};
  EXPECT_EQ(run_sum(call), (std::vector<std::uint32_t>{0x7BFF, 0x3C00}));
  // Rounding once: 1 + 2^-24 + 2^-24 is 1 in f16 either way, but 2^-11 + 2^-11
  // added to 1 in f32 is exact and rounds to 1 + 2^-10.
  SumCall once{true, {{one}, {0x1000}, {0x1000}}, 1, 4};  // 0x1000 = 2^-11
  EXPECT_EQ(run_sum(once), (std::vector<std::uint32_t>{0x3C01}));
}

TEST(FloatKernels, CyclesFollowTheCostFunctions) {
  const AddCall add{false, std::vector<std::uint32_t>(100), std::vector<std::uint32_t>(100)};
  KernelRun run(add.kernel(), add.registers(), add.buffers());
  ASSERT_TRUE(run.halted()) << run.fault_text();
  EXPECT_EQ(run.total_cycles(), run.supervisor_cycles() + add_cycles(100, 4));
  // Worker 0 has 17 of 100 elements: 17·12 bytes = 26 words of 8 → 156 cycles.
  EXPECT_EQ(add_cycles(100, 4), kKernelLaunchCycles + kWorkerBarrierCycles + 156);
  // A two-partial f16 sum is bound by the measured rate: 17 elements · 2 bytes · 6.
  EXPECT_EQ(sum_cycles(100, 2, 2), kKernelLaunchCycles + kWorkerBarrierCycles + 204);
  EXPECT_EQ(sum_cycles(100, 8, 4), kKernelLaunchCycles + kWorkerBarrierCycles + 6 * ((17 * 36 + 7) / 8));
}

// ---- Overruns: each operand's allocation one element short.

TEST(FloatKernels, AnOperandOneElementShortIsAnOverrunNamingIt) {
  for (const bool f16 : {false, true}) {
    const AddCall add{f16, std::vector<std::uint32_t>(7, 0x3C00), std::vector<std::uint32_t>(7, 0x3C00)};
    const AddCall broadcast{f16, std::vector<std::uint32_t>(14, 0x3C00),
                            std::vector<std::uint32_t>(7, 0x3C00), 2, 7};
    for (const AddCall& call : {add, broadcast}) {
      for (const int reg : {2, 3, 4}) {
        KernelRun run(call.kernel(), call.registers(), call.buffers(reg));
        ASSERT_FALSE(run.halted()) << call.kernel() << " $m" << reg;
        EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelOverrun);
        EXPECT_NE(run.fault().message.find(fmt::format("operand $m{} ", reg)), std::string::npos)
            << run.fault().message;
      }
    }
    const SumCall sum{f16, {std::vector<std::uint32_t>(7), std::vector<std::uint32_t>(7)}, 7,
                      padded(7 * size_of(f16))};
    for (const int reg : {2, 3}) {
      KernelRun run(sum.kernel(), sum.registers(), sum.buffers(reg));
      ASSERT_FALSE(run.halted()) << sum.kernel() << " $m" << reg;
      EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelOverrun);
      EXPECT_NE(run.fault().message.find(fmt::format("operand $m{} ", reg)), std::string::npos)
          << run.fault().message;
    }
  }
}

// ---- Preconditions

struct PreconditionCase {
  std::string_view kernel;
  Registers registers;
  std::string reason;
};

Registers regs(std::uint32_t m2, std::uint32_t m3, std::uint32_t m4, std::uint32_t m5, std::uint32_t m6 = 0) {
  Registers r{};
  r[2] = m2;
  r[3] = m3;
  r[4] = m4;
  r[5] = m5;
  r[6] = m6;
  return r;
}

TEST(FloatKernels, PreconditionViolationsAreFaultsWithTheReason) {
  const PreconditionCase cases[] = {
      {kAddF16, regs(kOut + 2, kA, kB, 4), "$m2 = 0x80002 is not word-aligned"},
      {kAddF32, regs(kA + 4, kA, kB, 4),
       "$m2 (sum) [0x60004, 0x60014) partially overlaps $m3 (left) [0x60000, 0x60010); an output "
       "may alias an input only exactly"},
      {kAddF32, regs(kOut, kA, 0xFFFFFF00, 0x100),
       "$m4 (right) [0xffffff00, 0x100000300) reaches past the 32-bit address space (1024 bytes)"},
      {kAddRowBroadcastF16, regs(kB, kA, kB + 4, 2, 8),
       "$m2 (sum) [0x70000, 0x70020) overlaps $m4 (row) [0x70004, 0x70014), which the kernel "
       "re-reads after writing outputs"},
      {kAddRowBroadcastF32, regs(kB, kA, kB, 2, 8),
       "$m2 (sum) [0x70000, 0x70040) overlaps $m4 (row) [0x70000, 0x70020)"},
      {kSumF32, regs(kOut, kA, 4, 0, 16), "$m5 (partials) = 0; a sum needs at least one partial"},
      {kSumF16, regs(kOut, kA, 4, 2, 10), "$m6 (stride) = 10 bytes is not a multiple of 4"},
      {kSumF32, regs(kOut, kA, 4, 2, 12),
       "$m6 (stride) = 12 bytes is less than a partial's 16 bytes (4 f32 elements): the partials "
       "overlap"},
      {kSumF32, regs(kA + 16, kA, 4, 2, 16), "$m2 (sum) [0x60010, 0x60020) partially overlaps $m3 (partials)"},
  };
  for (const auto& c : cases) {
    KernelRun run(c.kernel, c.registers, {});
    ASSERT_FALSE(run.halted()) << c.kernel << " should refuse: " << c.reason;
    EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelPrecondition);
    EXPECT_NE(run.fault().message.find(c.reason), std::string::npos)
        << run.fault().message << "\n  expected: " << c.reason;
    EXPECT_NE(run.fault().message.find(c.kernel), std::string::npos);
  }
}

TEST(FloatKernels, ExactAliasIsAllowedInPlace) {
  // The residual add: out = a; the reduction into partial 0: out = in.
  const AddCall add{true, {0x3C00, 0x4000, 0x4200}, {0x3C00, 0x3C00, 0x3C00}, 0, 0, true};
  EXPECT_EQ(run_add(add), (std::vector<std::uint32_t>{0x4000, 0x4200, 0x4400}));
  SumCall sum{false, {{std::bit_cast<std::uint32_t>(1.0f)}, {std::bit_cast<std::uint32_t>(2.0f)}}, 1, 4, true};
  EXPECT_EQ(run_sum(sum), (std::vector<std::uint32_t>{std::bit_cast<std::uint32_t>(3.0f)}));
}

}  // namespace
}  // namespace tessera::kernels
