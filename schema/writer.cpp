#include "schema/writer.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/io.h>

#include <fmt/format.h>

#include "schema/digest.hpp"
#include "schema/validate.hpp"
#include "schema/wire.hpp"
#include "support/atomic_file.hpp"
#include "target/memory_map.hpp"

namespace tessera::schema {
namespace {

// Cap'n Proto writes the message's segments straight into the atomic file,
// without a flat copy of a package that may be hundreds of megabytes.
class AtomicFileStream final : public kj::OutputStream {
 public:
  explicit AtomicFileStream(AtomicFile& file) : file_(file) {}
  void write(const void* buffer, size_t size) override {
    file_.write({static_cast<const std::uint8_t*>(buffer), size});
  }

 private:
  AtomicFile& file_;
};

// The model's enums are cast to the wire's: their ordinals must agree.
static_assert(static_cast<int>(wire::DType::F32) == static_cast<int>(DType::kF32) &&
              static_cast<int>(wire::DType::F16) == static_cast<int>(DType::kF16) &&
              static_cast<int>(wire::DType::U32) == static_cast<int>(DType::kU32) &&
              static_cast<int>(wire::DType::F8F143) == static_cast<int>(DType::kF8F143) &&
              static_cast<int>(wire::DType::I32) == static_cast<int>(DType::kI32) &&
              static_cast<int>(wire::DType::U8) == static_cast<int>(DType::kU8));
static_assert(static_cast<int>(wire::SymbolKind::KERNEL) == static_cast<int>(SymbolKind::kKernel) &&
              static_cast<int>(wire::SymbolKind::RUNTIME_HELPER) ==
                  static_cast<int>(SymbolKind::kRuntimeHelper) &&
              static_cast<int>(wire::SymbolKind::EXCHANGE_ROW) ==
                  static_cast<int>(SymbolKind::kExchangeRow) &&
              static_cast<int>(wire::SymbolKind::DATA) == static_cast<int>(SymbolKind::kData) &&
              static_cast<int>(wire::SymbolKind::CODE) == static_cast<int>(SymbolKind::kCode));
static_assert(
    static_cast<int>(wire::AllocationKind::TENSOR) == static_cast<int>(AllocationKind::kTensor) &&
    static_cast<int>(wire::AllocationKind::STAGING) == static_cast<int>(AllocationKind::kStaging) &&
    static_cast<int>(wire::AllocationKind::CODE) == static_cast<int>(AllocationKind::kCode) &&
    static_cast<int>(wire::AllocationKind::EXCHANGE_ROW) ==
        static_cast<int>(AllocationKind::kExchangeRow) &&
    static_cast<int>(wire::AllocationKind::RUNTIME) == static_cast<int>(AllocationKind::kRuntime) &&
    static_cast<int>(wire::AllocationKind::SCRATCH) == static_cast<int>(AllocationKind::kScratch));

// Copies a vector into a Cap'n Proto list.
template <class List, class Items, class F>
void fill(List list, const Items& items, F&& each) {
  for (unsigned i = 0; i < items.size(); ++i) each(list[i], items[i]);
}

kj::ArrayPtr<const kj::byte> as_bytes(std::span<const std::uint8_t> bytes) {
  return {bytes.data(), bytes.size()};
}

void write_binding(wire::Binding::Builder out, const Binding& binding) {
  out.setName(binding.name);
  out.setDtype(static_cast<wire::DType>(binding.dtype));
  auto shape = out.initShape(static_cast<unsigned>(binding.shape.size()));
  for (unsigned i = 0; i < binding.shape.size(); ++i) shape.set(i, binding.shape[i]);
  fill(out.initSlices(static_cast<unsigned>(binding.slices.size())), binding.slices,
       [](auto slice, const RegionSlice& in) {
         slice.setTile(in.tile.value);
         slice.setTileAddress(in.tile_address);
         slice.setFileOffset(in.file_offset);
         slice.setSize(in.size);
       });
}

void write_bindings(capnp::List<wire::Binding>::Builder list, const std::vector<Binding>& items) {
  fill(list, items, [](auto out, const Binding& in) { write_binding(out, in); });
}

void write_text_list(capnp::List<capnp::Text>::Builder builder,
                     const std::vector<std::string>& values) {
  for (unsigned i = 0; i < values.size(); ++i) builder.set(i, values[i]);
}

template <class Builder>
void write_u32_list(Builder builder, const std::vector<std::uint32_t>& values) {
  for (unsigned i = 0; i < values.size(); ++i) builder.set(i, values[i]);
}

void write_host_slices(capnp::List<wire::HostSlice>::Builder list,
                       const std::vector<HostSlice>& items) {
  fill(list, items, [](auto out, const HostSlice& in) {
    out.setPage(in.page);
    out.setPageOffset(in.page_offset);
    out.setFileOffset(in.file_offset);
    out.setSize(in.size);
  });
}

void write_host_exchange(wire::HostExchange::Builder out, const HostExchange& host) {
  out.setStartupMark(host.startup_mark);
  out.setCommandPage(host.command_page);
  out.setCommandOffset(host.command_offset);
  fill(out.initPages(static_cast<unsigned>(host.pages.size())), host.pages,
       [](auto page, const HostPage& in) {
         page.setIndex(in.index);
         page.setSize(in.size);
       });
  write_u32_list(out.initAttachOrder(static_cast<unsigned>(host.attach_order.size())),
                 host.attach_order);
  fill(out.initCalls(static_cast<unsigned>(host.calls.size())), host.calls,
       [](auto call, const HostCall& in) {
         call.setName(in.name);
         call.setCommand(in.command);
         call.setPhases(in.phases);
         write_host_slices(call.initInputs(static_cast<unsigned>(in.inputs.size())), in.inputs);
         write_host_slices(call.initOutputs(static_cast<unsigned>(in.outputs.size())), in.outputs);
         call.setInvocations(in.invocations);
         write_u32_list(call.initInputBatchEnds(static_cast<unsigned>(in.input_batch_ends.size())),
                        in.input_batch_ends);
         write_u32_list(
             call.initOutputBatchEnds(static_cast<unsigned>(in.output_batch_ends.size())),
             in.output_batch_ends);
         write_text_list(call.initInputBindings(static_cast<unsigned>(in.input_bindings.size())),
                         in.input_bindings);
         write_text_list(call.initOutputBindings(static_cast<unsigned>(in.output_bindings.size())),
                         in.output_bindings);
       });
}

void write_debug(wire::Debug::Builder out, const Debug& debug) {
  fill(out.initTiles(static_cast<unsigned>(debug.tiles.size())), debug.tiles,
       [](auto tile, const TileDebug& in) {
         tile.setPhysicalTile(in.tile.value);
         fill(tile.initSymbols(static_cast<unsigned>(in.symbols.size())), in.symbols,
              [](auto symbol, const Symbol& s) {
                symbol.setName(s.name);
                symbol.setAddress(s.address);
                symbol.setSize(s.size);
                symbol.setKind(static_cast<wire::SymbolKind>(s.kind));
              });
         fill(tile.initAllocations(static_cast<unsigned>(in.allocations.size())), in.allocations,
              [](auto allocation, const Allocation& a) {
                allocation.setId(a.id);
                allocation.setName(a.name);
                allocation.setTensor(a.tensor);
                allocation.setAddress(a.address);
                allocation.setSize(a.size);
                allocation.setLiveFrom(a.live_from);
                allocation.setLiveUntil(a.live_until);
                allocation.setKind(static_cast<wire::AllocationKind>(a.kind));
                allocation.setProvenance(a.provenance);
              });
         fill(tile.initCallSites(static_cast<unsigned>(in.call_sites.size())), in.call_sites,
              [](auto site, const CallSite& c) {
                site.setPc(c.pc);
                site.setKernel(c.kernel);
                fill(site.initOperands(static_cast<unsigned>(c.operands.size())), c.operands,
                     [](auto operand, const CallOperand& o) {
                       operand.setRegister(o.reg);
                       operand.setAllocation(o.allocation);
                       operand.setAddress(o.address);
                       operand.setFootprint(o.footprint);
                       operand.setWrites(o.writes);
                     });
                site.setProvenance(c.provenance);
              });
         fill(tile.initLoops(static_cast<unsigned>(in.loops.size())), in.loops,
              [](auto loop, const CodeLoop& l) {
                loop.setCounter(l.counter);
                loop.setCount(l.count);
                loop.setProvenance(l.provenance);
              });
       });
  fill(out.initExchangePhases(static_cast<unsigned>(debug.exchange_phases.size())),
       debug.exchange_phases, [](auto phase, const ExchangePhase& in) {
         phase.setId(in.id);
         fill(phase.initTransfers(static_cast<unsigned>(in.transfers.size())), in.transfers,
              [](auto transfer, const PlannedTransfer& t) {
                transfer.setSourceTile(t.source_tile.value);
                transfer.setSourceAddress(t.source_address);
                transfer.setWords(t.words);
                fill(transfer.initDestinations(static_cast<unsigned>(t.destinations.size())),
                     t.destinations, [](auto destination, const TransferDestination& d) {
                       destination.setTile(d.tile.value);
                       destination.setAddress(d.address);
                     });
                transfer.setProvenance(t.provenance);
              });
       });
  auto provenance = out.initProvenance(static_cast<unsigned>(debug.provenance.size()));
  for (unsigned i = 0; i < debug.provenance.size(); ++i) provenance.set(i, debug.provenance[i]);
  fill(out.initPhaseLoops(static_cast<unsigned>(debug.phase_loops.size())), debug.phase_loops,
       [](auto loop, const PhaseLoop& in) {
         loop.setFirstRound(in.first_round);
         loop.setRoundsPerIteration(in.rounds_per_iteration);
         loop.setCount(in.count);
       });
  out.setPlannedRounds(debug.planned_rounds);
}

void build_message(capnp::MessageBuilder& message, const Application& app,
                   const WriteOptions& options, const Sha256& digest) {
  auto root = message.initRoot<wire::Application>();
  auto header = root.initHeader();
  header.setSchemaVersion(kPackageSchemaVersion);
  header.setCompilerVersion(app.compiler_version);
  header.setTarget(std::string(kTargetName));
  header.setTileMemoryBase(target::kSramBase);
  header.setTileMemorySize(target::kSramSize);

  auto blobs = root.initBlobs(static_cast<unsigned>(app.blobs.size()));
  BlobEncoder encoder(options.zstd_level);
  for (std::uint32_t i = 0; i < app.blobs.size(); ++i) {
    const auto bytes = app.blobs.bytes(i);
    auto blob = blobs[i];
    blob.setSha256(as_bytes(app.blobs.digest(i)));
    blob.setUncompressedSize(bytes.size());
    if (options.compress) {
      const BlobEncoder::Encoded stored = encoder.encode(bytes);
      blob.setCodec(stored.codec == BlobCodec::kZstd ? wire::BlobCodec::ZSTD : wire::BlobCodec::RAW);
      blob.setData(as_bytes(stored.data));
    } else {
      blob.setCodec(wire::BlobCodec::RAW);
      blob.setData(as_bytes(bytes));
    }
  }
  fill(root.initTiles(static_cast<unsigned>(app.tiles.size())), app.tiles,
       [](auto tile, const TileImage& in) {
         tile.setPhysicalTile(in.tile.value);
         tile.setEntryPoint(in.entry_point);
         fill(tile.initSegments(static_cast<unsigned>(in.segments.size())), in.segments,
              [](auto segment, const Segment& s) {
                segment.setAddress(s.address);
                segment.setMemorySize(s.memory_size);
                segment.setBlob(s.blob);
                segment.setBlobOffset(s.blob_offset);
                segment.setFileSize(s.file_size);
                segment.setFlags(s.flags);
              });
       });
  write_bindings(root.initInputs(static_cast<unsigned>(app.inputs.size())), app.inputs);
  write_bindings(root.initOutputs(static_cast<unsigned>(app.outputs.size())), app.outputs);
  write_bindings(root.initWeights(static_cast<unsigned>(app.weights.size())), app.weights);
  write_host_exchange(root.initHostExchange(), app.host_exchange);
  fill(root.initEntryPoints(static_cast<unsigned>(app.entry_points.size())), app.entry_points,
       [](auto entry, const EntryPoint& in) {
         entry.setName(in.name);
         entry.setCommand(in.command);
         entry.setExternalSyncs(in.external_syncs);
       });
  fill(root.initDeviceConfigWrites(static_cast<unsigned>(app.device_config_writes.size())),
       app.device_config_writes, [](auto write, const DeviceConfigWrite& in) {
         write.setOffset(in.offset);
         write.setValue(in.value);
       });
  root.setHardwareLoadable(app.hardware_loadable);
  root.setNotLoadableReason(app.not_loadable_reason);
  write_debug(root.initDebug(), app.debug);
  root.setBuildDigest(as_bytes(digest));
}

// The application in canonical form: itself when it already is (a compiled
// one is), a canonical copy in `copy` otherwise.
const Application& canonical_form(const Application& application, Application& copy) {
  if (is_canonical(application)) return application;
  copy = canonical(application);
  return copy;
}

}  // namespace

std::vector<std::uint8_t> serialize_package(const Application& application,
                                            const WriteOptions& options) {
  Application copy;
  const Application& app = canonical_form(application, copy);
  validate(app);
  capnp::MallocMessageBuilder message;
  build_message(message, app, options, build_digest(app));
  const auto words = capnp::messageToFlatArray(message);
  const auto bytes = words.asBytes();
  return {bytes.begin(), bytes.end()};
}

std::vector<std::uint8_t> serialize_unchecked_for_testing(const Application& application,
                                                          const WriteOptions& options) {
  capnp::MallocMessageBuilder message;
  build_message(message, application, options, build_digest(application));
  const auto words = capnp::messageToFlatArray(message);
  const auto bytes = words.asBytes();
  return {bytes.begin(), bytes.end()};
}

Sha256 write_package(const Application& application, const std::filesystem::path& path,
                     const WriteOptions& options) {
  Application copy;
  const Application& app = canonical_form(application, copy);
  validate(app);
  const Sha256 digest = build_digest(app);
  capnp::MallocMessageBuilder message;
  build_message(message, app, options, digest);
  AtomicFile file(path);
  AtomicFileStream stream(file);
  capnp::writeMessage(stream, message);
  file.commit();
  return digest;
}

}  // namespace tessera::schema
