#include "target/memory_map.hpp"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace tessera::target {
namespace {

// §2.3 [HW][SDK]: the loader's 643 frames of 992 bytes end exactly at the limit.
static_assert(0x4C010 + 643 * 992 == 0xE7BB0);
static_assert(kLoadBase + kLoaderMaxFrames * kLoaderFramePayload == kLoadLimit);

ElementSet elements(std::initializer_list<unsigned> indices) {
  ElementSet set;
  for (const unsigned index : indices) set |= ElementSet::of(MemoryElement(index));
  return set;
}

struct ElementVector {
  std::uint32_t address;
  unsigned element;
  MemoryRegion region;
};

// OLD's sequential numbering (§2.1).
constexpr ElementVector kElementVectors[] = {
    {0x4C000, 0, MemoryRegion::kStandard},     {0x4FFFF, 0, MemoryRegion::kStandard},
    {0x50000, 1, MemoryRegion::kStandard},     {0x7FFFC, 12, MemoryRegion::kStandard},
    {0x80000, 13, MemoryRegion::kInterleaved}, {0x87FFF, 13, MemoryRegion::kInterleaved},
    {0x88000, 14, MemoryRegion::kInterleaved}, {0xE7FFC, 25, MemoryRegion::kInterleaved},
};

TEST(MemoryMap, ElementOfAnAddress) {
  for (const ElementVector& golden : kElementVectors) {
    SCOPED_TRACE(fmt::format("{:#x}", golden.address));
    EXPECT_EQ(element_of(golden.address), MemoryElement(golden.element));
    EXPECT_EQ(region_of(golden.address), golden.region);
    EXPECT_EQ(MemoryElement(golden.element).region(), golden.region);
  }
}

TEST(MemoryMap, AddressesOutsideSramHaveNoElement) {
  for (const std::uint32_t address : {0u, 0x4BFFFu, 0xE8000u, 0xFFFFFFFFu}) {
    SCOPED_TRACE(fmt::format("{:#x}", address));
    EXPECT_THROW((void)element_of(address), AddressError);
    EXPECT_THROW((void)region_of(address), AddressError);
  }
  try {
    (void)element_of(0xE8000);
    FAIL() << "expected AddressError";
  } catch (const AddressError& error) {
    EXPECT_EQ(error.message(), "address 0xe8000 is outside tile SRAM [0x4c000, 0xe8000)");
  }
}

TEST(MemoryMap, ElementRanges) {
  EXPECT_EQ(element_range(MemoryElement(0)), (AddressRange{0x4C000, 0x50000}));
  EXPECT_EQ(element_range(MemoryElement(12)), (AddressRange{0x7C000, 0x80000}));
  EXPECT_EQ(element_range(MemoryElement(13)), kInterleavedOperandWindow);
  EXPECT_EQ(element_range(MemoryElement(25)), (AddressRange{0xE0000, 0xE8000}));
  EXPECT_THROW(MemoryElement(26), UsageError);
}

TEST(MemoryMap, ElementRangesTileSram) {
  std::uint32_t next = kSramBase;
  for (unsigned index = 0; index < kElementCount; ++index) {
    const AddressRange range = element_range(MemoryElement(index));
    EXPECT_EQ(range.begin, next) << "element " << index;
    EXPECT_EQ(element_of(range.begin), MemoryElement(index));
    EXPECT_EQ(element_of(range.end - 1), MemoryElement(index));
    next = range.end;
  }
  EXPECT_EQ(next, kSramEnd);
}

struct ElementsOfVector {
  const char* name;
  AddressRange range;
  ElementSet expected;
};

TEST(MemoryMap, ElementsARangeTouches) {
  const ElementsOfVector cases[] = {
      // OLD test [T]: a 32-byte range straddling the region boundary.
      {"0x7FFF0 + 32", AddressRange::from_size(0x7FFF0, 32), elements({12, 13})},
      {"one byte", AddressRange::from_size(0x4C000, 1), elements({0})},
      {"whole element", AddressRange{0x50000, 0x54000}, elements({1})},
      {"one past an element", AddressRange{0x50000, 0x54001}, elements({1, 2})},
      {"interleaved", AddressRange{0x87FF8, 0x90008}, elements({13, 14, 15})},
      {"all of SRAM", kSram, ElementSet::between(MemoryElement(0), MemoryElement(25))},
      {"empty", AddressRange{0x60000, 0x60000}, ElementSet()},
  };
  for (const ElementsOfVector& golden : cases) {
    SCOPED_TRACE(golden.name);
    EXPECT_EQ(elements_of(golden.range).mask(), golden.expected.mask());
  }
  EXPECT_EQ(elements_of(kSram).count(), 26);
}

TEST(MemoryMap, ElementsOfARangeLeavingSramIsAnError) {
  EXPECT_THROW((void)elements_of(AddressRange{0x4BFFC, 0x4C004}), AddressError);
  EXPECT_THROW((void)elements_of(AddressRange{0xE7FFC, 0xE8004}), AddressError);
  EXPECT_THROW((void)elements_of(AddressRange{0, 0xFFFFFFFF}), AddressError);
}

TEST(MemoryMap, ElementSetOperations) {
  const ElementSet low = elements({0, 12});
  const ElementSet high = elements({12, 13});
  EXPECT_TRUE(low.intersects(high));
  EXPECT_FALSE(low.intersects(elements({13})));
  EXPECT_EQ((low & high), elements({12}));
  EXPECT_EQ((low | high).count(), 3);
  EXPECT_TRUE(high.contains(MemoryElement(13)));
  EXPECT_FALSE(high.contains(MemoryElement(0)));
  EXPECT_TRUE(ElementSet().empty());
  EXPECT_TRUE(ElementSet::between(MemoryElement(5), MemoryElement(4)).empty());
}

struct PredicateVector {
  const char* name;
  AddressRange range;
  bool sram;
  bool executable;
  bool loadable;
};

// Each predicate at both of its boundaries.
TEST(MemoryMap, PredicatesAtTheirBoundaries) {
  const PredicateVector cases[] = {
      {"standard region", kStandardRegion, true, true, false},
      {"load base to 0x80000", AddressRange{0x4C010, 0x80000}, true, true, true},
      {"one byte into interleaved", AddressRange{0x4C010, 0x80001}, true, false, true},
      {"one byte below the load base", AddressRange{0x4C00F, 0x4C010}, true, true, false},
      {"up to the load limit", AddressRange{0xE7000, 0xE7BB0}, true, false, true},
      {"one past the load limit", AddressRange{0xE7000, 0xE7BB1}, true, false, false},
      {"the unloadable tail", AddressRange{0xE7BB0, 0xE8000}, true, false, false},
      {"past SRAM", AddressRange{0xE7FFF, 0xE8001}, false, false, false},
      {"below SRAM", AddressRange{0x4BFFF, 0x4C001}, false, false, false},
  };
  for (const PredicateVector& golden : cases) {
    SCOPED_TRACE(golden.name);
    EXPECT_EQ(in_sram(golden.range), golden.sram);
    EXPECT_EQ(is_executable(golden.range), golden.executable);
    EXPECT_EQ(is_loadable(golden.range), golden.loadable);
  }
}

TEST(MemoryMap, ExchangeAndH2dWindows) {
  EXPECT_TRUE(in_exchange_window(AddressRange{0x50000, 0x58000}));
  EXPECT_FALSE(in_exchange_window(AddressRange{0x57FFC, 0x58004}));
  EXPECT_TRUE(in_h2d_window(AddressRange::from_size(kH2dStaging, kH2dStagingMaxBytes)));
  EXPECT_TRUE(in_h2d_window(AddressRange{0x53FE0, 0x54000}));
  EXPECT_FALSE(in_h2d_window(AddressRange{0x53FE0, 0x54020}));
  EXPECT_TRUE(in_exchange_window(AddressRange::from_size(kXreqBitmap, 8)));
  EXPECT_EQ(kTargetPacketHeaders, kXreqBitmap + 8);
}

// §2.4: the reserved map is consistent with itself and with the chip.
TEST(MemoryMap, ReservedAddressesFitTogether) {
  EXPECT_EQ(kEntryTrampoline.end, kLinkerRegion1.begin);
  EXPECT_EQ(kLinkerRegion1.end, kExchangeWindow.begin);
  EXPECT_EQ(kExchangeWindow.end, kRuntimeState.begin);
  EXPECT_EQ(kEntryTrampoline.size(), 8u);
  EXPECT_EQ(kEntryPoint, 0x4C010u);
  EXPECT_EQ(kDataBase, 0x586E0u);
  EXPECT_FALSE(kRuntimeState.overlaps(kLinkerRegion2));
  EXPECT_EQ(kLinkerRegion2.begin % kStandardElementSize, 0u);
  EXPECT_EQ(element_of(kLinkerRegion2.begin), MemoryElement(element_of(kDataBase).index() + 1));
  EXPECT_TRUE(is_executable(kLinkerRegion1));
  EXPECT_TRUE(is_executable(kLinkerRegion2));
  EXPECT_TRUE(is_loadable(kEntryTrampoline));
}

TEST(MemoryMap, WorkerStackBases) {
  const std::uint32_t expected[] = {0x580E0, 0x581E0, 0x582E0, 0x583E0, 0x584E0, 0x585E0};
  for (unsigned worker = 0; worker < kWorkerCount; ++worker) {
    EXPECT_EQ(worker_stack_base(worker), expected[worker]) << "worker " << worker;
  }
  EXPECT_EQ(kSupervisorStackInitial, 0x586E0u);
  try {
    (void)worker_stack_base(6);
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(error.message().find("worker 6"), std::string::npos) << error.message();
  }
}

TEST(MemoryMap, Alignment) {
  EXPECT_TRUE(is_word_aligned(0x4C010));
  EXPECT_FALSE(is_word_aligned(0x4C012));
  EXPECT_TRUE(is_aligned(0x50180, kH2dAlignment));
  EXPECT_FALSE(is_aligned(0x50170, kH2dAlignment));
  EXPECT_TRUE(is_aligned(0x50008, kPairedAlignment));
}

// ---------------------------------------------------------------------------
// Address ranges

TEST(MemoryRange, FromSizeAtTheTopOfTheAddressSpace) {
  EXPECT_EQ(AddressRange::from_size(0xFFFFFFF0, 0xF), (AddressRange{0xFFFFFFF0, 0xFFFFFFFF}));
  EXPECT_TRUE(AddressRange::from_size(0xFFFFFFFF, 0).empty());
}

TEST(MemoryRange, FromSizeThatWrapsIsRejected) {
  try {
    (void)AddressRange::from_size(0xFFFFFFF0, 0x10, "segments[3]");
    FAIL() << "expected ArithmeticError";
  } catch (const ArithmeticError& error) {
    EXPECT_EQ(error.message(), "segments[3]: 0xfffffff0 + 0x10 overflows 32-bit arithmetic");
  }
  EXPECT_THROW((void)AddressRange::from_size(0x4C000, 0xFFFFFFFF), ArithmeticError);
}

TEST(MemoryRange, ReversedBoundsAreRejected) {
  EXPECT_THROW((AddressRange{0x50000, 0x4FFFF}), ArithmeticError);
}

TEST(MemoryRange, ContainsAndOverlaps) {
  const AddressRange range{0x50000, 0x50010};
  EXPECT_EQ(range.size(), 0x10u);
  EXPECT_TRUE(range.contains(0x50000u));
  EXPECT_FALSE(range.contains(0x50010u));
  EXPECT_TRUE(range.contains(AddressRange{0x50010, 0x50010}));
  EXPECT_TRUE(range.overlaps(AddressRange{0x5000F, 0x50020}));
  EXPECT_FALSE(range.overlaps(AddressRange{0x50010, 0x50020}));
  EXPECT_FALSE(range.overlaps(AddressRange{0x50008, 0x50008}));
  EXPECT_EQ(fmt::format("{}", range), "[0x50000, 0x50010)");
}

// A non-empty range in SRAM touches exactly the elements whose ranges it
// overlaps; the oracle walks every element.
RC_GTEST_PROP(MemoryRangeProperties, ElementsOfAgreesWithElementRanges, ()) {
  const auto begin = *rc::gen::inRange<std::uint32_t>(kSramBase, kSramEnd);
  const auto end = *rc::gen::inRange<std::uint32_t>(begin + 1, kSramEnd + 1);
  const AddressRange range{begin, end};
  const ElementSet touched = elements_of(range);
  for (unsigned index = 0; index < kElementCount; ++index) {
    RC_ASSERT(touched.contains(MemoryElement(index)) ==
              element_range(MemoryElement(index)).overlaps(range));
  }
}

RC_GTEST_PROP(MemoryRangeProperties, FromSizeNeverWraps,
              (std::uint32_t begin, std::uint32_t size)) {
  const std::uint64_t wide_end = std::uint64_t{begin} + size;
  if (wide_end > 0xFFFFFFFFu) {
    RC_ASSERT_THROWS_AS(AddressRange::from_size(begin, size), ArithmeticError);
  } else {
    const AddressRange range = AddressRange::from_size(begin, size);
    RC_ASSERT(range.begin == begin);
    RC_ASSERT(range.size() == size);
  }
}

}  // namespace
}  // namespace tessera::target
