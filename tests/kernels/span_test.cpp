// The span API a kernel model is written against (ARCHITECTURE.md decision
// 11), through a simulated call: models that ask for the wrong bytes, or
// stray past what they were granted, fault with the operand named; sparse
// spans keep the record of never-written bytes exact.
#include <gtest/gtest.h>

#include <functional>

#include <fmt/format.h>

#include "kernels/registry.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels {
namespace {

using testing::Buffer;
using testing::kBufferBase;
using testing::KernelRun;

constexpr std::uint32_t kOut = kBufferBase;           // 64 bytes
constexpr std::uint32_t kIn = kBufferBase + 0x100;    // 64 bytes
constexpr std::uint32_t kNext = kBufferBase + 0x140;  // right after in

std::uint64_t sixty_four(const Registers&) { return 64; }

// A registry holding one test kernel: $m2 out (write, 64 bytes), $m3 in
// (read, 64 bytes), and `model`.
KernelRegistry registry_with(std::function<void(KernelCall&)> model) {
  KernelRegistry registry;
  registry.add(KernelSpec{"test_kernel",
                          KernelKind::kKernel,
                          {OperandSpec{2, Access::kWrite, "out", sixty_four},
                           OperandSpec{3, Access::kRead, "in", sixty_four}},
                          [](const Registers&) { return std::optional<std::string>(); },
                          std::move(model)});
  return registry;
}

std::vector<Buffer> buffers(bool in_written = true) {
  std::vector<std::uint8_t> in(64);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint8_t>(i);
  return {Buffer{"out", kOut, 64, {}},
          Buffer{"in", kIn, 64, in_written ? in : std::vector<std::uint8_t>{}},
          Buffer{"next", kNext, 64, {}}};
}

Registers registers() {
  Registers r{};
  r[2] = kOut;
  r[3] = kIn;
  return r;
}

struct TestKernelRun {
  TestKernelRun(std::function<void(KernelCall&)> model, sim::SimOptions options = {},
                bool in_written = true)
      : registry(registry_with(std::move(model))),
        run("test_kernel", registers(), buffers(in_written), options, registry) {}
  KernelRegistry registry;
  KernelRun run;
};

TEST(KernelSpans, AModelWorksOnItsSpansDirectly) {
  TestKernelRun r([](KernelCall& call) {
    const auto in = call.memory.read<std::uint32_t>(3, kIn, 16);
    const auto out = call.memory.write<std::uint32_t>(2, kOut, 16);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = in[i] + 1;
  });
  ASSERT_TRUE(r.run.halted()) << r.run.fault_text();
  const auto out = r.run.read(kOut, 4);
  EXPECT_EQ(out, (std::vector<std::uint8_t>{1, 1, 2, 3}));
}

TEST(KernelSpans, IndexingPastASpanIsAnOverrunNamingTheOperand) {
  if (!TESSERA_CHECKED_SPANS) GTEST_SKIP() << "element access is unchecked in Release builds";
  TestKernelRun r([](KernelCall& call) {
    const auto out = call.memory.write<std::uint32_t>(2, kOut, 16);
    out[16] = 7;  // one element past the span: the first word of `in`
  });
  ASSERT_FALSE(r.run.halted());
  EXPECT_EQ(r.run.fault().kind, sim::FaultKind::kKernelOverrun);
  EXPECT_EQ(r.run.fault().message,
            fmt::format("kernel 'test_kernel' called at {:#x}: operand $m2 touched [0x60040, "
                        "0x60044) (4 bytes), outside the span [0x60000, 0x60040) the model was "
                        "granted; the bytes at 0x60040 belong to no allocation",
                        r.run.call_pc()));
  EXPECT_EQ(r.run.fault().provenance, "graph: test_kernel");
}

TEST(KernelSpans, ASubspanPastTheEndFaultsInEveryBuild) {
  TestKernelRun r([](KernelCall& call) {
    const auto in = call.memory.read<std::uint16_t>(3, kIn, 32);
    (void)in.subspan(30, 3);
  });
  ASSERT_FALSE(r.run.halted());
  EXPECT_EQ(r.run.fault().kind, sim::FaultKind::kKernelOverrun);
  EXPECT_NE(r.run.fault().message.find("operand $m3 touched [0x6013c, 0x60142) (6 bytes), outside "
                                       "the span [0x60100, 0x60140)"),
            std::string::npos)
      << r.run.fault().message;
  EXPECT_NE(r.run.fault().message.find("belong to allocation #3 'next'"), std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, ASpanPastTheAllocationIsRefusedBeforeAnythingIsTouched) {
  TestKernelRun r([](KernelCall& call) {
    const auto out = call.memory.write<std::uint32_t>(2, kOut, 16);
    out[0] = 1;
    (void)call.memory.read<std::uint32_t>(3, kIn, 17);  // one word into `next`
  });
  ASSERT_FALSE(r.run.halted());
  EXPECT_NE(r.run.fault().message.find("operand $m3 reads [0x60100, 0x60144) (68 bytes) outside "
                                       "its allocation #2 'in'"),
            std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, WritingAReadOnlyOperandFaults) {
  TestKernelRun r([](KernelCall& call) { (void)call.memory.write<std::uint8_t>(3, kIn, 1); });
  ASSERT_FALSE(r.run.halted());
  EXPECT_NE(r.run.fault().message.find("declares $m3 (in) read-only"), std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, ReadingAWriteOnlyOperandFaults) {
  TestKernelRun r([](KernelCall& call) { (void)call.memory.read_write<std::uint8_t>(2, kOut, 1); });
  ASSERT_FALSE(r.run.halted());
  EXPECT_NE(r.run.fault().message.find("declares $m2 (out) write-only"), std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, ARegisterThatIsNotAnOperandFaults) {
  TestKernelRun r([](KernelCall& call) { (void)call.memory.read<std::uint8_t>(4, kIn, 1); });
  ASSERT_FALSE(r.run.halted());
  EXPECT_NE(r.run.fault().message.find("$m4 is not a memory operand"), std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, AMisalignedTypedSpanIsAPreconditionFault) {
  TestKernelRun r([](KernelCall& call) { (void)call.memory.read<std::uint32_t>(3, kIn + 2, 1); });
  ASSERT_FALSE(r.run.halted());
  EXPECT_EQ(r.run.fault().kind, sim::FaultKind::kKernelPrecondition);
  EXPECT_NE(r.run.fault().message.find("not 4-byte aligned"), std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, AnEmptySpanTouchesNothingWhereverItPoints) {
  TestKernelRun r([](KernelCall& call) {
    EXPECT_TRUE(call.memory.read<std::uint32_t>(3, 0xFFFFFFF0, 0).empty());
    EXPECT_TRUE(call.memory.write<std::uint32_t>(2, 0, 0).empty());
  });
  EXPECT_TRUE(r.run.halted()) << r.run.fault_text();
}

TEST(KernelSpans, ASizeThatOverflowsIsOutsideSram) {
  TestKernelRun r([](KernelCall& call) {
    (void)call.memory.read<std::uint32_t>(3, kIn, std::uint64_t{1} << 62);
  });
  ASSERT_FALSE(r.run.halted());
  EXPECT_NE(r.run.fault().message.find("outside SRAM"), std::string::npos) << r.run.fault().message;
}

// The first span through an operand in an epoch prepares it and opens its
// window (kernels::SpanWindow), through which later spans are granted
// inline; the spans below come after such a first span, so they are tested
// on the inline path, and must fault exactly as on the checked one.
TEST(KernelSpans, OnceAnOperandsWindowIsOpenAStraySpanStillFaultsTheSameWay) {
  const auto after_a_good_span = [](std::function<void(KernelCall&)> stray) {
    return [stray = std::move(stray)](KernelCall& call) {
      (void)call.memory.read<std::uint32_t>(3, kIn, 16);
      (void)call.memory.write<std::uint32_t>(2, kOut, 16);
      (void)call.memory.read<std::uint32_t>(3, kIn + 4, 15);  // inside: granted
      stray(call);
    };
  };
  {
    TestKernelRun r(after_a_good_span(
        [](KernelCall& call) { (void)call.memory.read<std::uint32_t>(3, kIn, 17); }));
    ASSERT_FALSE(r.run.halted());
    EXPECT_EQ(r.run.fault().kind, sim::FaultKind::kKernelOverrun);
    EXPECT_NE(r.run.fault().message.find("operand $m3 reads [0x60100, 0x60144) (68 bytes) outside "
                                         "its allocation #2 'in'"),
              std::string::npos)
        << r.run.fault().message;
    EXPECT_NE(r.run.fault().message.find("belong to allocation #3 'next'"), std::string::npos)
        << r.run.fault().message;
    EXPECT_EQ(r.run.fault().provenance, "graph: test_kernel");
  }
  {
    TestKernelRun r(after_a_good_span(
        [](KernelCall& call) { (void)call.memory.read<std::uint32_t>(3, kIn - 4, 1); }));
    ASSERT_FALSE(r.run.halted());
    EXPECT_NE(r.run.fault().message.find("operand $m3 reads [0x600fc, 0x60100) (4 bytes) outside "
                                         "its allocation #2 'in'"),
              std::string::npos)
        << r.run.fault().message;
  }
  {
    TestKernelRun r(after_a_good_span(
        [](KernelCall& call) { (void)call.memory.write<std::uint8_t>(3, kIn, 1); }));
    ASSERT_FALSE(r.run.halted());
    EXPECT_NE(r.run.fault().message.find("declares $m3 (in) read-only"), std::string::npos)
        << r.run.fault().message;
  }
  {
    TestKernelRun r(after_a_good_span(
        [](KernelCall& call) { (void)call.memory.read_write<std::uint8_t>(2, kOut, 1); }));
    ASSERT_FALSE(r.run.halted());
    EXPECT_NE(r.run.fault().message.find("declares $m2 (out) write-only"), std::string::npos)
        << r.run.fault().message;
  }
  {
    TestKernelRun r(after_a_good_span(
        [](KernelCall& call) { (void)call.memory.read<std::uint32_t>(3, kIn + 2, 1); }));
    ASSERT_FALSE(r.run.halted());
    EXPECT_EQ(r.run.fault().kind, sim::FaultKind::kKernelPrecondition);
    EXPECT_NE(r.run.fault().message.find("not 4-byte aligned"), std::string::npos)
        << r.run.fault().message;
  }
  {
    TestKernelRun r(after_a_good_span(
        [](KernelCall& call) { (void)call.memory.read<std::uint32_t>(3, kIn, std::uint64_t{1} << 62); }));
    ASSERT_FALSE(r.run.halted());
    EXPECT_NE(r.run.fault().message.find("outside SRAM"), std::string::npos)
        << r.run.fault().message;
  }
}

TEST(KernelSpans, AnOpenWindowStillReportsNeverWrittenBytesAndRecordsWrites) {
  sim::SimOptions options;
  options.check_uninitialized = true;
  {
    // A sparse span opens $m3's window; its bytes were never written, so a
    // whole read span of them is still tested.
    TestKernelRun r(
        [](KernelCall& call) {
          (void)call.memory.read<std::uint32_t>(3, kIn, 16, SpanUse::kSparse);
          (void)call.memory.read<std::uint32_t>(3, kIn + 8, 2);
        },
        options, /*in_written=*/false);
    ASSERT_FALSE(r.run.halted());
    EXPECT_EQ(r.run.fault().kind, sim::FaultKind::kUninitializedRead);
    EXPECT_NE(r.run.fault().message.find("operand $m3 reads [0x60108, 0x60110)"),
              std::string::npos)
        << r.run.fault().message;
  }
  {
    // Whole write spans after the window opened still count as written.
    TestKernelRun r(
        [](KernelCall& call) {
          (void)call.memory.write<std::uint32_t>(2, kOut, 1);
          (void)call.memory.write<std::uint32_t>(2, kOut + 32, 8);
        },
        options);
    ASSERT_TRUE(r.run.halted()) << r.run.fault_text();
    EXPECT_TRUE(r.run.initialized(kOut, 4));
    EXPECT_FALSE(r.run.initialized(kOut + 4, 4));
    EXPECT_TRUE(r.run.initialized(kOut + 32, 32));
  }
}

TEST(KernelSpans, ANoteInsideOnlyAWholeSpanFaults) {
  // Notes are for kSparse spans: one inside a kWhole span (granted inline
  // or not) is outside every span it may note.
  TestKernelRun r([](KernelCall& call) {
    (void)call.memory.write<std::uint8_t>(2, kOut, 8);
    call.memory.note_written(2, kOut, 1);
  });
  ASSERT_FALSE(r.run.halted());
  EXPECT_NE(r.run.fault().message.find("outside every span it was granted"), std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, AWholeReadSpanOfNeverWrittenBytesIsReportedWhenAsked) {
  sim::SimOptions options;
  options.check_uninitialized = true;
  TestKernelRun r([](KernelCall& call) { (void)call.memory.read<std::uint32_t>(3, kIn, 16); },
                  options,
                  /*in_written=*/false);
  ASSERT_FALSE(r.run.halted());
  EXPECT_EQ(r.run.fault().kind, sim::FaultKind::kUninitializedRead);
  EXPECT_NE(r.run.fault().message.find("operand $m3 reads [0x60100, 0x60140)"), std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, WholeWriteSpansCountAsWrittenWhateverTheOrder) {
  sim::SimOptions options;
  options.check_uninitialized = true;
  // The write span is granted first, then the (never-written) read span: it
  // is still an uninitialised read, because writes count when the call ends.
  KernelRegistry registry;
  registry.add(KernelSpec{"in_place",
                          KernelKind::kKernel,
                          {OperandSpec{2, Access::kWrite, "out", sixty_four},
                           OperandSpec{3, Access::kRead, "in", sixty_four}},
                          [](const Registers&) { return std::optional<std::string>(); },
                          [](KernelCall& call) {
                            (void)call.memory.write<std::uint32_t>(2, kOut, 16);
                            (void)call.memory.read<std::uint32_t>(3, kOut, 16);
                          }});
  Registers in_place = registers();
  in_place[3] = kOut;
  {
    KernelRun run("in_place", in_place, buffers(), options, registry);
    ASSERT_FALSE(run.halted());
    EXPECT_EQ(run.fault().kind, sim::FaultKind::kUninitializedRead);
  }
  TestKernelRun r([](KernelCall& call) { (void)call.memory.write<std::uint32_t>(2, kOut, 16); },
                  options);
  ASSERT_TRUE(r.run.halted()) << r.run.fault_text();
  EXPECT_TRUE(r.run.initialized(kOut, 64));
}

TEST(KernelSpans, SparseSpansRecordOnlyWhatTheModelNotes) {
  sim::SimOptions options;
  options.check_uninitialized = true;
  TestKernelRun r(
      [](KernelCall& call) {
        const auto out = call.memory.write<std::uint8_t>(2, kOut, 64, SpanUse::kSparse);
        const auto in = call.memory.read<std::uint8_t>(3, kIn, 64, SpanUse::kSparse);
        out[5] = in[9];
        call.memory.note_read(3, kIn + 9, 1);
        call.memory.note_written(2, kOut + 5, 1);
      },
      options);
  ASSERT_TRUE(r.run.halted()) << r.run.fault_text();
  EXPECT_EQ(r.run.read(kOut + 5, 1), std::vector<std::uint8_t>{9});
}

TEST(KernelSpans, ASparseNoteOutsideEveryGrantedSpanFaults) {
  TestKernelRun r([](KernelCall& call) {
    (void)call.memory.write<std::uint8_t>(2, kOut, 8, SpanUse::kSparse);
    call.memory.note_written(2, kOut + 8, 1);
  });
  ASSERT_FALSE(r.run.halted());
  EXPECT_NE(r.run.fault().message.find("outside every span it was granted"), std::string::npos)
      << r.run.fault().message;
}

TEST(KernelSpans, ASparseReadOfANeverWrittenByteIsReportedWhenAsked) {
  sim::SimOptions options;
  options.check_uninitialized = true;
  TestKernelRun r(
      [](KernelCall& call) {
        (void)call.memory.read<std::uint8_t>(3, kIn, 64, SpanUse::kSparse);
        call.memory.note_read(3, kIn + 3, 1);
      },
      options, /*in_written=*/false);
  ASSERT_FALSE(r.run.halted());
  EXPECT_EQ(r.run.fault().kind, sim::FaultKind::kUninitializedRead);
}

}  // namespace
}  // namespace tessera::kernels
