#pragma once
// The Colossus ELF profile the linker accepts (package-elf-profile.md §3):
// ELF32, little-endian, e_machine 0xF8, relocatable objects (ET_REL) with
// RELA relocations. The constants are the System V gABI's; the relocation
// numbers are the Colossus psABI's as the SDK's tools emit them (§3.2). This
// header is the one owner of those numbers: reader, relocations, linker and
// the tests' object writer (tests/testing/elf_writer.hpp) all include it.

#include <cstdint>
#include <optional>
#include <string_view>

#include "support/error.hpp"

namespace tessera::compiler::elf {

// A malformed or foreign object file: the message names the file and the field.
class ObjectError : public InputError {
 public:
  using InputError::InputError;
};

// Objects that are well formed but do not link: an undefined or duplicate
// symbol, a relocation out of range, a section that does not fit.
class LinkError : public Error {
 public:
  using Error::Error;
};

// e_ident and the header (gABI).
inline constexpr std::uint8_t kElfMagic[4] = {0x7F, 'E', 'L', 'F'};
inline constexpr std::uint8_t kElfClass32 = 1;
inline constexpr std::uint8_t kElfData2Lsb = 1;
inline constexpr std::uint8_t kElfVersionCurrent = 1;
inline constexpr std::uint16_t kElfTypeRel = 1;
// Graphcore Colossus (the IPU), as the SDK's popc and the prior art's inspect_object use it.
inline constexpr std::uint16_t kMachineColossus = 0xF8;
inline constexpr std::uint32_t kElfHeaderBytes = 52;
inline constexpr std::uint32_t kSectionHeaderBytes = 40;
inline constexpr std::uint32_t kSymbolBytes = 16;
inline constexpr std::uint32_t kRelaBytes = 12;
inline constexpr std::uint32_t kRelBytes = 8;

// Section types.
inline constexpr std::uint32_t kShtNull = 0;
inline constexpr std::uint32_t kShtProgbits = 1;
inline constexpr std::uint32_t kShtSymtab = 2;
inline constexpr std::uint32_t kShtStrtab = 3;
inline constexpr std::uint32_t kShtRela = 4;
inline constexpr std::uint32_t kShtNobits = 8;
inline constexpr std::uint32_t kShtRel = 9;
inline constexpr std::uint32_t kShtGroup = 17;  // a section group (COMDAT: gABI "Section Groups")

// Section flags.
inline constexpr std::uint32_t kShfWrite = 0x1;
inline constexpr std::uint32_t kShfAlloc = 0x2;
inline constexpr std::uint32_t kShfExecInstr = 0x4;
inline constexpr std::uint32_t kShfGroup = 0x200;  // the section is a member of a group
inline constexpr std::uint32_t kShfTls = 0x400;

// An SHT_GROUP section's first word: its flags. GRP_COMDAT: one copy of the
// group per link, the first by signature (templates instantiated in several objects).
inline constexpr std::uint32_t kGrpComdat = 0x1;
inline constexpr std::uint32_t kGroupWordBytes = 4;

// Special section indices.
inline constexpr std::uint16_t kShnUndef = 0;
inline constexpr std::uint16_t kShnLoReserve = 0xFF00;
inline constexpr std::uint16_t kShnAbs = 0xFFF1;
inline constexpr std::uint16_t kShnCommon = 0xFFF2;
inline constexpr std::uint16_t kShnXindex = 0xFFFF;

// Symbol bindings and types (st_info = bind << 4 | type).
inline constexpr std::uint8_t kStbLocal = 0;
inline constexpr std::uint8_t kStbGlobal = 1;
inline constexpr std::uint8_t kStbWeak = 2;
inline constexpr std::uint8_t kSttNotype = 0;
inline constexpr std::uint8_t kSttObject = 1;
inline constexpr std::uint8_t kSttFunc = 2;
inline constexpr std::uint8_t kSttSection = 3;
inline constexpr std::uint8_t kSttFile = 4;
inline constexpr std::uint8_t kSttTls = 6;

// The architectural region-0 base that image-relative relocations count from
// (§3.2): never inferred from where sections happened to be placed.
inline constexpr std::uint32_t kImageBase = 0x4C000;

// R_COLOSSUS_* (§3.2's table). 10–13 and ≥ 18 are not Colossus relocations.
enum class RelocationType : std::uint8_t {
  kNone = 0,
  k8 = 1,
  k16 = 2,
  k20 = 3,
  k32 = 4,
  k64 = 5,
  kRelative16S2 = 6,
  k18S2 = 7,
  k19S2 = 8,
  kRun = 9,
  k16S3 = 14,
  k16S4 = 15,
  k16S5 = 16,
  k21 = 17,
};

// The type for an r_info type number; nullopt for numbers the table does not define.
std::optional<RelocationType> relocation_type(std::uint32_t number);
// "R_COLOSSUS_19_S2".
std::string_view relocation_name(RelocationType type);
// Bytes the relocation reads and writes at r_offset (0 for NONE).
std::uint32_t relocation_width(RelocationType type);

}  // namespace tessera::compiler::elf
