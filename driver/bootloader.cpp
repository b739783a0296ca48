#include "driver/bootloader.hpp"

#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "driver/errors.hpp"
#include "support/checked.hpp"
#include "target/memory_map.hpp"

namespace tessera::driver {
namespace {

constexpr std::uint32_t kPtLoad = 1;
constexpr std::uintmax_t kMaxBootloaderFileBytes = 16u << 20;

// Little-endian fields read only after a checked range test.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::uint64_t read(std::uint64_t offset, unsigned width, const std::string& field) const {
    checked_range(offset, width, bytes_.size(), field);
    std::uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i) {
      value |= std::uint64_t{bytes_[static_cast<std::size_t>(offset) + i]} << (8 * i);
    }
    return value;
  }

 private:
  std::span<const std::uint8_t> bytes_;
};

struct Layout {
  unsigned word;  // 4 or 8
  std::uint64_t phoff_at, phentsize_at, phnum_at, header_bytes, phdr_bytes;
  std::uint64_t offset_at, vaddr_at, filesz_at, memsz_at;
};
constexpr Layout kElf32{4, 28, 42, 44, 52, 32, 4, 8, 16, 20};
constexpr Layout kElf64{8, 32, 54, 56, 64, 56, 8, 16, 32, 40};

}  // namespace

Bootloader parse_bootloader_elf(std::span<const std::uint8_t> elf) {
  const Reader reader(elf);
  if (elf.size() < 16 || elf[0] != 0x7F || elf[1] != 'E' || elf[2] != 'L' || elf[3] != 'F') {
    throw BootloaderError("e_ident", "not an ELF file (no \\x7fELF magic)");
  }
  if (elf[5] != 1) {
    throw BootloaderError("e_ident[EI_DATA]",
                          fmt::format("{}; only little-endian (1) is an IPU ELF", elf[5]));
  }
  if (elf[4] != 1 && elf[4] != 2) {
    throw BootloaderError("e_ident[EI_CLASS]", fmt::format("{} is neither ELF32 nor ELF64", elf[4]));
  }
  const Layout& layout = elf[4] == 1 ? kElf32 : kElf64;
  checked_range(0, layout.header_bytes, elf.size(), "ELF header");
  const std::uint64_t phoff = reader.read(layout.phoff_at, layout.word, "e_phoff");
  const std::uint64_t phentsize = reader.read(layout.phentsize_at, 2, "e_phentsize");
  const std::uint64_t phnum = reader.read(layout.phnum_at, 2, "e_phnum");
  if (phnum != 0 && phentsize < layout.phdr_bytes) {
    throw BootloaderError("e_phentsize", fmt::format("{} is smaller than a program header ({})",
                                                     phentsize, layout.phdr_bytes));
  }
  with_context("program headers", [&] {
    checked_range(phoff, checked_mul(phentsize, phnum, "e_phentsize * e_phnum"), elf.size(),
                  "e_phoff + e_phentsize * e_phnum");
  });

  std::optional<Bootloader> found;
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const std::string at = fmt::format("program header {}", i);
    const std::uint64_t base = phoff + i * phentsize;  // inside the file: checked above
    if (reader.read(base, 4, at + ".p_type") != kPtLoad) continue;
    const std::uint64_t vaddr = reader.read(base + layout.vaddr_at, layout.word, at + ".p_vaddr");
    const std::uint64_t memsz = reader.read(base + layout.memsz_at, layout.word, at + ".p_memsz");
    if (vaddr != target::kBootloaderBase || memsz == 0) continue;
    if (found) {
      throw BootloaderError(at, fmt::format("a second non-empty segment at {:#x}",
                                            target::kBootloaderBase));
    }
    const std::uint64_t offset =
        reader.read(base + layout.offset_at, layout.word, at + ".p_offset");
    const std::uint64_t filesz =
        reader.read(base + layout.filesz_at, layout.word, at + ".p_filesz");
    with_context(at, [&] { checked_range(offset, filesz, elf.size(), "p_offset + p_filesz"); });
    if (filesz == 0 || filesz > target::kBootloaderMaxSize) {
      throw BootloaderError(at + ".p_filesz",
                            fmt::format("{} bytes; the bootloader must be 1 to {} bytes", filesz,
                                        target::kBootloaderMaxSize));
    }
    Bootloader bootloader;
    const auto first = elf.begin() + static_cast<std::ptrdiff_t>(offset);
    bootloader.image.assign(first, first + static_cast<std::ptrdiff_t>(filesz));
    const std::size_t padded =
        (bootloader.image.size() + kBootloaderPadding - 1) / kBootloaderPadding * kBootloaderPadding;
    bootloader.image.resize(padded, 0);
    found = std::move(bootloader);
  }
  if (!found) {
    throw BootloaderError("program headers",
                          fmt::format("no non-empty PT_LOAD segment at {:#x}",
                                      target::kBootloaderBase));
  }
  return std::move(*found);
}

Bootloader read_bootloader(const std::filesystem::path& path) {
  return with_context(fmt::format("reading bootloader {}", path.string()), [&] {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error) throw IoError(fmt::format("cannot read: {}", error.message()));
    if (size > kMaxBootloaderFileBytes) {
      throw BootloaderError("size", fmt::format("{} bytes; refused above {}", size,
                                                kMaxBootloaderFileBytes));
    }
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
    if (!in || !in.read(reinterpret_cast<char*>(bytes.data()),
                        static_cast<std::streamsize>(bytes.size()))) {
      throw IoError("cannot read the file");
    }
    return parse_bootloader_elf(bytes);
  });
}

}  // namespace tessera::driver
