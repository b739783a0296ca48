#include "tests/testing/elf_writer.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace tessera::testing {
namespace elf = compiler::elf;
namespace {

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
}
void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void pad_to(std::vector<std::uint8_t>& out, std::size_t alignment) {
  while (out.size() % alignment != 0) out.push_back(0);
}

// A string table: NUL first, then each string once.
class Strings {
 public:
  Strings() : bytes_{0} {}
  std::uint32_t add(const std::string& s) {
    if (s.empty()) return 0;
    if (const auto it = offsets_.find(s); it != offsets_.end()) return it->second;
    const auto at = static_cast<std::uint32_t>(bytes_.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    bytes_.push_back(0);
    offsets_[s] = at;
    return at;
  }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::map<std::string, std::uint32_t> offsets_;
};

}  // namespace

ElfWriter::ElfWriter() = default;

std::uint32_t ElfWriter::add_section(std::string name, std::vector<std::uint8_t> bytes,
                                     std::uint32_t flags, std::uint32_t alignment) {
  const auto size = static_cast<std::uint32_t>(bytes.size());
  sections_.push_back(
      {std::move(name), elf::kShtProgbits, flags, alignment, size, std::move(bytes)});
  return static_cast<std::uint32_t>(sections_.size());
}

std::uint32_t ElfWriter::add_nobits(std::string name, std::uint32_t size, std::uint32_t alignment,
                                    std::uint32_t flags) {
  sections_.push_back({std::move(name), elf::kShtNobits, flags, alignment, size, {}});
  return static_cast<std::uint32_t>(sections_.size());
}

std::uint32_t ElfWriter::add_unallocated(std::string name, std::vector<std::uint8_t> bytes) {
  const auto size = static_cast<std::uint32_t>(bytes.size());
  sections_.push_back({std::move(name), elf::kShtProgbits, 0, 1, size, std::move(bytes)});
  return static_cast<std::uint32_t>(sections_.size());
}

std::uint32_t ElfWriter::add_symbol(std::string name, std::uint16_t section, std::uint32_t value,
                                    std::uint8_t binding, std::uint8_t type, std::uint32_t size) {
  symbols_.push_back({std::move(name), section, value, size, binding, type});
  return static_cast<std::uint32_t>(symbols_.size());
}

std::uint32_t ElfWriter::add_undefined(std::string name) {
  return add_symbol(std::move(name), elf::kShnUndef, 0, elf::kStbGlobal, elf::kSttNotype);
}

std::uint32_t ElfWriter::add_section_symbol(std::uint32_t section) {
  return add_symbol("", static_cast<std::uint16_t>(section), 0, elf::kStbLocal, elf::kSttSection);
}

std::uint32_t ElfWriter::add_group(std::uint32_t signature, std::vector<std::uint32_t> members,
                                   std::uint32_t flag_word, bool mark_members) {
  if (mark_members) {
    for (const auto m : members) sections_.at(m - 1).flags |= elf::kShfGroup;
  }
  // Contents are written in build(), when the RELA sections' indices are known.
  sections_.push_back({".group", elf::kShtGroup, 0, 4, 0, {}});
  const auto index = static_cast<std::uint32_t>(sections_.size());
  groups_.push_back({index, signature, flag_word, std::move(members)});
  return index;
}

void ElfWriter::add_relocation(std::uint32_t section, std::uint32_t offset, std::uint32_t type,
                               std::uint32_t symbol, std::int32_t addend) {
  relocations_.push_back({section, offset, type, symbol, addend});
}

std::vector<std::uint8_t> ElfWriter::build() const {
  // Symbol order: null, locals, globals; handle h (1-based) → final index.
  std::vector<std::uint32_t> final_index(symbols_.size() + 1, 0);
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < symbols_.size(); ++i) {
    if (symbols_[i].binding == elf::kStbLocal) order.push_back(i);
  }
  const auto first_global = static_cast<std::uint32_t>(order.size() + 1);
  for (std::size_t i = 0; i < symbols_.size(); ++i) {
    if (symbols_[i].binding != elf::kStbLocal) order.push_back(i);
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    final_index[order[k] + 1] = static_cast<std::uint32_t>(k + 1);
  }

  // Section header indices: 0 null, 1..n user sections, then the tables.
  const auto user = static_cast<std::uint32_t>(sections_.size());
  std::map<std::uint32_t, std::vector<const RelocationEntry*>> by_section;
  for (const auto& r : relocations_) by_section[r.section].push_back(&r);
  const std::uint32_t shstrtab_index = user + 1;
  const std::uint32_t strtab_index = user + 2;
  const std::uint32_t symtab_index = user + 3;
  const auto section_count = static_cast<std::uint32_t>(symtab_index + 1 + by_section.size());

  struct Header {
    std::uint32_t name = 0, type = 0, flags = 0, offset = 0, size = 0, link = 0, info = 0,
                  addralign = 0, entsize = 0;
  };
  // Each group's words: the flags, its members, and the RELA sections of those members.
  std::map<std::uint32_t, std::vector<std::uint8_t>> group_bytes;
  std::map<std::uint32_t, std::uint32_t> rela_group_flags;  // rela header index → SHF_GROUP
  for (const GroupEntry& g : groups_) {
    std::vector<std::uint8_t>& words = group_bytes[g.section];
    put32(words, g.flag_word);
    for (const auto m : g.members) put32(words, m);
    std::uint32_t rela = symtab_index + 1;
    for (const auto& entry : by_section) {
      for (const auto m : g.members) {
        if (entry.first == m) {
          put32(words, rela);
          if ((sections_.at(m - 1).flags & elf::kShfGroup) != 0)
            rela_group_flags[rela] = elf::kShfGroup;
        }
      }
      ++rela;
    }
  }

  std::vector<Header> headers(section_count);
  Strings section_names;
  std::vector<std::uint8_t> out(elf::kElfHeaderBytes, 0);

  for (std::uint32_t i = 0; i < user; ++i) {
    const Section& s = sections_[i];
    Header& h = headers[i + 1];
    h.name = section_names.add(s.name);
    h.type = s.type;
    h.flags = s.flags;
    h.addralign = s.alignment;
    h.size = s.size;
    pad_to(out, s.alignment == 0 ? 1 : std::min<std::uint32_t>(s.alignment, 16));
    h.offset = static_cast<std::uint32_t>(out.size());
    if (s.type == elf::kShtGroup) {
      const auto& words = group_bytes.at(i + 1);
      const auto& g = *std::find_if(groups_.begin(), groups_.end(),
                                    [&](const GroupEntry& e) { return e.section == i + 1; });
      h.size = static_cast<std::uint32_t>(words.size());
      h.link = symtab_index;
      h.info = g.signature < final_index.size() ? final_index[g.signature] : g.signature;
      h.entsize = 4;
      out.insert(out.end(), words.begin(), words.end());
      continue;
    }
    out.insert(out.end(), s.bytes.begin(), s.bytes.end());
  }

  Strings names;
  std::vector<std::uint8_t> symtab(elf::kSymbolBytes, 0);
  for (const std::size_t i : order) {
    const SymbolEntry& s = symbols_[i];
    put32(symtab, names.add(s.name));
    put32(symtab, s.value);
    put32(symtab, s.size);
    symtab.push_back(static_cast<std::uint8_t>(s.binding << 4 | s.type));
    symtab.push_back(0);
    put16(symtab, s.section);
  }

  std::vector<std::string> rela_names;
  std::vector<std::vector<std::uint8_t>> rela_bytes;
  for (const auto& [section, entries] : by_section) {
    rela_names.push_back(".rela" + (section >= 1 && section <= user ? sections_[section - 1].name
                                                                    : std::string(".bad")));
    std::vector<std::uint8_t> bytes;
    for (const RelocationEntry* r : entries) {
      put32(bytes, r->offset);
      const std::uint32_t symbol =
          r->symbol < final_index.size() ? final_index[r->symbol] : r->symbol;
      put32(bytes, symbol << 8 | (r->type & 0xFF));
      put32(bytes, static_cast<std::uint32_t>(r->addend));
    }
    rela_bytes.push_back(std::move(bytes));
  }

  auto add_table = [&](std::uint32_t index, const std::string& name, std::uint32_t type,
                       const std::vector<std::uint8_t>& bytes, std::uint32_t alignment) {
    Header& h = headers[index];
    h.name = section_names.add(name);
    h.type = type;
    h.addralign = alignment;
    pad_to(out, alignment);
    h.offset = static_cast<std::uint32_t>(out.size());
    h.size = static_cast<std::uint32_t>(bytes.size());
    out.insert(out.end(), bytes.begin(), bytes.end());
  };
  // Names must all be in .shstrtab before it is written.
  section_names.add(".shstrtab");
  section_names.add(".strtab");
  section_names.add(".symtab");
  for (const auto& n : rela_names) section_names.add(n);

  add_table(strtab_index, ".strtab", elf::kShtStrtab, names.bytes(), 1);
  add_table(symtab_index, ".symtab", elf::kShtSymtab, symtab, 4);
  headers[symtab_index].link = strtab_index;
  headers[symtab_index].info = first_global;
  headers[symtab_index].entsize = elf::kSymbolBytes;
  std::uint32_t index = symtab_index + 1;
  std::size_t k = 0;
  for (const auto& [section, entries] : by_section) {
    add_table(index, rela_names[k], elf::kShtRela, rela_bytes[k], 4);
    headers[index].link = symtab_index;
    headers[index].info = section;
    headers[index].entsize = elf::kRelaBytes;
    if (const auto it = rela_group_flags.find(index); it != rela_group_flags.end())
      headers[index].flags |= it->second;
    ++index;
    ++k;
  }
  add_table(shstrtab_index, ".shstrtab", elf::kShtStrtab, section_names.bytes(), 1);

  pad_to(out, 4);
  const auto shoff = static_cast<std::uint32_t>(out.size());
  for (const Header& h : headers) {
    put32(out, h.name);
    put32(out, h.type);
    put32(out, h.flags);
    put32(out, 0);  // sh_addr: 0 in relocatable objects
    put32(out, h.offset);
    put32(out, h.size);
    put32(out, h.link);
    put32(out, h.info);
    put32(out, h.addralign);
    put32(out, h.entsize);
  }

  // The ELF header.
  std::vector<std::uint8_t> header;
  header.insert(header.end(), std::begin(elf::kElfMagic), std::end(elf::kElfMagic));
  header.push_back(elf::kElfClass32);
  header.push_back(elf::kElfData2Lsb);
  header.push_back(elf::kElfVersionCurrent);
  header.resize(16, 0);  // OS ABI, ABI version, padding
  put16(header, elf::kElfTypeRel);
  put16(header, elf::kMachineColossus);
  put32(header, elf::kElfVersionCurrent);
  put32(header, 0);      // e_entry
  put32(header, 0);      // e_phoff
  put32(header, shoff);  // e_shoff
  put32(header, 0);      // e_flags
  put16(header, static_cast<std::uint16_t>(elf::kElfHeaderBytes));
  put16(header, 0);  // e_phentsize
  put16(header, 0);  // e_phnum
  put16(header, static_cast<std::uint16_t>(elf::kSectionHeaderBytes));
  put16(header, static_cast<std::uint16_t>(section_count));
  put16(header, static_cast<std::uint16_t>(shstrtab_index));
  if (header.size() != elf::kElfHeaderBytes) throw std::logic_error("ELF header size");
  std::copy(header.begin(), header.end(), out.begin());
  return out;
}

void poke_u16(std::vector<std::uint8_t>& bytes, std::size_t offset, std::uint16_t value) {
  bytes.at(offset) = static_cast<std::uint8_t>(value);
  bytes.at(offset + 1) = static_cast<std::uint8_t>(value >> 8);
}

void poke_u32(std::vector<std::uint8_t>& bytes, std::size_t offset, std::uint32_t value) {
  for (std::size_t i = 0; i < 4; ++i)
    bytes.at(offset + i) = static_cast<std::uint8_t>(value >> (8 * i));
}

std::vector<std::uint8_t> single_function_object(const std::string& name,
                                                 const std::vector<std::uint32_t>& words) {
  std::vector<std::uint8_t> bytes;
  for (const auto w : words) put32(bytes, w);
  ElfWriter writer;
  const auto text = writer.add_section(".text." + name, bytes);
  writer.add_symbol(name, static_cast<std::uint16_t>(text), 0, elf::kStbGlobal, elf::kSttFunc,
                    static_cast<std::uint32_t>(bytes.size()));
  return writer.build();
}

std::vector<std::uint8_t> sample_colossus_object() {
  ElfWriter w;
  const auto text = w.add_section(".text", std::vector<std::uint8_t>(24, 0));
  const auto data =
      w.add_section(".data", std::vector<std::uint8_t>(8, 0), elf::kShfAlloc | elf::kShfWrite, 8);
  const auto bss = w.add_nobits(".bss", 16, 16);
  w.add_unallocated(".comment", {'h', 'i', 0});
  w.add_symbol("main", static_cast<std::uint16_t>(text), 0);
  w.add_symbol("local", static_cast<std::uint16_t>(text), 8, elf::kStbLocal);
  w.add_symbol("buffer", static_cast<std::uint16_t>(bss), 0, elf::kStbGlobal, elf::kSttObject, 16);
  const auto data_symbol = w.add_section_symbol(data);
  const auto ext = w.add_undefined("external");
  w.add_relocation(text, 0, elf::RelocationType::k32, data_symbol, 4);
  w.add_relocation(text, 4, elf::RelocationType::kRun, ext);
  w.add_relocation(text, 8, elf::RelocationType::k19S2, data_symbol);
  w.add_relocation(text, 12, elf::RelocationType::k16S3, data_symbol);
  w.add_relocation(data, 0, elf::RelocationType::k64, ext);
  return w.build();
}

}  // namespace tessera::testing
