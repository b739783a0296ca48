#pragma once
// Builds Colossus relocatable objects (ELF32 LE, e_machine 0xF8, ET_REL,
// RELA) for tests: the linker's golden and error cases, the property that
// corrupted objects are errors, and the fake popc (fake_popc_object.cpp).
// The constants come from compiler/elf/format.hpp, the same owner the reader
// uses; the layout is written here independently, field by field, from the
// gABI: header, section bytes, .shstrtab, .strtab, .symtab, .rela.*, and the
// section header table last.

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/elf/format.hpp"

namespace tessera::testing {

class ElfWriter {
 public:
  ElfWriter();

  // Section indices as the reader will see them (1 is the first added).
  std::uint32_t add_section(std::string name, std::vector<std::uint8_t> bytes,
                            std::uint32_t flags = compiler::elf::kShfAlloc |
                                                  compiler::elf::kShfExecInstr,
                            std::uint32_t alignment = 4);
  std::uint32_t add_nobits(std::string name, std::uint32_t size, std::uint32_t alignment = 4,
                           std::uint32_t flags = compiler::elf::kShfAlloc |
                                                 compiler::elf::kShfWrite);
  // A non-allocated section (debug info, notes): the linker never places it.
  std::uint32_t add_unallocated(std::string name, std::vector<std::uint8_t> bytes);

  // Symbol indices (0 is the null symbol). Locals are written before globals,
  // as the gABI requires, so indices are resolved in build(); the returned
  // handle is what add_relocation takes.
  std::uint32_t add_symbol(std::string name, std::uint16_t section, std::uint32_t value = 0,
                           std::uint8_t binding = compiler::elf::kStbGlobal,
                           std::uint8_t type = compiler::elf::kSttFunc, std::uint32_t size = 0);
  std::uint32_t add_undefined(std::string name);
  std::uint32_t add_section_symbol(std::uint32_t section);

  // An SHT_GROUP section `.group` with signature `signature` (a symbol handle)
  // and `flag_word` (GRP_COMDAT by default) listing `members` and, as compilers
  // emit them, the RELA sections of those members. Members get SHF_GROUP
  // unless `mark_members` is false (for the reader's error case). Returns the
  // group section's index.
  std::uint32_t add_group(std::uint32_t signature, std::vector<std::uint32_t> members,
                          std::uint32_t flag_word = compiler::elf::kGrpComdat,
                          bool mark_members = true);

  void add_relocation(std::uint32_t section, std::uint32_t offset, std::uint32_t type,
                      std::uint32_t symbol, std::int32_t addend = 0);
  void add_relocation(std::uint32_t section, std::uint32_t offset,
                      compiler::elf::RelocationType type, std::uint32_t symbol,
                      std::int32_t addend = 0) {
    add_relocation(section, offset, static_cast<std::uint32_t>(type), symbol, addend);
  }

  std::vector<std::uint8_t> build() const;

 private:
  struct Section {
    std::string name;
    std::uint32_t type;
    std::uint32_t flags;
    std::uint32_t alignment;
    std::uint32_t size;
    std::vector<std::uint8_t> bytes;
  };
  struct SymbolEntry {
    std::string name;
    std::uint16_t section;
    std::uint32_t value;
    std::uint32_t size;
    std::uint8_t binding;
    std::uint8_t type;
  };
  struct GroupEntry {
    std::uint32_t section;  // the SHT_GROUP section's index
    std::uint32_t signature;  // handle
    std::uint32_t flag_word;
    std::vector<std::uint32_t> members;
  };
  struct RelocationEntry {
    std::uint32_t section;
    std::uint32_t offset;
    std::uint32_t type;
    std::uint32_t symbol;  // handle
    std::int32_t addend;
  };

  std::vector<Section> sections_;
  std::vector<SymbolEntry> symbols_;
  std::vector<RelocationEntry> relocations_;
  std::vector<GroupEntry> groups_;
};

// Little-endian patching of a built object, for foreign-ELF tests.
void poke_u16(std::vector<std::uint8_t>& bytes, std::size_t offset, std::uint16_t value);
void poke_u32(std::vector<std::uint8_t>& bytes, std::size_t offset, std::uint32_t value);

// One function `name` of `words` (little-endian) in .text.<name>, defined global.
std::vector<std::uint8_t> single_function_object(const std::string& name,
                                                 const std::vector<std::uint32_t>& words);

// A valid object exercising most of the reader: .text with R_COLOSSUS_32,
// _RUN, _19_S2 and _16_S3 relocations, .data with an R_COLOSSUS_64, .bss, an
// unallocated .comment, a local, a section symbol and an undefined
// `external`. It links with entry `main`, retained `buffer` and `external`
// given. The seed of the ELF property test and of the fuzz target.
std::vector<std::uint8_t> sample_colossus_object();

}  // namespace tessera::testing
