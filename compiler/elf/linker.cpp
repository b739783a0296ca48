#include "compiler/elf/linker.hpp"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "compiler/elf/relocation.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::elf {
namespace {

// (object index, section index)
using SectionKey = std::pair<std::size_t, std::size_t>;

struct Definition {
  std::size_t object = 0;
  std::size_t symbol = 0;
};

std::string where(const ObjectFile& object, std::size_t section) {
  return fmt::format("{} ({})", object.name, object.sections[section].name);
}

std::string where(const ObjectFile& object, const Symbol& symbol) {
  if (symbol.section == kShnAbs) return fmt::format("{} (absolute)", object.name);
  return where(object, symbol.section);
}

class Linker {
 public:
  Linker(std::span<const ObjectFile> objects, const LinkOptions& options)
      : objects_(objects), options_(options) {}

  LinkedImage run() {
    select_groups();
    collect_definitions();
    reach();
    place();
    relocate();
    return finish();
  }

 private:
  // ---- 1. COMDAT selection and the global symbol table ---------------------------------
  // The first COMDAT group of each signature (object order, then section order) is kept;
  // every later one is discarded whole: its sections are never placed, their relocations
  // never applied, and the definitions in them are not definitions.
  void select_groups() {
    std::map<std::string, std::size_t, std::less<>> kept;  // signature → object
    for (std::size_t o = 0; o < objects_.size(); ++o) {
      for (const SectionGroup& group : objects_[o].groups) {
        if (!group.comdat) continue;
        const auto [it, first] = kept.try_emplace(group.signature, o);
        if (first) continue;
        for (const std::uint32_t member : group.members) {
          discarded_.emplace(SectionKey{o, member}, it->second);
        }
      }
    }
  }

  bool is_discarded(std::size_t object, std::size_t section) const {
    return discarded_.contains({object, section});
  }

  // "b.o's COMDAT group 'sig' (discarded: a.o's copy is kept)".
  std::string discarded_group(std::size_t object, std::size_t section) const {
    const ObjectFile& file = objects_[object];
    return fmt::format("{}'s COMDAT group '{}' (discarded: {}'s copy is kept)", file.name,
                       file.groups[file.sections[section].group].signature,
                       objects_[discarded_.at({object, section})].name);
  }

  // ELF's rule: one strong (global) definition wins over any number of weak ones; among
  // weak ones the first in object order wins; two strong ones are an error naming both.
  // An external counts as strong: it beats a weak definition and clashes with a strong one.
  void collect_definitions() {
    for (std::size_t o = 0; o < objects_.size(); ++o) {
      const auto& symbols = objects_[o].symbols;
      for (std::size_t s = 1; s < symbols.size(); ++s) {
        const Symbol& symbol = symbols[s];
        if (!symbol.global() || !symbol.defined() || symbol.name.empty()) continue;
        if (symbol.section != kShnAbs && is_discarded(o, symbol.section)) {
          discarded_definitions_.try_emplace(symbol.name, Definition{o, s});
          continue;
        }
        const bool weak = symbol.binding == kStbWeak;
        if (options_.externals.contains(symbol.name)) {
          if (weak) continue;
          throw LinkError(
              fmt::format("duplicate symbol '{}': defined in {} and given as an external",
                          symbol.name, where(objects_[o], symbol)));
        }
        const auto [it, inserted] = globals_.try_emplace(symbol.name, Definition{o, s});
        if (inserted) continue;
        const Definition& first = it->second;
        const Symbol& held = objects_[first.object].symbols[first.symbol];
        if (weak) continue;                                        // strong or first weak stays
        if (held.binding == kStbWeak) {
          it->second = Definition{o, s};                           // strong beats weak
          continue;
        }
        throw LinkError(fmt::format(
            "duplicate symbol '{}': strong (global) definitions in {} and in {}", symbol.name,
            where(objects_[first.object], held), where(objects_[o], symbol)));
      }
    }
  }

  // ---- 2. reachability -----------------------------------------------------------------
  void add_root(const std::string& name, std::string_view role) {
    const auto it = globals_.find(name);
    if (it == globals_.end()) {
      throw LinkError(fmt::format("{} symbol '{}' is not defined by any object", role, name));
    }
    const ObjectFile& object = objects_[it->second.object];
    const Symbol& symbol = object.symbols[it->second.symbol];
    if (symbol.section == kShnAbs) return;
    if (!object.sections[symbol.section].placeable()) {
      throw LinkError(
          fmt::format("{} symbol '{}' is in {}, which is not placed (empty, not "
                      "allocated or TLS)",
                      role, name, where(object, symbol.section)));
    }
    visit(it->second.object, symbol.section);
  }

  // A group's sections are kept or dropped together (gABI): reaching one reaches them all.
  void visit(std::size_t object, std::size_t section) {
    if (is_discarded(object, section)) return;  // relocate() names the reference
    if (!reached_.insert({object, section}).second) return;
    pending_.push_back({object, section});
    const Section& reached = objects_[object].sections[section];
    if (reached.group == kNoGroup) return;
    for (const std::uint32_t member : objects_[object].groups[reached.group].members) {
      visit(object, member);
    }
  }

  void reach() {
    if (options_.entry.empty()) throw UsageError("link: no entry symbol");
    // RUN's rule is stated on V (V % 4 = 0) and applied to V − base: the same only for a
    // word-aligned base.
    if (!target::is_word_aligned(options_.image_base)) {
      throw UsageError(
          fmt::format("link: image base {:#x} is not word-aligned", options_.image_base));
    }
    add_root(options_.entry, "entry");
    for (const auto& name : options_.retained) add_root(name, "retained");
    while (!pending_.empty()) {
      const auto [o, s] = pending_.back();
      pending_.pop_back();
      const ObjectFile& object = objects_[o];
      for (const Relocation& r : object.sections[s].relocations) {
        const Symbol& target = object.symbols[r.symbol];
        if (r.symbol == 0 || target.section == kShnAbs) continue;
        // A local (or section symbol) is its own object's; a global or weak name is the
        // table's winner, even when this object defines it too (a weak one may have lost).
        if (!target.global()) {
          if (target.defined()) visit(o, target.section);
        } else if (const auto it = globals_.find(target.name); it != globals_.end()) {
          const Symbol& definition = objects_[it->second.object].symbols[it->second.symbol];
          if (definition.section != kShnAbs) visit(it->second.object, definition.section);
        }
        // Otherwise an external, or undefined: relocate() says which.
      }
    }
  }

  // ---- 3. placement ------------------------------------------------------------------------
  struct Region {
    target::AddressRange range;
    std::uint64_t cursor = 0;  // the first free byte
  };

  std::string free_bytes(const std::vector<Region>& regions) const {
    std::string text;
    for (const Region& region : regions) {
      if (!text.empty()) text += ", ";
      text += fmt::format("{}: {:#x} free", region.range, region.range.end - region.cursor);
    }
    return text;
  }

  void place() {
    std::vector<Region> regions;
    for (const auto& range : options_.regions) {
      if (!range.empty()) regions.push_back({range, range.begin});
    }
    for (const Region& region : regions) {
      // Kernels and runtime code run from here: instruction fetch works only in region 0.
      if (!target::is_executable(region.range)) {
        throw UsageError(fmt::format("link: region {} is not in the executable range {}",
                                     region.range, target::kExecutableRange));
      }
    }
    std::sort(regions.begin(), regions.end(),
              [](const Region& a, const Region& b) { return a.range.begin < b.range.begin; });
    for (std::size_t i = 1; i < regions.size(); ++i) {
      if (regions[i - 1].range.overlaps(regions[i].range)) {
        throw UsageError(
            fmt::format("link: regions {} and {} overlap", regions[i - 1].range, regions[i].range));
      }
    }
    std::uint64_t placed_bytes = 0;
    // std::set orders keys by object, then section: §3.4's order.
    for (const auto& key : reached_) {
      const ObjectFile& object = objects_[key.first];
      const Section& section = object.sections[key.second];
      if (!section.placeable()) continue;  // relocate() reports a reference into it
      bool done = false;
      for (Region& region : regions) {
        const std::uint64_t mask = std::uint64_t{section.alignment} - 1;
        const std::uint64_t at =
            checked_add<std::uint64_t>(region.cursor, mask, "section address") & ~mask;
        const std::uint64_t end = checked_add<std::uint64_t>(at, section.size, "section end");
        if (end > region.range.end) continue;
        region.cursor = end;
        placed_bytes += section.size;
        addresses_[key] = static_cast<std::uint32_t>(at);
        done = true;
        break;
      }
      if (!done) {
        throw LinkError(fmt::format(
            "section {} ({:#x} bytes, alignment {}) does not fit: {}; {:#x} bytes placed before it",
            where(object, key.second), section.size, section.alignment, free_bytes(regions),
            placed_bytes));
      }
      PlacedSection out;
      out.object = object.name;
      out.name = section.name;
      out.address = addresses_.at(key);
      out.alignment = section.alignment;
      out.executable = (section.flags & kShfExecInstr) != 0;
      out.writable = (section.flags & kShfWrite) != 0;
      out.zero_fill = section.type == kShtNobits;
      if (out.zero_fill) {
        out.bytes.assign(section.size, 0);
      } else {
        out.bytes = section.bytes;
      }
      index_[key] = image_.sections.size();
      image_.sections.push_back(std::move(out));
    }
  }

  // ---- 4. relocations ----------------------------------------------------------------------
  // S for a definition: its section's placed address plus st_value, or st_value if absolute.
  std::uint64_t defined_value(std::size_t o, std::uint32_t index) const {
    const ObjectFile& object = objects_[o];
    const Symbol& symbol = object.symbols[index];
    if (symbol.section == kShnAbs) return symbol.value;
    if (is_discarded(o, symbol.section)) {
      // gABI: a local of a discarded group's section may not be referred to from outside it.
      throw LinkError(fmt::format(
          "symbol '{}' is in {} ({}), and references from outside a group to its locals are "
          "not allowed",
          symbol.name.empty() ? object.sections[symbol.section].name : symbol.name,
          where(object, symbol.section), discarded_group(o, symbol.section)));
    }
    const auto it = addresses_.find({o, symbol.section});
    if (it == addresses_.end()) {
      throw LinkError(fmt::format("symbol '{}' refers to discarded section {}", symbol.name,
                                  where(object, symbol.section)));
    }
    return std::uint64_t{it->second} + symbol.value;
  }

  // S for `symbol` of `object`; the caller adds which relocation asked.
  std::uint64_t symbol_value(std::size_t o, std::uint32_t index) const {
    const ObjectFile& object = objects_[o];
    const Symbol& symbol = object.symbols[index];
    if (index == 0) return 0;
    if (!symbol.global()) {
      if (symbol.defined()) return defined_value(o, index);
      throw LinkError(fmt::format("undefined local symbol '{}'", symbol.name));
    }
    if (const auto it = globals_.find(symbol.name); it != globals_.end()) {
      return defined_value(it->second.object, static_cast<std::uint32_t>(it->second.symbol));
    }
    if (const auto it = options_.externals.find(symbol.name); it != options_.externals.end()) {
      return it->second;
    }
    if (const auto it = discarded_definitions_.find(symbol.name);
        it != discarded_definitions_.end()) {
      const ObjectFile& definer = objects_[it->second.object];
      throw LinkError(fmt::format(
          "undefined symbol '{}': defined only in {}, and the kept copy does not define it",
          symbol.name,
          discarded_group(it->second.object, definer.symbols[it->second.symbol].section)));
    }
    throw LinkError(fmt::format("undefined symbol '{}'", symbol.name));
  }

  void relocate() {
    for (const auto& placed : index_) {
      // Named copies, not structured bindings: clang 14 (the fuzz build) cannot capture those.
      const SectionKey key = placed.first;
      const std::size_t slot = placed.second;
      const ObjectFile& object = objects_[key.first];
      const Section& section = object.sections[key.second];
      PlacedSection& out = image_.sections[slot];
      for (std::size_t i = 0; i < section.relocations.size(); ++i) {
        const Relocation& r = section.relocations[i];
        const Symbol& symbol = object.symbols[r.symbol];
        const std::string symbol_name = r.symbol == 0 ? std::string("(none)")
                                        : symbol.name.empty() && symbol.type == kSttSection &&
                                                symbol.section < object.sections.size()
                                            ? object.sections[symbol.section].name
                                            : symbol.name;
        const std::string context =
            fmt::format("{}: relocation {} at {}+{:#x} against '{}'", where(object, key.second), i,
                        section.name, r.offset, symbol_name);
        with_context(context, [&] {
          const auto type = relocation_type(r.type);
          if (!type) throw LinkError(fmt::format("unknown Colossus relocation type {}", r.type));
          if (*type == RelocationType::kNone) return;
          if (out.zero_fill) throw LinkError("relocation in a NOBITS section");
          const std::uint32_t width = relocation_width(*type);
          // §3.2's hole, closed: the write must lie inside this section.
          if (checked_add<std::uint64_t>(r.offset, width, "r_offset") > out.bytes.size()) {
            throw LinkError(
                fmt::format("{}: r_offset {:#x} + {} bytes is past the end of the "
                            "section ({:#x} bytes)",
                            relocation_name(*type), r.offset, width, out.bytes.size()));
          }
          // |S| < 2^33 and |A| < 2^31: no 64-bit overflow.
          const std::int64_t value =
              static_cast<std::int64_t>(symbol_value(key.first, r.symbol)) + r.addend;
          apply_relocation(*type, value, std::span(out.bytes).subspan(r.offset, width),
                           options_.image_base);
        });
      }
    }
  }

  LinkedImage finish() {
    for (const auto& [name, definition] : globals_) {
      const ObjectFile& object = objects_[definition.object];
      const Symbol& symbol = object.symbols[definition.symbol];
      if (symbol.type == kSttFile || symbol.type == kSttSection) continue;
      const bool absolute = symbol.section == kShnAbs;
      if (!absolute && !addresses_.contains({definition.object, symbol.section})) continue;
      image_.symbols.push_back(
          {name, object.name,
           static_cast<std::uint32_t>(
               defined_value(definition.object, static_cast<std::uint32_t>(definition.symbol))),
           symbol.size, true, symbol.type == kSttFunc, absolute});
    }
    std::vector<LinkedSymbol> locals;
    for (std::size_t o = 0; o < objects_.size(); ++o) {
      const auto& symbols = objects_[o].symbols;
      for (std::size_t s = 1; s < symbols.size(); ++s) {
        const Symbol& symbol = symbols[s];
        if (symbol.global() || !symbol.defined() || symbol.name.empty()) continue;
        if (symbol.type == kSttFile || symbol.type == kSttSection || symbol.section == kShnAbs)
          continue;
        if (!addresses_.contains({o, symbol.section})) continue;
        locals.push_back(
            {symbol.name, objects_[o].name,
             static_cast<std::uint32_t>(defined_value(o, static_cast<std::uint32_t>(s))),
             symbol.size, false, symbol.type == kSttFunc, false});
      }
    }
    std::stable_sort(locals.begin(), locals.end(), [](const auto& a, const auto& b) {
      return std::tie(a.object, a.name) < std::tie(b.object, b.name);
    });
    image_.symbols.insert(image_.symbols.end(), locals.begin(), locals.end());
    image_.entry = image_.address_of(options_.entry);
    return std::move(image_);
  }

  std::span<const ObjectFile> objects_;
  const LinkOptions& options_;
  std::map<std::string, Definition, std::less<>> globals_;
  // Sections of discarded COMDAT groups → the object whose group of that signature is kept.
  std::map<SectionKey, std::size_t> discarded_;
  // Globals defined only in discarded groups (the first such), for the undefined-symbol message.
  std::map<std::string, Definition, std::less<>> discarded_definitions_;
  std::set<SectionKey> reached_;
  std::vector<SectionKey> pending_;
  std::map<SectionKey, std::uint32_t> addresses_;
  std::map<SectionKey, std::size_t> index_;
  LinkedImage image_;
};

}  // namespace

const LinkedSymbol* LinkedImage::find(std::string_view name) const {
  for (const auto& symbol : symbols) {
    if (symbol.global && symbol.name == name) return &symbol;
  }
  return nullptr;
}

std::uint32_t LinkedImage::address_of(std::string_view name) const {
  const LinkedSymbol* symbol = find(name);
  if (symbol == nullptr) throw LinkError(fmt::format("the linked image has no symbol '{}'", name));
  return symbol->address;
}

std::uint64_t LinkedImage::section_bytes() const {
  std::uint64_t total = 0;
  for (const auto& section : sections) total += section.bytes.size();
  return total;
}

LinkedImage link(std::span<const ObjectFile> objects, const LinkOptions& options) {
  return Linker(objects, options).run();
}

}  // namespace tessera::compiler::elf
