#pragma once
// The Colossus ELF linker (package-elf-profile.md §3, issue 21 item 4):
// relocatable kernel and runtime objects → placed section bytes, their
// addresses and a symbol table, for one tile's code regions.
//
//   1. symbols: COMDAT groups first — the first group of each signature (object
//      order) is kept, every later one discarded whole (its sections, their
//      relocations, its definitions); their contents are not compared (the
//      one-definition rule makes them equal). Then every global or weak
//      definition of a kept section goes into one table by ELF's rule: a strong
//      (global) definition beats weak ones, the first weak one wins among weak
//      ones, two strong ones are a LinkError naming both objects. An external
//      is strong too: it beats a weak definition, clashes with a strong one.
//      A reference to a global or weak name resolves to the table's winner,
//      even from the object that lost; locals stay scoped to their object (the
//      prior art's map mixed them), and a reference from outside a discarded
//      group to one of its locals is an error (gABI). A weak undefined
//      reference with no definition is undefined, not 0;
//   2. reachability (§3.3): from the entry and the retained symbols
//      (dispatch-table targets nothing relocates against), each relocation of
//      a reached section reaches the section of its target — its own
//      object's for a local, the table's winner for a global or weak name.
//      Reaching one section of a group reaches all of it. Unreached sections
//      are dropped whole;
//   3. placement (§3.4): reached sections in object order, then section
//      order, each at the first region (in address order) where it fits after
//      what that region already holds, aligned to sh_addralign. A section
//      that fits nowhere is a LinkError naming section, size, alignment and
//      every region's free bytes;
//   4. relocations (§3.2, relocation.hpp): V = S + A, S the placed address
//      (section + st_value), st_value for an absolute symbol, the table's
//      winner or an external for a global name; a write must lie inside its section
//      (§3.2's hole: the prior art checked the whole image). Errors name the
//      object, section, offset, type, symbol, value and allowed range.
//
// How the compiler's link step will use it (compiler/README.md, "elf/"): the
// objects come from the kernel cache (kernel_cache.hpp); the region is a
// region-0 allocation the code placement reserves for the tile's kernels;
// each PlacedSection becomes one executable segment of the tile image, and a
// kernel call's target is `image.address_of(kernel name)` instead of its
// host-model stub.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/elf/object.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::elf {

struct LinkOptions {
  std::string entry;                  // a global the objects define; the first root
  std::vector<std::string> retained;  // more roots, each defined by some object
  // Addresses defined outside the objects (runtime state, per-tile constants):
  // undefined references resolve to them.
  std::map<std::string, std::uint32_t, std::less<>> externals;
  // Where sections may go: the tile's code regions by default (memory_map.hpp).
  std::vector<target::AddressRange> regions{target::kLinkerRegion1, target::kLinkerRegion2};
  // Image-relative relocations (RELATIVE_16_S2, RUN) count from here (§3.2).
  std::uint32_t image_base = kImageBase;
};

struct PlacedSection {
  std::string object;
  std::string name;
  std::uint32_t address = 0;
  std::uint32_t alignment = 1;
  std::vector<std::uint8_t> bytes;  // relocated; zeros for NOBITS
  bool executable = false;
  bool writable = false;
  bool zero_fill = false;  // NOBITS: the tile image must hold zeros here

  target::AddressRange range() const {
    return target::AddressRange::from_size(address, static_cast<std::uint32_t>(bytes.size()), name);
  }
};

struct LinkedSymbol {
  std::string name;
  std::string object;
  std::uint32_t address = 0;
  std::uint32_t size = 0;
  bool global = false;    // global or weak; locals are listed for debugging only
  bool function = false;  // STT_FUNC
  bool absolute = false;  // SHN_ABS: not inside any placed section
};

struct LinkedImage {
  std::uint32_t entry = 0;
  std::vector<PlacedSection> sections;  // in placement order
  // Globals of placed sections (and absolute globals) by name, then the
  // locals of placed sections by object and name.
  std::vector<LinkedSymbol> symbols;

  // A global by name; nullptr when the image has none.
  const LinkedSymbol* find(std::string_view name) const;
  // LinkError naming the symbol when the image has no such global.
  std::uint32_t address_of(std::string_view name) const;
  // Bytes the sections occupy, alignment padding between them excluded.
  std::uint64_t section_bytes() const;
};

LinkedImage link(std::span<const ObjectFile> objects, const LinkOptions& options);

}  // namespace tessera::compiler::elf
