#pragma once
// Builds small little-endian ELF files (ELF32 or ELF64) with chosen program
// headers, so the bootloader reader can be tested without the SDK.

#include <cstdint>
#include <vector>

namespace tessera::testing {

struct ElfSegment {
  std::uint32_t type = 1;  // PT_LOAD
  std::uint64_t vaddr = 0x4C000;
  std::vector<std::uint8_t> bytes;
  std::uint64_t memsz = 0;  // 0: bytes.size()
};

inline void put_le(std::vector<std::uint8_t>& out, std::size_t at, std::uint64_t value,
                   unsigned width) {
  if (out.size() < at + width) out.resize(at + width, 0);
  for (unsigned i = 0; i < width; ++i) out[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

// ELF header, then program headers, then each segment's bytes.
inline std::vector<std::uint8_t> build_elf(const std::vector<ElfSegment>& segments,
                                           bool elf64 = false) {
  const unsigned word = elf64 ? 8 : 4;
  const std::size_t header = elf64 ? 64 : 52;
  const std::size_t phdr = elf64 ? 56 : 32;
  std::size_t data = header + phdr * segments.size();
  // Sized once: growing it later trips a g++ 12 -O3 false -Warray-bounds.
  std::vector<std::uint8_t> out(data, 0);
  out[0] = 0x7F;
  out[1] = 'E';
  out[2] = 'L';
  out[3] = 'F';
  out[4] = elf64 ? 2 : 1;
  out[5] = 1;  // little-endian
  out[6] = 1;
  put_le(out, 16, 2, 2);  // ET_EXEC
  put_le(out, elf64 ? 32 : 28, header, word);       // e_phoff
  put_le(out, elf64 ? 54 : 42, phdr, 2);            // e_phentsize
  put_le(out, elf64 ? 56 : 44, segments.size(), 2);  // e_phnum
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const ElfSegment& s = segments[i];
    const std::size_t at = header + i * phdr;
    const std::uint64_t memsz = s.memsz != 0 ? s.memsz : s.bytes.size();
    put_le(out, at, s.type, 4);
    if (elf64) {
      put_le(out, at + 8, data, 8);
      put_le(out, at + 16, s.vaddr, 8);
      put_le(out, at + 24, s.vaddr, 8);
      put_le(out, at + 32, s.bytes.size(), 8);
      put_le(out, at + 40, memsz, 8);
    } else {
      put_le(out, at + 4, data, 4);
      put_le(out, at + 8, s.vaddr, 4);
      put_le(out, at + 12, s.vaddr, 4);
      put_le(out, at + 16, s.bytes.size(), 4);
      put_le(out, at + 20, memsz, 4);
    }
    data += s.bytes.size();
  }
  for (const auto& s : segments) out.insert(out.end(), s.bytes.begin(), s.bytes.end());
  return out;
}

// A plausible bootloader: `size` bytes of a recognisable pattern at 0x4C000.
inline std::vector<std::uint8_t> bootloader_elf(std::size_t size = 3000) {
  ElfSegment segment;
  for (std::size_t i = 0; i < size; ++i) segment.bytes.push_back(static_cast<std::uint8_t>(i * 13 + 1));
  return build_elf({segment});
}

}  // namespace tessera::testing
