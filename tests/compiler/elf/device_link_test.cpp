// The link step with device code (emit::LinkOptions::device, issue 21 items
// 4 and 5): compile() of a small graph with an in-memory provider whose
// objects come from the tests' ELF writer. Each kernel's object holds its
// entry (a marker word, a word relocated to its own .rodata, whose first word
// is the marker again) and a section nothing reaches. The package is read
// back independently: the instruction at every call site is decoded, and its
// target must be the kernel's symbol, holding exactly the object's bytes with
// the relocation patched to where the .rodata landed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "compiler/compile.hpp"
#include "compiler/elf/linker.hpp"
#include "compiler/elf/object.hpp"
#include "compiler/emit/link.hpp"
#include "support/little_endian.hpp"
#include "target/isa.hpp"
#include "target/loader_batch.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"
#include "tests/testing/elf_writer.hpp"

namespace tessera::compiler {
namespace {

namespace el = compiler::elf;
namespace isa = target::isa;

constexpr std::uint32_t kUnreachedMarker = 0xDEADC0DE;

// A marker per kernel name: its words are recognisable in the image.
std::uint32_t marker(std::string_view kernel) {
  std::uint32_t h = 0x811C9DC5u;
  for (const char c : kernel) h = (h ^ static_cast<std::uint8_t>(c)) * 16777619u;
  return h | 1u;
}

std::vector<std::uint8_t> words(std::initializer_list<std::uint32_t> list) {
  std::vector<std::uint8_t> bytes;
  for (const auto w : list) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(w >> (8 * i)));
  }
  return bytes;
}

class TestDeviceCode final : public emit::DeviceCode {
 public:
  std::set<std::string> missing;    // kernels given no device code
  std::uint32_t entry_padding = 0;  // extra bytes in every entry section
  bool with_bss = false;            // a 64-aligned .bss the entry's word 3 points at
  std::set<std::string> asked;

  const el::ObjectFile* object(std::string_view kernel) override {
    asked.emplace(kernel);
    if (missing.contains(std::string(kernel))) return nullptr;
    auto& object = objects_[std::string(kernel)];
    if (!object) {
      testing::ElfWriter writer;
      const auto rodata =
          writer.add_section(".rodata", words({marker(kernel), 0}), el::kShfAlloc, 8);
      auto entry = words({marker(kernel), 0, 0, 0});
      entry.resize(entry.size() + entry_padding, 0);
      const auto text = writer.add_section(".text." + std::string(kernel), entry,
                                           el::kShfAlloc | el::kShfExecInstr, 8);
      const auto unused = writer.add_section(".text.unused", words({kUnreachedMarker}));
      writer.add_symbol(std::string(kernel), static_cast<std::uint16_t>(text), 0, el::kStbGlobal,
                        el::kSttFunc, static_cast<std::uint32_t>(entry.size()));
      writer.add_symbol(std::string(kernel) + "_unused", static_cast<std::uint16_t>(unused));
      writer.add_relocation(text, 8, el::RelocationType::k32, writer.add_section_symbol(rodata));
      if (with_bss) {
        const auto bss = writer.add_nobits(".bss", 16, 64);
        writer.add_relocation(text, 12, el::RelocationType::k32, writer.add_section_symbol(bss));
      }
      const auto bytes = writer.build();
      object = std::make_unique<el::ObjectFile>(el::read_object(std::string(kernel) + ".o", bytes));
    }
    return object.get();
  }

 private:
  std::map<std::string, std::unique_ptr<el::ObjectFile>> objects_;
};

// y = x transposed, s = the column sums of x: element moves, a sum and the
// staging copies of host I/O.
Graph graph() {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF32, {6, 4});
  g.host_output("y", g.transpose(x, {1, 0}));
  g.host_output("s", g.reduce_sum(x, {0}));
  return g;
}

// The bytes a tile's image holds at [address, address + size), or empty when
// no single segment holds them all.
std::vector<std::uint8_t> image_bytes(const schema::Application& app, const schema::TileImage& tile,
                                      std::uint32_t address, std::uint32_t size,
                                      bool* executable = nullptr) {
  for (const auto& segment : tile.segments) {
    if (address >= segment.address &&
        std::uint64_t{address} + size <= std::uint64_t{segment.address} + segment.memory_size) {
      if (executable != nullptr) *executable = (segment.flags & schema::kSegmentExecute) != 0;
      const auto bytes = schema::segment_bytes(app, segment);
      return {bytes.begin() + (address - segment.address),
              bytes.begin() + (address - segment.address + size)};
    }
  }
  return {};
}

std::uint32_t word_at(const schema::Application& app, const schema::TileImage& tile,
                      std::uint32_t address, bool* executable = nullptr) {
  const auto bytes = image_bytes(app, tile, address, 4, executable);
  EXPECT_EQ(bytes.size(), 4u) << "no segment holds " << address;
  return bytes.size() == 4 ? load_u32_le(bytes.data()) : 0;
}

const schema::TileDebug& debug_of(const schema::Application& app, target::PhysicalTile tile) {
  for (const auto& d : app.debug.tiles) {
    if (d.tile == tile) return d;
  }
  throw std::runtime_error("no debug record");
}

std::vector<isa::Instruction> main_instructions(const schema::Application& app,
                                                const schema::TileImage& tile) {
  const auto& debug = debug_of(app, tile.tile);
  const auto main = std::find_if(debug.symbols.begin(), debug.symbols.end(),
                                 [](const auto& s) { return s.name == "main"; });
  EXPECT_NE(main, debug.symbols.end());
  std::vector<isa::Instruction> code;
  for (std::uint32_t pc = main->address; pc < main->address + main->size; pc += 4) {
    const std::uint32_t w = word_at(app, tile, pc);
    code.push_back(isa::decode(std::span<const std::uint32_t>(&w, 1)).instruction);
  }
  return code;
}

std::size_t syncs(const std::vector<isa::Instruction>& code) {
  return static_cast<std::size_t>(std::count_if(code.begin(), code.end(), [](const auto& i) {
    return std::holds_alternative<isa::Sync>(i);
  }));
}

TEST(DeviceLink, EveryCallTargetsItsLinkedEntryAndThePackageIsHardwareLoadable) {
  TestDeviceCode device;
  const CompileResult emulated = compile(graph(), {.tiles = 6});
  const CompileResult linked = compile(graph(), {.tiles = 6, .device = &device});
  const schema::Application& app = linked.application;
  EXPECT_FALSE(emulated.application.hardware_loadable);
  EXPECT_TRUE(app.hardware_loadable) << app.not_loadable_reason;
  EXPECT_TRUE(app.not_loadable_reason.empty());

  // Whole loader batches from physical tile 0, covering every tile the
  // emulated package has.
  std::set<std::uint16_t> tiles;
  for (const auto& t : app.tiles) tiles.insert(t.tile.value);
  ASSERT_FALSE(tiles.empty());
  EXPECT_EQ(tiles.size() % target::kLoaderBatchTiles, 0u);
  EXPECT_EQ(*tiles.begin(), 0u);
  EXPECT_EQ(*tiles.rbegin(), tiles.size() - 1);
  std::uint16_t highest = 0;
  for (const auto& t : emulated.application.tiles) {
    EXPECT_TRUE(tiles.contains(t.tile.value)) << t.tile;
    highest = std::max(highest, t.tile.value);
  }
  EXPECT_EQ(tiles.size(), (highest / 64u + 1u) * 64u);  // no batch more than needed

  std::size_t sites = 0;
  std::set<std::string> called;
  for (const auto& tile : app.tiles) {
    const auto& debug = debug_of(app, tile.tile);
    for (const auto& site : debug.call_sites) {
      ++sites;
      called.insert(site.kernel);
      const std::uint32_t w = word_at(app, tile, site.pc);
      const auto decoded = isa::decode(std::span<const std::uint32_t>(&w, 1)).instruction;
      ASSERT_TRUE(std::holds_alternative<isa::Call>(decoded)) << site.kernel << " on " << tile.tile;
      const std::uint32_t target = std::get<isa::Call>(decoded).target;
      const auto symbol = std::find_if(debug.symbols.begin(), debug.symbols.end(),
                                       [&](const auto& s) { return s.address == target; });
      ASSERT_NE(symbol, debug.symbols.end());
      EXPECT_EQ(symbol->name, site.kernel);
      EXPECT_EQ(symbol->size, 16u);
      // The object's entry, not a stub: its marker, and its relocated word
      // pointing at its own .rodata (a data segment holding the marker).
      bool executable = false;
      EXPECT_EQ(word_at(app, tile, target, &executable), marker(site.kernel));
      EXPECT_TRUE(executable);
      const std::uint32_t rodata = word_at(app, tile, target + 8);
      EXPECT_EQ(rodata % 8, 0u);
      EXPECT_EQ(word_at(app, tile, rodata, &executable), marker(site.kernel));
      EXPECT_FALSE(executable);
      // Inside the tile's "device kernels" allocation, as its .rodata is.
      const auto held = std::find_if(debug.allocations.begin(), debug.allocations.end(),
                                     [](const auto& a) { return a.name == "device kernels"; });
      ASSERT_NE(held, debug.allocations.end());
      EXPECT_EQ(held->kind, schema::AllocationKind::kCode);
      EXPECT_TRUE(target >= held->address && target + 16 <= held->address + held->size);
      EXPECT_TRUE(rodata >= held->address && rodata + 8 <= held->address + held->size);
    }
  }
  EXPECT_EQ(sites, linked.report.kernel_calls);
  EXPECT_EQ(sites, emulated.report.kernel_calls);
  EXPECT_TRUE(called.contains("tessera_sum_f32"));
  EXPECT_TRUE(called.contains("tessera_copy_words"));
  EXPECT_EQ(device.asked, called);

  // Unreached sections are dropped: no image holds their marker; no stub is left.
  for (const auto& tile : app.tiles) {
    for (const auto& segment : tile.segments) {
      const auto bytes = schema::segment_bytes(app, segment);
      for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        EXPECT_NE(load_u32_le(bytes.data() + i), kUnreachedMarker) << tile.tile;
      }
    }
    for (const auto& a : debug_of(app, tile.tile).allocations) EXPECT_NE(a.name, "kernel stubs");
  }
}

TEST(DeviceLink, TilesWithNoWorkRunTheSyncOnlyProgram) {
  TestDeviceCode device;
  const CompileResult emulated = compile(graph(), {.tiles = 6});
  const CompileResult linked = compile(graph(), {.tiles = 6, .device = &device});
  std::set<std::uint16_t> working;
  for (const auto& t : emulated.application.tiles) working.insert(t.tile.value);
  const auto& app = linked.application;
  const auto work = std::find_if(app.tiles.begin(), app.tiles.end(), [&](const auto& t) {
    return !debug_of(app, t.tile).call_sites.empty();
  });
  ASSERT_NE(work, app.tiles.end());
  const std::size_t expected_syncs = syncs(main_instructions(app, *work));
  std::size_t idle = 0;
  for (const auto& tile : app.tiles) {
    if (working.contains(tile.tile.value)) continue;
    ++idle;
    const auto& debug = debug_of(app, tile.tile);
    EXPECT_TRUE(debug.call_sites.empty()) << tile.tile;
    for (const auto& s : debug.symbols) {
      EXPECT_NE(s.kind, schema::SymbolKind::kKernel) << tile.tile;
      EXPECT_NE(s.kind, schema::SymbolKind::kRuntimeHelper) << tile.tile;
    }
    const auto code = main_instructions(app, tile);
    // Every rendezvous the working tiles take, no kernel call.
    EXPECT_EQ(syncs(code), expected_syncs) << tile.tile;
  }
  EXPECT_GT(idle, 0u);
}

TEST(DeviceLink, MainSetsTheSupervisorStackBeforeAnythingElse) {
  // The linked entries push their frame on $m11; an emulated package's main
  // (stubs only) does not touch it.
  TestDeviceCode device;
  const auto linked = compile(graph(), {.tiles = 6, .device = &device}).application;
  for (const auto& tile : linked.tiles) {
    const auto code = main_instructions(linked, tile);
    ASSERT_FALSE(code.empty());
    ASSERT_TRUE(std::holds_alternative<isa::Setzi>(code.front())) << tile.tile;
    EXPECT_EQ(std::get<isa::Setzi>(code.front()).dst, isa::Reg::m11);
    EXPECT_EQ(std::get<isa::Setzi>(code.front()).value, target::kSupervisorStackInitial);
  }
  const auto emulated = compile(graph(), {.tiles = 6}).application;
  for (const auto& tile : emulated.tiles) {
    for (const auto& instruction : main_instructions(emulated, tile)) {
      if (const auto* set = std::get_if<isa::Setzi>(&instruction)) {
        EXPECT_NE(set->dst, isa::Reg::m11) << tile.tile;
      }
    }
  }
}

TEST(DeviceLink, AKernelWithoutDeviceCodeKeepsItsStubAndIsNamed) {
  TestDeviceCode device;
  device.missing = {"tessera_sum_f32"};
  const CompileResult linked = compile(graph(), {.tiles = 6, .device = &device});
  const auto& app = linked.application;
  EXPECT_FALSE(app.hardware_loadable);
  EXPECT_EQ(app.not_loadable_reason.find("kernels are emulated only: kernel 'tessera_sum_f32' "
                                         "(first called on "),
            0u)
      << app.not_loadable_reason;
  EXPECT_NE(app.not_loadable_reason.find("no source in kernels/device/ defines it"),
            std::string::npos)
      << app.not_loadable_reason;
  // The sum calls a stub (br $m10); the others still call their linked entry.
  std::size_t stubs = 0, entries = 0;
  for (const auto& tile : app.tiles) {
    for (const auto& site : debug_of(app, tile.tile).call_sites) {
      const std::uint32_t w = word_at(app, tile, site.pc);
      const std::uint32_t target =
          std::get<isa::Call>(isa::decode(std::span<const std::uint32_t>(&w, 1)).instruction)
              .target;
      const std::uint32_t first = word_at(app, tile, target);
      if (site.kernel == "tessera_sum_f32") {
        const auto stub = isa::decode(std::span<const std::uint32_t>(&first, 1)).instruction;
        EXPECT_TRUE(std::holds_alternative<isa::Br>(stub));
        ++stubs;
      } else {
        EXPECT_EQ(first, marker(site.kernel));
        ++entries;
      }
    }
  }
  EXPECT_GT(stubs, 0u);
  EXPECT_GT(entries, 0u);
}

TEST(DeviceLink, KernelsThatDoNotFitTheCodeRegionAreANamedError) {
  TestDeviceCode device;
  device.entry_padding = 0x30000;  // more than the probe region's 0x24000 bytes
  try {
    compile(graph(), {.tiles = 6, .device = &device});
    FAIL() << "expected a link error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("(.text.tessera_"), std::string::npos) << message;
    EXPECT_NE(message.find("(0x30010 bytes, alignment 8) does not fit"), std::string::npos)
        << message;
  }
}

TEST(DeviceLink, SectionAlignmentAndZeroFillAreKept) {
  // A 64-aligned NOBITS section: the allocation is aligned so the final
  // link pads as the probe did, and the image holds its zeros.
  TestDeviceCode device;
  device.with_bss = true;
  const auto app = compile(graph(), {.tiles = 6, .device = &device}).application;
  EXPECT_TRUE(app.hardware_loadable);
  std::size_t checked = 0;
  for (const auto& tile : app.tiles) {
    const auto& debug = debug_of(app, tile.tile);
    for (const auto& symbol : debug.symbols) {
      if (symbol.kind != schema::SymbolKind::kKernel &&
          symbol.kind != schema::SymbolKind::kRuntimeHelper) {
        continue;
      }
      const std::uint32_t bss = word_at(app, tile, symbol.address + 12);
      EXPECT_EQ(bss % 64, 0u) << symbol.name;
      bool executable = true;
      EXPECT_EQ(image_bytes(app, tile, bss, 16, &executable), std::vector<std::uint8_t>(16, 0));
      EXPECT_FALSE(executable);
      ++checked;
    }
    for (const auto& held : debug.allocations) {
      if (held.name == "device kernels") {
        EXPECT_EQ(held.address % 64, 0u) << tile.tile;
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(DeviceLink, LinkingIsDeterministic) {
  TestDeviceCode a, b;
  const auto first = compile(graph(), {.tiles = 6, .device = &a}).application;
  const auto second = compile(graph(), {.tiles = 6, .device = &b}).application;
  ASSERT_EQ(first.tiles.size(), second.tiles.size());
  for (std::size_t t = 0; t < first.tiles.size(); ++t) {
    ASSERT_EQ(first.tiles[t].segments.size(), second.tiles[t].segments.size());
    for (std::size_t s = 0; s < first.tiles[t].segments.size(); ++s) {
      EXPECT_EQ(schema::segment_bytes(first, first.tiles[t].segments[s]),
                schema::segment_bytes(second, second.tiles[t].segments[s]));
    }
  }
}

}  // namespace
}  // namespace tessera::compiler
