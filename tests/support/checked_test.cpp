#include "support/checked.hpp"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace tessera {
namespace {

// GCC extension; the oracle needs wider arithmetic than the code under test.
__extension__ typedef unsigned __int128 Wide;

constexpr auto kMax64 = std::numeric_limits<std::uint64_t>::max();

TEST(Checked, AddInRange) { EXPECT_EQ(checked_add<std::uint64_t>(2, 3), 5u); }

TEST(Checked, AddThatWraps64BitsIsAnError) {
  // review-findings.md #2: blob_offset + file_size wrapped and passed validation.
  try {
    checked_add<std::uint64_t>(kMax64, 1, "blobOffset + fileSize");
    FAIL() << "expected ArithmeticError";
  } catch (const ArithmeticError& error) {
    EXPECT_EQ(std::string(error.what()),
              "blobOffset + fileSize: 0xffffffffffffffff + 0x1 overflows 64-bit arithmetic");
  }
}

TEST(Checked, MulThatOverflowsIsAnError) {
  EXPECT_EQ(checked_mul<std::uint32_t>(65536, 65535), 4294901760u);
  EXPECT_THROW(checked_mul<std::uint32_t>(65536, 65536), ArithmeticError);
}

TEST(Checked, SubUnderflowIsAnError) {
  EXPECT_EQ(checked_sub<std::uint16_t>(5, 5), 0u);
  EXPECT_THROW(checked_sub<std::uint16_t>(1, 2), ArithmeticError);
}

TEST(Checked, RangeAtTheLimitIsAccepted) {
  EXPECT_EQ(checked_range(0x10, 0x10, 0x20), 0x20u);
  EXPECT_EQ(checked_range(0x20, 0, 0x20), 0x20u);
}

TEST(Checked, RangePastTheLimitNamesTheRange) {
  try {
    checked_range(0x10, 0x11, 0x20, "segments[3]");
    FAIL() << "expected ArithmeticError";
  } catch (const ArithmeticError& error) {
    EXPECT_EQ(std::string(error.what()), "segments[3]: [0x10, 0x21) exceeds the limit 0x20");
  }
}

TEST(Checked, RangeWhoseEndWrapsIsRejected) {
  EXPECT_THROW(checked_range(kMax64, 2, kMax64), ArithmeticError);
}

TEST(Checked, CastOutOfRange) {
  EXPECT_EQ(checked_cast<std::uint8_t>(255), 255u);
  EXPECT_THROW(checked_cast<std::uint8_t>(256), ArithmeticError);
  EXPECT_THROW(checked_cast<std::uint32_t>(-1), ArithmeticError);
  EXPECT_EQ(checked_cast<std::int16_t>(-32768), -32768);
}

// The oracle is 128-bit arithmetic, which cannot overflow for these operands.
RC_GTEST_PROP(CheckedProperties, AddAgreesWithWideArithmetic, (std::uint64_t a, std::uint64_t b)) {
  const Wide wide = static_cast<Wide>(a) + b;
  if (wide > kMax64) {
    RC_ASSERT_THROWS_AS(checked_add(a, b), ArithmeticError);
  } else {
    RC_ASSERT(checked_add(a, b) == static_cast<std::uint64_t>(wide));
  }
}

RC_GTEST_PROP(CheckedProperties, MulAgreesWithWideArithmetic, (std::uint64_t a, std::uint64_t b)) {
  const Wide wide = static_cast<Wide>(a) * b;
  if (wide > kMax64) {
    RC_ASSERT_THROWS_AS(checked_mul(a, b), ArithmeticError);
  } else {
    RC_ASSERT(checked_mul(a, b) == static_cast<std::uint64_t>(wide));
  }
}

RC_GTEST_PROP(CheckedProperties, RangeAcceptsExactlyTheRangesInsideTheLimit,
              (std::uint64_t offset, std::uint64_t size, std::uint64_t limit)) {
  const Wide end = static_cast<Wide>(offset) + size;
  if (end <= limit) {
    RC_ASSERT(checked_range(offset, size, limit) == static_cast<std::uint64_t>(end));
  } else {
    RC_ASSERT_THROWS_AS(checked_range(offset, size, limit), ArithmeticError);
  }
}

}  // namespace
}  // namespace tessera
