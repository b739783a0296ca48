#include "tests/testing/sample_package.hpp"

#include <algorithm>
#include <numeric>

#include "target/memory_map.hpp"

namespace tessera::testing {

using namespace tessera::schema;
using target::PhysicalTile;

namespace {

std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(seed + i * 7);
  return bytes;
}

constexpr std::uint32_t kDataAddress = 0x60000;

}  // namespace

Application sample_application() {
  Application app;
  app.compiler_version = "tessera-test 0.0.0";
  const std::uint32_t code = app.blobs.add(pattern(64, 1));  // shared by both tiles
  for (const std::uint16_t id : {std::uint16_t{0}, std::uint16_t{5}}) {
    const std::uint32_t data = app.blobs.add(pattern(256, static_cast<std::uint8_t>(id + 9)));
    TileImage tile;
    tile.tile = PhysicalTile(id);
    tile.entry_point = target::kEntryPoint;
    tile.segments = {
        Segment{target::kLoadBase, 128, code, 0, 64, kSegmentRead | kSegmentExecute},
        Segment{kDataAddress, 512, data, 0, 256, kSegmentRead | kSegmentWrite},
    };
    app.tiles.push_back(tile);
  }
  app.inputs.push_back(Binding{"image", DType::kF32, {2, 8},
                               {RegionSlice{PhysicalTile(0), kDataAddress, 0, 32},
                                RegionSlice{PhysicalTile(5), kDataAddress, 32, 32}}});
  app.outputs.push_back(Binding{"logits", DType::kF16, {16},
                                {RegionSlice{PhysicalTile(0), kDataAddress + 64, 0, 16},
                                 RegionSlice{PhysicalTile(5), kDataAddress + 64, 16, 16}}});
  app.weights.push_back(
      Binding{"w", DType::kF8F143, {64}, {RegionSlice{PhysicalTile(5), kDataAddress + 128, 0, 64}}});
  app.host_exchange.startup_mark = 23;
  app.host_exchange.command_page = 0;
  app.host_exchange.command_offset = 0;
  app.host_exchange.pages = {HostPage{0, 4096}, HostPage{1, 8192}};
  app.host_exchange.attach_order = {0, 1};
  HostCall call;
  call.name = "run";
  call.command = 1;
  call.phases = 3;
  // The payloads are exactly one tensor each: image (64 bytes) in, logits
  // (32 bytes) out.
  call.inputs = {HostSlice{1, 0, 0, 64}};
  call.outputs = {HostSlice{1, 4096, 0, 32}};
  call.input_batch_ends = {1};
  call.output_batch_ends = {1};
  call.input_bindings = {"image"};
  call.output_bindings = {"logits"};
  app.host_exchange.calls.push_back(call);
  app.entry_points.push_back(EntryPoint{"main", 1, 2});
  app.device_config_writes.push_back(DeviceConfigWrite{0x2000, 4});
  app.hardware_loadable = false;
  app.not_loadable_reason = "kernels are emulated only";

  app.debug.provenance = {"graph: matmul %3", "graph: copy %1"};
  TileDebug debug;
  debug.tile = PhysicalTile(5);
  debug.symbols = {Symbol{"gemm_f16", target::kLoadBase + 16, 32, SymbolKind::kKernel},
                   Symbol{"weights", kDataAddress + 128, 64, SymbolKind::kData}};
  debug.allocations = {
      Allocation{1, "x", "%1", kDataAddress, 64, 0, 3, AllocationKind::kTensor, 1},
      Allocation{2, "w", "%2", kDataAddress + 128, 64, 0, kLiveToEnd, AllocationKind::kTensor, 0},
      Allocation{3, "y", "%3", kDataAddress + 64, 32, 1, 4, AllocationKind::kTensor, 0}};
  debug.call_sites = {CallSite{target::kLoadBase + 8,
                               "gemm_f16",
                               {CallOperand{2, 3, kDataAddress + 64, 32, true},
                                CallOperand{3, 1, kDataAddress, 64, false},
                                CallOperand{4, 2, kDataAddress + 128, 64, false}},
                               0}};
  app.debug.tiles.push_back(debug);
  app.debug.exchange_phases.push_back(ExchangePhase{
      7, {PlannedTransfer{PhysicalTile(0), kDataAddress, 8,
                          {TransferDestination{PhysicalTile(5), kDataAddress + 32}}, 1}}});
  return app;
}

rc::Gen<Application> valid_application() {
  return rc::gen::exec([] {
    Application app;
    app.compiler_version = *rc::gen::element<std::string>("tessera 0.1.0", "tessera 9.9 (git x)");
    const auto tile_count = *rc::gen::inRange<std::size_t>(1, 5);
    auto ids = *rc::gen::unique<std::vector<std::uint16_t>>(
        tile_count, rc::gen::inRange<std::uint16_t>(0, target::kTileCount));
    // Code shared by every tile, as the compiler links one runtime.
    const auto code_words = *rc::gen::inRange<std::uint32_t>(2, 64);
    const std::uint32_t code = app.blobs.add(*rc::gen::container<std::vector<std::uint8_t>>(
        code_words * 4, rc::gen::arbitrary<std::uint8_t>()));
    for (const auto id : ids) {
      TileImage tile;
      tile.tile = PhysicalTile(id);
      tile.entry_point = target::kEntryPoint;
      tile.segments.push_back(Segment{target::kLoadBase, code_words * 4, code, 0, code_words * 4,
                                      kSegmentRead | kSegmentExecute});
      // Data segments at increasing, disjoint addresses.
      std::uint32_t address = 0x58000;
      const auto data_segments = *rc::gen::inRange(0, 3);
      for (int d = 0; d < data_segments; ++d) {
        const auto bytes = *rc::gen::container<std::vector<std::uint8_t>>(
            *rc::gen::inRange<std::size_t>(1, 300), rc::gen::arbitrary<std::uint8_t>());
        const auto file_size = static_cast<std::uint32_t>(bytes.size());
        const auto memory_size = file_size + *rc::gen::inRange<std::uint32_t>(0, 64);
        const std::uint32_t blob = app.blobs.add(bytes);
        tile.segments.push_back(
            Segment{address, memory_size, blob, 0, file_size, kSegmentRead | kSegmentWrite});
        address += (memory_size + 0xFFF) & ~0xFFFu;
      }
      app.tiles.push_back(tile);
    }
    std::sort(app.tiles.begin(), app.tiles.end(),
              [](const auto& a, const auto& b) { return a.tile < b.tile; });

    // One output split over the tiles, one replicated input.
    const auto elements = *rc::gen::inRange<std::uint32_t>(1, 64);
    Binding output{"out", DType::kF32, {elements}, {}};
    const std::uint64_t bytes = std::uint64_t{elements} * 4;
    const std::uint64_t per_tile = (bytes + tile_count - 1) / tile_count;
    for (std::uint64_t offset = 0, t = 0; offset < bytes; offset += per_tile, ++t) {
      const std::uint64_t size = std::min(per_tile, bytes - offset);
      output.slices.push_back(RegionSlice{app.tiles[t].tile, 0x80000, offset, size});
    }
    app.outputs.push_back(output);
    Binding input{"in", *rc::gen::element(DType::kF16, DType::kU8, DType::kF8F143), {3, 5}, {}};
    for (const auto& tile : app.tiles) {
      input.slices.push_back(RegionSlice{tile.tile, 0x90000, 0, payload_bytes(input)});
    }
    app.inputs.push_back(input);

    app.host_exchange.pages = {HostPage{0, 4096}};
    app.host_exchange.attach_order = {0};
    if (*rc::gen::arbitrary<bool>()) {
      // The input payload (every invocation's copy of `in`) in two slices;
      // the output payload, when there is one, in a single slice.
      HostCall call;
      call.name = "call";
      call.phases = 1;
      call.invocations = *rc::gen::inRange<std::uint32_t>(1, 5);
      call.input_bindings = {"in"};
      const std::uint64_t in_bytes = call.invocations * payload_bytes(input);
      const auto split = *rc::gen::inRange<std::uint64_t>(1, in_bytes);
      call.inputs = {HostSlice{0, 64, 0, split}, HostSlice{0, 256, split, in_bytes - split}};
      call.input_batch_ends = *rc::gen::element(std::vector<std::uint32_t>{2},
                                                std::vector<std::uint32_t>{1, 2});
      if (*rc::gen::arbitrary<bool>()) {
        call.output_bindings = {"out"};
        call.outputs = {HostSlice{0, 1024, 0, call.invocations * bytes}};
        call.output_batch_ends = {1};
      }
      app.host_exchange.calls.push_back(call);
    }
    app.entry_points.push_back(EntryPoint{"main", 0, *rc::gen::inRange<std::uint32_t>(0, 4)});
    app.hardware_loadable = *rc::gen::arbitrary<bool>();
    app.not_loadable_reason = app.hardware_loadable ? "" : "kernels are emulated only";

    app.debug.provenance = {"op"};
    TileDebug debug;
    debug.tile = app.tiles.back().tile;
    debug.symbols = {Symbol{"kernel", target::kLoadBase, 4, SymbolKind::kKernel}};
    debug.allocations = {Allocation{0, "out", "%0", 0x80000, 256, 0, 2, AllocationKind::kTensor, 0}};
    debug.call_sites = {CallSite{target::kLoadBase + 4, "kernel",
                                 {CallOperand{2, 0, 0x80000, 16, true}}, kNoProvenance}};
    app.debug.tiles.push_back(debug);
    app.debug.exchange_phases.push_back(ExchangePhase{
        0, {PlannedTransfer{app.tiles.front().tile, 0x80000, 4,
                            {TransferDestination{app.tiles.back().tile, 0x80100}}, 0}}});
    return app;
  });
}

}  // namespace tessera::testing
