// The element-move kernels called through the simulator, as emitted code
// calls them: results byte-equal to a CPU reference that applies the table
// pair by pair to the destination's initial bytes (so untouched elements and
// the bytes around a sub-word element are checked too), stray indices and
// short allocations named by operand, and precondition violations with their
// reasons.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "kernels/costs.hpp"
#include "kernels/registry.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels {
namespace {

using namespace testing;

constexpr std::uint32_t kIn = kBufferBase;  // buffers 64 KiB apart
constexpr std::uint32_t kTable = kBufferBase + 0x10000;
constexpr std::uint32_t kOut = kBufferBase + 0x20000;
constexpr unsigned kSizes[] = {4, 2, 1};
// Bytes loaded after the destination's allocation (past its word padding) and
// checked unchanged after the call.
constexpr std::uint32_t kGuardBytes = 4;

std::uint32_t padded(std::uint64_t bytes) {
  return static_cast<std::uint32_t>((bytes + 3) / 4 * 4);
}

std::string_view kernel_for(unsigned s) {
  return s == 4 ? kMoveElementsB32 : s == 2 ? kMoveElementsB16 : kMoveElementsB8;
}

using Pair = std::pair<std::uint32_t, std::uint32_t>;  // (destination, source)

struct MoveCall {
  unsigned s = 4;
  std::vector<std::uint8_t> in;   // s · in elements
  std::vector<std::uint8_t> out;  // initial destination bytes: padded(s · out elements) + guard
  std::uint32_t out_elements = 0;
  std::vector<Pair> pairs;

  std::uint32_t in_elements() const { return static_cast<std::uint32_t>(in.size() / s); }
  std::string_view kernel() const { return kernel_for(s); }

  Registers registers() const {
    Registers r{};
    r[2] = kOut;
    r[3] = kIn;
    r[4] = kTable;
    r[5] = static_cast<std::uint32_t>(pairs.size());
    r[6] = out_elements;
    r[7] = in_elements();
    return r;
  }
  std::vector<std::uint8_t> table_bytes() const {
    std::vector<std::uint32_t> words;
    for (const auto& [dst, src] : pairs) {
      words.push_back(dst);
      words.push_back(src);
    }
    return to_bytes(words, 4);
  }
  // Allocations exactly the footprints; `shrink_reg` loses one element (one pair).
  std::vector<Buffer> buffers(int shrink_reg = 0) const {
    const auto less = [&](int reg, std::uint32_t unit) { return shrink_reg == reg ? unit : 0u; };
    std::vector<Buffer> result = {
        Buffer{"in", kIn, in_elements() * s - less(3, s), in},
        Buffer{"table", kTable, static_cast<std::uint32_t>(pairs.size() * 8) - less(4, 8),
               table_bytes()},
        Buffer{"out", kOut, out_elements * s - less(2, s), out}};
    return result;
  }
  // The CPU reference: each pair in table order on the initial bytes.
  std::vector<std::uint8_t> expected() const {
    std::vector<std::uint8_t> result = out;
    for (const auto& [dst, src] : pairs) {
      std::copy_n(in.begin() + std::ptrdiff_t{src} * s, s,
                  result.begin() + std::ptrdiff_t{dst} * s);
    }
    return result;
  }
};

std::vector<std::uint8_t> any_bytes(std::size_t n) {
  return *rc::gen::container<std::vector<std::uint8_t>>(n, rc::gen::arbitrary<std::uint8_t>());
}

std::vector<std::uint8_t> destination_image(unsigned s, std::uint32_t elements) {
  return any_bytes(padded(std::uint64_t{elements} * s) + kGuardBytes);
}

std::uint32_t any_count(std::uint32_t low = 0) {
  return *rc::gen::weightedOneOf<std::uint32_t>(
             {{2, rc::gen::elementOf(std::vector<std::uint32_t>{0, 1, 2, 3, 5, 6, 7, 13, 100})},
              {1, rc::gen::inRange(0u, 3000u)}}) +
         low;
}

std::vector<std::uint8_t> run_move(const MoveCall& call) {
  KernelRun run(call.kernel(), call.registers(), call.buffers());
  EXPECT_TRUE(run.halted()) << run.fault_text();
  EXPECT_EQ(run.total_cycles(),
            run.supervisor_cycles() + move_elements_cycles(call.pairs.size(), call.s));
  return run.read(kOut, static_cast<std::uint32_t>(call.out.size()));
}

// ---- Results

RC_GTEST_PROP(MoveKernels, PermutationsMatchTheReference, ()) {
  const unsigned s =
      *rc::gen::elementOf(std::vector<unsigned>(std::begin(kSizes), std::end(kSizes)));
  const std::uint32_t count = any_count();
  std::vector<std::uint32_t> sources(count);
  std::iota(sources.begin(), sources.end(), 0u);
  std::mt19937 shuffle(*rc::gen::arbitrary<std::uint32_t>());
  std::shuffle(sources.begin(), sources.end(), shuffle);
  MoveCall call{s, any_bytes(std::size_t{count} * s), destination_image(s, count), count, {}};
  for (std::uint32_t i = 0; i < count; ++i) call.pairs.emplace_back(i, sources[i]);
  std::shuffle(call.pairs.begin(), call.pairs.end(), shuffle);  // table order is free
  RC_ASSERT(run_move(call) == call.expected());
}

// Some destinations untouched (they keep their bytes), sources repeated.
RC_GTEST_PROP(MoveKernels, PartialScattersWithRepeatedSourcesMatchTheReference, ()) {
  const unsigned s =
      *rc::gen::elementOf(std::vector<unsigned>(std::begin(kSizes), std::end(kSizes)));
  const std::uint32_t out_elements = any_count(1);
  const std::uint32_t in_elements = *rc::gen::inRange(1u, 40u);  // small: sources repeat
  std::vector<std::uint32_t> destinations(out_elements);
  std::iota(destinations.begin(), destinations.end(), 0u);
  std::mt19937 shuffle(*rc::gen::arbitrary<std::uint32_t>());
  std::shuffle(destinations.begin(), destinations.end(), shuffle);
  destinations.resize(*rc::gen::inRange<std::size_t>(0, out_elements));  // never all of them
  MoveCall call{s,
                any_bytes(std::size_t{in_elements} * s),
                destination_image(s, out_elements),
                out_elements,
                {}};
  for (const std::uint32_t dst : destinations) {
    call.pairs.emplace_back(dst, *rc::gen::inRange(0u, in_elements));
  }
  RC_ASSERT(run_move(call) == call.expected());
}

TEST(MoveKernels, SubWordElementsLeaveTheirNeighboursAlone) {
  // Odd counts: every other element moved, the rest and the word padding kept.
  for (const unsigned s : kSizes) {
    for (const std::uint32_t count : {1u, 3u, 5u, 7u, 9u}) {
      MoveCall call{
          s, {}, std::vector<std::uint8_t>(padded(count * s) + kGuardBytes, 0xA5), count, {}};
      for (std::uint32_t i = 0; i < count * s; ++i)
        call.in.push_back(static_cast<std::uint8_t>(0x10 + i));
      for (std::uint32_t i = 0; i < count; i += 2) call.pairs.emplace_back(i, count - 1 - i);
      const auto moved = run_move(call);
      EXPECT_EQ(moved, call.expected()) << "s = " << s << ", count = " << count;
      EXPECT_EQ(moved[s], 0xA5) << "element 1 (or the padding) is untouched";
      EXPECT_EQ(moved.back(), 0xA5);
    }
  }
  // b8 into one word: byte 2 only.
  MoveCall one{
      1, {0x11, 0x22, 0x33, 0x44}, {0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7}, 4, {{2, 3}}};
  EXPECT_EQ(run_move(one),
            (std::vector<std::uint8_t>{0xA0, 0xA1, 0x44, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7}));
  // b16 into the upper half-word.
  MoveCall half{
      2, {0x11, 0x22, 0x33, 0x44}, {0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7}, 2, {{1, 0}}};
  EXPECT_EQ(run_move(half),
            (std::vector<std::uint8_t>{0xA0, 0xA1, 0x11, 0x22, 0xA4, 0xA5, 0xA6, 0xA7}));
}

TEST(MoveKernels, AGatherWithRepeatedSourcesAndATranspose) {
  // b32 gather: out = in[2], in[2], in[0].
  MoveCall gather{4,
                  to_bytes({0x7FC00001, 0x80000000, 0xDEADBEEF}, 4),
                  std::vector<std::uint8_t>(16, 0),
                  3,
                  {{0, 2}, {1, 2}, {2, 0}}};
  EXPECT_EQ(from_bytes(run_move(gather), 4),
            (std::vector<std::uint32_t>{0xDEADBEEF, 0xDEADBEEF, 0x7FC00001, 0}));
  // b16 transpose of a 2×3 matrix into 3×2.
  MoveCall transpose{2, to_bytes({1, 2, 3, 4, 5, 6}, 2), std::vector<std::uint8_t>(16, 0), 6, {}};
  for (std::uint32_t r = 0; r < 2; ++r) {
    for (std::uint32_t c = 0; c < 3; ++c) transpose.pairs.emplace_back(c * 2 + r, r * 3 + c);
  }
  EXPECT_EQ(from_bytes(run_move(transpose), 2),
            (std::vector<std::uint32_t>{1, 4, 2, 5, 3, 6, 0, 0}));
}

TEST(MoveKernels, TablesLongerThanOneModelChunk) {
  // The model reads the table kModelChunkElements pairs at a time: a reversal
  // just past one chunk and across two.
  for (const unsigned s : kSizes) {
    for (const std::uint32_t count : {1025u, 2500u}) {
      MoveCall call{s, {}, {}, count, {}};
      call.out.assign(padded(count * s) + kGuardBytes, 0xA5);
      for (std::uint32_t i = 0; i < count * s; ++i) {
        call.in.push_back(static_cast<std::uint8_t>(i * 7));
      }
      for (std::uint32_t i = 0; i < count; ++i) call.pairs.emplace_back(i, count - 1 - i);
      EXPECT_EQ(run_move(call), call.expected()) << "s = " << s << ", count = " << count;
    }
  }
}

TEST(MoveKernels, ALaterPairOverwritesAnEarlierOneInTheModel) {
  // Table order within the model (the compiler names a destination once: the
  // device's workers are not ordered against one another).
  MoveCall call{4, to_bytes({10, 20}, 4), std::vector<std::uint8_t>(8, 0), 1, {{0, 0}, {0, 1}}};
  EXPECT_EQ(from_bytes(run_move(call), 4), (std::vector<std::uint32_t>{20, 0}));
}

TEST(MoveKernels, ZeroPairsTouchNothingAndCostTheLaunch) {
  for (const unsigned s : kSizes) {
    Registers r{};
    r[2] = kOut;
    r[3] = kIn;
    r[4] = kTable;
    r[6] = 100;  // out elements
    r[7] = 100;  // in elements; no allocation anywhere: any access would fault
    KernelRun run(kernel_for(s), r, {});
    ASSERT_TRUE(run.halted()) << kernel_for(s) << ": " << run.fault_text();
    EXPECT_EQ(run.total_cycles(),
              run.supervisor_cycles() + kKernelLaunchCycles + kWorkerBarrierCycles);
  }
}

// The moves are granted their whole regions but say which elements they
// read and wrote, so the simulator's record of never-written bytes stays
// exact (--check-uninitialized, an instruction fetch from data).
TEST(MoveKernels, OnlyTheElementsTheTableNamesCountAsWritten) {
  MoveCall call{2, to_bytes({1, 2, 3, 4}, 2), {}, 4, {{0, 3}, {2, 1}}};
  KernelRun run(call.kernel(), call.registers(), call.buffers());
  ASSERT_TRUE(run.halted()) << run.fault_text();
  EXPECT_TRUE(run.initialized(kOut, 2));
  EXPECT_FALSE(run.initialized(kOut + 2, 2));
  EXPECT_TRUE(run.initialized(kOut + 4, 2));
  EXPECT_FALSE(run.initialized(kOut + 6, 2));
  EXPECT_EQ(run.read(kOut, 2), to_bytes({4}, 2));
  EXPECT_EQ(run.read(kOut + 4, 2), to_bytes({2}, 2));
}

TEST(MoveKernels, ANeverWrittenSourceElementIsReportedWhenAsked) {
  sim::SimOptions options;
  options.check_uninitialized = true;
  MoveCall call{4, {}, {}, 2, {{0, 1}}};
  Registers r = call.registers();
  r[7] = 2;  // two source elements, never written
  std::vector<Buffer> buffers = {Buffer{"in", kIn, 8, {}},
                                 Buffer{"table", kTable, 8, call.table_bytes()},
                                 Buffer{"out", kOut, 8, {}}};
  KernelRun run(call.kernel(), r, buffers, options);
  ASSERT_FALSE(run.halted());
  EXPECT_EQ(run.fault().kind, sim::FaultKind::kUninitializedRead) << run.fault_text();
  EXPECT_NE(run.fault().message.find("operand $m3 reads [0x60004, 0x60008)"), std::string::npos)
      << run.fault().message;
}

TEST(MoveKernels, CyclesFollowTheCostFunction) {
  // Worker 0 has 17 of 100 pairs: 17·(8 + 2s) bytes in words of 8.
  EXPECT_EQ(move_elements_cycles(100, 4), kKernelLaunchCycles + kWorkerBarrierCycles + 6 * 34);
  EXPECT_EQ(move_elements_cycles(100, 2), kKernelLaunchCycles + kWorkerBarrierCycles + 6 * 26);
  EXPECT_EQ(move_elements_cycles(100, 1), kKernelLaunchCycles + kWorkerBarrierCycles + 6 * 22);
  EXPECT_EQ(move_elements_cycles(0, 1), kKernelLaunchCycles + kWorkerBarrierCycles);
  EXPECT_EQ(move_elements_cycles(7, 4), six_worker_kernel_cycles(7, 16));
}

// ---- Stray indices and short allocations

MoveCall reaching_every_end(unsigned s) {
  // Seven elements each way (odd for b16/b8); the pairs name both last elements.
  std::vector<std::uint8_t> in(7 * s);
  std::iota(in.begin(), in.end(), std::uint8_t{1});
  return MoveCall{s,
                  in,
                  std::vector<std::uint8_t>(padded(7 * s) + kGuardBytes, 0xA5),
                  7,
                  {{0, 6}, {6, 0}, {3, 3}}};
}

void expect_overrun_naming(const MoveCall& call, const std::vector<Buffer>& buffers, int reg,
                           const std::string& what) {
  KernelRun run(call.kernel(), call.registers(), buffers);
  ASSERT_FALSE(run.halted()) << call.kernel() << " $m" << reg << ": " << what;
  EXPECT_EQ(run.fault().kind, sim::FaultKind::kKernelOverrun) << run.fault_text();
  EXPECT_NE(run.fault().message.find(fmt::format("operand $m{} ", reg)), std::string::npos)
      << what << ": " << run.fault().message;
}

TEST(MoveKernels, AnIndexPastItsRegionIsAnOverrunNamingTheOperand) {
  for (const unsigned s : kSizes) {
    MoveCall past_out = reaching_every_end(s);
    past_out.pairs.emplace_back(7, 0);  // $m6 = 7
    expect_overrun_naming(past_out, past_out.buffers(), 2, "destination index one past $m6");
    MoveCall past_in = reaching_every_end(s);
    past_in.pairs.emplace_back(0, 7);  // $m7 = 7
    expect_overrun_naming(past_in, past_in.buffers(), 3, "source index one past $m7");
    // Byte offset 2^32 (b32, b16) would wrap back onto element 0; for b8 the
    // largest index, offset 2^32 − 1, puts the element past 2^32 all the same.
    const auto wrapping = static_cast<std::uint32_t>(
        std::min<std::uint64_t>((std::uint64_t{1} << 32) / s, 0xFFFFFFFF));
    MoveCall wrap_out = reaching_every_end(s);
    wrap_out.pairs.emplace_back(wrapping, 0);
    expect_overrun_naming(wrap_out, wrap_out.buffers(), 2, "destination index wrapping");
    MoveCall wrap_in = reaching_every_end(s);
    wrap_in.pairs.emplace_back(0, wrapping);
    expect_overrun_naming(wrap_in, wrap_in.buffers(), 3, "source index wrapping");
  }
}

TEST(MoveKernels, AnOperandOneElementShortIsAnOverrunNamingIt) {
  for (const unsigned s : kSizes) {
    const MoveCall call = reaching_every_end(s);
    EXPECT_EQ(run_move(call), call.expected()) << "the full allocations suffice";
    for (const int reg : {2, 3, 4}) {
      expect_overrun_naming(call, call.buffers(reg), reg, "one element (pair) short");
    }
  }
}

// ---- Preconditions

struct PreconditionCase {
  std::string_view kernel;
  Registers registers;
  std::string reason;
};

Registers regs(std::uint32_t out, std::uint32_t in, std::uint32_t table, std::uint32_t pairs,
               std::uint32_t out_elements, std::uint32_t in_elements) {
  Registers r{};
  r[2] = out;
  r[3] = in;
  r[4] = table;
  r[5] = pairs;
  r[6] = out_elements;
  r[7] = in_elements;
  return r;
}

TEST(MoveKernels, PreconditionViolationsAreFaultsWithTheReason) {
  const PreconditionCase cases[] = {
      {kMoveElementsB8, regs(kOut + 1, kIn, kTable, 1, 8, 8), "$m2 = 0x80001 is not word-aligned"},
      {kMoveElementsB16, regs(kOut, kIn + 2, kTable, 1, 8, 8), "$m3 = 0x60002 is not word-aligned"},
      {kMoveElementsB32, regs(kOut, kIn, kTable + 4 + 2, 1, 8, 8),
       "$m4 = 0x70006 is not word-aligned"},
      {kMoveElementsB32, regs(kOut, kIn, kTable, 0x20000000, 8, 8),
       "$m4 (table) [0x70000, 0x100070000) reaches past the 32-bit address space (4294967296 "
       "bytes)"},
      {kMoveElementsB16, regs(kOut, 0xFFFFFF00, kTable, 1, 8, 0x100),
       "$m3 (source) [0xffffff00, 0x100000100) reaches past the 32-bit address space (512 bytes)"},
      {kMoveElementsB32, regs(0xFFFFFFF0, kIn, kTable, 1, 5, 8),
       "$m2 (destination) [0xfffffff0, 0x100000004) reaches past the 32-bit address space (20 "
       "bytes)"},
      {kMoveElementsB16, regs(kIn + 4, kIn, kTable, 1, 8, 8),
       "$m2 (destination) [0x60004, 0x60014) overlaps $m3 (source) [0x60000, 0x60010)"},
      {kMoveElementsB32, regs(kIn, kIn, kTable, 1, 8, 8),  // not even an exact alias
       "$m2 (destination) [0x60000, 0x60020) overlaps $m3 (source) [0x60000, 0x60020)"},
      {kMoveElementsB8, regs(kTable + 8, kIn, kTable, 2, 8, 8),
       "$m2 (destination) [0x70008, 0x70010) overlaps $m4 (table) [0x70000, 0x70010)"},
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

TEST(MoveKernels, AdjacentRegionsAndEmptyRegionsAreNotOverlaps) {
  for (const unsigned s : kSizes) {
    const std::string_view kernel = kernel_for(s);
    const KernelSpec* spec = KernelRegistry::standard().find(kernel);
    ASSERT_NE(spec, nullptr);
    EXPECT_FALSE(spec->precondition(regs(kIn + 8 * s, kIn, kTable, 1, 8, 8)).has_value()) << kernel;
    EXPECT_FALSE(spec->precondition(regs(kTable, kIn, kTable, 0, 8, 8)).has_value())
        << kernel << ": an empty table overlaps nothing";
    EXPECT_FALSE(spec->precondition(regs(kIn, kIn, kTable, 0, 0, 8)).has_value())
        << kernel << ": an empty destination overlaps nothing";
  }
}

}  // namespace
}  // namespace tessera::kernels
