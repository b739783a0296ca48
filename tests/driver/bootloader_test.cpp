// The bootloader ELF reader (driver-host-protocol.md §3.1) on built ELFs and
// on corrupted ones.

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "driver/bootloader.hpp"
#include "driver/errors.hpp"
#include "tests/driver/elf_builder.hpp"

namespace tessera::driver {
namespace {

using testing::build_elf;
using testing::ElfSegment;
using testing::put_le;

std::vector<std::uint8_t> pattern(std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 3);
  return bytes;
}

std::string error_of(const std::vector<std::uint8_t>& elf) {
  try {
    parse_bootloader_elf(elf);
  } catch (const InputError& error) {  // BootloaderError or ArithmeticError
    return error.what();
  }
  return "(no error)";
}

TEST(Bootloader, TheSegmentAt0x4C000IsPaddedToWholeKiB) {
  for (const bool elf64 : {false, true}) {
    SCOPED_TRACE(elf64);
    // Other segments (not at 0x4C000, or empty, or not PT_LOAD) are ignored.
    const auto elf = build_elf({ElfSegment{1, 0x60000, pattern(100)},
                                ElfSegment{1, 0x4C000, pattern(2500)},
                                ElfSegment{1, 0x4C000, {}, 0},
                                ElfSegment{4, 0x4C000, pattern(8)}},
                               elf64);
    const Bootloader bootloader = parse_bootloader_elf(elf);
    ASSERT_EQ(bootloader.image.size(), 3072u);
    EXPECT_EQ(bootloader.kib(), 3u);
    const auto expected = pattern(2500);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), bootloader.image.begin()));
    EXPECT_TRUE(std::all_of(bootloader.image.begin() + 2500, bootloader.image.end(),
                            [](std::uint8_t b) { return b == 0; }));
  }
  EXPECT_EQ(parse_bootloader_elf(build_elf({ElfSegment{1, 0x4C000, pattern(4096)}})).image.size(),
            4096u);
  EXPECT_EQ(parse_bootloader_elf(build_elf({ElfSegment{1, 0x4C000, pattern(1)}})).image.size(),
            1024u);
}

TEST(Bootloader, DefectsAreNamed) {
  EXPECT_EQ(error_of({1, 2, 3}), "e_ident: not an ELF file (no \\x7fELF magic)");
  auto big_endian = build_elf({ElfSegment{1, 0x4C000, pattern(16)}});
  big_endian[5] = 2;
  EXPECT_EQ(error_of(big_endian), "e_ident[EI_DATA]: 2; only little-endian (1) is an IPU ELF");
  auto bad_class = build_elf({ElfSegment{1, 0x4C000, pattern(16)}});
  bad_class[4] = 3;
  EXPECT_EQ(error_of(bad_class), "e_ident[EI_CLASS]: 3 is neither ELF32 nor ELF64");
  EXPECT_EQ(error_of(build_elf({ElfSegment{1, 0x4C000, pattern(4097)}})),
            "program header 0.p_filesz: 4097 bytes; the bootloader must be 1 to 4096 bytes");
  EXPECT_EQ(error_of(build_elf({ElfSegment{1, 0x4C000, pattern(8)},
                                ElfSegment{1, 0x4C000, pattern(8)}})),
            "program header 1: a second non-empty segment at 0x4c000");
  EXPECT_EQ(error_of(build_elf({ElfSegment{1, 0x50000, pattern(8)}})),
            "program headers: no non-empty PT_LOAD segment at 0x4c000");
  // Program headers beyond the file.
  auto truncated = build_elf({ElfSegment{1, 0x4C000, pattern(8)}});
  truncated.resize(60);
  EXPECT_EQ(error_of(truncated),
            "program headers: e_phoff + e_phentsize * e_phnum: [0x34, 0x54) exceeds the limit "
            "0x3c");
  // A segment whose bytes lie beyond the file; an e_phoff that wraps.
  auto beyond = build_elf({ElfSegment{1, 0x4C000, pattern(8)}});
  put_le(beyond, 52 + 4, 0xFFFFFFF0, 4);
  EXPECT_EQ(error_of(beyond),
            "program header 0: p_offset + p_filesz: [0xfffffff0, 0xfffffff8) exceeds the limit "
            "0x5c");
  auto wraps = build_elf({ElfSegment{1, 0x4C000, pattern(8)}}, true);
  put_le(wraps, 32, 0xFFFFFFFFFFFFFFF0, 8);
  EXPECT_EQ(error_of(wraps),
            "program headers: e_phoff + e_phentsize * e_phnum: 0xfffffffffffffff0 + 0x38 "
            "overflows 64-bit arithmetic");
  auto small_entries = build_elf({ElfSegment{1, 0x4C000, pattern(8)}});
  put_le(small_entries, 42, 16, 2);
  EXPECT_EQ(error_of(small_entries), "e_phentsize: 16 is smaller than a program header (32)");
}

RC_GTEST_PROP(Bootloader, CorruptedBytesNeverCrash,
              (std::vector<std::pair<std::uint16_t, std::uint8_t>> edits, bool elf64)) {
  auto elf = build_elf({ElfSegment{1, 0x4C000, pattern(300)}}, elf64);
  for (const auto& [at, value] : edits) elf[at % elf.size()] = value;
  try {
    const Bootloader bootloader = parse_bootloader_elf(elf);
    RC_ASSERT(!bootloader.image.empty());
    RC_ASSERT(bootloader.image.size() <= 4096u);
    RC_ASSERT(bootloader.image.size() % 1024 == 0);
  } catch (const InputError&) {
  }
}

}  // namespace
}  // namespace tessera::driver
