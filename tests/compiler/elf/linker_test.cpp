// The linker: reachability, first-fit placement, symbol resolution, and each
// error naming what the issue asks for (issue 21 items 4 and 6).
#include "compiler/elf/linker.hpp"

#include <gtest/gtest.h>

#include "support/little_endian.hpp"
#include "tests/compiler/elf/expect_error.hpp"
#include "tests/testing/elf_writer.hpp"

namespace tessera::compiler::elf {
namespace {

using tessera::testing::ElfWriter;
using testing::expect_error;

std::vector<std::uint8_t> zeros(std::size_t n) { return std::vector<std::uint8_t>(n, 0); }
std::uint16_t in(std::uint32_t section) { return static_cast<std::uint16_t>(section); }

std::uint32_t word_at(const LinkedImage& image, std::string_view section, std::uint32_t offset) {
  for (const auto& s : image.sections) {
    if (s.name == section) return load_u32_le(s.bytes.data() + offset);
  }
  ADD_FAILURE() << "no section " << section;
  return 0;
}

const PlacedSection* placed(const LinkedImage& image, std::string_view name) {
  for (const auto& s : image.sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// runtime.o: .text.start (entry `start`: a call word relocated against the
// undefined `kernel` by R_COLOSSUS_RUN, a pointer to `table` in .data by
// R_COLOSSUS_32), .text.unused (`unused`, nothing refers to it), .data with
// `table`, .debug_info (not allocated). kernel.o: .text.kernel (`kernel`,
// with a local `loop` and an R_COLOSSUS_19_S2 to it), .text.dead, .bss.
struct TwoObjects {
  std::vector<ObjectFile> objects;
  TwoObjects() {
    ElfWriter runtime;
    const auto start = runtime.add_section(".text.start", zeros(16), kShfAlloc | kShfExecInstr, 8);
    const auto unused = runtime.add_section(".text.unused", zeros(8));
    const auto data = runtime.add_section(".data", zeros(8), kShfAlloc | kShfWrite, 4);
    runtime.add_unallocated(".debug_info", zeros(4));
    runtime.add_symbol("start", in(start), 0);
    runtime.add_symbol("unused", in(unused), 0);
    runtime.add_symbol("table", in(data), 4, kStbGlobal, kSttObject, 4);
    const auto kernel = runtime.add_undefined("kernel");
    const auto data_symbol = runtime.add_section_symbol(data);
    runtime.add_relocation(start, 0, RelocationType::kRun, kernel);
    runtime.add_relocation(start, 4, RelocationType::k32, data_symbol, 4);
    const auto unresolved = runtime.add_undefined("never_defined");
    runtime.add_relocation(unused, 0, RelocationType::k32, unresolved);

    ElfWriter kernels;
    const auto text = kernels.add_section(".text.kernel", {0x00, 0x00, 0xF8, 0xFF, 0, 0, 0, 0});
    const auto dead = kernels.add_section(".text.dead", zeros(4));
    const auto bss = kernels.add_nobits(".bss", 32, 16);
    kernels.add_symbol("kernel", in(text), 0, kStbGlobal, kSttFunc, 8);
    const auto loop = kernels.add_symbol("loop", in(text), 4, kStbLocal);
    kernels.add_symbol("dead", in(dead), 0);
    kernels.add_symbol("scratch", in(bss), 0, kStbGlobal, kSttObject, 32);
    kernels.add_relocation(text, 0, RelocationType::k19S2, loop);

    objects.push_back(read_object("runtime.o", runtime.build()));
    objects.push_back(read_object("kernel.o", kernels.build()));
  }
};

TEST(ColossusLinker, KeepsWhatTheEntryReachesAndRelocatesIt) {
  const TwoObjects t;
  LinkOptions options;
  options.entry = "start";
  const LinkedImage image = link(t.objects, options);

  // Object order, then section order; unreached and unallocated sections dropped.
  ASSERT_EQ(image.sections.size(), 3u);
  EXPECT_EQ(image.sections[0].name, ".text.start");
  EXPECT_EQ(image.sections[1].name, ".data");
  EXPECT_EQ(image.sections[2].name, ".text.kernel");
  EXPECT_EQ(placed(image, ".text.unused"), nullptr);
  EXPECT_EQ(placed(image, ".text.dead"), nullptr);
  EXPECT_EQ(placed(image, ".bss"), nullptr);

  // First fit from region 1's start (0x4c018, already 8-aligned).
  EXPECT_EQ(image.sections[0].address, 0x4C018u);
  EXPECT_EQ(image.sections[1].address, 0x4C028u);
  EXPECT_EQ(image.sections[2].address, 0x4C030u);
  EXPECT_TRUE(image.sections[0].executable);
  EXPECT_TRUE(image.sections[1].writable);
  EXPECT_EQ(image.entry, 0x4C018u);

  // RUN against kernel at 0x4c030: W = (0x4c030 - 0x4c000) / 4 = 0xc.
  EXPECT_EQ(word_at(image, ".text.start", 0), 0xCu);
  // R_32 against .data + 4.
  EXPECT_EQ(word_at(image, ".text.start", 4), 0x4C02Cu);
  // 19_S2 against the local `loop` (0x4c034): 0x1300d in the low 19 bits, the top kept.
  EXPECT_EQ(word_at(image, ".text.kernel", 0), 0xFFF80000u | (0x4C034u / 4));

  ASSERT_NE(image.find("kernel"), nullptr);
  EXPECT_EQ(image.address_of("kernel"), 0x4C030u);
  EXPECT_EQ(image.find("kernel")->object, "kernel.o");
  EXPECT_TRUE(image.find("kernel")->function);
  EXPECT_EQ(image.address_of("table"), 0x4C02Cu);
  EXPECT_EQ(image.find("unused"), nullptr);
  EXPECT_EQ(image.find("loop"), nullptr);  // a local: listed, never found by name
  bool listed_loop = false;
  for (const auto& s : image.symbols)
    listed_loop |= s.name == "loop" && !s.global && s.address == 0x4C034u;
  EXPECT_TRUE(listed_loop);
  expect_error<LinkError>([&] { (void)image.address_of("dead"); }, {"no symbol 'dead'"});
}

TEST(ColossusLinker, RetainedSymbolsAreRoots) {
  const TwoObjects t;
  LinkOptions options;
  options.entry = "start";
  options.retained = {"scratch"};
  const LinkedImage image = link(t.objects, options);
  const PlacedSection* bss = placed(image, ".bss");
  ASSERT_NE(bss, nullptr);
  EXPECT_TRUE(bss->zero_fill);
  EXPECT_EQ(bss->bytes, zeros(32));
  EXPECT_EQ(bss->address % 16, 0u);
  EXPECT_EQ(image.address_of("scratch"), bss->address);

  options.retained = {"missing"};
  expect_error<LinkError>([&] { link(t.objects, options); },
                          {"retained symbol 'missing' is not defined"});
  options.retained = {};
  options.entry = "nowhere";
  expect_error<LinkError>([&] { link(t.objects, options); },
                          {"entry symbol 'nowhere' is not defined"});
}

// §3.8: align16(0x4c014 + 0xc8) = 0x4c0e0.
TEST(ColossusLinker, PriorArtAlignmentVector) {
  ElfWriter w;
  const auto a = w.add_section(".text.a", zeros(0xC8), kShfAlloc | kShfExecInstr, 4);
  const auto b = w.add_section(".text.b", zeros(4), kShfAlloc | kShfExecInstr, 16);
  w.add_symbol("a", in(a), 0);
  w.add_symbol("b", in(b), 0);
  const std::vector<ObjectFile> objects{read_object("align.o", w.build())};
  LinkOptions options;
  options.entry = "a";
  options.retained = {"b"};
  options.regions = {target::AddressRange{0x4C014, 0x50000}};
  const LinkedImage image = link(objects, options);
  EXPECT_EQ(image.address_of("a"), 0x4C014u);
  EXPECT_EQ(image.address_of("b"), 0x4C0E0u);
}

TEST(ColossusLinker, FirstFitAcrossRegionsAndWhatDoesNotFit) {
  ElfWriter w;
  const auto big = w.add_section(".text.big", zeros(0x100));
  const auto small = w.add_section(".text.small", zeros(0x10));
  const auto huge = w.add_section(".text.huge", zeros(0x400), kShfAlloc | kShfExecInstr, 64);
  w.add_symbol("big", in(big), 0);
  w.add_symbol("small", in(small), 0);
  w.add_symbol("huge", in(huge), 0);
  const std::vector<ObjectFile> objects{read_object("fit.o", w.build())};
  LinkOptions options;
  options.entry = "big";
  options.retained = {"small"};
  // Region order does not matter: regions are taken in address order.
  options.regions = {target::AddressRange{0x60000, 0x60200},
                     target::AddressRange{0x4C018, 0x4C040}};
  const LinkedImage image = link(objects, options);
  EXPECT_EQ(image.address_of("big"), 0x60000u);    // too big for the first region
  EXPECT_EQ(image.address_of("small"), 0x4C018u);  // first fit goes back to it

  options.retained = {"small", "huge"};
  expect_error<LinkError>([&] { link(objects, options); },
                          {"section fit.o (.text.huge) (0x400 bytes, alignment 64) does not fit",
                           "[0x4c018, 0x4c040): 0x18 free", "[0x60000, 0x60200): 0x100 free",
                           "0x110 bytes placed before it"});
}

TEST(ColossusLinker, UndefinedAndDuplicateSymbolsAreNamed) {
  const TwoObjects t;
  LinkOptions options;
  options.entry = "unused";  // reaches the reference to never_defined
  expect_error<LinkError>(
      [&] { link(t.objects, options); },
      {"undefined symbol 'never_defined'", "runtime.o (.text.unused)", "relocation 0"});
  // An external resolves it.
  options.externals["never_defined"] = 0x58000;
  const LinkedImage image = link(t.objects, options);
  EXPECT_EQ(word_at(image, ".text.unused", 0), 0x58000u);

  // Two strong definitions of one name: both objects named.
  {
    ElfWriter other;
    const auto text = other.add_section(".text.other", zeros(4));
    other.add_symbol("kernel", in(text), 0, kStbGlobal);
    auto objects = t.objects;
    objects.push_back(read_object("other.o", other.build()));
    options.entry = "start";
    expect_error<LinkError>([&] { link(objects, options); },
                            {"duplicate symbol 'kernel'", "strong (global) definitions",
                             "kernel.o (.text.kernel)", "other.o (.text.other)"});
  }
  // Defined and also given as an external.
  options.externals["kernel"] = 0x5C000;
  expect_error<LinkError>([&] { link(t.objects, options); },
                          {"duplicate symbol 'kernel'", "given as an external"});
}

TEST(ColossusLinker, LocalsAreScopedToTheirObject) {
  std::vector<ObjectFile> objects;
  for (const char* name : {"a.o", "b.o"}) {
    ElfWriter w;
    const auto text = w.add_section(".text", zeros(8));
    const auto helper = w.add_symbol("helper", in(text), 4, kStbLocal);
    w.add_symbol(std::string(name) == "a.o" ? "main" : "other", in(text), 0);
    w.add_relocation(text, 0, RelocationType::k32, helper);
    objects.push_back(read_object(name, w.build()));
  }
  LinkOptions options;
  options.entry = "main";
  options.retained = {"other"};
  const LinkedImage image = link(objects, options);
  EXPECT_EQ(image.sections[0].address, 0x4C018u);
  EXPECT_EQ(image.sections[1].address, 0x4C020u);
  // Each object's `helper` is its own.
  EXPECT_EQ(load_u32_le(image.sections[0].bytes.data()), 0x4C01Cu);
  EXPECT_EQ(load_u32_le(image.sections[1].bytes.data()), 0x4C024u);
}

// One relocation in `.text` (8 bytes) at `offset` against `target` (absolute at `value`).
std::vector<ObjectFile> one_relocation(std::uint32_t type, std::uint32_t offset,
                                       std::uint32_t value, std::int32_t addend = 0) {
  ElfWriter w;
  const auto text = w.add_section(".text", zeros(8));
  w.add_section(".text.next", zeros(8));  // placed right after: a write past .text would land here
  w.add_symbol("main", in(text), 0);
  const auto target = w.add_symbol("target", kShnAbs, value, kStbGlobal, kSttNotype);
  w.add_relocation(text, offset, type, target, addend);
  return {read_object("reloc.o", w.build())};
}

LinkOptions main_entry() {
  LinkOptions options;
  options.entry = "main";
  return options;
}

TEST(ColossusLinker, RelocationErrorsNameRelocationSymbolSectionValueAndRange) {
  expect_error<LinkError>([] { link(one_relocation(1, 0, 0x100), main_entry()); },
                          {"reloc.o (.text): relocation 0 at .text+0x0 against 'target'",
                           "R_COLOSSUS_8", "value 0x100 is out of range: allowed [0x0, 0xff]"});
  expect_error<LinkError>([] { link(one_relocation(8, 0, 0x50122), main_entry()); },
                          {"against 'target'", "R_COLOSSUS_19_S2", "0x50122 is not a multiple of 4",
                           "allowed [0x0, 0x1ffffc] in steps of 4"});
  expect_error<LinkError>([] { link(one_relocation(4, 0, 0x10, -0x20), main_entry()); },
                          {"R_COLOSSUS_32", "value -0x10 is negative"});
  expect_error<LinkError>([] { link(one_relocation(9, 0, 0x4B000), main_entry()); },
                          {"R_COLOSSUS_RUN", "allowed [0x4c000, 0x8bffc] in steps of 4"});
  expect_error<LinkError>([] { link(one_relocation(12, 0, 0), main_entry()); },
                          {"unknown Colossus relocation type 12"});
  // §3.2's hole: a write inside the image but past its own section.
  expect_error<LinkError>([] { link(one_relocation(4, 6, 0), main_entry()); },
                          {"R_COLOSSUS_32: r_offset 0x6 + 4 bytes is past the end of the section "
                           "(0x8 bytes)"});
  expect_error<LinkError>([] { link(one_relocation(5, 4, 0), main_entry()); },
                          {"R_COLOSSUS_64", "past the end"});
  EXPECT_NO_THROW(link(one_relocation(4, 4, 0), main_entry()));
  EXPECT_NO_THROW(link(one_relocation(0, 7, 0), main_entry()));  // NONE writes nothing
}

TEST(ColossusLinker, RootsMustBePlaceableAndRegionsExecutable) {
  ElfWriter w;
  const auto text = w.add_section(".text", zeros(4));
  const auto empty = w.add_section(".text.empty", {});
  w.add_symbol("main", in(text), 0);
  w.add_symbol("nothing", in(empty), 0);
  const std::vector<ObjectFile> objects{read_object("r.o", w.build())};
  LinkOptions options = main_entry();
  options.retained = {"nothing"};
  expect_error<LinkError>(
      [&] { link(objects, options); },
      {"retained symbol 'nothing' is in r.o (.text.empty), which is not placed"});
  options = main_entry();
  options.regions = {target::AddressRange{0x80000, 0x81000}};
  expect_error<UsageError>([&] { link(objects, options); },
                           {"region [0x80000, 0x81000) is not in the executable range"});
}

TEST(ColossusLinker, ReferenceIntoAnUnplacedSectionIsAnError) {
  ElfWriter w;
  const auto text = w.add_section(".text", zeros(4));
  const auto debug = w.add_unallocated(".debug_str", zeros(4));
  w.add_symbol("main", in(text), 0);
  const auto name = w.add_symbol("name", in(debug), 0, kStbLocal, kSttObject);
  w.add_relocation(text, 0, RelocationType::k32, name);
  const std::vector<ObjectFile> objects{read_object("d.o", w.build())};
  expect_error<LinkError>([&] { link(objects, main_entry()); },
                          {"symbol 'name' refers to discarded section d.o (.debug_str)"});
}

// ---- weak definitions and COMDAT groups ---------------------------------------------------

// An object defining `name` in .text.<object> with `binding`, and an entry
// `<object>_main` whose word 0 is R_COLOSSUS_32 against its own `name` symbol.
std::vector<std::uint8_t> definer(const std::string& object, const std::string& name,
                                  std::uint8_t binding) {
  ElfWriter w;
  const auto main = w.add_section(".text." + object + "_main", zeros(4));
  const auto text = w.add_section(".text." + object, zeros(8));
  w.add_symbol(object + "_main", in(main), 0);
  const auto symbol = w.add_symbol(name, in(text), 4, binding);
  w.add_relocation(main, 0, RelocationType::k32, symbol);
  return w.build();
}

TEST(ColossusLinker, StrongBeatsWeakAndTheFirstWeakWins) {
  LinkOptions options;
  options.entry = "a_main";
  options.retained = {"b_main"};
  // Weak first or strong first: the strong one's address, for both references.
  for (const bool weak_first : {true, false}) {
    std::vector<ObjectFile> objects{
        read_object("a.o", definer("a", "f", weak_first ? kStbWeak : kStbGlobal)),
        read_object("b.o", definer("b", "f", weak_first ? kStbGlobal : kStbWeak))};
    const LinkedImage image = link(objects, options);
    const PlacedSection* strong = placed(image, weak_first ? ".text.b" : ".text.a");
    ASSERT_NE(strong, nullptr);
    EXPECT_EQ(image.address_of("f"), strong->address + 4);
    EXPECT_EQ(image.find("f")->object, weak_first ? "b.o" : "a.o");
    // The weak definer's own reference goes to the winner too, and its section is unreached.
    EXPECT_EQ(word_at(image, ".text.a_main", 0), strong->address + 4);
    EXPECT_EQ(word_at(image, ".text.b_main", 0), strong->address + 4);
    EXPECT_EQ(placed(image, weak_first ? ".text.a" : ".text.b"), nullptr);
  }
  // Two weak ones: the first in object order.
  {
    std::vector<ObjectFile> objects{read_object("a.o", definer("a", "f", kStbWeak)),
                                    read_object("b.o", definer("b", "f", kStbWeak))};
    const LinkedImage image = link(objects, options);
    EXPECT_EQ(image.find("f")->object, "a.o");
    EXPECT_EQ(word_at(image, ".text.b_main", 0), placed(image, ".text.a")->address + 4);
    EXPECT_EQ(placed(image, ".text.b"), nullptr);
  }
  // An external is strong: it beats a weak definition and clashes with a strong one.
  {
    std::vector<ObjectFile> objects{read_object("a.o", definer("a", "f", kStbWeak)),
                                    read_object("b.o", definer("b", "g", kStbGlobal))};
    options.externals["f"] = 0x5C000;
    const LinkedImage image = link(objects, options);
    EXPECT_EQ(word_at(image, ".text.a_main", 0), 0x5C000u);
    EXPECT_EQ(image.find("f"), nullptr);
    options.externals = {{"g", 0x5C000}};
    expect_error<LinkError>([&] { link(objects, options); },
                            {"duplicate symbol 'g'", "b.o (.text.b)", "given as an external"});
  }
}

// One object's copy of an inline helper as a compiler emits it: COMDAT group
// `helper` of .text.helper (weak `helper`, its word 1 an R_COLOSSUS_32 to
// .data.helper) and .data.helper (weak `helper_table`, nothing refers to it
// but the group keeps it), plus .text.<object>_main (not in the group) whose
// word 0 is R_COLOSSUS_32 against this object's own `helper` symbol.
// `extra_reference`: .text.helper's word 0 also relocates against it.
std::vector<std::uint8_t> helper_user(const std::string& object,
                                      const std::string& extra_reference = "") {
  ElfWriter w;
  const auto main = w.add_section(".text." + object + "_main", zeros(4));
  const auto text = w.add_section(".text.helper", zeros(8));
  const auto data = w.add_section(".data.helper", zeros(4), kShfAlloc | kShfWrite);
  w.add_symbol(object + "_main", in(main), 0);
  const auto helper = w.add_symbol("helper", in(text), 0, kStbWeak, kSttFunc, 8);
  w.add_symbol("helper_table", in(data), 0, kStbWeak, kSttObject, 4);
  w.add_relocation(text, 4, RelocationType::k32, w.add_section_symbol(data));
  if (!extra_reference.empty()) {
    w.add_relocation(text, 0, RelocationType::k32, w.add_undefined(extra_reference));
  }
  w.add_relocation(main, 0, RelocationType::k32, helper);
  w.add_group(helper, {text, data});
  return w.build();
}

std::size_t count_placed(const LinkedImage& image, std::string_view name) {
  std::size_t n = 0;
  for (const auto& s : image.sections) n += s.name == name;
  return n;
}

// A weak undefined reference with no definition is not address 0: it is undefined.
TEST(ColossusLinker, AWeakUndefinedReferenceWithoutADefinitionIsUndefined) {
  ElfWriter w;
  const auto text = w.add_section(".text", zeros(4));
  w.add_symbol("main", in(text), 0);
  const auto maybe = w.add_symbol("maybe", kShnUndef, 0, kStbWeak, kSttNotype);
  w.add_relocation(text, 0, RelocationType::k32, maybe);
  const std::vector<ObjectFile> objects{read_object("w.o", w.build())};
  expect_error<LinkError>([&] { link(objects, main_entry()); }, {"undefined symbol 'maybe'"});
  // Defined elsewhere, weakly or not, it resolves.
  auto with_definition = objects;
  with_definition.push_back(read_object("d.o", definer("d", "maybe", kStbWeak)));
  LinkOptions options = main_entry();
  options.retained = {"d_main"};
  const LinkedImage image = link(with_definition, options);
  EXPECT_EQ(word_at(image, ".text", 0), image.address_of("maybe"));
}

TEST(ColossusLinker, IdenticalComdatGroupsLinkOnce) {
  for (const bool a_first : {true, false}) {
    std::vector<ObjectFile> objects;
    objects.push_back(read_object("a.o", helper_user("a")));
    objects.push_back(read_object("b.o", helper_user("b")));
    if (!a_first) std::swap(objects[0], objects[1]);
    LinkOptions options;
    options.entry = "a_main";
    options.retained = {"b_main"};
    const LinkedImage image = link(objects, options);
    const std::string kept = a_first ? "a.o" : "b.o";
    // One copy of each group member, the first object's, both members together.
    ASSERT_EQ(count_placed(image, ".text.helper"), 1u);
    ASSERT_EQ(count_placed(image, ".data.helper"), 1u);
    EXPECT_EQ(image.sections.size(), 4u);
    const PlacedSection* text = placed(image, ".text.helper");
    const PlacedSection* data = placed(image, ".data.helper");
    EXPECT_EQ(text->object, kept);
    EXPECT_EQ(data->object, kept);
    EXPECT_EQ(image.find("helper")->object, kept);
    EXPECT_EQ(image.address_of("helper"), text->address);
    EXPECT_EQ(image.address_of("helper_table"), data->address);
    // Both objects' references — the discarded copy's object's included — reach the kept one.
    EXPECT_EQ(word_at(image, ".text.a_main", 0), text->address);
    EXPECT_EQ(word_at(image, ".text.b_main", 0), text->address);
    // The kept group's own relocation is applied against its own .data.helper.
    EXPECT_EQ(load_u32_le(text->bytes.data() + 4), data->address);
  }
}

TEST(ColossusLinker, DiscardedGroupsRelocationsAreDropped) {
  // b.o's copy relocates against a symbol nothing defines: discarded, never applied.
  std::vector<ObjectFile> objects{read_object("a.o", helper_user("a")),
                                  read_object("b.o", helper_user("b", "never_defined"))};
  LinkOptions options;
  options.entry = "b_main";
  const LinkedImage image = link(objects, options);
  EXPECT_EQ(placed(image, ".text.helper")->object, "a.o");
  EXPECT_EQ(word_at(image, ".text.b_main", 0), image.address_of("helper"));
  // Kept, the same relocation is an error: the group's relocations are its own.
  std::swap(objects[0], objects[1]);
  expect_error<LinkError>([&] { link(objects, options); }, {"undefined symbol 'never_defined'"});
}

TEST(ColossusLinker, WhatADiscardedGroupAloneDefinesIsNamed) {
  // b.o's group also defines `only_b`, which a.o's copy (kept) does not; b_main calls it.
  ElfWriter b;
  const auto main = b.add_section(".text.b_main", zeros(4));
  const auto text = b.add_section(".text.helper", zeros(8));
  b.add_symbol("b_main", in(main), 0);
  const auto helper = b.add_symbol("helper", in(text), 0, kStbWeak);
  const auto only = b.add_symbol("only_b", in(text), 4, kStbWeak);
  b.add_relocation(main, 0, RelocationType::k32, only);
  b.add_group(helper, {text});
  std::vector<ObjectFile> objects{read_object("a.o", helper_user("a")),
                                  read_object("b.o", b.build())};
  LinkOptions options;
  options.entry = "b_main";
  expect_error<LinkError>(
      [&] { link(objects, options); },
      {"undefined symbol 'only_b': defined only in b.o's COMDAT group 'helper' (discarded: "
       "a.o's copy is kept)"});

  // A reference from outside the group to a local of a discarded group (gABI: not allowed).
  ElfWriter c;
  const auto c_main = c.add_section(".text.c_main", zeros(4));
  const auto c_text = c.add_section(".text.helper", zeros(8));
  c.add_symbol("c_main", in(c_main), 0);
  const auto c_helper = c.add_symbol("helper", in(c_text), 0, kStbWeak);
  c.add_relocation(c_main, 0, RelocationType::k32, c.add_section_symbol(c_text));
  c.add_group(c_helper, {c_text});
  objects[1] = read_object("c.o", c.build());
  options.entry = "c_main";
  expect_error<LinkError>([&] { link(objects, options); },
                          {"c.o (.text.c_main): relocation 0", "c.o (.text.helper)",
                           "c.o's COMDAT group 'helper' (discarded: a.o's copy is kept)",
                           "not allowed"});
}

TEST(ColossusLinker, StrongDefinitionsInComdatCopiesDoNotClash) {
  // Template instantiations may be strong globals inside COMDAT groups: only the kept one counts.
  auto strong_copy = [](const std::string& object) {
    ElfWriter w;
    const auto main = w.add_section(".text." + object + "_main", zeros(4));
    const auto text = w.add_section(".text.inst", zeros(4));
    w.add_symbol(object + "_main", in(main), 0);
    const auto inst = w.add_symbol("inst", in(text), 0, kStbGlobal);
    w.add_relocation(main, 0, RelocationType::k32, inst);
    w.add_group(inst, {text});
    return w.build();
  };
  std::vector<ObjectFile> objects{read_object("a.o", strong_copy("a")),
                                  read_object("b.o", strong_copy("b"))};
  LinkOptions options;
  options.entry = "a_main";
  options.retained = {"b_main"};
  const LinkedImage image = link(objects, options);
  EXPECT_EQ(count_placed(image, ".text.inst"), 1u);
  EXPECT_EQ(word_at(image, ".text.b_main", 0), image.address_of("inst"));

  // Without GRP_COMDAT a group is not deduplicated: the same two strong globals clash.
  auto plain_copy = [] {
    ElfWriter w;
    const auto text = w.add_section(".text.inst", zeros(4));
    const auto inst = w.add_symbol("inst", in(text), 0, kStbGlobal);
    w.add_group(inst, {text}, 0);
    return w.build();
  };
  objects = {read_object("a.o", plain_copy()), read_object("b.o", plain_copy())};
  options.entry = "inst";
  options.retained = {};
  expect_error<LinkError>([&] { link(objects, options); },
                          {"duplicate symbol 'inst'", "a.o (.text.inst)", "b.o (.text.inst)"});
}

}  // namespace
}  // namespace tessera::compiler::elf
