// The object reader: a valid Colossus object's tables, and every kind of
// foreign, truncated or malformed file as an ObjectError naming file and field.
#include "compiler/elf/object.hpp"

#include <gtest/gtest.h>

#include "tests/compiler/elf/expect_error.hpp"
#include "tests/testing/elf_writer.hpp"

namespace tessera::compiler::elf {
namespace {

using tessera::testing::ElfWriter;
using tessera::testing::poke_u16;
using tessera::testing::poke_u32;
using testing::expect_error;

// .text (8 bytes) with one R_COLOSSUS_32 against an undefined "helper", a
// global "entry" in it, a local "inner", .bss (16 bytes) and a debug section.
std::vector<std::uint8_t> sample_object() {
  ElfWriter w;
  const auto text = w.add_section(".text", {1, 2, 3, 4, 5, 6, 7, 8});
  const auto bss = w.add_nobits(".bss", 16, 8);
  w.add_unallocated(".debug_info", {9, 9});
  w.add_symbol("entry", static_cast<std::uint16_t>(text), 0);
  w.add_symbol("inner", static_cast<std::uint16_t>(text), 4, kStbLocal);
  w.add_symbol("buffer", static_cast<std::uint16_t>(bss), 0, kStbGlobal, kSttObject, 16);
  const auto helper = w.add_undefined("helper");
  w.add_relocation(text, 4, RelocationType::k32, helper, 8);
  return w.build();
}

TEST(ColossusObject, ReadsSectionsSymbolsAndRelocations) {
  const ObjectFile object = read_object("sample.o", sample_object());
  EXPECT_EQ(object.name, "sample.o");
  ASSERT_GE(object.sections.size(), 4u);
  const Section& text = object.sections[1];
  EXPECT_EQ(text.name, ".text");
  EXPECT_TRUE(text.placeable());
  EXPECT_EQ(text.bytes, (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  ASSERT_EQ(text.relocations.size(), 1u);
  EXPECT_EQ(text.relocations[0].offset, 4u);
  EXPECT_EQ(text.relocations[0].type, 4u);
  EXPECT_EQ(text.relocations[0].addend, 8);
  EXPECT_EQ(object.symbols[text.relocations[0].symbol].name, "helper");
  const Section& bss = object.sections[2];
  EXPECT_EQ(bss.type, kShtNobits);
  EXPECT_EQ(bss.size, 16u);
  EXPECT_EQ(bss.alignment, 8u);
  EXPECT_TRUE(bss.bytes.empty());
  EXPECT_FALSE(object.sections[3].placeable());  // .debug_info: not allocated
  // Null symbol, the local, then the globals (gABI order).
  ASSERT_EQ(object.symbols.size(), 5u);
  EXPECT_EQ(object.symbols[1].name, "inner");
  EXPECT_EQ(object.symbols[1].binding, kStbLocal);
  EXPECT_EQ(object.symbols[2].name, "entry");
  EXPECT_TRUE(object.symbols[2].global());
  EXPECT_FALSE(object.symbols[4].defined());
}

TEST(ColossusObject, ForeignFilesNameTheField) {
  struct Case {
    const char* what;
    std::size_t offset;
    unsigned width;
    std::uint32_t value;
    std::vector<std::string_view> parts;
  };
  const Case cases[] = {
      {"bad magic", 1, 1, 'X', {"e_ident", "not an ELF file"}},
      {"ELF64", 4, 1, 2, {"EI_CLASS", "2, expected 1 (ELFCLASS32)"}},
      {"big-endian", 5, 1, 2, {"EI_DATA", "little-endian"}},
      {"ET_EXEC", 16, 2, 2, {"e_type", "ET_REL"}},
      {"ET_DYN", 16, 2, 3, {"e_type"}},
      {"x86-64", 18, 2, 0x3E, {"e_machine", "0x3e, expected 0xf8 (Colossus)"}},
      {"e_version", 20, 4, 7, {"e_version"}},
      {"section header size", 46, 2, 64, {"e_shentsize"}},
      {"section table past the end", 32, 4, 0xFFFFFF00, {"section header table"}},
      {"string table index", 50, 2, 0x7FFF, {"e_shstrndx"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto bytes = sample_object();
    if (c.width == 1) bytes.at(c.offset) = static_cast<std::uint8_t>(c.value);
    if (c.width == 2) poke_u16(bytes, c.offset, static_cast<std::uint16_t>(c.value));
    if (c.width == 4) poke_u32(bytes, c.offset, c.value);
    try {
      read_object("kernel.o", bytes);
      ADD_FAILURE() << "accepted";
    } catch (const ObjectError& error) {
      const std::string text = error.what();
      EXPECT_EQ(text.rfind("kernel.o: ", 0), 0u) << text;
      for (const auto part : c.parts) EXPECT_NE(text.find(part), std::string::npos) << text;
    }
  }
}

TEST(ColossusObject, EveryTruncationIsAnError) {
  const auto bytes = sample_object();
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(length));
    EXPECT_THROW(read_object("cut.o", cut), ObjectError) << length;
  }
  expect_error<ObjectError>([] { read_object("empty.o", {}); },
                            {"empty.o", "ELF header", "0 bytes, shorter than the 52-byte"});
}

// Section header i's field at `field` (sh_type 4, sh_size 20, sh_entsize 36, …).
std::size_t section_field(const std::vector<std::uint8_t>& bytes, std::uint32_t index,
                          std::uint32_t field) {
  const std::uint32_t shoff =
      static_cast<std::uint32_t>(bytes[32] | bytes[33] << 8 | bytes[34] << 16 | bytes[35] << 24);
  return shoff + index * kSectionHeaderBytes + field;
}

std::uint32_t section_count(const std::vector<std::uint8_t>& bytes) {
  return static_cast<std::uint32_t>(bytes[48] | bytes[49] << 8);
}

TEST(ColossusObject, RefusesWhatTheProfileExcludes) {
  // The writer puts the RELA section last.
  {
    auto bytes = sample_object();
    poke_u32(bytes, section_field(bytes, section_count(bytes) - 1, 4), kShtRel);
    expect_error<ObjectError>([&] { read_object("k.o", bytes); }, {"REL relocations"});
  }
  {
    ElfWriter w;
    w.add_section(".text", {0, 0, 0, 0});
    w.add_symbol("shared", kShnCommon, 4, kStbGlobal, kSttObject, 4);
    expect_error<ObjectError>([&] { read_object("k.o", w.build()); },
                              {"k.o", "symbol 1 (shared)", "COMMON"});
  }
  {
    ElfWriter w;
    const auto text = w.add_section(".text", {0, 0, 0, 0});
    w.add_symbol("past", static_cast<std::uint16_t>(text), 8);
    expect_error<ObjectError>([&] { read_object("k.o", w.build()); },
                              {"symbol 1 (past)", "st_value 0x8 is past the end of section .text"});
  }
  {
    ElfWriter w;
    w.add_symbol("nowhere", 40);
    expect_error<ObjectError>([&] { read_object("k.o", w.build()); }, {"st_shndx 40"});
  }
  {
    ElfWriter w;
    const auto text = w.add_section(".text", {0, 0, 0, 0});
    w.add_relocation(text, 0, RelocationType::k32, 99);
    expect_error<ObjectError>([&] { read_object("k.o", w.build()); },
                              {"relocation 0", "symbol index 99"});
  }
  {
    ElfWriter w;
    w.add_section(".text", {0, 0, 0, 0}, kShfAlloc | kShfExecInstr, 3);
    expect_error<ObjectError>([&] { read_object("k.o", w.build()); },
                              {"section 1 (.text)", "sh_addralign 0x3 is not a power of two"});
  }
  {
    auto bytes = sample_object();
    // .text's size past the file.
    poke_u32(bytes, section_field(bytes, 1, 20), 0x7FFFFFFF);
    expect_error<ObjectError>([&] { read_object("k.o", bytes); }, {"section header 1"});
  }
  {
    auto bytes = sample_object();
    poke_u32(bytes, section_field(bytes, section_count(bytes) - 1, 36), 8);  // RELA entsize
    expect_error<ObjectError>([&] { read_object("k.o", bytes); }, {"sh_entsize 8, expected 12"});
  }
}

// helper.o: a COMDAT group `helper` of .text.helper (with a relocation, so its RELA
// section joins the group) and .data.helper; .text.main outside it.
struct GroupObject {
  ElfWriter w;
  std::uint32_t text = 0, data = 0, main = 0, signature = 0;
  GroupObject() {
    main = w.add_section(".text.main", {0, 0, 0, 0});
    text = w.add_section(".text.helper", {0, 0, 0, 0, 0, 0, 0, 0});
    data = w.add_section(".data.helper", {0, 0, 0, 0}, kShfAlloc | kShfWrite);
    w.add_symbol("main", static_cast<std::uint16_t>(main), 0);
    signature = w.add_symbol("helper", static_cast<std::uint16_t>(text), 0, kStbWeak);
    const auto data_symbol = w.add_section_symbol(data);
    w.add_relocation(text, 0, RelocationType::k32, data_symbol);
  }
};

TEST(ColossusObject, ReadsComdatGroups) {
  GroupObject g;
  const auto group = g.w.add_group(g.signature, {g.text, g.data});
  const ObjectFile object = read_object("helper.o", g.w.build());
  ASSERT_EQ(object.groups.size(), 1u);
  EXPECT_EQ(object.groups[0].section, group);
  EXPECT_EQ(object.groups[0].signature, "helper");
  EXPECT_TRUE(object.groups[0].comdat);
  // The two members and .rela.text.helper (the writer puts RELA sections after .symtab).
  ASSERT_EQ(object.groups[0].members.size(), 3u);
  EXPECT_EQ(object.groups[0].members[0], g.text);
  EXPECT_EQ(object.groups[0].members[1], g.data);
  EXPECT_EQ(object.sections[object.groups[0].members[2]].name, ".rela.text.helper");
  EXPECT_EQ(object.sections[g.text].group, 0u);
  EXPECT_EQ(object.sections[g.data].group, 0u);
  EXPECT_EQ(object.sections[g.main].group, kNoGroup);
  EXPECT_EQ(object.sections[g.text].relocations.size(), 1u);

  // A plain (non-COMDAT) group and a section-symbol signature named by its section.
  GroupObject plain;
  plain.w.add_group(plain.w.add_section_symbol(plain.text), {plain.text}, 0);
  const ObjectFile other = read_object("plain.o", plain.w.build());
  ASSERT_EQ(other.groups.size(), 1u);
  EXPECT_FALSE(other.groups[0].comdat);
  EXPECT_EQ(other.groups[0].signature, ".text.helper");
}

TEST(ColossusObject, RefusesInconsistentGroups) {
  {
    GroupObject g;
    g.w.add_group(g.signature, {g.text}, kGrpComdat | 0x4);
    expect_error<ObjectError>([&] { read_object("k.o", g.w.build()); },
                              {"k.o", "(.group)", "group flags 0x5: only GRP_COMDAT"});
  }
  {
    GroupObject g;
    g.w.add_group(g.signature, {g.data}, kGrpComdat, /*mark_members=*/false);
    expect_error<ObjectError>([&] { read_object("k.o", g.w.build()); },
                              {"member 3 (.data.helper) lacks SHF_GROUP"});
  }
  {
    GroupObject g;
    g.w.add_group(g.signature, {g.data});
    g.w.add_group(g.signature, {g.data}, kGrpComdat, false);
    expect_error<ObjectError>([&] { read_object("k.o", g.w.build()); },
                              {"member 3 (.data.helper) is already in a group"});
  }
  {
    ElfWriter w;
    w.add_section(".text.stray", {0, 0, 0, 0}, kShfAlloc | kShfExecInstr | kShfGroup);
    expect_error<ObjectError>([&] { read_object("k.o", w.build()); },
                              {"section 1 (.text.stray)", "has SHF_GROUP but is in no group"});
  }
  {
    // .text.helper's RELA section in the group, its target not: mark only the RELA.
    GroupObject g;
    const auto group = g.w.add_group(g.signature, {g.data});
    auto bytes = g.w.build();
    // Rewrite the group's one member (.data.helper) as the RELA section (the last one).
    const auto rela = section_count(bytes) - 1;
    const std::size_t words = section_field(bytes, group, 16);
    const std::uint32_t at =
        static_cast<std::uint32_t>(bytes[words] | bytes[words + 1] << 8 | bytes[words + 2] << 16);
    poke_u32(bytes, at + 4, rela);
    poke_u32(bytes, section_field(bytes, rela, 8), kShfGroup);
    poke_u32(bytes, section_field(bytes, g.data, 8), kShfAlloc | kShfWrite);
    expect_error<ObjectError>([&] { read_object("k.o", bytes); },
                              {"(.rela.text.helper): is in group 'helper' but relocates "
                               ".text.helper, which is not"});
  }
  {
    GroupObject g;
    const auto group = g.w.add_group(g.signature, {g.text});
    auto bytes = g.w.build();
    poke_u32(bytes, section_field(bytes, group, 28), 0);  // sh_info: no signature
    expect_error<ObjectError>([&] { read_object("k.o", bytes); },
                              {"sh_info 0 names no symbol"});
    bytes = g.w.build();
    poke_u32(bytes, section_field(bytes, group, 24), 1);  // sh_link: not the symtab
    expect_error<ObjectError>([&] { read_object("k.o", bytes); },
                              {"sh_link 1 is not the symbol table"});
    bytes = g.w.build();
    poke_u32(bytes, section_field(bytes, group, 36), 8);
    expect_error<ObjectError>([&] { read_object("k.o", bytes); }, {"sh_entsize 8, expected 4"});
    bytes = g.w.build();
    poke_u32(bytes, section_field(bytes, group, 20), 6);
    expect_error<ObjectError>([&] { read_object("k.o", bytes); },
                              {"sh_size 0x6 is not a flag word and whole member words"});
    bytes = g.w.build();
    const std::size_t words = section_field(bytes, group, 16);
    const std::uint32_t at =
        static_cast<std::uint32_t>(bytes[words] | bytes[words + 1] << 8 | bytes[words + 2] << 16);
    poke_u32(bytes, at + 4, 200);
    expect_error<ObjectError>([&] { read_object("k.o", bytes); },
                              {"member 200 is not a section of the file"});
    poke_u32(bytes, at + 4, group);
    expect_error<ObjectError>([&] { read_object("k.o", bytes); },
                              {"is a group, symbol or string table"});
  }
}

}  // namespace
}  // namespace tessera::compiler::elf
