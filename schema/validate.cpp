#include "schema/validate.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

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

// A field path (`tiles[12].segments[3].blobOffset`), made into text only when
// it is reported: validating a package visits millions of fields (every
// planned transfer of a large phase) and reports at most one. A path refers
// to its parent, which must outlive it: name each level in its own variable.
class Path {
 public:
  Path(const char* root) : name_(root) {}       // NOLINT: a literal is a path
  Path(std::string_view root) : name_(root) {}  // NOLINT: so is a name
  Path(std::string_view root, std::size_t index) : name_(root), index_(index), indexed_(true) {}
  // parent + field (".segments", or "" for an index of the parent itself) + [index]
  Path(const Path& parent, std::string_view field, std::size_t index)
      : parent_(&parent), name_(field), index_(index), indexed_(true) {}
  // parent + field (".flags")
  Path operator+(std::string_view field) const {
    Path child(field);
    child.parent_ = this;
    return child;
  }
  std::string str() const {
    std::string text = parent_ != nullptr ? parent_->str() : std::string();
    text += name_;
    if (indexed_) text += fmt::format("[{}]", index_);
    return text;
  }

 private:
  const Path* parent_ = nullptr;
  std::string_view name_;
  std::size_t index_ = 0;
  bool indexed_ = false;
};

[[noreturn]] void fail(const Path& path, std::string message) {
  throw PackageError(path.str(), std::move(message));
}

// [address, address + size) as a range; a wrap is an error at `path`.
AddressRange range_at(const Path& path, std::uint32_t address, std::uint64_t size) {
  const std::uint64_t end = std::uint64_t{address} + size;  // cannot wrap: both < 2^63
  if (size > 0xFFFFFFFFull || end > 0xFFFFFFFFull) {
    fail(path, fmt::format("{:#x} + {:#x} bytes overflows the 32-bit address space", address, size));
  }
  return AddressRange{address, static_cast<std::uint32_t>(end)};
}

void require_in_sram(const Path& path, const AddressRange& range) {
  if (!target::in_sram(range)) {
    fail(path, fmt::format("{} is outside tile memory {}", range, target::kSram));
  }
}

void require_provenance(const Path& path, std::uint32_t index, const Debug& debug) {
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

void require_tile(const Path& path, const Application& application,
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

void validate_blob_reference(std::size_t blob_count, const Path& path,
                             const Segment& segment) {
  if (segment.blob >= blob_count) {
    fail(path + ".blob",
         fmt::format("{} is not a blob index ({} blobs)", segment.blob, blob_count));
  }
}

// Returns where the segment's window into its blob ends.
std::uint64_t validate_segment(std::span<const std::uint64_t> blob_sizes, const Path& path,
                               const Segment& segment) {
  if ((segment.flags & ~kSegmentFlagMask) != 0) {
    fail(path + ".flags", fmt::format("unknown flag bits {:#x}", segment.flags & ~kSegmentFlagMask));
  }
  if (segment.memory_size == 0) fail(path + ".memorySize", "a segment must not be empty");
  const AddressRange range = range_at(path + ".memorySize", segment.address, segment.memory_size);
  if (!target::is_loadable(range)) {
    fail(path + ".address", fmt::format("{} is outside the loadable range {}", range,
                                         target::kLoadable));
  }
  if ((segment.flags & kSegmentExecute) != 0 && !target::is_executable(range)) {
    fail(path + ".flags", fmt::format("executable segment {} reaches beyond the executable "
                                      "range {}", range, target::kExecutableRange));
  }
  if (segment.file_size > segment.memory_size) {
    fail(path + ".fileSize", fmt::format("{} exceeds memorySize {}", segment.file_size,
                                         segment.memory_size));
  }
  validate_blob_reference(blob_sizes.size(), path, segment);
  const std::uint64_t blob_size = blob_sizes[segment.blob];
  if (segment.blob_offset > blob_size || segment.file_size > blob_size - segment.blob_offset) {
    fail(path + ".blobOffset",
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
    const Path path("tiles", t);
    if (!target::on_chip(image.tile)) {
      fail(path + ".physicalTile", fmt::format("{} is not a C600 tile (0..{})", image.tile,
                                               target::kTileCount - 1));
    }
    if (t > 0 && !(tiles[t - 1].tile < image.tile)) {
      fail(path + ".physicalTile",
           fmt::format("{} follows {}: tiles are sorted by physical tile, each once", image.tile,
                       tiles[t - 1].tile));
    }
    for (std::size_t s = 0; s < image.segments.size(); ++s) {
      const Path segment_path(path, ".segments", s);
      const std::uint64_t window_end =
          validate_segment(blob_sizes, segment_path, image.segments[s]);
      loaded[image.segments[s].blob] = std::max(loaded[image.segments[s].blob], window_end);
      if (image.segments[s].blob > next_new_blob) {
        fail(segment_path + ".blob",
             fmt::format("blob {} is used before blob {}: blobs are numbered in order of first use",
                         image.segments[s].blob, next_new_blob));
      }
      if (image.segments[s].blob == next_new_blob) ++next_new_blob;
      if (s > 0) {
        const Segment& previous = image.segments[s - 1];
        if (image.segments[s].address < std::uint64_t{previous.address} + previous.memory_size) {
          fail(segment_path + ".address",
               fmt::format("{:#x} overlaps segments[{}] [{:#x}, {:#x}) (segments are sorted by "
                           "address and disjoint)",
                           image.segments[s].address, s - 1, previous.address,
                           previous.address + previous.memory_size));
        }
      }
    }
    if (image.entry_point % 4 != 0 || image.entry_point > target::kSramEnd - 4 ||
        !inside_executable_segment(image, {image.entry_point, image.entry_point + 4})) {
      fail(path + ".entryPoint",
           fmt::format("{:#x} is not a 4-aligned address inside an executable segment",
                       image.entry_point));
    }
  }
  if (next_new_blob != blob_sizes.size()) {
    fail(Path("blobs", next_new_blob), "no segment uses this blob");
  }
  // A blob holds no byte that no segment loads, so the segments bound what
  // the reader decompresses.
  for (std::size_t b = 0; b < blob_sizes.size(); ++b) {
    if (blob_sizes[b] != loaded[b]) {
      fail(Path("blobs", b) + ".uncompressedSize",
           fmt::format("{} bytes, but the segments using it load only its first {}", blob_sizes[b],
                       loaded[b]));
    }
  }
}

namespace {

void validate_bindings(const Application& application, std::string_view list,
                       const std::vector<Binding>& bindings, bool must_cover,
                       std::map<std::string, std::string>& names) {
  for (std::size_t b = 0; b < bindings.size(); ++b) {
    const Binding& binding = bindings[b];
    const Path path(list, b);
    if (binding.name.empty()) fail(path + ".name", "a binding needs a name");
    if (const auto [it, added] = names.emplace(binding.name, path.str()); !added) {
      fail(path + ".name", fmt::format("'{}' is already the name of {}", binding.name, it->second));
    }
    std::uint64_t payload = 0;
    try {
      payload = payload_bytes(binding);
    } catch (const ArithmeticError& error) {
      fail(path + ".shape", error.message());
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> covered;  // [offset, end) in the payload
    for (std::size_t s = 0; s < binding.slices.size(); ++s) {
      const RegionSlice& slice = binding.slices[s];
      const Path slice_path(path, ".slices", s);
      if (slice.size == 0) fail(slice_path + ".size", "a slice must not be empty");
      require_tile(slice_path + ".tile", application, slice.tile);
      require_in_sram(slice_path + ".tileAddress",
                      range_at(slice_path + ".size", slice.tile_address, slice.size));
      if (slice.file_offset > payload || slice.size > payload - slice.file_offset) {
        fail(slice_path + ".fileOffset",
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
          fail(path + ".slices",
               begin < next ? fmt::format("slices overlap at byte {:#x}", begin)
                            : fmt::format("no slice covers byte {:#x}", next));
        }
        next = end;
      }
      if (next != payload) fail(path + ".slices", fmt::format("no slice covers byte {:#x}", next));
    }
  }
}

void validate_batch_ends(const Path& path, const std::vector<std::uint32_t>& ends,
                         std::size_t slices) {
  if (slices == 0) {
    if (!ends.empty()) fail(path, "batch ends given for a call side with no slices");
    return;
  }
  if (ends.empty()) fail(path, "a call side with slices needs its batch ends");
  std::uint32_t previous = 0;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (ends[i] <= previous) {
      fail(Path(path, "", i),
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
void validate_call_payload(const BindingLookup& bindings, const Path& path,
                           const HostCall& call, CallSide side) {
  const bool input = side == CallSide::kInput;
  const std::string_view list = input ? "inputBindings" : "outputBindings";
  const Path list_path = path + (input ? ".inputBindings" : ".outputBindings");
  const std::vector<std::string>& names = input ? call.input_bindings : call.output_bindings;
  const std::vector<HostSlice>& slices = input ? call.inputs : call.outputs;
  if (!slices.empty() && names.empty()) {
    fail(list_path, "a call side with slices needs at least one binding");
  }
  std::map<std::string_view, std::size_t> listed;
  for (std::size_t n = 0; n < names.size(); ++n) {
    const Path name_path(list_path, "", n);
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
      fail(Path(path, input ? ".inputs" : ".outputs", s),
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
    const Path path("hostExchange.pages", p);
    if (host.pages[p].size == 0) fail(path + ".size", "a page must not be empty");
    if (!page_size.emplace(host.pages[p].index, host.pages[p].size).second) {
      fail(path + ".index", fmt::format("page {} is defined twice", host.pages[p].index));
    }
    try {
      total = checked_add(total, host_page_span(host.pages[p]), "host pages");
    } catch (const ArithmeticError& error) {
      fail(path + ".size", error.message());
    }
    if (total > kMaxHostPagesBytes) {
      fail(path + ".size", fmt::format("{:#x} bytes take the host pages to {:#x} bytes, more than "
                                       "the {:#x} a package may pin",
                                       host.pages[p].size, total, kMaxHostPagesBytes));
    }
  }
}

// Every page the protocol touches is attached before the device may use it:
// the command page (with calls) and each page a host slice names.
void validate_pages_attached(const HostExchange& host, const std::set<std::uint32_t>& attached) {
  // user() names what uses the page, made only when it is reported.
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
        require((*slices)[s].page, [&, c, s] {
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
    const Path path("hostExchange.attachOrder", a);
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
    const Path path("hostExchange.calls", c);
    if (call.name.empty()) fail(path + ".name", "a call needs a name");
    if (!names.insert(call.name).second) {
      fail(path + ".name", fmt::format("'{}' names two calls", call.name));
    }
    if (call.invocations == 0) fail(path + ".invocations", "a call runs at least once");
    const auto check_slices = [&](std::string_view side, const std::vector<HostSlice>& slices) {
      for (std::size_t s = 0; s < slices.size(); ++s) {
        const Path slice_path(path, side, s);
        const auto page = page_size.find(slices[s].page);
        if (page == page_size.end()) {
          fail(slice_path + ".page", fmt::format("page {} does not exist", slices[s].page));
        }
        if (slices[s].size == 0) fail(slice_path + ".size", "a slice must not be empty");
        if (slices[s].page_offset > page->second ||
            slices[s].size > page->second - slices[s].page_offset) {
          fail(slice_path + ".pageOffset",
               fmt::format("{:#x} + size {:#x} exceeds page {} ({:#x} bytes)",
                           slices[s].page_offset, slices[s].size, slices[s].page, page->second));
        }
        if (slices[s].size > ~std::uint64_t{0} - slices[s].file_offset) {
          fail(slice_path + ".fileOffset",
               fmt::format("{:#x} + size {:#x} overflows 64 bits", slices[s].file_offset,
                           slices[s].size));
        }
      }
    };
    check_slices(".inputs", call.inputs);
    check_slices(".outputs", call.outputs);
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
    const Path entry("entryPoints", e);
    const Path path = entry + ".name";
    const std::string& name = application.entry_points[e].name;
    if (name.empty()) fail(path, "an entry point needs a name");
    if (!names.insert(name).second) fail(path, fmt::format("'{}' names two entry points", name));
  }
  std::set<std::uint32_t> offsets;
  for (std::size_t w = 0; w < application.device_config_writes.size(); ++w) {
    const Path write("deviceConfigWrites", w);
    const Path path = write + ".offset";
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
                         const TileDebug& debug, const Path& path) {
  for (std::size_t s = 0; s < debug.symbols.size(); ++s) {
    const Symbol& symbol = debug.symbols[s];
    const Path symbol_path(path, ".symbols", s);
    if (symbol.name.empty()) fail(symbol_path + ".name", "a symbol needs a name");
    const AddressRange range = range_at(symbol_path + ".size", symbol.address, symbol.size);
    require_in_sram(symbol_path + ".address", range);
    const bool is_code = symbol.kind != SymbolKind::kData;
    if (is_code && !inside_executable_segment(image, range)) {
      fail(symbol_path + ".address",
           fmt::format("{} symbol '{}' at {} is not inside an executable segment",
                       symbol_kind_name(symbol.kind), symbol.name, range));
    }
  }
  std::map<std::uint32_t, const Allocation*> allocations;
  for (std::size_t a = 0; a < debug.allocations.size(); ++a) {
    const Allocation& allocation = debug.allocations[a];
    const Path allocation_path(path, ".allocations", a);
    if (!allocations.emplace(allocation.id, &allocation).second) {
      fail(allocation_path + ".id", fmt::format("id {} is used twice", allocation.id));
    }
    if (allocation.size == 0) fail(allocation_path + ".size", "an allocation must not be empty");
    require_in_sram(allocation_path + ".address",
                    range_at(allocation_path + ".size", allocation.address, allocation.size));
    if (allocation.live_from > allocation.live_until) {
      fail(allocation_path + ".liveFrom",
           fmt::format("{} is after liveUntil {}", allocation.live_from, allocation.live_until));
    }
    require_provenance(allocation_path + ".provenance", allocation.provenance,
                       application.debug);
  }
  for (std::size_t c = 0; c < debug.call_sites.size(); ++c) {
    const CallSite& site = debug.call_sites[c];
    const Path site_path(path, ".callSites", c);
    if (c > 0 && site.pc <= debug.call_sites[c - 1].pc) {
      fail(site_path + ".pc", fmt::format("{:#x} does not follow {:#x}: call sites are sorted by "
                                          "pc, each once", site.pc, debug.call_sites[c - 1].pc));
    }
    if (site.pc % 4 != 0 || site.pc > target::kSramEnd - 4 ||
        !inside_executable_segment(image, AddressRange{site.pc, site.pc + 4})) {
      fail(site_path + ".pc",
           fmt::format("{:#x} is not an instruction inside an executable segment", site.pc));
    }
    if (site.kernel.empty()) fail(site_path + ".kernel", "a call site names its kernel");
    require_provenance(site_path + ".provenance", site.provenance, application.debug);
    std::set<std::uint8_t> registers;
    for (std::size_t o = 0; o < site.operands.size(); ++o) {
      const CallOperand& operand = site.operands[o];
      const Path operand_path(site_path, ".operands", o);
      if (operand.reg < 2 || operand.reg > 9 || !registers.insert(operand.reg).second) {
        fail(operand_path + ".register",
             fmt::format("$m{} is not a distinct operand register $m2..$m9", operand.reg));
      }
      const auto found = allocations.find(operand.allocation);
      if (found == allocations.end()) {
        fail(operand_path + ".allocation",
             fmt::format("no allocation of this tile has id {}", operand.allocation));
      }
      const Allocation& owner = *found->second;
      const AddressRange footprint =
          range_at(operand_path + ".footprint", operand.address, operand.footprint);
      const AddressRange allocated{owner.address, owner.address + owner.size};
      if (!allocated.contains(footprint)) {
        fail(operand_path + ".footprint",
             fmt::format("{} bytes at {:#x} reach outside allocation '{}' {}", operand.footprint,
                         operand.address, owner.name, allocated));
      }
    }
  }
  for (std::size_t l = 0; l < debug.loops.size(); ++l) {
    const CodeLoop& loop = debug.loops[l];
    const Path loop_path(path, ".loops", l);
    if (loop.counter % 4 != 0) {
      fail(loop_path + ".counter", fmt::format("{:#x} is not a word address", loop.counter));
    }
    require_in_sram(loop_path + ".counter", range_at(loop_path + ".counter", loop.counter, 4));
    if (loop.count == 0) fail(loop_path + ".count", "a loop runs at least once");
    require_provenance(loop_path + ".provenance", loop.provenance, application.debug);
  }
}

void validate_debug(const Application& application) {
  const Debug& debug = application.debug;
  for (std::size_t t = 0; t < debug.tiles.size(); ++t) {
    const Path path("debug.tiles", t);
    const TileDebug& tile = debug.tiles[t];
    if (t > 0 && !(debug.tiles[t - 1].tile < tile.tile)) {
      fail(path + ".physicalTile",
           fmt::format("{} follows {}: debug tiles are sorted, each once", tile.tile,
                       debug.tiles[t - 1].tile));
    }
    const TileImage* image = find_tile(application, tile.tile);
    if (image == nullptr) {
      fail(path + ".physicalTile", fmt::format("{} is not one of the package's tiles", tile.tile));
    }
    validate_tile_debug(application, *image, tile, path);
  }
  std::set<std::uint32_t> phase_ids;
  for (std::size_t p = 0; p < debug.exchange_phases.size(); ++p) {
    const ExchangePhase& phase = debug.exchange_phases[p];
    const Path path("debug.exchangePhases", p);
    if (!phase_ids.insert(phase.id).second) {
      fail(path + ".id", fmt::format("phase {} is described twice", phase.id));
    }
    for (std::size_t x = 0; x < phase.transfers.size(); ++x) {
      const PlannedTransfer& transfer = phase.transfers[x];
      const Path transfer_path(path, ".transfers", x);
      if (transfer.words == 0 || transfer.words > target::kMaxTransferWords) {
        fail(transfer_path + ".words", fmt::format("{} is outside 1..{}", transfer.words,
                                                   target::kMaxTransferWords));
      }
      const std::uint64_t bytes = std::uint64_t{transfer.words} * 4;
      require_tile(transfer_path + ".sourceTile", application, transfer.source_tile);
      if (transfer.source_address % 4 != 0) {
        fail(transfer_path + ".sourceAddress", "an exchange address is word-aligned");
      }
      require_in_sram(transfer_path + ".sourceAddress",
                      range_at(transfer_path + ".words", transfer.source_address, bytes));
      if (transfer.destinations.empty()) {
        fail(transfer_path + ".destinations", "a transfer needs a destination");
      }
      for (std::size_t d = 0; d < transfer.destinations.size(); ++d) {
        const TransferDestination& destination = transfer.destinations[d];
        const Path destination_path(transfer_path, ".destinations", d);
        require_tile(destination_path + ".tile", application, destination.tile);
        if (destination.address % 4 != 0) {
          fail(destination_path + ".address", "an exchange address is word-aligned");
        }
        require_in_sram(destination_path + ".address",
                        range_at(destination_path + ".address", destination.address, bytes));
      }
      require_provenance(transfer_path + ".provenance", transfer.provenance, debug);
    }
  }
  validate_phase_plan(debug);
}

}  // namespace

void validate_blob_references(const Application& application) {
  for (std::size_t t = 0; t < application.tiles.size(); ++t) {
    const Path tile("tiles", t);
    for (std::size_t s = 0; s < application.tiles[t].segments.size(); ++s) {
      validate_blob_reference(application.blobs.size(), Path(tile, ".segments", s),
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
  std::map<std::string, std::string> names;
  validate_bindings(application, "inputs", application.inputs, false, names);
  validate_bindings(application, "outputs", application.outputs, true, names);
  validate_bindings(application, "weights", application.weights, false, names);
  validate_host_exchange(application);
  validate_entry_points_and_config(application);
  validate_debug(application);
}

}  // namespace tessera::schema
