#include "schema/reader.hpp"

#include <capnp/schema.h>
#include <capnp/serialize.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "schema/blob_codec.hpp"
#include "schema/digest.hpp"
#include "schema/field_path.hpp"
#include "schema/package_error.hpp"
#include "schema/sha256.hpp"
#include "schema/validate.hpp"
#include "schema/wire.hpp"
#include "schema/wire_read.hpp"
#include "support/checked.hpp"
#include "support/utf8.hpp"
#include "target/memory_map.hpp"

namespace tessera::schema {
namespace {

static_assert(static_cast<int>(wire::BlobCodec::RAW) == static_cast<int>(BlobCodec::kRaw) &&
              static_cast<int>(wire::BlobCodec::ZSTD) == static_cast<int>(BlobCodec::kZstd));

using wire_read::enum_value;
using wire_read::fail;
using wire_read::text;

std::vector<std::string> text_list(capnp::List<capnp::Text>::Reader list, const FieldPath& path) {
  std::vector<std::string> values;
  values.reserve(list.size());
  for (unsigned i = 0; i < list.size(); ++i) values.push_back(text(list[i], path[i]));
  return values;
}

target::PhysicalTile tile_id(std::uint16_t value) { return target::PhysicalTile(value); }

std::vector<std::uint32_t> u32_list(capnp::List<std::uint32_t>::Reader list) {
  std::vector<std::uint32_t> values;
  values.reserve(list.size());
  for (const auto value : list) values.push_back(value);
  return values;
}

Binding read_binding(wire::Binding::Reader in, const FieldPath& path) {
  Binding binding;
  binding.name = text(in.getName(), path.field("name"));
  binding.dtype = static_cast<DType>(enum_value(in.getDtype(), path.field("dtype")));
  binding.shape = u32_list(in.getShape());
  for (const auto slice : in.getSlices()) {
    binding.slices.push_back(RegionSlice{tile_id(slice.getTile()), slice.getTileAddress(),
                                         slice.getFileOffset(), slice.getSize()});
  }
  return binding;
}

std::vector<Binding> read_bindings(capnp::List<wire::Binding>::Reader list,
                                   std::string_view name) {
  std::vector<Binding> bindings;
  const FieldPath path(name);
  for (unsigned i = 0; i < list.size(); ++i) bindings.push_back(read_binding(list[i], path[i]));
  return bindings;
}

std::vector<HostSlice> read_host_slices(capnp::List<wire::HostSlice>::Reader list) {
  std::vector<HostSlice> slices;
  for (const auto slice : list) {
    slices.push_back(HostSlice{slice.getPage(), slice.getPageOffset(), slice.getFileOffset(),
                               slice.getSize()});
  }
  return slices;
}

HostExchange read_host_exchange(wire::HostExchange::Reader in) {
  HostExchange host;
  host.startup_mark = in.getStartupMark();
  host.command_page = in.getCommandPage();
  host.command_offset = in.getCommandOffset();
  for (const auto page : in.getPages()) host.pages.push_back({page.getIndex(), page.getSize()});
  host.attach_order = u32_list(in.getAttachOrder());
  const auto calls = in.getCalls();
  for (unsigned c = 0; c < calls.size(); ++c) {
    const auto call = calls[c];
    const FieldPath path = FieldPath("hostExchange.calls")[c];
    HostCall out;
    out.name = text(call.getName(), path.field("name"));
    out.command = call.getCommand();
    out.phases = call.getPhases();
    out.inputs = read_host_slices(call.getInputs());
    out.outputs = read_host_slices(call.getOutputs());
    out.invocations = call.getInvocations();
    out.input_batch_ends = u32_list(call.getInputBatchEnds());
    out.output_batch_ends = u32_list(call.getOutputBatchEnds());
    out.input_bindings = text_list(call.getInputBindings(), path.field("inputBindings"));
    out.output_bindings = text_list(call.getOutputBindings(), path.field("outputBindings"));
    host.calls.push_back(std::move(out));
  }
  return host;
}

Debug read_debug(wire::Debug::Reader in) {
  Debug debug;
  const auto tiles = in.getTiles();
  debug.tiles.reserve(tiles.size());
  for (unsigned t = 0; t < tiles.size(); ++t) {
    const auto tile = tiles[t];
    const FieldPath path = FieldPath("debug.tiles")[t];
    TileDebug out;
    out.tile = tile_id(tile.getPhysicalTile());
    const auto symbols = tile.getSymbols();
    out.symbols.reserve(symbols.size());
    for (unsigned s = 0; s < symbols.size(); ++s) {
      const FieldPath symbol_path = path.field("symbols")[s];
      out.symbols.push_back(Symbol{
          text(symbols[s].getName(), symbol_path.field("name")), symbols[s].getAddress(),
          symbols[s].getSize(),
          static_cast<SymbolKind>(enum_value(symbols[s].getKind(), symbol_path.field("kind")))});
    }
    const auto allocations = tile.getAllocations();
    out.allocations.reserve(allocations.size());
    for (unsigned a = 0; a < allocations.size(); ++a) {
      const auto allocation = allocations[a];
      const FieldPath allocation_path = path.field("allocations")[a];
      out.allocations.push_back(Allocation{
          allocation.getId(), text(allocation.getName(), allocation_path.field("name")),
          text(allocation.getTensor(), allocation_path.field("tensor")), allocation.getAddress(),
          allocation.getSize(), allocation.getLiveFrom(), allocation.getLiveUntil(),
          static_cast<AllocationKind>(
              enum_value(allocation.getKind(), allocation_path.field("kind"))),
          allocation.getProvenance()});
    }
    const auto sites = tile.getCallSites();
    out.call_sites.reserve(sites.size());
    for (unsigned c = 0; c < sites.size(); ++c) {
      const auto site = sites[c];
      CallSite call;
      call.pc = site.getPc();
      call.kernel = text(site.getKernel(), path.field("callSites")[c].field("kernel"));
      call.operands.reserve(site.getOperands().size());
      for (const auto operand : site.getOperands()) {
        call.operands.push_back(CallOperand{operand.getRegister(), operand.getAllocation(),
                                            operand.getAddress(), operand.getFootprint(),
                                            operand.getWrites()});
      }
      call.provenance = site.getProvenance();
      out.call_sites.push_back(std::move(call));
    }
    for (const auto loop : tile.getLoops()) {
      out.loops.push_back(CodeLoop{loop.getCounter(), loop.getCount(), loop.getProvenance()});
    }
    debug.tiles.push_back(std::move(out));
  }
  for (const auto phase : in.getExchangePhases()) {
    ExchangePhase out;
    out.id = phase.getId();
    for (const auto transfer : phase.getTransfers()) {
      PlannedTransfer planned;
      planned.source_tile = tile_id(transfer.getSourceTile());
      planned.source_address = transfer.getSourceAddress();
      planned.words = transfer.getWords();
      for (const auto destination : transfer.getDestinations()) {
        planned.destinations.push_back({tile_id(destination.getTile()), destination.getAddress()});
      }
      planned.provenance = transfer.getProvenance();
      out.transfers.push_back(std::move(planned));
    }
    debug.exchange_phases.push_back(std::move(out));
  }
  const auto provenance = in.getProvenance();
  debug.provenance.reserve(provenance.size());
  const FieldPath provenance_path("debug.provenance");
  for (unsigned p = 0; p < provenance.size(); ++p) {
    debug.provenance.push_back(text(provenance[p], provenance_path[p]));
  }
  for (const auto loop : in.getPhaseLoops()) {
    debug.phase_loops.push_back(
        PhaseLoop{loop.getFirstRound(), loop.getRoundsPerIteration(), loop.getCount()});
  }
  debug.planned_rounds = in.getPlannedRounds();
  return debug;
}

void read_header(wire::Header::Reader header) {
  if (header.getSchemaVersion() != kPackageSchemaVersion) {
    fail("header.schemaVersion", fmt::format("{} is not the supported version {}",
                                             header.getSchemaVersion(), kPackageSchemaVersion));
  }
  const auto target_name = text(header.getTarget(), "header.target");
  if (target_name != kTargetName) {
    fail("header.target", fmt::format("'{}' is not '{}'", target_name, kTargetName));
  }
  if (header.getTileMemoryBase() != target::kSramBase) {
    fail("header.tileMemoryBase", fmt::format("{:#x} is not {:#x}", header.getTileMemoryBase(),
                                              target::kSramBase));
  }
  if (header.getTileMemorySize() != target::kSramSize) {
    fail("header.tileMemorySize", fmt::format("{:#x} is not {:#x}", header.getTileMemorySize(),
                                              target::kSramSize));
  }
}

// What the reader knows of a blob before decoding it, all checked: a
// digest of the right length seen once, a declared size within the caps,
// a known codec.
struct BlobHeader {
  Sha256 digest{};
  std::uint64_t size = 0;
  BlobCodec codec = BlobCodec::kRaw;
};

struct BlobCaps {
  std::uint64_t per_blob = 0;
  std::uint64_t total = 0;
};

BlobCaps blob_caps(const ReadLimits& limits, std::uint64_t tile_count) {
  // A valid package has at most one image per tile on the chip; the tile
  // list's length is untrusted (validated only after the blobs) and cheap to
  // forge, so it counts only up to kTileCount.
  const std::uint64_t derived_cap =
      std::min(tile_count, static_cast<std::uint64_t>(target::kTileCount)) * target::kSramSize;
  return BlobCaps{limits.max_blob_bytes != 0 ? limits.max_blob_bytes : derived_cap,
                  limits.max_total_blob_bytes != 0 ? limits.max_total_blob_bytes : derived_cap};
}

std::vector<BlobHeader> read_blob_headers(capnp::List<wire::Blob>::Reader blobs,
                                          const BlobCaps& caps) {
  std::vector<BlobHeader> headers;
  std::uint64_t total = 0;
  std::map<Sha256, unsigned> seen;
  for (unsigned i = 0; i < blobs.size(); ++i) {
    const auto blob = blobs[i];
    const FieldPath path = FieldPath("blobs")[i];
    BlobHeader header;
    const auto stored_digest = blob.getSha256();
    if (stored_digest.size() != 32) {
      fail(path.field("sha256"),
           fmt::format("{} bytes is not a SHA-256 digest", stored_digest.size()));
    }
    std::memcpy(header.digest.data(), stored_digest.begin(), header.digest.size());
    if (const auto [it, added] = seen.emplace(header.digest, i); !added) {
      fail(path.field("sha256"),
           fmt::format("duplicates blobs[{}]: each blob is stored once", it->second));
    }
    header.size = blob.getUncompressedSize();
    if (header.size > caps.total - total) {
      fail(path.field("uncompressedSize"),
           fmt::format("{} more bytes exceed the package limit of {} decompressed bytes",
                       header.size, caps.total));
    }
    total += header.size;
    header.codec = static_cast<BlobCodec>(enum_value(blob.getCodec(), path.field("codec")));
    headers.push_back(header);
  }
  return headers;
}

// Decodes every blob (the tiles have bounded their sizes) and checks each
// digest right after decoding it.
void decode_blobs(capnp::List<wire::Blob>::Reader blobs, const std::vector<BlobHeader>& headers,
                  const BlobCaps& caps, BlobStore& store) {
  for (unsigned i = 0; i < blobs.size(); ++i) {
    const FieldPath path = FieldPath("blobs")[i];
    const BlobHeader& header = headers[i];
    const auto data = blobs[i].getData();
    std::vector<std::uint8_t> bytes;
    try {
      bytes = decode_blob(header.codec, std::span(data.begin(), data.size()), header.size,
                          caps.per_blob);
    } catch (Error& error) {
      error.add_context(path.str());
      throw;
    }
    if (sha256(bytes) != header.digest) {
      fail(path.field("sha256"), "does not match the blob's bytes");
    }
    store.add_verified(std::move(bytes), header.digest);
  }
}

Application decode_message(capnp::FlatArrayMessageReader& message, const ReadLimits& limits) {
  const auto root = message.getRoot<wire::Application>();
  read_header(root.getHeader());
  Application app;
  app.compiler_version = text(root.getHeader().getCompilerVersion(), "header.compilerVersion");
  const auto tiles = root.getTiles();
  const BlobCaps caps = blob_caps(limits, tiles.size());
  const std::vector<BlobHeader> blobs = read_blob_headers(root.getBlobs(), caps);
  for (const auto tile : tiles) {
    TileImage image;
    image.tile = tile_id(tile.getPhysicalTile());
    image.entry_point = tile.getEntryPoint();
    for (const auto segment : tile.getSegments()) {
      image.segments.push_back(Segment{segment.getAddress(), segment.getMemorySize(),
                                       segment.getBlob(), segment.getBlobOffset(),
                                       segment.getFileSize(), segment.getFlags()});
    }
    app.tiles.push_back(std::move(image));
  }
  app.inputs = read_bindings(root.getInputs(), "inputs");
  app.outputs = read_bindings(root.getOutputs(), "outputs");
  app.weights = read_bindings(root.getWeights(), "weights");
  app.host_exchange = read_host_exchange(root.getHostExchange());
  const auto entries = root.getEntryPoints();
  for (unsigned e = 0; e < entries.size(); ++e) {
    app.entry_points.push_back(EntryPoint{
        text(entries[e].getName(), FieldPath("entryPoints")[e].field("name")),
        entries[e].getCommand(), entries[e].getExternalSyncs()});
  }
  for (const auto write : root.getDeviceConfigWrites()) {
    app.device_config_writes.push_back({write.getOffset(), write.getValue()});
  }
  app.hardware_loadable = root.getHardwareLoadable();
  app.not_loadable_reason = text(root.getNotLoadableReason(), "notLoadableReason");
  app.debug = read_debug(root.getDebug());

  // Everything so far cost at most the traversal limit. The tiles bound
  // what any blob may usefully hold: check them against the declared sizes
  // before decompressing a byte.
  std::vector<std::uint64_t> declared_sizes;
  for (const BlobHeader& blob : blobs) declared_sizes.push_back(blob.size);
  validate_tiles(app.tiles, declared_sizes);
  decode_blobs(root.getBlobs(), blobs, caps, app.blobs);

  validate(app);

  const auto stored = root.getBuildDigest();
  if (stored.size() != 32 ||
      !std::equal(stored.begin(), stored.end(), build_digest(app).begin())) {
    fail("buildDigest", "does not match the package's contents");
  }
  return app;
}

Application read_words(kj::ArrayPtr<const capnp::word> words, std::size_t byte_size,
                       const ReadLimits& limits) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords =
      limits.traversal_limit_words != 0 ? limits.traversal_limit_words : words.size() * 4 + 1024;
  options.nestingLimit = limits.nesting_limit;
  if (byte_size % sizeof(capnp::word) != 0) {
    fail("package", fmt::format("{} bytes is not a whole number of 8-byte words", byte_size));
  }
  try {
    capnp::FlatArrayMessageReader message(words, options);
    if (message.getEnd() != words.end()) {
      fail("package", "bytes follow the message");
    }
    return decode_message(message, limits);
  } catch (const kj::Exception& error) {
    throw PackageError("package", fmt::format("malformed Cap'n Proto message: {}",
                                              error.getDescription().cStr()));
  }
}

// The size cap comes first, so an oversized input costs nothing.
void require_package_size(std::uint64_t size, const ReadLimits& limits) {
  const std::uint64_t cap =
      limits.max_package_bytes != 0 ? limits.max_package_bytes : kDefaultMaxPackageBytes;
  if (size > cap) {
    fail("package", fmt::format("{} bytes is more than the {} bytes a package may have "
                                "(ReadLimits::max_package_bytes)",
                                size, cap));
  }
}

}  // namespace

Application read_package(std::span<const std::uint8_t> bytes, const ReadLimits& limits) {
  require_package_size(bytes.size(), limits);
  // Cap'n Proto reads aligned words; copy into an aligned buffer.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>((bytes.size() + 7) / 8);
  std::memset(words.begin(), 0, words.size() * sizeof(capnp::word));
  if (!bytes.empty()) std::memcpy(words.begin(), bytes.data(), bytes.size());
  return read_words(words, bytes.size(), limits);
}

Application read_package_file(const std::filesystem::path& path, const ReadLimits& limits) {
  return with_context(path.string(), [&] {
    std::error_code error;
    const std::uintmax_t size = std::filesystem::file_size(path, error);
    if (error) throw IoError(error.message());
    require_package_size(size, limits);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IoError("cannot open");
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>((size + 7) / 8);
    if (words.size() > 0) std::memset(words.end() - 1, 0, sizeof(capnp::word));
    in.read(reinterpret_cast<char*>(words.begin()), static_cast<std::streamsize>(size));
    if (static_cast<std::uintmax_t>(in.gcount()) != size) throw IoError("short read");
    return read_words(words, static_cast<std::size_t>(size), limits);
  });
}

}  // namespace tessera::schema
