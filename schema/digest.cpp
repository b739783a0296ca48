#include "schema/digest.hpp"

#include <algorithm>
#include <array>

#include "schema/sha256.hpp"
#include "schema/wire.hpp"
#include "target/memory_map.hpp"

namespace tessera::schema {
namespace {

// Little-endian fixed-width integers; strings and lists carry a u64 length.
// The bytes gather in a buffer that goes to the hash a few KiB at a time: a
// whole-chip package's debug section is millions of 4- and 8-byte fields, and
// one hash update per field cost more than the hashing.
class DigestWriter {
 public:
  void u8(std::uint8_t value) { append(&value, 1); }
  void u32(std::uint32_t value) { fixed(value, 4); }
  void u64(std::uint64_t value) { fixed(value, 8); }
  void count(std::size_t n) { u64(n); }
  void text(std::string_view value) {
    count(value.size());
    append(reinterpret_cast<const std::uint8_t*>(value.data()), value.size());
  }
  void bytes(std::span<const std::uint8_t> value) { append(value.data(), value.size()); }
  template <class T, class F>
  void list(const std::vector<T>& items, F&& each) {
    count(items.size());
    for (const auto& item : items) each(item);
  }
  Sha256 finish() {
    flush();
    return stream_.finish();
  }

 private:
  void fixed(std::uint64_t value, std::size_t width) {
    std::array<std::uint8_t, 8> buffer{};
    for (std::size_t i = 0; i < width; ++i) buffer[i] = static_cast<std::uint8_t>(value >> (8 * i));
    append(buffer.data(), width);
  }
  void append(const std::uint8_t* data, std::size_t size) {
    if (size > buffer_.size() - used_) {
      flush();
      if (size > buffer_.size()) {
        stream_.update(std::span(data, size));
        return;
      }
    }
    std::copy(data, data + size, buffer_.begin() + static_cast<std::ptrdiff_t>(used_));
    used_ += size;
  }
  void flush() {
    stream_.update(std::span(buffer_.data(), used_));
    used_ = 0;
  }
  Sha256Stream stream_;
  std::array<std::uint8_t, 8192> buffer_{};
  std::size_t used_ = 0;
};

void hash_binding(DigestWriter& d, const Binding& binding) {
  d.text(binding.name);
  d.text(dtype_name(binding.dtype));
  d.list(binding.shape, [&](std::uint32_t dimension) { d.u32(dimension); });
  d.list(binding.slices, [&](const RegionSlice& slice) {
    d.u32(slice.tile.value);
    d.u32(slice.tile_address);
    d.u64(slice.file_offset);
    d.u64(slice.size);
  });
}

void hash_host_slices(DigestWriter& d, const std::vector<HostSlice>& slices) {
  d.list(slices, [&](const HostSlice& slice) {
    d.u32(slice.page);
    d.u64(slice.page_offset);
    d.u64(slice.file_offset);
    d.u64(slice.size);
  });
}

void hash_debug(DigestWriter& d, const Debug& debug) {
  d.list(debug.tiles, [&](const TileDebug& tile) {
    d.u32(tile.tile.value);
    d.list(tile.symbols, [&](const Symbol& symbol) {
      d.text(symbol.name);
      d.u32(symbol.address);
      d.u32(symbol.size);
      d.text(symbol_kind_name(symbol.kind));
    });
    d.list(tile.allocations, [&](const Allocation& allocation) {
      d.u32(allocation.id);
      d.text(allocation.name);
      d.text(allocation.tensor);
      d.u32(allocation.address);
      d.u32(allocation.size);
      d.u32(allocation.live_from);
      d.u32(allocation.live_until);
      d.text(allocation_kind_name(allocation.kind));
      d.u32(allocation.provenance);
    });
    d.list(tile.call_sites, [&](const CallSite& site) {
      d.u32(site.pc);
      d.text(site.kernel);
      d.list(site.operands, [&](const CallOperand& operand) {
        d.u8(operand.reg);
        d.u32(operand.allocation);
        d.u32(operand.address);
        d.u32(operand.footprint);
        d.u8(operand.writes ? 1 : 0);
      });
      d.u32(site.provenance);
    });
    // Added in schema version 2 without a bump: hashed only when present, so
    // the digest of a tile without loops is what it was.
    if (!tile.loops.empty()) {
      d.list(tile.loops, [&](const CodeLoop& loop) {
        d.u32(loop.counter);
        d.u32(loop.count);
        d.u32(loop.provenance);
      });
    }
  });
  d.list(debug.exchange_phases, [&](const ExchangePhase& phase) {
    d.u32(phase.id);
    d.list(phase.transfers, [&](const PlannedTransfer& transfer) {
      d.u32(transfer.source_tile.value);
      d.u32(transfer.source_address);
      d.u32(transfer.words);
      d.list(transfer.destinations, [&](const TransferDestination& destination) {
        d.u32(destination.tile.value);
        d.u32(destination.address);
      });
      d.u32(transfer.provenance);
    });
  });
  d.list(debug.provenance, [&](const std::string& text) { d.text(text); });
  // Added in schema version 2 without a bump: hashed only when present, so
  // the digest of a package without them is what it was.
  if (!debug.phase_loops.empty() || debug.planned_rounds != 0) {
    d.list(debug.phase_loops, [&](const PhaseLoop& loop) {
      d.u64(loop.first_round);
      d.u64(loop.rounds_per_iteration);
      d.u32(loop.count);
    });
    d.u64(debug.planned_rounds);
  }
}

}  // namespace

Sha256 build_digest(const Application& application) {
  DigestWriter d;
  // 1. What the package is.
  d.text("tessera.ipuexe");
  d.u32(kPackageSchemaVersion);
  d.text(kTargetName);
  d.u32(target::kSramBase);
  d.u32(target::kSramSize);
  d.text(application.compiler_version);
  // 2. Blobs by content, in index order.
  d.count(application.blobs.size());
  for (std::uint32_t i = 0; i < application.blobs.size(); ++i) d.bytes(application.blobs.digest(i));
  // 3. Tiles and segments.
  d.list(application.tiles, [&](const TileImage& tile) {
    d.u32(tile.tile.value);
    d.u32(tile.entry_point);
    d.list(tile.segments, [&](const Segment& segment) {
      d.u32(segment.address);
      d.u32(segment.memory_size);
      d.u32(segment.blob);
      d.u64(segment.blob_offset);
      d.u32(segment.file_size);
      d.u32(segment.flags);
    });
  });
  // 4. Bindings.
  for (const auto* bindings : {&application.inputs, &application.outputs, &application.weights}) {
    d.list(*bindings, [&](const Binding& binding) { hash_binding(d, binding); });
  }
  // 5. Host exchange.
  const HostExchange& host = application.host_exchange;
  d.u32(host.startup_mark);
  d.u32(host.command_page);
  d.u64(host.command_offset);
  d.list(host.pages, [&](const HostPage& page) {
    d.u32(page.index);
    d.u64(page.size);
  });
  d.list(host.attach_order, [&](std::uint32_t page) { d.u32(page); });
  d.list(host.calls, [&](const HostCall& call) {
    d.text(call.name);
    d.u32(call.command);
    d.u32(call.phases);
    d.u32(call.invocations);
    hash_host_slices(d, call.inputs);
    hash_host_slices(d, call.outputs);
    d.list(call.input_batch_ends, [&](std::uint32_t end) { d.u32(end); });
    d.list(call.output_batch_ends, [&](std::uint32_t end) { d.u32(end); });
    d.list(call.input_bindings, [&](const std::string& name) { d.text(name); });
    d.list(call.output_bindings, [&](const std::string& name) { d.text(name); });
  });
  // 6. Entry points, 7. configuration writes, 8. loadability.
  d.list(application.entry_points, [&](const EntryPoint& entry) {
    d.text(entry.name);
    d.u32(entry.command);
    d.u32(entry.external_syncs);
  });
  d.list(application.device_config_writes, [&](const DeviceConfigWrite& write) {
    d.u32(write.offset);
    d.u32(write.value);
  });
  d.u8(application.hardware_loadable ? 1 : 0);
  d.text(application.not_loadable_reason);
  // 9. Debug information.
  hash_debug(d, application.debug);
  return d.finish();
}

}  // namespace tessera::schema
