#include "schema/validate.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "schema/field_path.hpp"
#include "schema/host_layout.hpp"
#include "schema/package_error.hpp"
#include "schema/phase_plan.hpp"
#include "support/checked.hpp"
#include "target/config_space.hpp"
#include "target/exchange_timing.hpp"
#include "target/memory_map.hpp"

namespace tessera::schema {
namespace {

using target::AddressRange;

// Paths are spelled out only here, on the way to an error: a valid package
// costs none (field_path.hpp).
[[noreturn]] void fail(const FieldPath& path, std::string message) {
  throw PackageError(path.str(), std::move(message));
}

// [address, address + size) as a range; a wrap is an error at `path`.
AddressRange range_at(const FieldPath& path, std::uint32_t address, std::uint64_t size) {
  const std::uint64_t end = std::uint64_t{address} + size;  // cannot wrap: both < 2^63
  if (size > 0xFFFFFFFFull || end > 0xFFFFFFFFull) {
    fail(path, fmt::format("{:#x} + {:#x} bytes overflows the 32-bit address space", address, size));
  }
  return AddressRange{address, static_cast<std::uint32_t>(end)};
}

void require_in_sram(const FieldPath& path, const AddressRange& range) {
  if (!target::in_sram(range)) {
    fail(path, fmt::format("{} is outside tile memory {}", range, target::kSram));
  }
}

void require_provenance(const FieldPath& path, std::uint32_t index, const Debug& debug) {
  if (index != kNoProvenance && index >= debug.provenance.size()) {
    fail(path, fmt::format("{} is not an index into debug.provenance ({} entries)", index,
                           debug.provenance.size()));
  }
}

const TileImage* find_tile(const Application& application, target::PhysicalTile tile) {
  const auto it = std::lower_bound(application.tiles.begin(), application.tiles.end(), tile,
                                   [](const TileImage& image, auto t) { return image.tile < t; });
  return it != application.tiles.end() && it->tile == tile ? &*it : nullptr;
}

void require_tile(const FieldPath& path, const Application& application,
                  target::PhysicalTile tile) {
  if (find_tile(application, tile) == nullptr) {
    fail(path, fmt::format("{} is not one of the package's tiles", tile));
  }
}

bool inside_executable_segment(const TileImage& image, const AddressRange& range) {
  return std::any_of(image.segments.begin(), image.segments.end(), [&](const Segment& s) {
    return (s.flags & kSegmentExecute) != 0 &&
           AddressRange(s.address, s.address + s.memory_size).contains(range);
  });
}

void validate_blob_reference(std::size_t blob_count, const FieldPath& path,
                             const Segment& segment) {
  if (segment.blob >= blob_count) {
    fail(path.field("blob"),
         fmt::format("{} is not a blob index ({} blobs)", segment.blob, blob_count));
  }
}

// Returns where the segment's window into its blob ends.
std::uint64_t validate_segment(std::span<const std::uint64_t> blob_sizes, const FieldPath& path,
                               const Segment& segment) {
  if ((segment.flags & ~kSegmentFlagMask) != 0) {
    fail(path.field("flags"),
         fmt::format("unknown flag bits {:#x}", segment.flags & ~kSegmentFlagMask));
  }
  if (segment.memory_size == 0) fail(path.field("memorySize"), "a segment must not be empty");
  const AddressRange range =
      range_at(path.field("memorySize"), segment.address, segment.memory_size);
  if (!target::is_loadable(range)) {
    fail(path.field("address"), fmt::format("{} is outside the loadable range {}", range,
                                             target::kLoadable));
  }
  if ((segment.flags & kSegmentExecute) != 0 && !target::is_executable(range)) {
    fail(path.field("flags"), fmt::format("executable segment {} reaches beyond the executable "
                                          "range {}", range, target::kExecutableRange));
  }
  if (segment.file_size > segment.memory_size) {
    fail(path.field("fileSize"), fmt::format("{} exceeds memorySize {}", segment.file_size,
                                             segment.memory_size));
  }
  validate_blob_reference(blob_sizes.size(), path, segment);
  const std::uint64_t blob_size = blob_sizes[segment.blob];
  if (segment.blob_offset > blob_size || segment.file_size > blob_size - segment.blob_offset) {
    fail(path.field("blobOffset"),
         fmt::format("{:#x} + fileSize {:#x} exceeds the blob's {:#x} bytes", segment.blob_offset,
                     segment.file_size, blob_size));
  }
  return segment.blob_offset + segment.file_size;
}

}  // namespace

void validate_tiles(const std::vector<TileImage>& tiles,
                    std::span<const std::uint64_t> blob_sizes) {
  if (tiles.empty()) fail("tiles", "a package needs at least one tile");
  // Canonical blob numbering: blobs appear in order of first use by the
  // (sorted) segments, and every blob is used.
  std::uint32_t next_new_blob = 0;
  // Per blob, the furthest byte a segment loads.
  std::vector<std::uint64_t> loaded(blob_sizes.size(), 0);
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    const TileImage& image = tiles[t];
    const FieldPath path = FieldPath("tiles")[t];
    if (!target::on_chip(image.tile)) {
      fail(path.field("physicalTile"), fmt::format("{} is not a C600 tile (0..{})", image.tile,
                                                   target::kTileCount - 1));
    }
    if (t > 0 && !(tiles[t - 1].tile < image.tile)) {
      fail(path.field("physicalTile"),
           fmt::format("{} follows {}: tiles are sorted by physical tile, each once", image.tile,
                       tiles[t - 1].tile));
    }
    for (std::size_t s = 0; s < image.segments.size(); ++s) {
      const FieldPath segment_path = path.field("segments")[s];
      const std::uint64_t window_end =
          validate_segment(blob_sizes, segment_path, image.segments[s]);
      loaded[image.segments[s].blob] = std::max(loaded[image.segments[s].blob], window_end);
      if (image.segments[s].blob > next_new_blob) {
        fail(segment_path.field("blob"),
             fmt::format("blob {} is used before blob {}: blobs are numbered in order of first use",
                         image.segments[s].blob, next_new_blob));
      }
      if (image.segments[s].blob == next_new_blob) ++next_new_blob;
      if (s > 0) {
        const Segment& previous = image.segments[s - 1];
        if (image.segments[s].address < std::uint64_t{previous.address} + previous.memory_size) {
          fail(segment_path.field("address"),
               fmt::format("{:#x} overlaps segments[{}] [{:#x}, {:#x}) (segments are sorted by "
                           "address and disjoint)",
                           image.segments[s].address, s - 1, previous.address,
                           previous.address + previous.memory_size));
        }
      }
    }
    if (image.entry_point % 4 != 0 || image.entry_point > target::kSramEnd - 4 ||
        !inside_executable_segment(image, {image.entry_point, image.entry_point + 4})) {
      fail(path.field("entryPoint"),
           fmt::format("{:#x} is not a 4-aligned address inside an executable segment",
                       image.entry_point));
    }
  }
  if (next_new_blob != blob_sizes.size()) {
    fail(fmt::format("blobs[{}]", next_new_blob), "no segment uses this blob");
  }
  // A blob holds no byte that no segment loads, so the segments bound what
  // the reader decompresses.
  for (std::size_t b = 0; b < blob_sizes.size(); ++b) {
    if (blob_sizes[b] != loaded[b]) {
      fail(fmt::format("blobs[{}].uncompressedSize", b),
           fmt::format("{} bytes, but the segments using it load only its first {}", blob_sizes[b],
                       loaded[b]));
    }
  }
}

namespace {

// Binding names seen so far, each with the list and index of the binding
// that has it.
using BindingNames = std::map<std::string_view, std::pair<std::string_view, std::size_t>>;

void validate_bindings(const Application& application, std::string_view list,
                       const std::vector<Binding>& bindings, bool must_cover,
                       BindingNames& names) {
  const FieldPath list_path(list);
  for (std::size_t b = 0; b < bindings.size(); ++b) {
    const Binding& binding = bindings[b];
    const FieldPath path = list_path[b];
    if (binding.name.empty()) fail(path.field("name"), "a binding needs a name");
    if (const auto [it, added] = names.emplace(binding.name, std::pair(list, b)); !added) {
      fail(path.field("name"), fmt::format("'{}' is already the name of {}", binding.name,
                                           FieldPath(it->second.first)[it->second.second].str()));
    }
    std::uint64_t payload = 0;
    try {
      payload = payload_bytes(binding);
    } catch (const ArithmeticError& error) {
      fail(path.field("shape"), error.message());
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> covered;  // [offset, end) in the payload
    covered.reserve(binding.slices.size());
    for (std::size_t s = 0; s < binding.slices.size(); ++s) {
      const RegionSlice& slice = binding.slices[s];
      const FieldPath slice_path = path.field("slices")[s];
      if (slice.size == 0) fail(slice_path.field("size"), "a slice must not be empty");
      require_tile(slice_path.field("tile"), application, slice.tile);
      require_in_sram(slice_path.field("tileAddress"),
                      range_at(slice_path.field("size"), slice.tile_address, slice.size));
      if (slice.file_offset > payload || slice.size > payload - slice.file_offset) {
        fail(slice_path.field("fileOffset"),
             fmt::format("{:#x} + size {:#x} exceeds the tensor's {:#x} bytes", slice.file_offset,
                         slice.size, payload));
      }
      covered.emplace_back(slice.file_offset, slice.file_offset + slice.size);
    }
    if (must_cover) {
      // Every byte of an output comes from exactly one slice.
      std::sort(covered.begin(), covered.end());
      std::uint64_t next = 0;
      for (const auto& [begin, end] : covered) {
        if (begin != next) {
          fail(path.field("slices"),
               begin < next ? fmt::format("slices overlap at byte {:#x}", begin)
                            : fmt::format("no slice covers byte {:#x}", next));
        }
        next = end;
      }
      if (next != payload) {
        fail(path.field("slices"), fmt::format("no slice covers byte {:#x}", next));
      }
    }
  }
}

void validate_batch_ends(const std::string& path, const std::vector<std::uint32_t>& ends,
                         std::size_t slices) {
  if (slices == 0) {
    if (!ends.empty()) fail(path, "batch ends given for a call side with no slices");
    return;
  }
  if (ends.empty()) fail(path, "a call side with slices needs its batch ends");
  std::uint32_t previous = 0;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (ends[i] <= previous) {
      fail(fmt::format("{}[{}]", path, i),
           fmt::format("{} does not increase on {}", ends[i], previous));
    }
    previous = ends[i];
  }
  if (previous != slices) {
    fail(path, fmt::format("the last batch ends at {}, not at the slice count {}", previous, slices));
  }
}

// A call side's binding list and where its slices may reach: the names are
// bindings that side may carry, each once; a side with slices names at least
// one; every slice lies inside the payload call_payload_bytes() lays out.
void validate_call_payload(const BindingLookup& bindings, const std::string& path,
                           const HostCall& call, CallSide side) {
  const bool input = side == CallSide::kInput;
  const std::string_view list = input ? "inputBindings" : "outputBindings";
  const std::string list_path = fmt::format("{}.{}", path, list);
  const std::vector<std::string>& names = input ? call.input_bindings : call.output_bindings;
  const std::vector<HostSlice>& slices = input ? call.inputs : call.outputs;
  if (!slices.empty() && names.empty()) {
    fail(list_path, "a call side with slices needs at least one binding");
  }
  std::map<std::string_view, std::size_t> listed;
  for (std::size_t n = 0; n < names.size(); ++n) {
    const std::string name_path = fmt::format("{}[{}]", list_path, n);
    if (bindings.find(side, names[n]) == nullptr) {
      const std::string_view kind = input ? "an input or weight" : "an output";
      const std::string_view other_kind = input ? "an output" : "an input or weight";
      const bool on_other_side =
          bindings.find(input ? CallSide::kOutput : CallSide::kInput, names[n]) != nullptr;
      fail(name_path,
           fmt::format("'{}' is not {} binding{}", names[n], kind,
                       on_other_side ? fmt::format(" (it is {} binding)", other_kind) : ""));
    }
    if (const auto [it, added] = listed.emplace(names[n], n); !added) {
      fail(name_path, fmt::format("'{}' is already listed at {}[{}]", names[n], list, it->second));
    }
  }
  std::uint64_t payload = 0;
  try {
    payload = call_payload_bytes(bindings, call, side);
  } catch (const ArithmeticError& error) {
    fail(list_path, error.message());
  }
  for (std::size_t s = 0; s < slices.size(); ++s) {
    try {
      checked_range(slices[s].file_offset, slices[s].size, payload, "host slice");
    } catch (const ArithmeticError&) {
      fail(fmt::format("{}.{}[{}]", path, input ? "inputs" : "outputs", s),
           fmt::format("fileOffset {:#x} + size {:#x} exceeds the {} payload of {:#x} bytes",
                       slices[s].file_offset, slices[s].size, call_side_name(side), payload));
    }
  }
}

// Pages are mapped (and pinned by the driver) whole, in 4 KiB spans, before
// a session starts; their total is bounded so a valid package cannot make
// the host map more than it may reasonably pin.
void validate_host_pages(const HostExchange& host,
                         std::map<std::uint32_t, std::uint64_t>& page_size) {
  std::uint64_t total = 0;
  for (std::size_t p = 0; p < host.pages.size(); ++p) {
    const FieldPath path = FieldPath("hostExchange.pages")[p];
    if (host.pages[p].size == 0) fail(path.field("size"), "a page must not be empty");
    if (!page_size.emplace(host.pages[p].index, host.pages[p].size).second) {
      fail(path.field("index"), fmt::format("page {} is defined twice", host.pages[p].index));
    }
    try {
      total = checked_add(total, host_page_span(host.pages[p]), "host pages");
    } catch (const ArithmeticError& error) {
      fail(path.field("size"), error.message());
    }
    if (total > kMaxHostPagesBytes) {
      fail(path.field("size"), fmt::format("{:#x} bytes take the host pages to {:#x} bytes, more than "
                                       "the {:#x} a package may pin",
                                       host.pages[p].size, total, kMaxHostPagesBytes));
    }
  }
}

// Every page the protocol touches is attached before the device may use it:
// the command page (with calls) and each page a host slice names.
void validate_pages_attached(const HostExchange& host, const std::set<std::uint32_t>& attached) {
  const auto require = [&](std::uint32_t page, const auto& user) {
    if (!attached.contains(page)) {
      fail("hostExchange.attachOrder", fmt::format("page {} ({}) is never attached", page, user()));
    }
  };
  if (!host.calls.empty()) require(host.command_page, [] { return "the command page"; });
  for (std::size_t c = 0; c < host.calls.size(); ++c) {
    for (const auto& [side, slices] : {std::pair{"inputs", &host.calls[c].inputs},
                                       std::pair{"outputs", &host.calls[c].outputs}}) {
      for (std::size_t s = 0; s < slices->size(); ++s) {
        require((*slices)[s].page, [&] {
          return fmt::format("used by hostExchange.calls[{}].{}[{}]", c, side, s);
        });
      }
    }
  }
}

void validate_host_exchange(const Application& application) {
  const HostExchange& host = application.host_exchange;
  if (host.startup_mark > target::kHspMarkMask) {
    fail("hostExchange.startupMark",
         fmt::format("{} does not fit a 16-bit HSP mark", host.startup_mark));
  }
  std::map<std::uint32_t, std::uint64_t> page_size;
  validate_host_pages(host, page_size);
  std::set<std::uint32_t> attached;
  for (std::size_t a = 0; a < host.attach_order.size(); ++a) {
    const FieldPath path = FieldPath("hostExchange.attachOrder")[a];
    if (!page_size.contains(host.attach_order[a])) {
      fail(path, fmt::format("page {} does not exist", host.attach_order[a]));
    }
    if (!attached.insert(host.attach_order[a]).second) {
      fail(path, fmt::format("page {} is attached twice", host.attach_order[a]));
    }
  }
  if (!host.calls.empty()) {
    const auto page = page_size.find(host.command_page);
    if (page == page_size.end()) {
      fail("hostExchange.commandPage", fmt::format("page {} does not exist", host.command_page));
    }
    if (host.command_offset % 4 != 0 || host.command_offset > page->second ||
        page->second - host.command_offset < 4) {
      fail("hostExchange.commandOffset",
           fmt::format("{:#x} is not a 4-aligned word inside page {} ({:#x} bytes)",
                       host.command_offset, host.command_page, page->second));
    }
  }
  const BindingLookup bindings(application);
  std::set<std::string> names;
  for (std::size_t c = 0; c < host.calls.size(); ++c) {
    const HostCall& call = host.calls[c];
    const std::string path = fmt::format("hostExchange.calls[{}]", c);
    if (call.name.empty()) fail(path + ".name", "a call needs a name");
    if (!names.insert(call.name).second) {
      fail(path + ".name", fmt::format("'{}' names two calls", call.name));
    }
    if (call.invocations == 0) fail(path + ".invocations", "a call runs at least once");
    const auto check_slices = [&](std::string_view side, const std::vector<HostSlice>& slices) {
      const FieldPath call_path(path);
      const FieldPath side_path = call_path.field(side);
      for (std::size_t s = 0; s < slices.size(); ++s) {
        const FieldPath slice_path = side_path[s];
        const auto page = page_size.find(slices[s].page);
        if (page == page_size.end()) {
          fail(slice_path.field("page"), fmt::format("page {} does not exist", slices[s].page));
        }
        if (slices[s].size == 0) fail(slice_path.field("size"), "a slice must not be empty");
        if (slices[s].page_offset > page->second ||
            slices[s].size > page->second - slices[s].page_offset) {
          fail(slice_path.field("pageOffset"),
               fmt::format("{:#x} + size {:#x} exceeds page {} ({:#x} bytes)",
                           slices[s].page_offset, slices[s].size, slices[s].page, page->second));
        }
        if (slices[s].size > ~std::uint64_t{0} - slices[s].file_offset) {
          fail(slice_path.field("fileOffset"),
               fmt::format("{:#x} + size {:#x} overflows 64 bits", slices[s].file_offset,
                           slices[s].size));
        }
      }
    };
    check_slices("inputs", call.inputs);
    check_slices("outputs", call.outputs);
    validate_batch_ends(path + ".inputBatchEnds", call.input_batch_ends, call.inputs.size());
    validate_batch_ends(path + ".outputBatchEnds", call.output_batch_ends, call.outputs.size());
    validate_call_payload(bindings, path, call, CallSide::kInput);
    validate_call_payload(bindings, path, call, CallSide::kOutput);
  }
  validate_pages_attached(host, attached);
}

void validate_entry_points_and_config(const Application& application) {
  std::set<std::string> names;
  for (std::size_t e = 0; e < application.entry_points.size(); ++e) {
    const std::string path = fmt::format("entryPoints[{}].name", e);
    const std::string& name = application.entry_points[e].name;
    if (name.empty()) fail(path, "an entry point needs a name");
    if (!names.insert(name).second) fail(path, fmt::format("'{}' names two entry points", name));
  }
  std::set<std::uint32_t> offsets;
  for (std::size_t w = 0; w < application.device_config_writes.size(); ++w) {
    const std::string path = fmt::format("deviceConfigWrites[{}].offset", w);
    const std::uint32_t offset = application.device_config_writes[w].offset;
    if (!target::is_config_word_offset(offset)) {
      fail(path, fmt::format("{:#x} is not a 4-aligned word inside the {:#x}-byte configuration "
                             "space", offset, target::kConfigSpaceSize));
    }
    if (target::is_hsp_mark_register(offset)) {
      fail(path, fmt::format("{:#x} is an HSP mark register, which belongs to the host-exchange "
                             "protocol", offset));
    }
    if (!offsets.insert(offset).second) fail(path, fmt::format("{:#x} is written twice", offset));
  }
  if (application.hardware_loadable != application.not_loadable_reason.empty()) {
    fail("notLoadableReason", application.hardware_loadable
                                  ? "a hardware-loadable package gives no reason"
                                  : "a package that is not hardware-loadable must say why");
  }
}

void validate_tile_debug(const Application& application, const TileImage& image,
                         const TileDebug& debug, const FieldPath& path) {
  for (std::size_t s = 0; s < debug.symbols.size(); ++s) {
    const Symbol& symbol = debug.symbols[s];
    const FieldPath symbol_path = path.field("symbols")[s];
    if (symbol.name.empty()) fail(symbol_path.field("name"), "a symbol needs a name");
    const AddressRange range = range_at(symbol_path.field("size"), symbol.address, symbol.size);
    require_in_sram(symbol_path.field("address"), range);
    const bool is_code = symbol.kind != SymbolKind::kData;
    if (is_code && !inside_executable_segment(image, range)) {
      fail(symbol_path.field("address"),
           fmt::format("{} symbol '{}' at {} is not inside an executable segment",
                       symbol_kind_name(symbol.kind), symbol.name, range));
    }
  }
  std::map<std::uint32_t, const Allocation*> allocations;
  for (std::size_t a = 0; a < debug.allocations.size(); ++a) {
    const Allocation& allocation = debug.allocations[a];
    const FieldPath allocation_path = path.field("allocations")[a];
    if (!allocations.emplace(allocation.id, &allocation).second) {
      fail(allocation_path.field("id"), fmt::format("id {} is used twice", allocation.id));
    }
    if (allocation.size == 0) {
      fail(allocation_path.field("size"), "an allocation must not be empty");
    }
    require_in_sram(allocation_path.field("address"),
                    range_at(allocation_path.field("size"), allocation.address, allocation.size));
    if (allocation.live_from > allocation.live_until) {
      fail(allocation_path.field("liveFrom"),
           fmt::format("{} is after liveUntil {}", allocation.live_from, allocation.live_until));
    }
    require_provenance(allocation_path.field("provenance"), allocation.provenance,
                       application.debug);
  }
  for (std::size_t c = 0; c < debug.call_sites.size(); ++c) {
    const CallSite& site = debug.call_sites[c];
    const FieldPath site_path = path.field("callSites")[c];
    if (c > 0 && site.pc <= debug.call_sites[c - 1].pc) {
      fail(site_path.field("pc"), fmt::format("{:#x} does not follow {:#x}: call sites are sorted by "
                                          "pc, each once", site.pc, debug.call_sites[c - 1].pc));
    }
    if (site.pc % 4 != 0 || site.pc > target::kSramEnd - 4 ||
        !inside_executable_segment(image, AddressRange{site.pc, site.pc + 4})) {
      fail(site_path.field("pc"),
           fmt::format("{:#x} is not an instruction inside an executable segment", site.pc));
    }
    if (site.kernel.empty()) fail(site_path.field("kernel"), "a call site names its kernel");
    require_provenance(site_path.field("provenance"), site.provenance, application.debug);
    std::uint32_t registers = 0;  // bit r: $mr is an operand already
    for (std::size_t o = 0; o < site.operands.size(); ++o) {
      const CallOperand& operand = site.operands[o];
      const FieldPath operand_path = site_path.field("operands")[o];
      if (operand.reg < 2 || operand.reg > 9 || (registers >> operand.reg & 1) != 0) {
        fail(operand_path.field("register"),
             fmt::format("$m{} is not a distinct operand register $m2..$m9", operand.reg));
      }
      registers |= std::uint32_t{1} << operand.reg;
      const auto found = allocations.find(operand.allocation);
      if (found == allocations.end()) {
        fail(operand_path.field("allocation"),
             fmt::format("no allocation of this tile has id {}", operand.allocation));
      }
      const Allocation& owner = *found->second;
      const AddressRange footprint =
          range_at(operand_path.field("footprint"), operand.address, operand.footprint);
      const AddressRange allocated{owner.address, owner.address + owner.size};
      if (!allocated.contains(footprint)) {
        fail(operand_path.field("footprint"),
             fmt::format("{} bytes at {:#x} reach outside allocation '{}' {}", operand.footprint,
                         operand.address, owner.name, allocated));
      }
    }
  }
  for (std::size_t l = 0; l < debug.loops.size(); ++l) {
    const CodeLoop& loop = debug.loops[l];
    const FieldPath loop_path = path.field("loops")[l];
    if (loop.counter % 4 != 0) {
      fail(loop_path.field("counter"), fmt::format("{:#x} is not a word address", loop.counter));
    }
    require_in_sram(loop_path.field("counter"),
                    range_at(loop_path.field("counter"), loop.counter, 4));
    if (loop.count == 0) fail(loop_path.field("count"), "a loop runs at least once");
    require_provenance(loop_path.field("provenance"), loop.provenance, application.debug);
  }
}

void validate_debug(const Application& application) {
  const Debug& debug = application.debug;
  for (std::size_t t = 0; t < debug.tiles.size(); ++t) {
    const FieldPath path = FieldPath("debug.tiles")[t];
    const TileDebug& tile = debug.tiles[t];
    if (t > 0 && !(debug.tiles[t - 1].tile < tile.tile)) {
      fail(path.field("physicalTile"),
           fmt::format("{} follows {}: debug tiles are sorted, each once", tile.tile,
                       debug.tiles[t - 1].tile));
    }
    const TileImage* image = find_tile(application, tile.tile);
    if (image == nullptr) {
      fail(path.field("physicalTile"),
           fmt::format("{} is not one of the package's tiles", tile.tile));
    }
    validate_tile_debug(application, *image, tile, path);
  }
  std::set<std::uint32_t> phase_ids;
  for (std::size_t p = 0; p < debug.exchange_phases.size(); ++p) {
    const ExchangePhase& phase = debug.exchange_phases[p];
    const FieldPath path = FieldPath("debug.exchangePhases")[p];
    if (!phase_ids.insert(phase.id).second) {
      fail(path.field("id"), fmt::format("phase {} is described twice", phase.id));
    }
    for (std::size_t x = 0; x < phase.transfers.size(); ++x) {
      const PlannedTransfer& transfer = phase.transfers[x];
      const FieldPath transfer_path = path.field("transfers")[x];
      if (transfer.words == 0 || transfer.words > target::kMaxTransferWords) {
        fail(transfer_path.field("words"), fmt::format("{} is outside 1..{}", transfer.words,
                                                       target::kMaxTransferWords));
      }
      const std::uint64_t bytes = std::uint64_t{transfer.words} * 4;
      require_tile(transfer_path.field("sourceTile"), application, transfer.source_tile);
      if (transfer.source_address % 4 != 0) {
        fail(transfer_path.field("sourceAddress"), "an exchange address is word-aligned");
      }
      require_in_sram(transfer_path.field("sourceAddress"),
                      range_at(transfer_path.field("words"), transfer.source_address, bytes));
      if (transfer.destinations.empty()) {
        fail(transfer_path.field("destinations"), "a transfer needs a destination");
      }
      for (std::size_t d = 0; d < transfer.destinations.size(); ++d) {
        const TransferDestination& destination = transfer.destinations[d];
        const FieldPath destination_path = transfer_path.field("destinations")[d];
        require_tile(destination_path.field("tile"), application, destination.tile);
        if (destination.address % 4 != 0) {
          fail(destination_path.field("address"), "an exchange address is word-aligned");
        }
        require_in_sram(destination_path.field("address"),
                        range_at(destination_path.field("address"), destination.address, bytes));
      }
      require_provenance(transfer_path.field("provenance"), transfer.provenance, debug);
    }
  }
  validate_phase_plan(debug);
}

}  // namespace

void validate_blob_references(const Application& application) {
  const FieldPath tiles("tiles");
  for (std::size_t t = 0; t < application.tiles.size(); ++t) {
    const FieldPath tile = tiles[t];
    for (std::size_t s = 0; s < application.tiles[t].segments.size(); ++s) {
      validate_blob_reference(application.blobs.size(), tile.field("segments")[s],
                              application.tiles[t].segments[s]);
    }
  }
}

void validate(const Application& application) {
  if (application.compiler_version.empty()) {
    fail("header.compilerVersion", "the producing compiler is not named");
  }
  std::vector<std::uint64_t> blob_sizes;
  for (std::uint32_t b = 0; b < application.blobs.size(); ++b) {
    blob_sizes.push_back(application.blobs.bytes(b).size());
  }
  validate_tiles(application.tiles, blob_sizes);
  BindingNames names;
  validate_bindings(application, "inputs", application.inputs, false, names);
  validate_bindings(application, "outputs", application.outputs, true, names);
  validate_bindings(application, "weights", application.weights, false, names);
  validate_host_exchange(application);
  validate_entry_points_and_config(application);
  validate_debug(application);
}

}  // namespace tessera::schema
