// Each Colossus relocation type's field, range, alignment and sign
// (package-elf-profile.md §3.2), with §3.8's vectors exactly.
#include "compiler/elf/relocation.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/compiler/elf/expect_error.hpp"

namespace tessera::compiler::elf {
namespace {

using testing::expect_error;
using R = RelocationType;

std::vector<std::uint8_t> le(std::uint64_t value, std::uint32_t width) {
  std::vector<std::uint8_t> bytes(width);
  for (std::uint32_t i = 0; i < width; ++i) bytes[i] = static_cast<std::uint8_t>(value >> (8 * i));
  return bytes;
}

std::uint64_t apply(R type, std::uint64_t placeholder, std::int64_t value) {
  auto field = le(placeholder, relocation_width(type));
  apply_relocation(type, value, field, kImageBase);
  std::uint64_t out = 0;
  for (std::size_t i = 0; i < field.size(); ++i) out |= std::uint64_t{field[i]} << (8 * i);
  return out;
}

// §3.8 (lib.rs 762–794 of the prior art), bit for bit.
TEST(ColossusRelocation, PriorArtVectors) {
  EXPECT_EQ(apply(R::k20, 0xFFF00000, 0xABCDE), 0xFFFABCDEu);
  EXPECT_EQ(apply(R::k19S2, 0xFFF80000, 0x50120) & 0x7FFFF, 0x14048u);
  EXPECT_EQ(apply(R::kRun, 0xFFF0F000, 0x50000) & 0x000F0FFF, 0x10000u);
}

struct Row {
  R type;
  std::uint64_t placeholder;  // all ones: shows which bits the field clears and which it keeps
  std::int64_t value;
  std::uint64_t expected;
};

// In range: the field takes the (scaled) value, the other bits of the word stay.
TEST(ColossusRelocation, EachTypeInRange) {
  const Row rows[] = {
      {R::k8, 0xAA, 0x12, 0x12},
      {R::k8, 0xAA, 0xFF, 0xFF},
      {R::k16, 0xFFFF, 0x1234, 0x1234},
      {R::k20, 0xFFFFFFFF, 0x12345, 0xFFF12345},
      {R::k32, 0x0, 0xDEADBEEF, 0xDEADBEEF},
      {R::k64, ~0ull, 0x123456789, 0x123456789},
      {R::kRelative16S2, 0xFFFF, kImageBase + 0x100, 0x40},
      {R::kRelative16S2, 0xFFFF, kImageBase, 0x0},
      {R::k18S2, 0xFFFFFFFF, 0x50120, 0xFFFD4048},
      {R::k19S2, 0xFFFFFFFF, 0x50120, 0xFFF94048},
      {R::kRun, 0xFFFFFFFF, kImageBase + 4 * 0xABCD, 0xFFFAFBCD},
      {R::kRun, 0x0, kImageBase, 0x0},
      {R::k16S3, 0xFFFF, 0x80, 0x10},
      {R::k16S4, 0xFFFF, 0x100, 0x10},
      {R::k16S5, 0xFFFF, 0x200, 0x10},
      {R::k21, 0xFFFFFFFF, 0x12345, 0xFFE12345},
      {R::k21, 0x0, 0x1FFFFF, 0x1FFFFF},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(apply(row.type, row.placeholder, row.value), row.expected)
        << relocation_name(row.type) << " of " << std::hex << row.value;
  }
}

// The last value each type accepts, and the next one it refuses.
TEST(ColossusRelocation, EachTypeAtAndPastItsRange) {
  for (const R type : {R::k8, R::k16, R::k20, R::k32, R::kRelative16S2, R::k18S2, R::k19S2, R::kRun,
                       R::k16S3, R::k16S4, R::k16S5, R::k21}) {
    const RelocationRange range = relocation_range(type);
    SCOPED_TRACE(std::string(relocation_name(type)));
    EXPECT_NO_THROW(apply(type, 0, static_cast<std::int64_t>(range.highest)));
    EXPECT_NO_THROW(apply(type, 0, static_cast<std::int64_t>(range.lowest)));
    expect_error<LinkError>(
        [&] { apply(type, 0, static_cast<std::int64_t>(range.highest + range.step)); },
        {relocation_name(type), "out of range", "allowed"});
    expect_error<LinkError>([&] { apply(type, 0, -4); }, {relocation_name(type), "negative"});
    if (range.lowest > 0) {
      expect_error<LinkError>(
          [&] { apply(type, 0, static_cast<std::int64_t>(range.lowest - range.step)); },
          {"out of range"});
    }
  }
  // R_COLOSSUS_64 takes every non-negative value.
  EXPECT_EQ(apply(R::k64, 0, INT64_MAX), static_cast<std::uint64_t>(INT64_MAX));
  expect_error<LinkError>([] { apply(R::k64, 0, INT64_MIN); }, {"R_COLOSSUS_64", "negative"});
}

TEST(ColossusRelocation, ScaledTypesRefuseMisalignedValues) {
  const std::pair<R, std::int64_t> rows[] = {
      {R::kRelative16S2, kImageBase + 2},
      {R::k18S2, 0x50122},
      {R::k19S2, 0x50121},
      {R::kRun, kImageBase + 1},
      {R::k16S3, 0x84},
      {R::k16S4, 0x108},
      {R::k16S5, 0x210},
  };
  for (const auto& [type, value] : rows) {
    expect_error<LinkError>([&] { apply(type, 0, value); },
                            {relocation_name(type), "not a multiple of"});
  }
}

TEST(ColossusRelocation, NumbersOutsideTheTableAreNotTypes) {
  for (const std::uint32_t number : {10u, 11u, 12u, 13u, 18u, 255u}) {
    EXPECT_FALSE(relocation_type(number).has_value()) << number;
  }
  for (std::uint32_t number = 0; number <= 9; ++number) EXPECT_TRUE(relocation_type(number));
  for (std::uint32_t number = 14; number <= 17; ++number) EXPECT_TRUE(relocation_type(number));
}

}  // namespace
}  // namespace tessera::compiler::elf
