// The GEMM kernels' ABI through the simulator: zero rows touch nothing,
// every precondition is a KernelPrecondition fault with its reason (rows
// below 12 among them, review-findings #5), each operand one element — A
// one byte of its read tail — short is a KernelOverrun naming it, and a call
// costs what its cost function says.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>

#include "kernels/costs.hpp"
#include "tests/kernels/gemm_testing.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;

constexpr GemmFamily kFamilies[] = {GemmFamily::kF32, GemmFamily::kF16,
                                    GemmFamily::kF16ExpandedF143, GemmFamily::kF143};
constexpr GemmVariant kVariants[] = {GemmVariant::kInit, GemmVariant::kAccumulate};

std::uint32_t smallest_columns(GemmFamily family) { return family == GemmFamily::kF32 ? 64 : 32; }

GemmOperands small_call(GemmFamily family, GemmVariant variant, std::uint32_t rows = 12) {
  return zero_gemm(family, variant, rows, 2 * gemm_format(family).pass, smallest_columns(family));
}

TEST(GemmAbi, ZeroRowsTouchNothingAndCostTheLaunch) {
  for (const GemmFamily family : kFamilies) {
    for (const GemmVariant variant : kVariants) {
      GemmOperands call = small_call(family, variant, 0);
      Registers r = call.registers();
      // Pointers nowhere near an allocation: zero rows never look at them.
      r[kGemmOutputRegister] = 0;
      r[kGemmLeftRegister] = 3;
      r[kGemmWeightRegister] = 0xFFFFFFFF;
      KernelRun run(call.kernel(), r, {});
      ASSERT_TRUE(run.halted()) << call.kernel() << ": " << run.fault_text();
      EXPECT_EQ(run.total_cycles(), run.supervisor_cycles() + kKernelLaunchCycles);
      const KernelSpec& spec = *KernelRegistry::standard().find(call.kernel());
      for (const OperandSpec& operand : spec.operands) EXPECT_EQ(operand.footprint(r), 0u);
    }
  }
}

struct PreconditionCase {
  GemmOperands call;
  Registers registers;
  std::string reason;
};

PreconditionCase refused(const GemmOperands& call, std::string reason,
                         const std::function<void(Registers&)>& change = {}) {
  Registers r = call.registers();
  if (change) change(r);
  return {call, r, std::move(reason)};
}

TEST(GemmAbi, RowsBelowTwelveAreAPreconditionFailureWithTheReason) {
  for (const GemmFamily family : kFamilies) {
    for (const GemmVariant variant : kVariants) {
      for (const std::uint32_t rows : {1u, 6u, 7u, 11u}) {
        const GemmOperands call = small_call(family, variant, rows);
        KernelRun run(call.kernel(), call.registers(), call.buffers());
        ASSERT_FALSE(run.halted()) << call.kernel() << " rows " << rows;
        EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelPrecondition);
        const std::string reason = fmt::format(
            "$m5 (rows) = {} is below the {} GEMM's minimum of 12 rows: the six "
            "workers split the rows balanced contiguous and each needs two",
            rows, gemm_format(family).name);
        EXPECT_NE(run.fault().message.find(reason), std::string::npos)
            << run.fault().message << "\n  expected: " << reason;
        // Nothing was written.
        if (variant == GemmVariant::kInit) {
          EXPECT_FALSE(run.initialized(kGemmOutAt, 1));
        }
      }
    }
  }
}

TEST(GemmAbi, PreconditionViolationsAreFaultsWithTheReason) {
  using F = GemmFamily;
  const auto f16 = [](std::uint32_t rows = 12, std::uint32_t inner = 64,
                      std::uint32_t columns = 64) {
    return zero_gemm(F::kF16, GemmVariant::kInit, rows, inner, columns);
  };
  const auto with = [](unsigned reg, std::uint32_t value) {
    return [=](Registers& r) { r[reg] = value; };
  };
  const PreconditionCase cases[] = {
      refused(f16(),
              "$m7 (columns) = 40; the f16 GEMM computes a multiple of 16 up to 128 output "
              "columns",
              with(kGemmColumnsRegister, 40)),
      refused(f16(),
              "$m7 (columns) = 144; the f16 GEMM computes a multiple of 16 up to 128 output "
              "columns",
              with(kGemmColumnsRegister, 144)),
      refused(zero_gemm(F::kF16ExpandedF143, GemmVariant::kInit, 12, 64, 64),
              "$m7 (columns) = 48; the f16 (expanded F143 weights) GEMM computes 32, 64 or 128 "
              "output columns",
              with(kGemmColumnsRegister, 48)),
      refused(small_call(F::kF32, GemmVariant::kAccumulate),
              "$m7 (columns) = 32; the f32 GEMM computes 64 output columns",
              with(kGemmColumnsRegister, 32)),
      refused(f16(),
              "$m6 (inner) = 40 is not a positive multiple of 16, the K depth of one f16 "
              "AMP pass (the producer pads K with zeros)",
              with(kGemmInnerRegister, 40)),
      refused(f16(), "$m6 (inner) = 0 is not a positive multiple of 16",
              with(kGemmInnerRegister, 0)),
      refused(small_call(F::kF143, GemmVariant::kInit),
              "$m6 (inner) = 48 is not a positive multiple of 32, the K depth of one F143 AMP pass",
              with(kGemmInnerRegister, 48)),
      refused(small_call(F::kF32, GemmVariant::kInit),
              "$m6 (inner) = 12 is not a positive multiple of 8", with(kGemmInnerRegister, 12)),
      refused(small_call(F::kF143, GemmVariant::kInit),
              "$m8 (product scale) = -33 is outside [-32, 31], the range of the 6-bit signed ISCL "
              "field",
              with(kGemmScaleRegister, static_cast<std::uint32_t>(-33))),
      refused(small_call(F::kF143, GemmVariant::kAccumulate),
              "$m8 (product scale) = 32 is outside [-32, 31]", with(kGemmScaleRegister, 32)),
      refused(f16(130),
              "$m5 (rows) = 130 is above the maximum of 129 for K = 64, N = 64: the 16640-byte A "
              "block must arrive in one exchange transfer of at most 4148 words"),
      refused(f16(129, 64, 128),
              "$m5 (rows) = 129 is above the maximum of 128 for K = 64, N = 128: the 33024-byte C "
              "block must fit the 32768-byte interleaved operand window"),
      refused(f16(), "$m3 = 0x60004 is not 8-byte aligned", with(kGemmLeftRegister, 0x60004)),
      refused(small_call(F::kF16ExpandedF143, GemmVariant::kInit),
              "$m4 = 0x90008 is not 16-byte aligned", with(kGemmWeightRegister, 0x90008)),
      refused(f16(),
              "$m2 (output) [0x70000, 0x70600) is not in interleaved memory [0x80000, "
              "0xe8000): the AMP reads and writes the partials with 128-bit and paired loads",
              with(kGemmOutputRegister, 0x70000)),
      refused(small_call(F::kF16ExpandedF143, GemmVariant::kInit),
              "$m4 (weights) [0x68000, 0x68800) is not in interleaved memory [0x80000, 0xe8000): "
              "the expanded weights are streamed into the AMP with ld128putcs",
              with(kGemmWeightRegister, 0x68000)),
      refused(f16(),
              "$m3 (left) [0x84000, 0x84610) and $m2 (output) [0x80000, 0x80600) share a "
              "memory element: the AMP's paired loads (ld2x64pace) read A and the C "
              "partials in one cycle, from two elements",
              with(kGemmLeftRegister, 0x84000)),
      refused(f16(), "$m2 (output) [0x80000, 0x80600) overlaps $m4 (weights) [0x80200, 0x82200)",
              with(kGemmWeightRegister, 0x80200)),
  };
  for (const auto& c : cases) {
    KernelRun run(c.call.kernel(), c.registers, {});
    ASSERT_FALSE(run.halted()) << c.call.kernel() << " should refuse: " << c.reason;
    EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelPrecondition);
    EXPECT_NE(run.fault().message.find(c.reason), std::string::npos)
        << run.fault().message << "\n  expected: " << c.reason;
    EXPECT_NE(run.fault().message.find(c.call.kernel()), std::string::npos);
  }
}

// A may live in interleaved memory too, in another element than C.
TEST(GemmAbi, LeftInAnotherInterleavedElementIsFine) {
  GemmOperands call = small_call(GemmFamily::kF16, GemmVariant::kInit);
  Registers r = call.registers();
  r[kGemmLeftRegister] = 0x88000;
  auto buffers = call.buffers();
  buffers[0].address = 0x88000;
  KernelRun run(call.kernel(), r, buffers);
  EXPECT_TRUE(run.halted()) << run.fault_text();
}

TEST(GemmAbi, AnOperandOneElementShortIsAnOverrunNamingIt) {
  for (const GemmFamily family : kFamilies) {
    for (const GemmVariant variant : kVariants) {
      const GemmOperands call = small_call(family, variant, 13);
      for (const unsigned reg : {kGemmOutputRegister, kGemmLeftRegister, kGemmWeightRegister}) {
        KernelRun run(call.kernel(), call.registers(), call.buffers(reg));
        ASSERT_FALSE(run.halted()) << call.kernel() << " $m" << reg;
        EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelOverrun);
        EXPECT_NE(run.fault().message.find(fmt::format("operand $m{} ", reg)), std::string::npos)
            << run.fault().message;
      }
    }
  }
}

// The AMP reads its 16 (32) tail bytes but uses none of them: never-written
// tail bytes are no uninitialized read. The accumulate variant's partials
// are read, so never-written partials are.
TEST(GemmAbi, TheReadTailIsReadButNotUsedThePartialsAreUsed) {
  sim::SimOptions options;
  options.check_uninitialized = true;
  for (const GemmFamily family : kFamilies) {
    {
      const GemmOperands init = small_call(family, GemmVariant::kInit);
      auto buffers = init.buffers();
      buffers[0].contents.resize(buffers[0].size - gemm_format(family).left_tail_bytes);
      KernelRun run(init.kernel(), init.registers(), buffers, options);
      EXPECT_TRUE(run.halted()) << init.kernel() << ": " << run.fault_text();
      EXPECT_TRUE(run.initialized(
          kGemmOutAt, 12 * smallest_columns(family) * gemm_format(family).output_bytes));
    }
    const GemmOperands accumulate = small_call(family, GemmVariant::kAccumulate);
    auto unwritten = accumulate.buffers();
    unwritten[2].contents.clear();
    KernelRun uninitialized(accumulate.kernel(), accumulate.registers(), unwritten, options);
    ASSERT_FALSE(uninitialized.halted()) << accumulate.kernel();
    EXPECT_EQ(uninitialized.fault().kind, sim::FaultKind::kUninitializedRead);
    EXPECT_NE(uninitialized.fault().message.find("operand $m2 "), std::string::npos);
  }
}

TEST(GemmAbi, ACallCostsItsCostFunction) {
  for (const GemmFamily family : kFamilies) {
    const GemmOperands call = small_call(family, GemmVariant::kAccumulate, 25);
    KernelRun run(call.kernel(), call.registers(), call.buffers());
    ASSERT_TRUE(run.halted()) << run.fault_text();
    EXPECT_EQ(run.total_cycles(),
              run.supervisor_cycles() + gemm_cycles(family, call.rows, call.inner, call.columns));
  }
  // The expanded family's interleaved weights are cheaper to stream.
  EXPECT_LT(gemm_cycles(GemmFamily::kF16ExpandedF143, 64, 64, 64),
            gemm_cycles(GemmFamily::kF16, 64, 64, 64));
}

}  // namespace
}  // namespace tessera::kernels
