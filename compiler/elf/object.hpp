#pragma once
// Reading one Colossus relocatable object (format.hpp's profile) into plain
// tables, validated completely before the linker looks at it (the safetensors
// habit, docs/STYLE.md): every header, section, symbol and relocation field
// that comes from the file is bounds-checked with checked arithmetic, so a
// truncated, corrupted or foreign file is an ObjectError naming the file and
// the field ("kernel.o: e_machine: 0x3e, expected 0xf8 (Colossus)"), never a
// crash or a read past the buffer.
//
// What the reader refuses besides malformed bytes: ELF64, big-endian, other
// machines, anything but ET_REL, REL sections (implicit addends: §3.2 uses
// explicit RELA addends only), COMMON symbols, extended section numbering
// (SHN_XINDEX), more than one symbol table, and section groups that are not
// self-consistent (below). Relocation types and offsets are
// checked when a relocation is applied (linker.hpp), where the message can
// name the symbol and the placed value.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "compiler/elf/format.hpp"

namespace tessera::compiler::elf {

struct Relocation {
  std::uint32_t offset = 0;  // r_offset, in the target section
  std::uint32_t type = 0;    // ELF32_R_TYPE, unchecked until applied
  std::uint32_t symbol = 0;  // ELF32_R_SYM, < symbols.size()
  std::int32_t addend = 0;   // r_addend
};

// "No group" for Section::group.
inline constexpr std::uint32_t kNoGroup = 0xFFFFFFFF;

struct Section {
  std::string name;
  std::uint32_t type = kShtNull;
  std::uint32_t flags = 0;
  std::uint32_t size = 0;               // sh_size (for NOBITS, the zero-filled bytes)
  std::uint32_t alignment = 1;          // sh_addralign, 0 read as 1
  std::vector<std::uint8_t> bytes;      // the file's bytes; empty for NOBITS
  std::vector<Relocation> relocations;  // from the RELA sections that target this one
  std::uint32_t group = kNoGroup;       // index into ObjectFile::groups when SHF_GROUP

  // What the linker may place: allocatable PROGBITS or NOBITS, not TLS, not empty (§3.1).
  bool placeable() const noexcept {
    return (flags & kShfAlloc) != 0 && (flags & kShfTls) == 0 &&
           (type == kShtProgbits || type == kShtNobits) && size > 0;
  }
};

struct Symbol {
  std::string name;
  std::uint32_t value = 0;
  std::uint32_t size = 0;
  std::uint8_t binding = kStbLocal;
  std::uint8_t type = kSttNotype;
  // kShnUndef, kShnAbs, or a section index < sections.size() with value ≤ that section's size.
  std::uint16_t section = kShnUndef;

  bool defined() const noexcept { return section != kShnUndef; }
  bool global() const noexcept { return binding == kStbGlobal || binding == kStbWeak; }
};

// An SHT_GROUP section (gABI "Section Groups"): sections kept or discarded
// together. A COMDAT group is linked once per signature (linker.hpp). What the
// reader checks: sh_link is the symbol table, sh_info a symbol of it, the flag
// word holds no bit but GRP_COMDAT, every member is a section of the file that
// is not a group or a symbol or string table, is in no other group and carries
// SHF_GROUP; a section with SHF_GROUP is a member of some group; a member RELA
// section relocates a member of the same group.
struct SectionGroup {
  std::uint32_t section = 0;  // the SHT_GROUP section's index
  // The signature symbol's name; for an unnamed STT_SECTION signature, that section's name.
  std::string signature;
  bool comdat = false;
  std::vector<std::uint32_t> members;  // section indices, as listed (RELA members included)
};

struct ObjectFile {
  std::string name;               // the file's name, for messages
  std::vector<Section> sections;  // by section-header index (0 is the null section)
  std::vector<Symbol> symbols;    // by symbol index (0 is the null symbol); empty without a symtab
  std::vector<SectionGroup> groups;  // in section-header order
};

// Parses `bytes` as the object `name`; ObjectError naming it and the field otherwise.
ObjectFile read_object(std::string name, std::span<const std::uint8_t> bytes);

// Reads the file and parses it (IoError when it cannot be read).
ObjectFile read_object_file(const std::filesystem::path& path);

}  // namespace tessera::compiler::elf
