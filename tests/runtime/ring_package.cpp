#include "tests/runtime/ring_package.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "compiler/host_io.hpp"
#include "target/exchange_timing.hpp"
#include "target/host_exchange.hpp"
#include "target/memory_map.hpp"
#include "tests/sim/program.hpp"
#include "tests/sim/rows.hpp"
#include "support/little_endian.hpp"

namespace tessera::runtime::testing {
namespace {

using namespace sim::testing;
using target::PhysicalTile;

// Per-tile layout (16 KiB elements below 0x80000: code in element 0, host
// programs and packets in elements 3 and 4, tensors in 5, 6 and 7).
constexpr std::uint32_t kCopyHelper = 0x4CC00;
constexpr std::uint32_t kAddKernel = 0x4CC08;
constexpr std::uint32_t kRingRow = 0x4D000;
constexpr std::uint32_t kPhaseCode = 0x58000;
constexpr std::uint32_t kPhasePackets = 0x5C000;
constexpr std::uint32_t kPhaseStride = 0x400;
constexpr std::uint32_t kX = 0x60000;
constexpr std::uint32_t kY = 0x64000;
constexpr std::uint32_t kZ = 0x68000;
constexpr std::uint32_t kXAllocation = 1;
constexpr std::uint32_t kStagingAllocation = 3;

std::vector<isa::Instruction> call(std::uint32_t address) { return {isa::Call{Reg::m10, address}}; }

}  // namespace

std::vector<std::uint32_t> ring_reference(const RingSpec& spec, const std::vector<std::uint32_t>& x) {
  const std::size_t n = spec.compute_tiles.size();
  const std::size_t w = spec.words_per_tile;
  std::vector<std::uint32_t> y(n * w);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t from = (i + n - 1) % n;
    for (std::size_t k = 0; k < w; ++k) y[i * w + k] = x[from * w + k] * 2u;
  }
  return y;
}

schema::Application ring_package(const RingSpec& spec) {
  const auto& compute = spec.compute_tiles;
  if (compute.size() < 2 || spec.words_per_tile == 0 || spec.words_per_tile > 4096) {
    throw std::invalid_argument("ring_package: at least 2 tiles and 1..4096 words per tile");
  }
  const std::uint32_t share = spec.words_per_tile * 4;

  std::set<PhysicalTile> tiles(compute.begin(), compute.end());
  for (const auto tile : compute) tiles.insert(target::xreq_owner(tile));

  schema::Application app;
  app.compiler_version = "runtime test ring package";
  // Host side: the compiler's host I/O lowering.
  compiler::HostCallRequest run{"run", 0, {"x"}, {"y"}, {}, {}};
  for (std::size_t i = 0; i < compute.size(); ++i) {
    run.inputs.push_back({compute[i], kX, std::uint64_t{share} * i, share});
    run.outputs.push_back({compute[i], kZ, std::uint64_t{share} * i, share});
  }
  const std::vector<PhysicalTile> package_tiles(tiles.begin(), tiles.end());
  const compiler::HostPlan host = compiler::plan_host_io(std::vector{run}, package_tiles);
  app.host_exchange = host.exchange;

  schema::Binding x{"x", schema::DType::kU32,
                    {static_cast<std::uint32_t>(compute.size() * spec.words_per_tile)}, {}};
  schema::Binding y{"y", schema::DType::kU32, x.shape, {}};
  for (std::size_t i = 0; i < compute.size(); ++i) {
    x.slices.push_back({compute[i], kX, std::uint64_t{share} * i, share});
    y.slices.push_back({compute[i], kZ, std::uint64_t{share} * i, share});
  }
  app.inputs = {x};
  app.outputs = {y};
  app.debug.provenance = {"y0 = add(x, x)", "host input x"};

  // The internal exchange: everyone sends its doubled share to the next tile.
  const std::size_t count = compute.size();
  target::Event start = 0;
  for (std::size_t i = 0; i < count; ++i) {
    start = std::max(start, target::earliest_send_start(compute[i], compute[(i + 1) % count]));
  }
  std::map<PhysicalTile, std::vector<isa::Instruction>> rows;
  for (std::size_t i = 0; i < count; ++i) {
    const PhysicalTile from = compute[(i + count - 1) % count];
    const PhysicalTile to = compute[(i + 1) % count];
    const auto in = target::word32_transfer(from, compute[i], start, spec.words_per_tile);
    auto actions = receive_actions(in, from.value, kZ / 4);
    const std::vector<PhysicalTile> to_only{to};
    actions.push_back(RowAction{RowAction::Kind::kSend, start, kY / 4, spec.words_per_tile,
                                target::word32_sctl(compute[i], to_only)});
    rows[compute[i]] =
        build_row(actions, std::max(in.horizon, start + static_cast<target::Event>(spec.words_per_tile)),
                  kRingRow);
  }

  for (const PhysicalTile tile : tiles) {
    const auto position = std::find(compute.begin(), compute.end(), tile);
    const bool computes = position != compute.end();
    const std::size_t slot = static_cast<std::size_t>(position - compute.begin());
    schema::TileImage image{tile, target::kEntryPoint, {}};
    schema::TileDebug debug;
    debug.tile = tile;

    std::vector<isa::Instruction> main = {isa::Sync{7}};  // the startup rendezvous
    std::vector<schema::CallSite> copy_sites;
    for (std::size_t phase = 0; phase < host.batches.size(); ++phase) {
      const compiler::HostBatch& batch = host.batches[phase];
      const bool input = batch.input;
      const compiler::TileHostStep& step = batch.step(tile);
      const std::uint32_t code_address = kPhaseCode + kPhaseStride * static_cast<std::uint32_t>(phase);
      const target::HostProgram program =
          step.program(kPhasePackets + kPhaseStride * static_cast<std::uint32_t>(phase));
      add_segment(app, image, code_address, assemble(program.instructions), true);
      for (const auto& block : program.packets) {
        add_segment(app, image, block.address, words_to_bytes(block.words), false);
      }
      const bool first_output = !input && batch.index == 0;
      if (first_output) {
        // Between the last input batch and the first output batch: compute, then D2D.
        if (computes) {
          const std::uint32_t words = spec.words_per_tile + (spec.overrun && slot == 0 ? 1 : 0);
          auto setup = load_constant(Reg::m2, kY) + load_constant(Reg::m3, kX) +
                       load_constant(Reg::m4, kX) + load_constant(Reg::m5, words);
          main = main + setup;
          const std::uint32_t pc = target::kLoadBase + 4 * static_cast<std::uint32_t>(main.size());
          main = main + call(kAddKernel);
          debug.call_sites.push_back({pc,
                               "tessera_add_u32",
                               {{2, 2, kY, share, true}, {3, 1, kX, share, false},
                                {4, 1, kX, share, false}},
                               0});
        }
        main = main + std::vector<isa::Instruction>{isa::Sync{3}};
        if (computes) main = main + call(kRingRow);
        main = main + std::vector<isa::Instruction>{isa::Sync{3}};
      }
      main = main + call(code_address);
      for (const auto& copy : step.copies_after()) {
        // The batch landed in the staging buffer; move it into place.
        main = main + load_constant(Reg::m2, copy.destination) +
               load_constant(Reg::m3, copy.source) + load_constant(Reg::m4, copy.words);
        const std::uint32_t pc = target::kLoadBase + 4 * static_cast<std::uint32_t>(main.size());
        main = main + call(kCopyHelper);
        const std::uint32_t bytes = copy.words * 4;
        copy_sites.push_back({pc,
                              "tessera_copy_words",
                              {{2, kXAllocation, copy.destination, bytes, true},
                               {3, kStagingAllocation, copy.source, bytes, false}},
                              1});
      }
    }
    main = main + halt();
    add_segment(app, image, target::kLoadBase, assemble(main), true);
    add_segment(app, image, kCopyHelper,
                assemble({isa::Br{Reg::m10}, isa::Nop{}, isa::Br{Reg::m10}}), true);
    if (computes) add_segment(app, image, kRingRow, assemble(rows[tile]), true);
    if (computes) {
      debug.allocations = {
          {kXAllocation, "x", "x", kX, share, 0, schema::kLiveToEnd, schema::AllocationKind::kTensor, 0},
          {2, "y0", "y0", kY, share, 0, schema::kLiveToEnd, schema::AllocationKind::kTensor, 0},
          {kStagingAllocation, "h2d staging", "", target::kH2dStaging, target::kH2dStagingMaxBytes, 0, schema::kLiveToEnd,
           schema::AllocationKind::kStaging, 1}};
      debug.call_sites.insert(debug.call_sites.end(), copy_sites.begin(), copy_sites.end());
      std::sort(debug.call_sites.begin(), debug.call_sites.end(),
                [](const auto& a, const auto& b) { return a.pc < b.pc; });
    }
    debug.symbols = {{"tessera_copy_words", kCopyHelper, 4, schema::SymbolKind::kRuntimeHelper},
                     {"tessera_add_u32", kAddKernel, 4, schema::SymbolKind::kKernel}};
    std::sort(image.segments.begin(), image.segments.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    app.tiles.push_back(image);
    app.debug.tiles.push_back(debug);
  }
  return app;
}

}  // namespace tessera::runtime::testing
