// Kernel emulation at the call boundary, with every model access checked
// against the allocation the debug section gives each operand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kernels/costs.hpp"
#include "kernels/registry.hpp"
#include "sim/chip.hpp"
#include "tests/sim/program.hpp"

namespace tessera::sim {
namespace {

using namespace testing;
using schema::Allocation;
using schema::AllocationKind;
using schema::CallOperand;
using schema::CallSite;
using schema::Symbol;
using schema::SymbolKind;

const target::PhysicalTile kTile = target::c600_physical(target::LogicalTile(0));
constexpr std::uint32_t kHelpers = 0x4D000;  // where the helper symbols point
constexpr std::uint32_t kCopy = kHelpers;
constexpr std::uint32_t kFill = kHelpers + 8;
constexpr std::uint32_t kSample = kHelpers + 16;
constexpr std::uint32_t kBarrier = kHelpers + 24;
constexpr std::uint32_t kX = 0x60000;  // source tensor, 64 bytes
constexpr std::uint32_t kY = 0x60100;  // destination tensor, 64 bytes
constexpr std::uint32_t kW = 0x60140;  // the tensor right after y

// The helpers' symbols, the tensors x, y and w, and (unless told otherwise) a
// call-site record at `call_pc` giving m2 and m3 to the tensors their
// pointers start in.
schema::TileDebug helper_debug(std::uint32_t call_pc, std::uint32_t dst, std::uint32_t src,
                               bool with_call_site) {
  schema::TileDebug debug;
  debug.tile = kTile;
  debug.symbols = {Symbol{"tessera_copy_words", kCopy, 4, SymbolKind::kRuntimeHelper},
                   Symbol{"tessera_fill_words", kFill, 4, SymbolKind::kRuntimeHelper},
                   Symbol{"tessera_sample_cycles", kSample, 4, SymbolKind::kRuntimeHelper},
                   Symbol{"tessera_worker_barrier", kBarrier, 4, SymbolKind::kRuntimeHelper}};
  debug.allocations = {Allocation{1, "x", "%x", kX, 64, 0, 9, AllocationKind::kTensor, 0},
                       Allocation{2, "y", "%y", kY, 64, 0, 9, AllocationKind::kTensor, 0},
                       Allocation{3, "w", "%w", kW, 64, 0, 9, AllocationKind::kTensor, 1}};
  // Each operand belongs to the tensor its pointer starts in (y by default).
  const auto owner = [](std::uint32_t address) -> std::uint32_t {
    return address == kX ? 1 : address == kW ? 3 : 2;
  };
  if (with_call_site) {
    debug.call_sites = {CallSite{
        call_pc,
        "helper",
        {CallOperand{2, owner(dst), dst, 64, true}, CallOperand{3, owner(src), src, 64, false}},
        0}};
  }
  return debug;
}

// The helpers' device code is never executed; it only has to exist.
void load_helpers(Chip& chip) {
  load_program(chip, kTile,
               {isa::Br{Reg::m10}, isa::Nop{}, isa::Br{Reg::m10}, isa::Nop{}, isa::Br{Reg::m10},
                isa::Nop{}, isa::Br{Reg::m10}},
               kHelpers);
}

// x's first `bytes` bytes: 1, 2, 3, …
std::vector<std::uint8_t> x_bytes(std::size_t bytes = 64) {
  std::vector<std::uint8_t> x(bytes);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint8_t>(i + 1);
  return x;
}

// A tile whose program calls one helper with m2 = dst, m3 = src/value, m4 = count.
struct KernelCallFixture {
  KernelCallFixture(std::uint32_t helper, std::uint32_t dst, std::uint32_t src, std::uint32_t count,
                    SimOptions options = {}, bool with_call_site = true)
      : chip(small_topology(1), options) {
    const auto program = load_constant(Reg::m2, dst) + load_constant(Reg::m3, src) +
                         load_constant(Reg::m4, count) +
                         std::vector<isa::Instruction>{isa::Call{Reg::m10, helper}} + halt();
    call_pc = target::kLoadBase + 4 * 3;  // after three setzi
    load_program(chip, kTile, program);
    load_helpers(chip);
    chip.load_segment(kTile, kX, x_bytes(), false);
    chip.set_debug(kTile, helper_debug(call_pc, dst, src, with_call_site),
                   {"graph: copy %y <- %x", "graph: weights %w"});
    chip.start();
    result = chip.run();
  }
  const Fault& fault() const { return chip.faults().all().at(0); }
  std::uint32_t word(std::uint32_t address) { return chip.tile(kTile).sram().read_u32(address); }

  Chip chip;
  std::uint32_t call_pc = 0;
  RunResult result;
};

// The same helper called twice through one call site, with count and then
// count + step: the second call's spans take the span check's fast path
// (the call site's operands are prepared by the first), so its faults must
// be the ones a first call would raise. x holds `x_loaded` bytes.
struct RepeatedCallFixture {
  RepeatedCallFixture(std::uint32_t helper, std::uint32_t dst, std::uint32_t src,
                      std::uint32_t count, std::int32_t step, SimOptions options = {},
                      std::size_t x_loaded = 64)
      : chip(small_topology(1), options) {
    const auto prefix = load_constant(Reg::m2, dst) + load_constant(Reg::m3, src) +
                        load_constant(Reg::m4, count) + load_constant(Reg::m1, 2);
    call_pc = target::kLoadBase + 4 * static_cast<std::uint32_t>(prefix.size());
    const std::uint32_t done = call_pc + 20;
    load_program(chip, kTile,
                 prefix +
                     std::vector<isa::Instruction>{isa::Call{Reg::m10, helper},
                                                   isa::Add{Reg::m4, Reg::m4, step},
                                                   isa::Add{Reg::m1, Reg::m1, -1},
                                                   isa::Brz{Reg::m1, done}, isa::Bri{call_pc}} +
                     halt());
    load_helpers(chip);
    chip.load_segment(kTile, kX, x_bytes(x_loaded), false);
    chip.set_debug(kTile, helper_debug(call_pc, dst, src, true),
                   {"graph: copy %y <- %x", "graph: weights %w"});
    chip.start();
    result = chip.run();
  }
  const Fault& fault() const { return chip.faults().all().at(0); }
  std::uint32_t word(std::uint32_t address) { return chip.tile(kTile).sram().read_u32(address); }

  Chip chip;
  std::uint32_t call_pc = 0;
  RunResult result;
};

TEST(KernelCall, CopyRunsTheModelAndReturns) {
  KernelCallFixture run(kCopy, kY, kX, 16);
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted) << describe(run.fault());
  for (std::uint32_t i = 0; i < 16; ++i) EXPECT_EQ(run.word(kY + 4 * i), run.word(kX + 4 * i));
  EXPECT_EQ(run.word(kY), 0x04030201u);
  // Six cycles per supervisor instruction plus the copy's cost.
  EXPECT_EQ(run.chip.report().total_cycles, 6u * 6 + kernels::local_copy_cycles(64));
  EXPECT_EQ(run.chip.tile(kTile).reg(10), run.call_pc + 4) << "the link register holds the return";
}

TEST(KernelCall, ZeroWordCopyTouchesNothing) {
  KernelCallFixture run(kCopy, kY, kX, 0);
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted);
  EXPECT_FALSE(run.chip.tile(kTile).sram().initialized(kY, 4));
}

TEST(KernelCall, OverrunNamesTileKernelOperandAndBothAllocations) {
  // 17 words: one word past y, into w (review-findings.md #1's class).
  KernelCallFixture run(kCopy, kY, kX, 17);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  const Fault& fault = run.fault();
  EXPECT_EQ(fault.kind, FaultKind::kKernelOverrun);
  EXPECT_EQ(fault.tile, kTile);
  EXPECT_EQ(fault.pc, run.call_pc);
  EXPECT_EQ(fault.provenance, "graph: copy %y <- %x");
  // The model asks for its source span first; the whole span is refused
  // before any byte moves.
  EXPECT_EQ(fault.message,
            "kernel 'tessera_copy_words' called at 0x4c01c: operand $m3 reads [0x60000, 0x60044) "
            "(68 bytes) outside its allocation #1 'x' (tensor %x) [0x60000, 0x60040) from 'graph: "
            "copy %y <- %x'; the bytes at 0x60040 belong to no allocation");
  EXPECT_FALSE(run.chip.tile(kTile).sram().initialized(kY, 4)) << "nothing was copied";
}

TEST(KernelCall, WriteOverrunNamesTheAllocationHit) {
  // Fill y with 17 words: the 17th lands in w.
  KernelCallFixture run(kFill, kY, 0xAB, 17);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.fault().message,
            "kernel 'tessera_fill_words' called at 0x4c01c: operand $m2 writes [0x60100, 0x60144) "
            "(68 bytes) outside its allocation #2 'y' (tensor %y) [0x60100, 0x60140) from 'graph: "
            "copy %y <- %x'; the bytes at 0x60140 belong to allocation #3 'w' (tensor %w) "
            "[0x60140, 0x60180) from 'graph: weights %w'");
  // The span is checked before the model writes: neither y nor w changed.
  EXPECT_NE(run.word(kY + 60), 0xABu);
  EXPECT_NE(run.word(kW), 0xABu) << "the stray word was not written";
}

TEST(KernelCall, WriteIntoCodeIsCaught) {
  KernelCallFixture run(kFill, target::kLoadBase, 0, 1);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.fault().kind, FaultKind::kKernelOverrun);
  EXPECT_NE(run.fault().message.find("operand $m2 writes [0x4c010, 0x4c014) (4 bytes) inside the "
                                     "tile's code"),
            std::string::npos)
      << run.fault().message;
}

TEST(KernelCall, AccessOutsideSramIsCaught) {
  KernelCallFixture run(kFill, target::kSramEnd, 0, 1);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_NE(run.fault().message.find("outside SRAM"), std::string::npos) << run.fault().message;
}

TEST(KernelCall, WithoutACallSiteRecordMemoryAccessFaults) {
  KernelCallFixture run(kCopy, kY, kX, 1, {}, /*with_call_site=*/false);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_NE(run.fault().message.find("records no call site"), std::string::npos);
}

TEST(KernelCall, PreconditionViolationIsAFault) {
  KernelCallFixture run(kCopy, kY + 2, kX, 1);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.fault().kind, FaultKind::kKernelPrecondition);
  EXPECT_NE(run.fault().message.find("$m2 = 0x60102 is not word-aligned"), std::string::npos);
}

// Six workers copy their shares at once on the device, so an overlapping copy
// has no one result; the sequential model would smear x forwards (issue 14).
TEST(KernelCall, ACopyOntoAnOverlappingDestinationIsRefused) {
  KernelCallFixture run(kCopy, kX + 4, kX, 4);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.fault().kind, FaultKind::kKernelPrecondition);
  EXPECT_NE(run.fault().message.find("$m2 (destination) [0x60004, 0x60014) partially overlaps $m3 "
                                     "(source) [0x60000, 0x60010)"),
            std::string::npos)
      << run.fault().message;
  EXPECT_EQ(run.word(kX + 4), 0x08070605u) << "nothing was copied";
}

TEST(KernelCall, ACopyOntoItselfIsAllowed) {
  KernelCallFixture run(kCopy, kX, kX, 16);
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted) << describe(run.fault());
  EXPECT_EQ(run.word(kX), 0x04030201u);
}

TEST(KernelCall, UninitializedReadsAreReportedWhenAsked) {
  SimOptions options;
  options.check_uninitialized = true;
  // y was never written; copy y into x.
  KernelCallFixture run(kCopy, kX, kY, 1, options);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.fault().kind, FaultKind::kUninitializedRead);
}

TEST(KernelCall, UninitializedMemoryReadsAsThePoison) {
  KernelCallFixture run(kCopy, kX, kY, 1);  // unchecked by default
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted);
  EXPECT_EQ(run.word(kX), 0xFFFFFFFFu);
}

TEST(KernelCall, CycleSampleStoresTheCounter) {
  KernelCallFixture run(kSample, kY, 0, 0);
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted) << describe(run.fault());
  // Three setzi and the call issue first (4 × 6 cycles); worker 0 reads the
  // counter at its first issue after the runall; the supervisor resumes
  // after the whole handoff.
  EXPECT_EQ(run.word(kY), 4u * 6 + kernels::kCycleSampleReadCycles);
  EXPECT_EQ(run.chip.report().total_cycles, 6u * 6 + kernels::kWorkerBarrierCycles);
}

TEST(KernelCall, WorkerBarrierTakesItsHandoffAndTouchesNothing) {
  KernelCallFixture run(kBarrier, kY, kX, 0);
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted) << describe(run.fault());
  EXPECT_EQ(run.chip.report().total_cycles, 6u * 6 + kernels::kWorkerBarrierCycles);
  EXPECT_FALSE(run.chip.tile(kTile).sram().initialized(kY, 4));
}

TEST(KernelCall, UnknownKernelIsNotModelled) {
  Chip chip(small_topology(1));
  load_program(chip, kTile, std::vector<isa::Instruction>{isa::Call{Reg::m10, kHelpers}} + halt());
  load_program(chip, kTile, {isa::Br{Reg::m10}}, kHelpers);
  schema::TileDebug debug;
  debug.tile = kTile;
  debug.symbols = {Symbol{"gemm_f8_does_not_exist", kHelpers, 4, SymbolKind::kKernel}};
  chip.set_debug(kTile, debug);
  chip.start();
  ASSERT_EQ(chip.run().reason, StopReason::kFault);
  EXPECT_EQ(chip.faults().all().at(0).kind, FaultKind::kNotModelled);
}

TEST(KernelCall, CallToPlainCodeJumps) {
  // A call whose target is not a kernel symbol executes the code there.
  Chip chip(small_topology(1));
  load_program(chip, kTile,
               std::vector<isa::Instruction>{isa::Call{Reg::m10, kHelpers}, isa::Setzi{Reg::m1, kY},
                                             isa::St32{Reg::m7, Reg::m1, Reg::m15, 0}} +
                   halt());
  load_program(chip, kTile, {isa::Setzi{Reg::m7, 77}, isa::Br{Reg::m10}}, kHelpers);
  chip.start();
  ASSERT_EQ(chip.run().reason, StopReason::kAllHalted);
  EXPECT_EQ(chip.tile(kTile).sram().read_u32(kY), 77u);
}

TEST(KernelCallRepeated, ACallSiteCalledAgainStillCatchesAReadOverrun) {
  // 16 words (the whole of x and y), then 17.
  RepeatedCallFixture run(kCopy, kY, kX, 16, 1);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  const Fault& fault = run.fault();
  EXPECT_EQ(fault.kind, FaultKind::kKernelOverrun);
  EXPECT_EQ(fault.pc, run.call_pc);
  EXPECT_EQ(fault.provenance, "graph: copy %y <- %x");
  EXPECT_EQ(fault.message,
            fmt::format("kernel 'tessera_copy_words' called at {:#x}: operand $m3 reads [0x60000, "
                        "0x60044) (68 bytes) outside its allocation #1 'x' (tensor %x) [0x60000, "
                        "0x60040) from 'graph: copy %y <- %x'; the bytes at 0x60040 belong to no "
                        "allocation",
                        run.call_pc));
  EXPECT_EQ(run.word(kY + 60), run.word(kX + 60)) << "the first call copied";
}

TEST(KernelCallRepeated, ACallSiteCalledAgainStillCatchesAWriteOverrun) {
  RepeatedCallFixture run(kFill, kY, 0xAB, 16, 1);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.fault().message,
            fmt::format("kernel 'tessera_fill_words' called at {:#x}: operand $m2 writes "
                        "[0x60100, 0x60144) (68 bytes) outside its allocation #2 'y' (tensor %y) "
                        "[0x60100, 0x60140) from 'graph: copy %y <- %x'; the bytes at 0x60140 "
                        "belong to allocation #3 'w' (tensor %w) [0x60140, 0x60180) from 'graph: "
                        "weights %w'",
                        run.call_pc));
  EXPECT_EQ(run.word(kY + 60), 0xABu) << "the first call filled y";
  EXPECT_NE(run.word(kW), 0xABu) << "the stray word was not written";
}

TEST(KernelCallRepeated, ACallSiteCalledAgainStillCatchesAnUninitializedRead) {
  SimOptions options;
  options.check_uninitialized = true;
  // Only x's first 32 bytes were ever written: 8 words read fine, 16 do not.
  RepeatedCallFixture run(kCopy, kY, kX, 8, 8, options, 32);
  ASSERT_EQ(run.result.reason, StopReason::kFault);
  EXPECT_EQ(run.fault().kind, FaultKind::kUninitializedRead);
  EXPECT_NE(run.fault().message.find("operand $m3 reads [0x60000, 0x60040) (64 bytes) of "
                                     "allocation #1 'x'"),
            std::string::npos)
      << run.fault().message;
}

TEST(KernelCallRepeated, ACallSiteCalledAgainOnWrittenBytesRunsOn) {
  SimOptions options;
  options.check_uninitialized = true;
  RepeatedCallFixture run(kCopy, kY, kX, 8, 0, options, 32);
  EXPECT_EQ(run.result.reason, StopReason::kAllHalted) << describe(run.fault());
}

TEST(KernelCallRepeated, AWrittenAllocationStaysWrittenAndTracked) {
  SimOptions options;
  options.check_uninitialized = true;
  // The first call writes all of y (its operand is then written throughout,
  // and the second call's span is neither tested nor marked again).
  RepeatedCallFixture run(kCopy, kY, kX, 16, -8, options);
  ASSERT_EQ(run.result.reason, StopReason::kAllHalted) << describe(run.fault());
  EXPECT_TRUE(run.chip.tile(kTile).sram().initialized(kY, 64));
  EXPECT_FALSE(run.chip.tile(kTile).sram().initialized(kW, 4));
}

}  // namespace
}  // namespace tessera::sim
