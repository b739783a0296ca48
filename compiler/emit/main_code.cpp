// Step 4 of linking, the code: each tile's main program — startup
// rendezvous, host batches with their staging copies, exchange syncs and row
// calls, loop counters and sequence pointers, kernel calls — and the kernels
// and moving pointers it needs.
#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit::linking {

// The kernels a tile calls, in name order (its stubs).
std::set<std::string> Linker::kernels_of(PhysicalTile tile) const {
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
  if (profiling()) names.insert(std::string(kernels::kProfileSample));
  return names;
}

// (loop, cursor) of every moving pointer of `tile`'s kernel runs.
std::set<std::pair<std::size_t, Cursor>> Linker::cursors_of(PhysicalTile tile) const {
  std::set<std::pair<std::size_t, Cursor>> cursors;
  const auto logical = logical_.find(tile);
  if (logical == logical_.end()) return cursors;
  for (const Step& step : program_.steps) {
    if (step.kind != StepKind::kCompute) continue;
    const auto runs = step.runs.find(logical->second);
    if (runs == step.runs.end()) continue;
    for (const auto& run : runs->second) {
      for (const auto& pointer : run.pointers) {
        if (pointer.stride == 0) continue;
        if (pointer.loop >= program_.steps.size() ||
            program_.steps[pointer.loop].kind != StepKind::kLoopBegin) {
          throw LinkError(
              fmt::format("internal: {} on {} moves its $m{} with step {}, which begins no loop",
                          run.kernel, tile, pointer.reg, pointer.loop));
        }
        cursors.emplace(pointer.loop, Cursor{pointer.buffer, pointer.offset, pointer.stride});
      }
    }
  }
  return cursors;
}

// A cursor's first iteration's address.
std::uint32_t Linker::pointer_address(const Cursor& cursor, LogicalTile tile) const {
  return checked_add(allocation(cursor.buffer, tile).address, cursor.offset, "pointer address");
}

// A copy between the staging buffer and the data allocation live at step
// `step` that holds the other end: the copy helper's call, footprints
// asserted like any kernel's.
void Linker::emit_staging_copy(MainCode& main, PhysicalTile tile, std::size_t step,
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

// The tile's whole main program, for the code addresses in code_[tile].
MainCode Linker::emit_main(PhysicalTile tile, std::uint32_t staging_id) const {
  MainCode main;
  const TileCode& code = code_.at(tile);
  const auto logical = logical_.find(tile);
  const schema::Allocation staging = h2d_staging(staging_id);
  std::map<std::size_t, std::uint32_t> loop_top;  // by loop-begin step
  // Linked device entries push their argument frame on the supervisor
  // stack (kernels/device/device_abi.hpp), and nothing else sets $m11 before
  // main (ipu21-target.md: "initialised to 0x580E0 + 6·0x100"): a hardware
  // package sets it first. The host-model stubs never touch it, so an
  // emulated package's code is unchanged.
  if (options_.device != nullptr) {
    load_constant(main.code, Reg::m11, target::kSupervisorStackInitial);
  }
  // The startup rendezvous.
  emit_step_sample(main, tile, schema::StepKind::kHost, schema::kNoProvenance);
  main.code.push_back(isa::Sync{isa::kHostSyncZone});
  std::vector<std::uint64_t> outer_runs;  // main.runs outside each open loop, innermost last
  // A loop's index in the tile's debug loops, which emit_tiles lists in the
  // order of code.loop_counters.
  const auto loop_index = [&](std::size_t begin) {
    return checked_cast<std::uint32_t>(
        std::distance(code.loop_counters.begin(), code.loop_counters.find(begin)), "loop index");
  };
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
          // A tile with no part in the batch only waits it out (`sans 1; sync 1`).
          emit_step_sample(
              main, tile,
              batch.active() ? schema::StepKind::kHost : schema::StepKind::kSynchronization,
              step.provenance, /*once=*/true);
          main.code.push_back(isa::Call{Reg::m10, code.host_code.at(k)});
          for (const StagingCopy& copy : batch.copies_after()) {
            emit_staging_copy(main, tile, i, copy, staging);
          }
        }
        break;
      }
      case StepKind::kExchange: {
        const auto row = code.rows.find(i);
        // The phase's entry sync, row and closing sync are one step: a
        // record between the sync and the row would move the row.
        emit_step_sample(main, tile,
                         row != code.rows.end() ? schema::StepKind::kExchange
                                                : schema::StepKind::kSynchronization,
                         step.provenance);
        main.code.push_back(isa::Sync{isa::kInternalSyncZone});
        if (row != code.rows.end()) main.code.push_back(isa::Call{Reg::m10, row->second});
        main.code.push_back(isa::Sync{isa::kInternalSyncZone});
        break;
      }
      case StepKind::kLoopBegin: {
        // The iteration count lives in memory: kernels, rows and helpers
        // may use any register but the stack pointer.
        load_constant(main.code, kLoopCount, step.count);
        load_constant(main.code, kLoopCounter, code.loop_counters.at(i));
        main.code.push_back(isa::St32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
        emit_sample(main, tile, schema::sample_site(schema::SiteKind::kLoop, loop_index(i)),
                    step.provenance, code.loop_counters.at(i));
        outer_runs.push_back(main.runs);
        main.runs = checked_mul<std::uint64_t>(main.runs, step.count, "profile sample records");
        if (const auto cursors = code.cursors.find(i); cursors != code.cursors.end()) {
          for (const auto& [cursor, at] : cursors->second) {
            load_constant(main.code, kLoopCount, pointer_address(cursor, logical->second));
            load_constant(main.code, kLoopCounter, at);
            main.code.push_back(isa::St32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
          }
        }
        loop_top[i] = code.main + main_bytes(main.code);
        break;
      }
      case StepKind::kLoopEnd: {
        // Every cursor on to the next iteration's entry: add takes a
        // 16-bit signed immediate, so a long stride is a few adds.
        if (const auto cursors = code.cursors.find(step.partner); cursors != code.cursors.end()) {
          for (const auto& [cursor, at] : cursors->second) {
            load_constant(main.code, kLoopCounter, at);
            main.code.push_back(isa::Ld32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
            for (std::uint32_t rest = cursor.stride; rest > 0;) {
              const std::uint32_t piece = std::min<std::uint32_t>(rest, kMaxAddImmediate);
              main.code.push_back(
                  isa::Add{kLoopCount, kLoopCount, static_cast<std::int32_t>(piece)});
              rest -= piece;
            }
            main.code.push_back(isa::St32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
          }
        }
        load_constant(main.code, kLoopCounter, code.loop_counters.at(step.partner));
        main.code.push_back(isa::Ld32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
        main.code.push_back(isa::Add{kLoopCount, kLoopCount, -1});
        main.code.push_back(isa::St32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
        if (profiling()) {
          const std::uint32_t counter = code.loop_counters.at(step.partner);
          emit_sample(main, tile,
                      schema::sample_site(schema::SiteKind::kLoop, loop_index(step.partner)),
                      program_.steps[step.partner].provenance, counter);
          // The helper may use any register: the count again, for the branch.
          load_constant(main.code, kLoopCounter, counter);
          main.code.push_back(isa::Ld32{kLoopCount, kLoopCounter, isa::kZeroReg, 0});
        }
        if (!outer_runs.empty()) {  // a well-formed program's ends follow their begins
          main.runs = outer_runs.back();
          outer_runs.pop_back();
        }
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
          std::map<unsigned, MovingPointer> moving;
          for (const auto& pointer : run.pointers) {
            const schema::Allocation& held = allocation(pointer.buffer, logical->second);
            registers[pointer.reg] = held.address + pointer.offset;
            operands.emplace_back(pointer.reg, &held);
            if (pointer.stride != 0) {
              const Cursor cursor{pointer.buffer, pointer.offset, pointer.stride};
              const std::uint64_t last =
                  std::uint64_t{registers[pointer.reg]} +
                  std::uint64_t{program_.steps[pointer.loop].count - 1} * pointer.stride;
              moving[pointer.reg] =
                  MovingPointer{code.cursors.at(pointer.loop).at(cursor),
                                checked_cast<std::uint32_t>(last, "last iteration's pointer")};
            }
          }
          for (const auto& [reg, value] : run.scalars) registers[reg] = value;
          for (const auto& scalar : run.loaded) {
            const schema::Allocation& held = allocation(scalar.buffer, logical->second);
            if (scalar.offset % 4 != 0 || std::uint64_t{scalar.offset} + 4 > held.size) {
              throw LinkError(fmt::format(
                  "internal: {} on {} loads $m{} from byte {} of '{}' ({} bytes): not a word "
                  "inside it",
                  run.kernel, tile, scalar.reg, scalar.offset, held.name, held.size));
            }
            if (scalar.add < -static_cast<std::int32_t>(kMaxAddImmediate) ||
                scalar.add > static_cast<std::int32_t>(kMaxAddImmediate)) {
              throw LinkError(fmt::format("internal: {} on {} adds {} to $m{}: not an add immediate",
                                          run.kernel, tile, scalar.add, scalar.reg));
            }
            moving[scalar.reg] = MovingPointer{held.address + scalar.offset, 0, scalar.add};
          }
          emit_call(main, tile, run.kernel, operands, registers, code.stubs.at(run.kernel),
                    run.provenance, moving, run.scalars);
        }
        break;
      }
    }
  }
  emit_sample(main, tile, schema::sample_site(schema::SiteKind::kEnd), schema::kNoProvenance);
  append(main.code, halt());
  return main;
}

std::uint32_t Linker::staging_id(PhysicalTile tile) const {
  const auto found = allocations_.find(tile);
  return checked_cast<std::uint32_t>((found == allocations_.end() ? 0 : found->second.size()) + 1,
                                     "allocation id");
}

}  // namespace tessera::compiler::emit::linking
