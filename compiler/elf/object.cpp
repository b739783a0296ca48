#include "compiler/elf/object.hpp"

#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "support/checked.hpp"

namespace tessera::compiler::elf {
namespace {

// Little-endian reads at checked offsets of one untrusted buffer.
class Bytes {
 public:
  explicit Bytes(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::size_t size() const noexcept { return bytes_.size(); }

  std::uint64_t read(std::uint64_t offset, unsigned width, std::string_view what) const {
    checked_range(offset, width, bytes_.size(), what);
    std::uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i) value |= std::uint64_t{bytes_[offset + i]} << (8 * i);
    return value;
  }
  std::uint8_t u8(std::uint64_t offset, std::string_view what) const {
    return static_cast<std::uint8_t>(read(offset, 1, what));
  }
  std::uint16_t u16(std::uint64_t offset, std::string_view what) const {
    return static_cast<std::uint16_t>(read(offset, 2, what));
  }
  std::uint32_t u32(std::uint64_t offset, std::string_view what) const {
    return static_cast<std::uint32_t>(read(offset, 4, what));
  }
  std::span<const std::uint8_t> slice(std::uint64_t offset, std::uint64_t size,
                                      std::string_view what) const {
    checked_range(offset, size, bytes_.size(), what);
    return bytes_.subspan(offset, size);
  }

 private:
  std::span<const std::uint8_t> bytes_;
};

[[noreturn]] void fail(std::string_view field, std::string message) {
  throw ObjectError(field, std::move(message));
}

struct RawSection {
  std::uint32_t name = 0, type = 0, flags = 0, addr = 0, offset = 0, size = 0, link = 0, info = 0,
                addralign = 0, entsize = 0;
};

// A NUL-terminated string at `offset` of string table `table`, inside that table.
std::string string_at(const Bytes& file, const RawSection& table, std::uint32_t offset,
                      std::string_view field) {
  if (offset >= table.size) {
    fail(field, fmt::format("string offset {:#x} is outside the string table's {:#x} bytes", offset,
                            table.size));
  }
  const auto text = file.slice(table.offset, table.size, field).subspan(offset);
  const void* nul = std::memchr(text.data(), 0, text.size());
  if (nul == nullptr) fail(field, "string runs past the end of its string table");
  const auto length = static_cast<std::size_t>(static_cast<const std::uint8_t*>(nul) - text.data());
  return std::string(reinterpret_cast<const char*>(text.data()), length);
}

void check_header(const Bytes& file) {
  if (file.size() < kElfHeaderBytes) {
    fail("ELF header", fmt::format("{} bytes, shorter than the {}-byte ELF32 header", file.size(),
                                   kElfHeaderBytes));
  }
  for (unsigned i = 0; i < 4; ++i) {
    if (file.u8(i, "e_ident") != kElfMagic[i]) fail("e_ident", "not an ELF file (bad magic)");
  }
  if (const auto c = file.u8(4, "EI_CLASS"); c != kElfClass32) {
    fail("EI_CLASS", fmt::format("{}, expected {} (ELFCLASS32)", c, kElfClass32));
  }
  if (const auto d = file.u8(5, "EI_DATA"); d != kElfData2Lsb) {
    fail("EI_DATA", fmt::format("{}, expected {} (little-endian)", d, kElfData2Lsb));
  }
  if (const auto v = file.u8(6, "EI_VERSION"); v != kElfVersionCurrent) {
    fail("EI_VERSION", fmt::format("{}, expected {}", v, kElfVersionCurrent));
  }
  if (const auto t = file.u16(16, "e_type"); t != kElfTypeRel) {
    fail("e_type",
         fmt::format("{}, expected {} (ET_REL: only relocatable objects link)", t, kElfTypeRel));
  }
  if (const auto m = file.u16(18, "e_machine"); m != kMachineColossus) {
    fail("e_machine", fmt::format("{:#x}, expected {:#x} (Colossus)", m, kMachineColossus));
  }
  if (const auto v = file.u32(20, "e_version"); v != kElfVersionCurrent) {
    fail("e_version", fmt::format("{}, expected {}", v, kElfVersionCurrent));
  }
}

std::vector<RawSection> read_section_headers(const Bytes& file) {
  const std::uint32_t shoff = file.u32(32, "e_shoff");
  const std::uint16_t shentsize = file.u16(46, "e_shentsize");
  const std::uint16_t shnum = file.u16(48, "e_shnum");
  if (shnum == 0) {
    // e_shnum 0 with a table means extended numbering (the count is in section 0).
    if (shoff != 0)
      fail("e_shnum", "0 with e_shoff set: extended section numbering is not supported");
    return {};
  }
  if (shentsize != kSectionHeaderBytes) {
    fail("e_shentsize", fmt::format("{}, expected {}", shentsize, kSectionHeaderBytes));
  }
  checked_range(shoff, checked_mul<std::uint64_t>(shnum, kSectionHeaderBytes, "e_shnum"),
                file.size(), "section header table (e_shoff, e_shnum)");
  std::vector<RawSection> headers(shnum);
  for (std::uint32_t i = 0; i < shnum; ++i) {
    const std::uint64_t at = shoff + std::uint64_t{i} * kSectionHeaderBytes;
    const std::string field = fmt::format("section header {}", i);
    RawSection& h = headers[i];
    h.name = file.u32(at + 0, field);
    h.type = file.u32(at + 4, field);
    h.flags = file.u32(at + 8, field);
    h.addr = file.u32(at + 12, field);
    h.offset = file.u32(at + 16, field);
    h.size = file.u32(at + 20, field);
    h.link = file.u32(at + 24, field);
    h.info = file.u32(at + 28, field);
    h.addralign = file.u32(at + 32, field);
    h.entsize = file.u32(at + 36, field);
    if (h.type != kShtNobits && h.type != kShtNull) {
      checked_range(h.offset, h.size, file.size(), field + " (sh_offset, sh_size)");
    }
  }
  return headers;
}

void read_symbols(const Bytes& file, const std::vector<RawSection>& headers, std::uint32_t index,
                  ObjectFile& object) {
  const RawSection& symtab = headers[index];
  const std::string field = fmt::format("section {} ({})", index, object.sections[index].name);
  if (symtab.entsize != kSymbolBytes) {
    fail(field, fmt::format("sh_entsize {}, expected {}", symtab.entsize, kSymbolBytes));
  }
  if (symtab.size % kSymbolBytes != 0) {
    fail(field, fmt::format("sh_size {:#x} is not a multiple of {}", symtab.size, kSymbolBytes));
  }
  if (symtab.link >= headers.size() || headers[symtab.link].type != kShtStrtab) {
    fail(field, fmt::format("sh_link {} is not a string table", symtab.link));
  }
  const RawSection& strings = headers[symtab.link];
  const std::uint32_t count = symtab.size / kSymbolBytes;
  object.symbols.resize(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t at = std::uint64_t{symtab.offset} + std::uint64_t{i} * kSymbolBytes;
    const std::string sym_field = fmt::format("symbol {}", i);
    Symbol& s = object.symbols[i];
    s.name = string_at(file, strings, file.u32(at, sym_field), sym_field + " st_name");
    s.value = file.u32(at + 4, sym_field);
    s.size = file.u32(at + 8, sym_field);
    const std::uint8_t info = file.u8(at + 12, sym_field);
    s.binding = static_cast<std::uint8_t>(info >> 4);
    s.type = static_cast<std::uint8_t>(info & 0xF);
    s.section = file.u16(at + 14, sym_field);
    const std::string named =
        s.name.empty() ? sym_field : fmt::format("{} ({})", sym_field, s.name);
    if (s.section == kShnCommon) fail(named, "COMMON symbols are not supported");
    if (s.section == kShnXindex)
      fail(named, "extended section index (SHN_XINDEX) is not supported");
    if (s.section >= kShnLoReserve && s.section != kShnAbs) {
      fail(named, fmt::format("st_shndx {:#x} is a reserved index", s.section));
    }
    if (s.section != kShnUndef && s.section != kShnAbs) {
      if (s.section >= object.sections.size()) {
        fail(named,
             fmt::format("st_shndx {} is past the {} sections", s.section, object.sections.size()));
      }
      if (s.value > object.sections[s.section].size) {
        fail(named,
             fmt::format("st_value {:#x} is past the end of section {} ({:#x} bytes)", s.value,
                         object.sections[s.section].name, object.sections[s.section].size));
      }
    }
    if (s.binding != kStbLocal && s.binding != kStbGlobal && s.binding != kStbWeak) {
      fail(named, fmt::format("binding {} is not local, global or weak", s.binding));
    }
    if (s.type == kSttTls) fail(named, "TLS symbols are not supported");
  }
}

void read_relocations(const Bytes& file, const std::vector<RawSection>& headers,
                      std::uint32_t index, std::uint32_t symtab, ObjectFile& object) {
  const RawSection& rela = headers[index];
  const std::string field = fmt::format("section {} ({})", index, object.sections[index].name);
  if (rela.entsize != kRelaBytes) {
    fail(field, fmt::format("sh_entsize {}, expected {}", rela.entsize, kRelaBytes));
  }
  if (rela.size % kRelaBytes != 0) {
    fail(field, fmt::format("sh_size {:#x} is not a multiple of {}", rela.size, kRelaBytes));
  }
  if (rela.link != symtab || symtab == 0) {
    fail(field, fmt::format("sh_link {} is not the symbol table", rela.link));
  }
  if (rela.info == 0 || rela.info >= headers.size()) {
    fail(field, fmt::format("sh_info {} names no section", rela.info));
  }
  Section& target = object.sections[rela.info];
  const std::uint32_t count = rela.size / kRelaBytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t at = std::uint64_t{rela.offset} + std::uint64_t{i} * kRelaBytes;
    const std::string rel_field = fmt::format("{} relocation {}", field, i);
    Relocation r;
    r.offset = file.u32(at, rel_field);
    const std::uint32_t info = file.u32(at + 4, rel_field);
    r.symbol = info >> 8;
    r.type = info & 0xFF;
    r.addend = static_cast<std::int32_t>(file.u32(at + 8, rel_field));
    if (r.symbol >= object.symbols.size()) {
      fail(rel_field,
           fmt::format("symbol index {} is past the {} symbols", r.symbol, object.symbols.size()));
    }
    target.relocations.push_back(r);
  }
}

// SHT_GROUP sections → ObjectFile::groups, and each member's Section::group.
void read_groups(const Bytes& file, const std::vector<RawSection>& headers, std::uint32_t symtab,
                 ObjectFile& object) {
  for (std::uint32_t index = 0; index < headers.size(); ++index) {
    const RawSection& h = headers[index];
    if (h.type != kShtGroup) continue;
    const std::string field = fmt::format("section {} ({})", index, object.sections[index].name);
    if (h.entsize != kGroupWordBytes) {
      fail(field, fmt::format("sh_entsize {}, expected {}", h.entsize, kGroupWordBytes));
    }
    if (h.size < kGroupWordBytes || h.size % kGroupWordBytes != 0) {
      fail(field, fmt::format("sh_size {:#x} is not a flag word and whole member words", h.size));
    }
    if (symtab == 0 || h.link != symtab) {
      fail(field, fmt::format("sh_link {} is not the symbol table", h.link));
    }
    if (h.info == 0 || h.info >= object.symbols.size()) {
      fail(field, fmt::format("sh_info {} names no symbol (the group's signature)", h.info));
    }
    SectionGroup group;
    group.section = index;
    const Symbol& signature = object.symbols[h.info];
    group.signature = signature.name;
    if (group.signature.empty() && signature.type == kSttSection &&
        signature.section < object.sections.size()) {
      group.signature = object.sections[signature.section].name;
    }
    if (group.signature.empty()) fail(field, "the signature symbol has no name");
    const std::uint32_t flags = file.u32(h.offset, field + " flag word");
    if ((flags & ~kGrpComdat) != 0) {
      fail(field, fmt::format("group flags {:#x}: only GRP_COMDAT ({:#x}) is supported", flags,
                              kGrpComdat));
    }
    group.comdat = (flags & kGrpComdat) != 0;
    const auto group_index = static_cast<std::uint32_t>(object.groups.size());
    for (std::uint32_t at = kGroupWordBytes; at < h.size; at += kGroupWordBytes) {
      const std::uint32_t member = file.u32(std::uint64_t{h.offset} + at, field + " member");
      if (member == 0 || member >= headers.size()) {
        fail(field, fmt::format("member {} is not a section of the file", member));
      }
      const std::uint32_t type = headers[member].type;
      Section& section = object.sections[member];
      const std::string named = fmt::format("member {} ({})", member, section.name);
      if (type == kShtGroup || type == kShtSymtab || type == kShtStrtab) {
        fail(field, named + " is a group, symbol or string table");
      }
      if (section.group != kNoGroup) fail(field, named + " is already in a group");
      if ((section.flags & kShfGroup) == 0) fail(field, named + " lacks SHF_GROUP");
      section.group = group_index;
      group.members.push_back(member);
    }
    object.groups.push_back(std::move(group));
  }
  for (std::uint32_t index = 0; index < headers.size(); ++index) {
    const Section& section = object.sections[index];
    const std::string named = fmt::format("section {} ({})", index, section.name);
    if ((section.flags & kShfGroup) != 0 && section.group == kNoGroup) {
      fail(named, "has SHF_GROUP but is in no group");
    }
    // Discarding a group discards the relocations of its sections: a member RELA
    // section must relocate a member, or its relocations would outlive (or die with) the wrong one.
    if (headers[index].type == kShtRela && section.group != kNoGroup &&
        object.sections[headers[index].info].group != section.group) {
      fail(named, fmt::format("is in group '{}' but relocates {}, which is not",
                              object.groups[section.group].signature,
                              object.sections[headers[index].info].name));
    }
  }
}

}  // namespace

ObjectFile read_object(std::string name, std::span<const std::uint8_t> bytes) {
  ObjectFile object;
  object.name = std::move(name);
  try {
    const Bytes file(bytes);
    check_header(file);
    const std::vector<RawSection> headers = read_section_headers(file);
    const std::uint16_t shstrndx = file.u16(50, "e_shstrndx");
    if (!headers.empty()) {
      if (shstrndx == kShnXindex) fail("e_shstrndx", "SHN_XINDEX is not supported");
      if (shstrndx >= headers.size() || headers[shstrndx].type != kShtStrtab) {
        fail("e_shstrndx", fmt::format("{} is not a string table", shstrndx));
      }
    }
    object.sections.resize(headers.size());
    std::uint32_t symtab = 0;
    for (std::uint32_t i = 0; i < headers.size(); ++i) {
      const RawSection& h = headers[i];
      Section& s = object.sections[i];
      const std::string field = fmt::format("section {}", i);
      if (i > 0) s.name = string_at(file, headers[shstrndx], h.name, field + " sh_name");
      const std::string named = fmt::format("section {} ({})", i, s.name);
      s.type = h.type;
      s.flags = h.flags;
      s.size = h.size;
      s.alignment = h.addralign == 0 ? 1 : h.addralign;
      if ((s.alignment & (s.alignment - 1)) != 0) {
        fail(named, fmt::format("sh_addralign {:#x} is not a power of two", h.addralign));
      }
      if (h.type == kShtRel) {
        fail(named, "REL relocations are not supported (Colossus objects use RELA addends)");
      }
      if (h.type == kShtSymtab) {
        if (symtab != 0) fail(named, "a second symbol table");
        symtab = i;
      }
      if (h.type != kShtNobits && h.type != kShtNull && s.placeable()) {
        const auto data = file.slice(h.offset, h.size, named);
        s.bytes.assign(data.begin(), data.end());
      }
    }
    if (symtab != 0) read_symbols(file, headers, symtab, object);
    for (std::uint32_t i = 0; i < headers.size(); ++i) {
      if (headers[i].type == kShtRela) read_relocations(file, headers, i, symtab, object);
    }
    read_groups(file, headers, symtab, object);
  } catch (ObjectError& error) {
    error.add_context(object.name);
    throw;
  } catch (const ArithmeticError& error) {
    // A checked range that failed: the same malformed file, one error type for callers.
    throw ObjectError(object.name, error.what());
  }
  return object;
}

ObjectFile read_object_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot open", path.string()));
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (in.bad()) throw IoError(fmt::format("{}: cannot read", path.string()));
  return read_object(path.string(), bytes);
}

}  // namespace tessera::compiler::elf
