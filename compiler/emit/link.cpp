#include "compiler/emit/link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "compiler/emit/code.hpp"
#include "compiler/emit/phase_rounds.hpp"
#include "compiler/exchange/scheduler.hpp"
#include "compiler/host_io.hpp"
#include "compiler/placement.hpp"
#include "kernels/registry.hpp"
#include "support/checked.hpp"
#include "support/little_endian.hpp"
#include "target/host_exchange.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::emit {
namespace {

using lower::BufferId;
using lower::LogicalTile;
using lower::Step;
using lower::StepKind;
using target::PhysicalTile;
using isa::Reg;

// Where rows and host programs are put while their sizes are found: any
// 8-aligned executable address gives the same code (the row emitter pads
// relative to the row's own address) and none of it shares a memory element
// with data, which lives in region 1.
constexpr std::uint32_t kProbeCode = 0x60000;
constexpr std::uint32_t kStubBytes = 8;  // br $m10; nop
constexpr isa::Reg kLoopCount = isa::Reg::m12;    // loop code only; never live across other code
constexpr isa::Reg kLoopCounter = isa::Reg::m13;

PhysicalTile physical(LogicalTile tile) { return target::c600_physical(tile); }

// Bytes of encoded code (sendpicp and a few others take two words).
std::uint32_t code_bytes(const Code& code) {
  return checked_cast<std::uint32_t>(assemble(code).size(), "code bytes");
}
// The main program holds one-word instructions only (setzi, call, sync,
// ld32, st32, add, brz, bri, br), so its pcs are counted without encoding.
std::uint32_t main_bytes(const Code& code) {
  return checked_cast<std::uint32_t>(code.size() * 4, "main bytes");
}

std::string format_range(std::uint32_t address, std::uint64_t bytes) {
  return fmt::format("[{:#x}, +{})", address, bytes);
}

// A tile's code pieces and where placement put them.
struct TileCode {
  std::uint32_t main = kProbeCode;
  std::map<std::size_t, std::uint32_t> host_code;     // by batch index
  std::map<std::size_t, std::uint32_t> host_packets;  // by batch index, active batches only
  std::map<std::size_t, std::uint32_t> rows;          // by step index
  std::map<std::string, std::uint32_t> stubs;         // by kernel name
  std::map<std::size_t, std::uint32_t> loop_counters; // by loop-begin step
};

class Linker {
 public:
  Linker(const lower::Program& program, const LinkOptions& options, LinkReport& report)
      : program_(program), options_(options), report_(report) {}

  schema::Application run() {
    app_.compiler_version = options_.compiler_version;
    find_lifetimes();
    rounds_ = phase_rounds(program_.steps);
    find_tiles();
    place_data();
    make_bindings();
    plan_host();
    schedule_exchanges(/*final=*/false);
    place_code();
    schedule_exchanges(/*final=*/true);
    emit_tiles();
    app_.debug.provenance = program_.provenance;
    report_.package_tiles = tiles_.size();
    report_.host_batches = host_.batches.size();
    return std::move(app_);
  }

 private:
  // ---- 1. lifetimes and data placement ----------------------------------------
  const lower::HostBinding& binding(const std::string& name) const {
    for (const auto* list : {&program_.inputs, &program_.weights, &program_.outputs}) {
      for (const auto& b : *list) {
        if (b.name == name) return b;
      }
    }
    throw LinkError(fmt::format("internal: no binding '{}'", name));
  }

  template <class F>
  void for_each_use(const Step& step, F&& use) const {
    switch (step.kind) {
      case StepKind::kHostInputs:
        for (const auto& name : program_.calls[step.call].inputs) {
          for (const auto& slice : binding(name).slices) use(slice.buffer);
        }
        break;
      case StepKind::kHostOutputs:
        for (const auto& name : program_.calls[step.call].outputs) {
          for (const auto& slice : binding(name).slices) use(slice.buffer);
        }
        break;
      case StepKind::kExchange:
        for (const auto& transfer : step.transfers) {
          use(transfer.source.buffer);
          for (const auto& destination : transfer.destinations) use(destination.buffer);
        }
        break;
      case StepKind::kCompute:
        for (const auto& [tile, runs] : step.runs) {
          for (const auto& run : runs) {
            for (const auto& pointer : run.pointers) use(pointer.buffer);
          }
        }
        break;
      case StepKind::kLoopBegin:
      case StepKind::kLoopEnd:
        break;
    }
  }

  void find_lifetimes() {
    live_from_.assign(program_.buffers.size(), std::numeric_limits<std::uint32_t>::max());
    live_until_.assign(program_.buffers.size(), 0);
    for (std::size_t i = 0; i < program_.steps.size(); ++i) {
      const auto step = checked_cast<std::uint32_t>(i, "step");
      for_each_use(program_.steps[i], [&](BufferId buffer) {
        live_from_[buffer] = std::min(live_from_[buffer], step);
        live_until_[buffer] = std::max(live_until_[buffer], step + 1);
      });
    }
    // A buffer used inside a loop lives through the whole loop: every
    // iteration runs the same steps again. Inner loops first (they begin later).
    for (std::size_t i = program_.steps.size(); i-- > 0;) {
      if (program_.steps[i].kind != StepKind::kLoopBegin) continue;
      const auto begin = checked_cast<std::uint32_t>(i, "step");
      const auto end = checked_cast<std::uint32_t>(program_.steps[i].partner + 1, "step");
      for (std::size_t b = 0; b < program_.buffers.size(); ++b) {
        if (live_until_[b] > begin && live_from_[b] < end) {
          live_from_[b] = std::min(live_from_[b], begin);
          live_until_[b] = std::max(live_until_[b], end);
        }
      }
    }
    for (std::size_t b = 0; b < program_.buffers.size(); ++b) {
      // Constant buffers (move tables) are loaded with the image, so nothing
      // may use their memory before them; never used: keep it anyway.
      if (!program_.buffers[b].contents.empty() || live_until_[b] == 0) {
        live_from_[b] = 0;
        live_until_[b] = schema::kLiveToEnd;
      }
    }
  }

  void find_tiles() {
    std::set<PhysicalTile> tiles;
    for (const auto& buffer : program_.buffers) {
      for (const auto& [tile, bytes] : buffer.bytes) tiles.insert(physical(tile));
    }
    std::set<PhysicalTile> hosts;
    for (const auto* list : {&program_.inputs, &program_.weights, &program_.outputs}) {
      for (const auto& b : *list) {
        for (const auto& slice : b.slices) hosts.insert(physical(slice.tile));
      }
    }
    for (const PhysicalTile tile : hosts) tiles.insert(target::xreq_owner(tile));
    tiles_.assign(tiles.begin(), tiles.end());
    for (const auto& buffer : program_.buffers) {
      for (const auto& [tile, bytes] : buffer.bytes) logical_[physical(tile)] = tile;
    }
  }

  void place_data() {
    std::map<LogicalTile, std::vector<std::pair<BufferId, AllocationRequest>>> requests;
    for (BufferId b = 0; b < program_.buffers.size(); ++b) {
      const auto& buffer = program_.buffers[b];
      for (const auto& [tile, bytes] : buffer.bytes) {
        if (bytes == 0) continue;
        AllocationRequest request;
        request.name = buffer.name;
        request.tensor = buffer.tensor;
        request.kind = buffer.kind;
        request.size = bytes;
        request.alignment = buffer.alignment;
        request.placement = MemoryPlacement::kInterleaved;
        request.live_from = live_from_[b];
        request.live_until = live_until_[b];
        request.provenance = buffer.provenance;
        requests[tile].emplace_back(b, request);
      }
    }
    for (const auto& [tile, list] : requests) {
      std::vector<AllocationRequest> plain;
      for (const auto& [b, request] : list) plain.push_back(request);
      const auto placed = place_tile(physical(tile), plain);
      auto& allocations = allocations_[physical(tile)];
      std::uint32_t high = 0;
      for (std::size_t i = 0; i < placed.size(); ++i) {
        data_[{list[i].first, physical(tile)}] = placed[i];
        allocations.push_back(placed[i]);
        high = std::max(high, placed[i].address + placed[i].size - target::kInterleavedRegion.begin);
      }
      report_.max_data_bytes = std::max(report_.max_data_bytes, high);
    }
  }

  const schema::Allocation& allocation(BufferId buffer, LogicalTile tile) const {
    const auto found = data_.find({buffer, physical(tile)});
    if (found == data_.end()) {
      throw LinkError(fmt::format("internal: buffer '{}' has no allocation on {}",
                                  program_.buffers[buffer].name, physical(tile)));
    }
    return found->second;
  }

  std::uint32_t address(const lower::Location& location) const {
    return allocation(location.buffer, location.tile).address + location.offset;
  }

  // ---- 2. bindings and host I/O ---------------------------------------------------
  schema::Binding make_binding(const lower::HostBinding& b) const {
    schema::Binding result{b.name, b.type.dtype(), b.type.shape, {}};
    for (const auto& slice : b.slices) {
      result.slices.push_back(schema::RegionSlice{
          physical(slice.tile), address({slice.tile, slice.buffer, slice.offset}), slice.host_offset,
          slice.size});
    }
    return result;
  }

  void make_bindings() {
    for (const auto& b : program_.inputs) app_.inputs.push_back(make_binding(b));
    for (const auto& b : program_.outputs) app_.outputs.push_back(make_binding(b));
    for (const auto& b : program_.weights) app_.weights.push_back(make_binding(b));
  }

  void plan_host() {
    std::vector<HostCallRequest> requests;
    for (std::size_t c = 0; c < program_.calls.size(); ++c) {
      const auto& call = program_.calls[c];
      const auto command = checked_cast<std::uint32_t>(c, "host call");
      HostCallRequest request{call.name, command, call.inputs, call.outputs, {}, {}};
      schema::HostCall layout;
      layout.name = call.name;
      layout.input_bindings = call.inputs;
      layout.output_bindings = call.outputs;
      for (const auto side : {schema::CallSide::kInput, schema::CallSide::kOutput}) {
        for (const auto& part : schema::call_payload(app_, layout, side)) {
          for (const auto& slice : part.binding->slices) {
            // A tensor whose size is not whole words ends in payload padding
            // (schema::call_payload) and in its allocation's padding.
            const auto size =
                checked_cast<std::uint32_t>((slice.size + 3) / 4 * 4, "host slice bytes");
            HostTransfer transfer{slice.tile, slice.tile_address, part.offset + slice.file_offset, size};
            (side == schema::CallSide::kInput ? request.inputs : request.outputs).push_back(transfer);
          }
        }
      }
      requests.push_back(std::move(request));
    }
    host_ = plan_host_io(requests, tiles_);
    app_.host_exchange = host_.exchange;
    for (std::size_t k = 0; k < host_.batches.size(); ++k) {
      const auto& batch = host_.batches[k];
      std::size_t call = 0;
      while (program_.calls[call].name != batch.call) ++call;
      batches_of_[{call, batch.input}].push_back(k);
    }
  }

  // ---- 3. exchange ------------------------------------------------------------------
  // "exchange row (phase 12)": named by the round that first opens its phase.
  std::string row_name(std::size_t step) const {
    const auto round = rounds_.first_round.find(step);
    return round == rounds_.first_round.end()
               ? fmt::format("exchange row (step {})", step)
               : fmt::format("exchange row (phase {})", round->second);
  }

  static bool same_transfers(const exchange::PhaseSchedule& schedule,
                             const exchange::PhaseTransfers& phase) {
    if (schedule.planned.size() != phase.transfers.size()) return false;
    for (std::size_t t = 0; t < phase.transfers.size(); ++t) {
      const exchange::LogicalTransfer& transfer = phase.transfers[t];
      const schema::PlannedTransfer& planned = schedule.planned[t];
      if (planned.source_tile != transfer.source || planned.source_address != transfer.source_address ||
          planned.words != transfer.words || planned.destinations != transfer.destinations) {
        return false;
      }
    }
    return true;
  }

  void schedule_exchanges(bool final) {
    for (std::size_t i = 0; i < program_.steps.size(); ++i) {
      const Step& step = program_.steps[i];
      if (step.kind != StepKind::kExchange) continue;
      exchange::PhaseTransfers phase;
      for (const auto& transfer : step.transfers) {
        exchange::LogicalTransfer logical;
        logical.source = physical(transfer.source.tile);
        logical.source_address = address(transfer.source);
        logical.words = transfer.words;
        logical.provenance = transfer.provenance;
        for (const auto& destination : transfer.destinations) {
          logical.destinations.push_back({physical(destination.tile), address(destination)});
        }
        phase.transfers.push_back(std::move(logical));
      }
      exchange::ScheduleOptions options;
      options.row_address = kProbeCode;
      options.validate = final && options_.validate_exchange;
      if (final) {
        for (const auto& [tile, code] : code_) {
          const auto row = code.rows.find(i);
          if (row != code.rows.end()) options.row_addresses[tile] = row->second;
        }
      }
      // The final pass places the probe's schedule: the same transfers give
      // the same times wherever the rows go.
      const auto probe = schedules_.find(i);
      const bool same = final && probe != schedules_.end() && same_transfers(probe->second, phase);
      exchange::PhaseSchedule schedule =
          same ? exchange::place_rows(std::move(probe->second), options)
               : exchange::schedule_phase(phase, options);
      if (final) {
        for (const auto& row : schedule.rows) {
          if (code_bytes(row.instructions) != probe_rows_.at({row.tile, i})) {
            throw LinkError(fmt::format("internal: the row of {} in exchange step {} changed size "
                                        "when placed", row.tile, i));
          }
        }
        const auto round = rounds_.first_round.find(i);
        report_.phases.push_back(LinkReport::Phase{
            round == rounds_.first_round.end() ? std::nullopt : std::optional(round->second),
            step.provenance < program_.provenance.size() ? program_.provenance[step.provenance]
                                                         : "",
            step.transfers.size(), static_cast<std::uint64_t>(schedule.horizon),
            schedule.cost.lower_bound, schedule.cost.words_sent});
      } else {
        for (const auto& row : schedule.rows) probe_rows_[{row.tile, i}] = code_bytes(row.instructions);
      }
      schedules_[i] = std::move(schedule);
    }
    if (final) {
      // Each phase once, at its first round; loops say where they repeat.
      for (const std::size_t step : rounds_.planned_steps) {
        app_.debug.exchange_phases.push_back(schema::ExchangePhase{
            checked_cast<std::uint32_t>(rounds_.first_round.at(step), "phase id"),
            schedules_.at(step).planned});
      }
      app_.debug.phase_loops = rounds_.loops;
      app_.debug.planned_rounds = rounds_.planned_rounds;
    }
  }

  // ---- 4. code --------------------------------------------------------------------
  // The kernels a tile calls, in name order (its stubs).
  std::set<std::string> kernels_of(PhysicalTile tile) const {
    std::set<std::string> names;
    const auto logical = logical_.find(tile);
    for (const Step& step : program_.steps) {
      if (step.kind == StepKind::kCompute && logical != logical_.end()) {
        const auto runs = step.runs.find(logical->second);
        if (runs != step.runs.end()) {
          for (const auto& run : runs->second) names.insert(run.kernel);
        }
      }
    }
    for (const auto& batch : host_.batches) {
      const TileHostStep& step = batch.step(tile);
      if (!step.copies_before().empty() || !step.copies_after().empty()) {
        names.insert(std::string(kernels::kCopyWords));
      }
    }
    return names;
  }

  struct MainCode {
    Code code;
    std::vector<schema::CallSite> sites;
  };

  // The staging buffer the host I/O lowering copies through (one per tile, in
  // the reserved exchange window): H2D data lands there, D2H data of several
  // allocations is gathered there.
  schema::Allocation h2d_staging(std::uint32_t id) const {
    return schema::Allocation{id, "h2d staging", "", target::kH2dStaging, target::kH2dStagingMaxBytes,
                              0, schema::kLiveToEnd, schema::AllocationKind::kStaging, schema::kNoProvenance};
  }

  // One kernel call: registers, the footprint assertion, the call.
  void emit_call(MainCode& main, PhysicalTile tile, const std::string& kernel,
                 const std::vector<std::pair<unsigned, const schema::Allocation*>>& operand_allocations,
                 const kernels::Registers& registers, std::uint32_t stub, std::uint32_t provenance,
                 const std::vector<std::pair<unsigned, std::uint32_t>>& scalars = {}) const {
    const kernels::KernelSpec* spec = kernels::KernelRegistry::standard().find(kernel);
    if (spec == nullptr) throw LinkError(fmt::format("internal: no kernel '{}' in the registry", kernel));
    schema::CallSite site;
    site.kernel = kernel;
    site.provenance = provenance;
    for (const auto& operand : spec->operands) {
      const auto found = std::find_if(operand_allocations.begin(), operand_allocations.end(),
                                      [&](const auto& entry) { return entry.first == operand.reg; });
      if (found == operand_allocations.end()) {
        throw LinkError(fmt::format("internal: {} on {}: no allocation for operand $m{}", kernel, tile,
                                    operand.reg));
      }
      const schema::Allocation& held = *found->second;
      const std::uint32_t pointer = registers[operand.reg];
      const std::uint64_t footprint = operand.footprint(registers);
      const bool inside = pointer >= held.address &&
                          std::uint64_t{pointer} + footprint <= std::uint64_t{held.address} + held.size;
      if (!inside) {
        throw LinkError(fmt::format(
            "kernel {} on {} ({}): operand $m{} ({}) footprint {} is not inside its allocation '{}' {}",
            kernel, tile, provenance < program_.provenance.size() ? program_.provenance[provenance] : "",
            operand.reg, operand.role, format_range(pointer, footprint), held.name,
            format_range(held.address, held.size)));
      }
      site.operands.push_back(
          schema::CallOperand{checked_cast<std::uint8_t>(operand.reg, "operand register"), held.id,
                              pointer, checked_cast<std::uint32_t>(footprint, "footprint"),
                              operand.access != kernels::Access::kRead});
    }
    for (unsigned reg = kernels::kOutputRegister; reg <= kernels::kLastArgumentRegister; ++reg) {
      // A zero register is skipped unless it is an operand or a scalar the
      // run sets (a scale or ε of 0 must not keep a previous call's value).
      if (registers[reg] != 0 ||
          std::any_of(spec->operands.begin(), spec->operands.end(),
                      [&](const auto& operand) { return operand.reg == reg; }) ||
          std::any_of(scalars.begin(), scalars.end(),
                      [&](const auto& scalar) { return scalar.first == reg; })) {
        append(main.code, load_constant(static_cast<Reg>(reg), registers[reg]));
      }
    }
    site.pc = checked_add(code_.at(tile).main, main_bytes(main.code), "call site pc");
    main.code.push_back(isa::Call{Reg::m10, stub});
    main.sites.push_back(std::move(site));
  }

  // A copy between the staging buffer and the data allocation live at step
  // `step` that holds the other end: the copy helper's call, footprints
  // asserted like any kernel's.
  void emit_staging_copy(MainCode& main, PhysicalTile tile, std::size_t step,
                         const StagingCopy& copy, const schema::Allocation& staging) const {
    const bool gathers = in_staging(copy.destination);
    const std::uint32_t data = gathers ? copy.source : copy.destination;
    const schema::Allocation* held = nullptr;
    for (const auto& allocation : allocations_.at(tile)) {
      if (allocation.address <= data && data < allocation.address + allocation.size &&
          allocation.live_from <= step && step < allocation.live_until) {
        held = &allocation;
      }
    }
    if (held == nullptr) {
      throw LinkError(
          fmt::format("internal: host data at {:#x} on {} is in no allocation", data, tile));
    }
    kernels::Registers registers{};
    registers[2] = copy.destination;
    registers[3] = copy.source;
    registers[4] = copy.words;
    emit_call(main, tile, std::string(kernels::kCopyWords),
              {{2, gathers ? &staging : held}, {3, gathers ? held : &staging}}, registers,
              code_.at(tile).stubs.at(std::string(kernels::kCopyWords)), held->provenance);
  }

  static bool in_staging(std::uint32_t address) {
    return address >= target::kH2dStaging &&
           address < target::kH2dStaging + target::kH2dStagingMaxBytes;
  }

  // The tile's whole main program, for the code addresses in code_[tile].
  MainCode emit_main(PhysicalTile tile, std::uint32_t staging_id) const {
    MainCode main;
    const TileCode& code = code_.at(tile);
    const auto logical = logical_.find(tile);
    const schema::Allocation staging = h2d_staging(staging_id);
    std::map<std::size_t, std::uint32_t> loop_top;  // by loop-begin step
    main.code.push_back(isa::Sync{isa::kHostSyncZone});  // the startup rendezvous
    for (std::size_t i = 0; i < program_.steps.size(); ++i) {
      const Step& step = program_.steps[i];
      switch (step.kind) {
        case StepKind::kHostInputs:
        case StepKind::kHostOutputs: {
          const auto found = batches_of_.find({step.call, step.kind == StepKind::kHostInputs});
          if (found == batches_of_.end()) break;
          for (const std::size_t k : found->second) {
            const TileHostStep& batch = host_.batches[k].step(tile);
            for (const StagingCopy& copy : batch.copies_before()) {
              emit_staging_copy(main, tile, i, copy, staging);
            }
            main.code.push_back(isa::Call{Reg::m10, code.host_code.at(k)});
            for (const StagingCopy& copy : batch.copies_after()) {
              emit_staging_copy(main, tile, i, copy, staging);
            }
          }
          break;
        }
        case StepKind::kExchange: {
          main.code.push_back(isa::Sync{isa::kInternalSyncZone});
          const auto row = code.rows.find(i);
          if (row != code.rows.end()) main.code.push_back(isa::Call{Reg::m10, row->second});
          main.code.push_back(isa::Sync{isa::kInternalSyncZone});
          break;
        }
        case StepKind::kLoopBegin: {
          // The iteration count lives in memory: kernels, rows and helpers
          // may use any register but the stack pointer.
          append(main.code, load_constant(kLoopCount, step.count));
          append(main.code, load_constant(kLoopCounter, code.loop_counters.at(i)));
          main.code.push_back(isa::St32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
          loop_top[i] = code.main + main_bytes(main.code);
          break;
        }
        case StepKind::kLoopEnd: {
          append(main.code, load_constant(kLoopCounter, code.loop_counters.at(step.partner)));
          main.code.push_back(isa::Ld32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
          main.code.push_back(isa::Add{kLoopCount, kLoopCount, -1});
          main.code.push_back(isa::St32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
          const std::uint32_t exit = code.main + main_bytes(main.code) + 8;  // past brz and bri
          main.code.push_back(isa::Brz{kLoopCount, exit});
          main.code.push_back(isa::Bri{loop_top.at(step.partner)});
          break;
        }
        case StepKind::kCompute: {
          if (logical == logical_.end()) break;
          const auto runs = step.runs.find(logical->second);
          if (runs == step.runs.end()) break;
          for (const auto& run : runs->second) {
            kernels::Registers registers{};
            std::vector<std::pair<unsigned, const schema::Allocation*>> operands;
            for (const auto& pointer : run.pointers) {
              const schema::Allocation& held = allocation(pointer.buffer, logical->second);
              registers[pointer.reg] = held.address + pointer.offset;
              operands.emplace_back(pointer.reg, &held);
            }
            for (const auto& [reg, value] : run.scalars) registers[reg] = value;
            emit_call(main, tile, run.kernel, operands, registers, code.stubs.at(run.kernel), run.provenance,
                      run.scalars);
          }
          break;
        }
      }
    }
    append(main.code, halt());
    return main;
  }

  std::uint32_t staging_id(PhysicalTile tile) const {
    const auto found = allocations_.find(tile);
    return checked_cast<std::uint32_t>((found == allocations_.end() ? 0 : found->second.size()) + 1,
                                       "allocation id");
  }

  // (step, bytes) of every row `tile` has, in step order.
  std::vector<std::pair<std::size_t, std::uint32_t>> rows_of(PhysicalTile tile) const {
    std::vector<std::pair<std::size_t, std::uint32_t>> rows;
    for (auto it = probe_rows_.lower_bound({tile, 0}); it != probe_rows_.end() && it->first.first == tile; ++it) {
      rows.emplace_back(it->first.second, it->second);
    }
    return rows;
  }

  void place_code() {
    for (const PhysicalTile tile : tiles_) {
      TileCode& code = code_[tile];
      for (const auto& name : kernels_of(tile)) code.stubs[name] = kProbeCode;
      for (std::size_t k = 0; k < host_.batches.size(); ++k) code.host_code[k] = kProbeCode;
      for (const auto& [step, size] : rows_of(tile)) code.rows[step] = kProbeCode;
      for (std::size_t i = 0; i < program_.steps.size(); ++i) {
        if (program_.steps[i].kind == StepKind::kLoopBegin) code.loop_counters[i] = kProbeCode;
      }
    }
    // Sizes first (no size depends on an address), then one placement per tile.
    for (const PhysicalTile tile : tiles_) {
      TileCode& code = code_[tile];
      std::vector<AllocationRequest> requests;
      std::vector<std::function<void(std::uint32_t)>> assign;
      auto request = [&](std::string name, schema::AllocationKind kind, std::uint32_t size,
                         std::function<void(std::uint32_t)> set) {
        AllocationRequest r;
        r.name = std::move(name);
        r.kind = kind;
        r.size = size;
        r.alignment = 8;
        r.placement = MemoryPlacement::kStandard;
        requests.push_back(r);
        assign.push_back(std::move(set));
      };
      const std::uint32_t main_size = code_bytes(emit_main(tile, staging_id(tile)).code);
      request("main", schema::AllocationKind::kCode, main_size, [&code](std::uint32_t a) { code.main = a; });
      // Host programs: every inactive batch shares one.
      std::optional<std::size_t> idle_request;
      for (std::size_t k = 0; k < host_.batches.size(); ++k) {
        const TileHostStep& step = host_.batches[k].step(tile);
        const auto program = step.program(kProbeCode);
        if (!step.active()) {
          if (!idle_request) {
            idle_request = requests.size();
            request("host idle", schema::AllocationKind::kCode,
                    code_bytes(program.instructions), [](std::uint32_t) {});
          }
          idle_batches_[tile].push_back(k);
          continue;
        }
        request(fmt::format("host batch {}", k), schema::AllocationKind::kCode,
                code_bytes(program.instructions), [&code, k](std::uint32_t a) { code.host_code[k] = a; });
        if (step.packet_bytes() > 0) {
          request(fmt::format("host packets {}", k), schema::AllocationKind::kRuntime, step.packet_bytes(),
                  [&code, k](std::uint32_t a) { code.host_packets[k] = a; });
        }
      }
      for (const auto& [step, size] : rows_of(tile)) {
        request(row_name(step), schema::AllocationKind::kExchangeRow, size,
                [&code, step](std::uint32_t a) { code.rows[step] = a; });
      }
      for (auto& [step, counter] : code.loop_counters) {
        request(fmt::format("loop counter (step {})", step), schema::AllocationKind::kRuntime, 4,
                [&code, at = step](std::uint32_t a) { code.loop_counters[at] = a; });
      }
      if (!code.stubs.empty()) {
        request("kernel stubs", schema::AllocationKind::kCode,
                checked_cast<std::uint32_t>(code.stubs.size() * kStubBytes, "kernel stubs"),
                [&code](std::uint32_t a) {
                  std::uint32_t at = a;
                  for (auto& [name, stub] : code.stubs) {
                    stub = at;
                    at += kStubBytes;
                  }
                });
      }
      const auto placed = place_tile(tile, requests);
      const std::uint32_t first_id = staging_id(tile) + 1;
      std::uint32_t high = 0;
      for (std::size_t r = 0; r < placed.size(); ++r) {
        assign[r](placed[r].address);
        schema::Allocation held = placed[r];
        held.id = checked_cast<std::uint32_t>(first_id + r, "allocation id");
        code_allocations_[tile].push_back(held);
        high = std::max(high, held.address + held.size - target::kLoadBase);
      }
      if (idle_request) {
        for (const std::size_t k : idle_batches_[tile]) code.host_code[k] = placed[*idle_request].address;
      }
      report_.max_code_bytes = std::max(report_.max_code_bytes, high);
    }
  }

  // ---- 5. images and debug ---------------------------------------------------------
  void emit_tiles() {
    for (const PhysicalTile tile : tiles_) {
      const TileCode& code = code_.at(tile);
      schema::TileImage image{tile, target::kEntryPoint, {}};
      schema::TileDebug debug;
      debug.tile = tile;

      add_segment(app_, image, target::kEntryPoint, assemble({isa::Bri{code.main}, isa::Nop{}}), true);
      const MainCode main = emit_main(tile, staging_id(tile));
      add_segment(app_, image, code.main, assemble(main.code), true);
      debug.symbols.push_back({"main", code.main, code_bytes(main.code), schema::SymbolKind::kCode});
      report_.kernel_calls += main.sites.size();

      std::set<std::uint32_t> emitted;
      for (std::size_t k = 0; k < host_.batches.size(); ++k) {
        const TileHostStep& step = host_.batches[k].step(tile);
        const auto packets = code.host_packets.find(k);
        const auto program = step.program(packets == code.host_packets.end() ? kProbeCode : packets->second);
        const std::uint32_t at = code.host_code.at(k);
        if (!emitted.insert(at).second) continue;
        add_segment(app_, image, at, assemble(program.instructions), true);
        debug.symbols.push_back({step.active() ? fmt::format("host batch {}", k) : "host idle", at,
                                 code_bytes(program.instructions), schema::SymbolKind::kCode});
        for (const auto& block : program.packets) {
          add_segment(app_, image, block.address, words_to_bytes(block.words), false);
        }
      }
      for (const auto& [step, at] : code.rows) {
        const auto& rows = schedules_.at(step).rows;
        const auto row = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.tile == tile; });
        add_segment(app_, image, at, assemble(row->instructions), true);
        debug.symbols.push_back(
            {row_name(step), at, code_bytes(row->instructions), schema::SymbolKind::kExchangeRow});
      }
      for (const auto& [name, at] : code.stubs) {
        add_segment(app_, image, at, assemble({isa::Br{Reg::m10}, isa::Nop{}}), true);
        const auto* spec = kernels::KernelRegistry::standard().find(name);
        debug.symbols.push_back({name, at, kStubBytes,
                                 spec->kind == kernels::KernelKind::kKernel ? schema::SymbolKind::kKernel
                                                                            : schema::SymbolKind::kRuntimeHelper});
      }
      // Constant buffers (move tables): their bytes, loaded with the image.
      if (const auto logical = logical_.find(tile); logical != logical_.end()) {
        for (BufferId b = 0; b < program_.buffers.size(); ++b) {
          const auto contents = program_.buffers[b].contents.find(logical->second);
          if (contents == program_.buffers[b].contents.end()) continue;
          add_segment(app_, image, allocation(b, logical->second).address, contents->second, false);
        }
      }

      debug.allocations = allocations_[tile];
      const bool stages = std::any_of(main.sites.begin(), main.sites.end(), [](const auto& site) {
        return site.kernel == kernels::kCopyWords &&
               std::any_of(site.operands.begin(), site.operands.end(),
                           [](const auto& operand) { return in_staging(operand.address); });
      });
      if (stages) debug.allocations.push_back(h2d_staging(staging_id(tile)));
      const auto& code_held = code_allocations_[tile];
      debug.allocations.insert(debug.allocations.end(), code_held.begin(), code_held.end());
      debug.call_sites = main.sites;
      std::sort(image.segments.begin(), image.segments.end(),
                [](const auto& a, const auto& b) { return a.address < b.address; });
      std::sort(debug.symbols.begin(), debug.symbols.end(),
                [](const auto& a, const auto& b) { return a.address < b.address; });
      app_.tiles.push_back(std::move(image));
      app_.debug.tiles.push_back(std::move(debug));
    }
  }

  const lower::Program& program_;
  const LinkOptions& options_;
  LinkReport& report_;
  schema::Application app_;

  std::vector<std::uint32_t> live_from_, live_until_;
  std::vector<PhysicalTile> tiles_;
  std::map<PhysicalTile, LogicalTile> logical_;
  std::map<std::pair<BufferId, PhysicalTile>, schema::Allocation> data_;
  std::map<PhysicalTile, std::vector<schema::Allocation>> allocations_;       // data, by tile
  std::map<PhysicalTile, std::vector<schema::Allocation>> code_allocations_;  // code, by tile
  HostPlan host_;
  std::map<std::pair<std::size_t, bool>, std::vector<std::size_t>> batches_of_;  // (call, input) → batches
  std::map<std::pair<PhysicalTile, std::size_t>, std::uint32_t> probe_rows_;     // (tile, step) → bytes
  std::map<std::size_t, exchange::PhaseSchedule> schedules_;                     // by step
  PhaseRounds rounds_;
  std::map<PhysicalTile, TileCode> code_;
  std::map<PhysicalTile, std::vector<std::size_t>> idle_batches_;
};

}  // namespace

schema::Application link_program(const lower::Program& program, const LinkOptions& options,
                                 LinkReport* report) {
  LinkReport local;
  return Linker(program, options, report != nullptr ? *report : local).run();
}

}  // namespace tessera::compiler::emit
