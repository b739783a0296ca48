#pragma once
// The secondary bootloader the PCI autoloader installs on every tile
// (driver-host-protocol.md §3.1, ipu21-target.md §2.3).
//
// Decision: the input is the SDK's bootloader ELF (tile_bootloader_cc_ipu21.elf),
// not a flat image, because that is the file a C600 machine has and the
// reference defines the image by its ELF segment. A small bounds-checked
// reader takes what the loader needs and nothing else: ELF32 or ELF64,
// little-endian; among the PT_LOAD segments exactly one is non-empty (memsz
// > 0) at vaddr 0x4C000 (others are ignored, as in the reference); its file
// bytes are the image, at most 4096 bytes, zero-padded to a multiple of 1024.
// Every header field is range-checked with support/checked.hpp.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace tessera::driver {

inline constexpr std::uint32_t kBootloaderPadding = 1024;

struct Bootloader {
  // Zero-padded to a whole number of KiB; 1..4 KiB.
  std::vector<std::uint8_t> image;

  std::uint32_t kib() const noexcept { return static_cast<std::uint32_t>(image.size() / 1024); }
};

// BootloaderError naming the header field for any defect.
Bootloader parse_bootloader_elf(std::span<const std::uint8_t> elf);
// Reads and parses; files above 16 MiB are refused before reading.
Bootloader read_bootloader(const std::filesystem::path& path);

}  // namespace tessera::driver
