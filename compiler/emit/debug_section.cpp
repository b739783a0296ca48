// Step 6 of linking: each tile's image (entry trampoline, main, host programs
// and packets, rows, stubs or linked device kernels, constant buffers) and its
// debug record (symbols, allocations, call sites).
#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit::linking {
namespace {

// A linked entry's symbol size, or (an assembly entry without .size) the
// rest of its section.
std::uint32_t linked_symbol_size(const elf::LinkedImage& image, const std::string& name) {
  const elf::LinkedSymbol* symbol = image.find(name);
  if (symbol == nullptr) throw LinkError(fmt::format("internal: no linked symbol '{}'", name));
  if (symbol->size != 0) return symbol->size;
  for (const auto& section : image.sections) {
    if (section.range().contains(symbol->address)) return section.range().end - symbol->address;
  }
  throw LinkError(fmt::format("internal: linked symbol '{}' lies in no placed section", name));
}

}  // namespace

// A tile's entry of a by-tile map the linker fills only for some tiles.
template <class Map>
const typename Map::mapped_type& of_tile(const Map& map, PhysicalTile tile) {
  static const typename Map::mapped_type kNone{};
  const auto found = map.find(tile);
  return found == map.end() ? kNone : found->second;
}

Linker::TileEmission Linker::emit_tile(PhysicalTile tile) const {
  const TileCode& code = code_.at(tile);
  TileEmission emission;
  schema::TileImage& image = emission.image;
  image = schema::TileImage{tile, target::kEntryPoint, {}};
  schema::TileDebug& debug = emission.debug;
  debug.tile = tile;
  schema::BlobStore& blobs = emission.blobs;

  add_segment(blobs, image, target::kEntryPoint, assemble({isa::Bri{code.main}, isa::Nop{}}),
              true);
  const MainCode main = emit_main(tile, staging_id(tile));
  // Main was placed at the size the probe found (code_placement.cpp): no
  // size may depend on an address or a buffer's capacity.
  for (const auto& held : of_tile(code_allocations_, tile)) {
    if (held.name == "main" && held.size != code_bytes(main.code)) {
      throw LinkError(fmt::format("internal: main on {} is {} bytes, placed as {}", tile,
                                  code_bytes(main.code), held.size));
    }
  }
  add_segment(blobs, image, code.main, assemble(main.code), true);
  debug.symbols.push_back({"main", code.main, code_bytes(main.code), schema::SymbolKind::kCode});
  emission.kernel_calls = main.sites.size() - main.sample_sites;
  // The sample buffer's header (no records written, none dropped): loaded
  // with the image, so the first append finds an empty buffer.
  if (code.samples) {
    add_segment(blobs, image, code.samples->address,
                std::vector<std::uint8_t>(4 * schema::kSampleHeaderWords, 0), false);
  }

  std::set<std::uint32_t> emitted;
  for (std::size_t k = 0; k < host_.batches.size(); ++k) {
    const TileHostStep& step = host_.batches[k].step(tile);
    const auto packets = code.host_packets.find(k);
    const auto program =
        step.program(packets == code.host_packets.end() ? kProbeCode : packets->second);
    const std::uint32_t at = code.host_code.at(k);
    if (!emitted.insert(at).second) continue;
    add_segment(blobs, image, at, assemble(program.instructions), true);
    debug.symbols.push_back({step.active() ? fmt::format("host batch {}", k) : "host idle", at,
                             code_bytes(program.instructions), schema::SymbolKind::kCode});
    for (const auto& block : program.packets) {
      add_segment(blobs, image, block.address, words_to_bytes(block.words), false);
    }
  }
  for (const auto& [step, at] : code.rows) {
    const auto& rows = schedules_.at(step).rows;  // by tile
    const auto row = std::lower_bound(rows.begin(), rows.end(), tile,
                                      [](const auto& r, PhysicalTile t) { return r.tile < t; });
    add_segment(blobs, image, at, assemble(row->instructions), true);
    debug.symbols.push_back(
        {row_name(step), at, code_bytes(row->instructions), schema::SymbolKind::kExchangeRow});
  }
  // Each kernel's symbol is where its calls go: the simulator runs the
  // host model there, the device the code there (a stub's `br $m10`, or
  // the linked entry).
  for (const auto& [name, at] : code.stubs) {
    std::uint32_t size = kStubBytes;
    if (code.linked.contains(name)) {
      size = linked_symbol_size(*code.device, name);
    } else {
      add_segment(blobs, image, at, assemble({isa::Br{Reg::m10}, isa::Nop{}}), true);
    }
    const auto* spec = kernels::KernelRegistry::standard().find(name);
    debug.symbols.push_back({name, at, size,
                             spec->kind == kernels::KernelKind::kKernel
                                 ? schema::SymbolKind::kKernel
                                 : schema::SymbolKind::kRuntimeHelper});
  }
  // The linked device code: one segment per placed section (NOBITS as
  // zeros: the loader writes every byte of the image).
  if (code.device) {
    for (const auto& section : code.device->sections) {
      add_segment(blobs, image, section.address, section.bytes, section.executable);
    }
  }
  // Constant buffers (move tables): their bytes, loaded with the image.
  if (const auto logical = logical_.find(tile); logical != logical_.end()) {
    for (BufferId b = 0; b < program_.buffers.size(); ++b) {
      const auto contents = program_.buffers[b].contents.find(logical->second);
      if (contents == program_.buffers[b].contents.end()) continue;
      add_segment(blobs, image, allocation(b, logical->second).address, contents->second, false);
    }
  }

  debug.allocations = of_tile(allocations_, tile);
  const bool stages = std::any_of(main.sites.begin(), main.sites.end(), [](const auto& site) {
    return site.kernel == kernels::kCopyWords &&
           std::any_of(site.operands.begin(), site.operands.end(),
                       [](const auto& operand) { return in_staging(operand.address); });
  });
  if (stages) debug.allocations.push_back(h2d_staging(staging_id(tile)));
  const auto& code_held = of_tile(code_allocations_, tile);
  debug.allocations.insert(debug.allocations.end(), code_held.begin(), code_held.end());
  debug.call_sites = main.sites;
  // The loops' counter words (emit_main keeps count − i there during
  // iteration i), so a profile can say which iteration a step ran in.
  for (const auto& [begin, counter] : code.loop_counters) {
    const Step& loop = program_.steps[begin];
    debug.loops.push_back(schema::CodeLoop{counter, loop.count, loop.provenance});
  }
  std::sort(image.segments.begin(), image.segments.end(),
            [](const auto& a, const auto& b) { return a.address < b.address; });
  std::sort(debug.symbols.begin(), debug.symbols.end(),
            [](const auto& a, const auto& b) { return a.address < b.address; });
  return emission;
}

void Linker::emit_tiles() {
  std::vector<TileEmission> emissions(tiles_.size());
  pool_.for_each(tiles_.size(), [&](std::size_t t) { emissions[t] = emit_tile(tiles_[t]); });
  for (TileEmission& emission : emissions) {
    std::vector<std::uint32_t> blob(emission.blobs.size());
    for (std::uint32_t b = 0; b < blob.size(); ++b) blob[b] = app_.blobs.add_shared(emission.blobs, b);
    for (schema::Segment& segment : emission.image.segments) segment.blob = blob[segment.blob];
    report_.kernel_calls += emission.kernel_calls;
    app_.tiles.push_back(std::move(emission.image));
    app_.debug.tiles.push_back(std::move(emission.debug));
  }
}

}  // namespace tessera::compiler::emit::linking
