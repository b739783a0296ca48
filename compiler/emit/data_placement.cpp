// Step 1 of linking: buffer lifetimes (a buffer used inside a loop lives
// through the whole loop), the tiles the package covers, and each tile's
// data placed in interleaved memory by the one allocator.
#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit::linking {

const lower::HostBinding& Linker::binding(const std::string& name) const {
  for (const auto* list : {&program_.inputs, &program_.weights, &program_.outputs}) {
    for (const auto& b : *list) {
      if (b.name == name) return b;
    }
  }
  throw LinkError(fmt::format("internal: no binding '{}'", name));
}

template <class F>
void Linker::for_each_use(const Step& step, F&& use) const {
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
          for (const auto& scalar : run.loaded) use(scalar.buffer);
        }
      }
      break;
    case StepKind::kLoopBegin:
    case StepKind::kLoopEnd:
      break;
  }
}

void Linker::find_lifetimes() {
  live_from_.assign(program_.buffers.size(), std::numeric_limits<std::uint32_t>::max());
  live_until_.assign(program_.buffers.size(), 0);
  for (std::size_t i = 0; i < program_.steps.size(); ++i) {
    const auto step = checked_cast<std::uint32_t>(i, "step");
    for_each_use(program_.steps[i], [&](BufferId buffer) {
      live_from_[buffer] = std::min(live_from_[buffer], step);
      live_until_[buffer] = std::max(live_until_[buffer], step + 1);
    });
  }
  // A buffer used inside a loop and outside it lives through the whole
  // loop: every iteration runs the same steps again, reading what came in
  // before the loop or what leaves it (carried state, weights, a value read
  // after the loop). A buffer used only inside the body is an iteration's
  // own: every lowering writes such a buffer before it reads it in the same
  // iteration (op results, scratch; a value needed by the next iteration is
  // carried state, set before the loop), so it lives from its first use to
  // its last within the body, and the body's buffers share memory as a
  // straight-line program's do. Inner loops first (they begin later).
  for (std::size_t i = program_.steps.size(); i-- > 0;) {
    if (program_.steps[i].kind != StepKind::kLoopBegin) continue;
    const auto begin = checked_cast<std::uint32_t>(i, "step");
    const auto end = checked_cast<std::uint32_t>(program_.steps[i].partner + 1, "step");
    for (std::size_t b = 0; b < program_.buffers.size(); ++b) {
      const bool inside = live_until_[b] > begin && live_from_[b] < end;
      const bool outside = live_from_[b] < begin || live_until_[b] > end;
      if (inside && outside) {
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

void Linker::find_tiles() {
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
  // A hardware package is loaded in whole batches from tile 0; the tiles
  // with no work run the sync-only program (startup, idle host batches,
  // every exchange phase's syncs, halt), which is what emit_main gives a
  // tile with no buffers, runs or host data.
  if (options_.device != nullptr) pad_to_loader_batches();
  for (const auto& buffer : program_.buffers) {
    for (const auto& [tile, bytes] : buffer.bytes) logical_[physical(tile)] = tile;
  }
}

// A tile's data in region 1; when it does not fit there, its bound weights
// are offered region 0 above the code too, from the top down one 16 KiB
// memory element at a time, the least that makes the tile's data fit (code_end_ keeps the split
// for place_code). Weights are only read by copies and moves — never by a
// kernel that needs interleaved memory (the AMP's output, its 128-bit weight
// loads) — so either region serves them.
std::vector<schema::Allocation> Linker::place_tile_data(PhysicalTile tile,
                                                        std::vector<AllocationRequest> requests,
                                                        const std::vector<bool>& weight) {
  try {
    return place_tile(tile, requests);
  } catch (const PlacementError& error) {
    if (std::find(weight.begin(), weight.end(), true) == weight.end()) throw;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (weight[i]) requests[i].placement = MemoryPlacement::kStandardFirst;
    }
    constexpr std::uint32_t kStep = target::kStandardElementSize;  // splits on element boundaries
    const target::AddressRange region0 = target::kLinkerRegion2;
    std::optional<PlacementError> last;
    for (std::uint32_t budget = kStep; budget <= region0.size(); budget += kStep) {
      const RegionSplit split{region0.end - budget};
      try {
        auto placed = place_tile(tile, requests, split);
        code_end_[tile] = *split.code_end;
        return placed;
      } catch (const PlacementError& e) {
        last = e;
      }
    }
    throw PlacementError(fmt::format(
        "{}\n  (its bound weights were offered region 0 too, all of [{:#x}, {:#x}) above the code: "
        "still not enough)",
        last->what(), region0.begin, region0.end));
  }
}

void Linker::place_data() {
  std::set<BufferId> weights;  // the buffers of host-bound parameters
  for (const auto& binding : program_.weights) {
    for (const auto& slice : binding.slices) weights.insert(slice.buffer);
  }
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
      request.whole_elements = buffer.whole_elements;
      request.live_from = live_from_[b];
      request.live_until = live_until_[b];
      request.provenance = buffer.provenance;
      requests[tile].emplace_back(b, request);
    }
  }
  for (const auto& [tile, list] : requests) {
    std::vector<AllocationRequest> plain;
    std::vector<bool> weight;
    for (const auto& [b, request] : list) {
      plain.push_back(request);
      weight.push_back(weights.contains(b));
    }
    const auto placed = place_tile_data(physical(tile), std::move(plain), weight);
    auto& allocations = allocations_[physical(tile)];
    std::uint32_t high = 0;
    for (std::size_t i = 0; i < placed.size(); ++i) {
      data_[data_key(list[i].first, physical(tile))] = placed[i];
      allocations.push_back(placed[i]);
      if (placed[i].address >= target::kInterleavedRegion.begin) {
        high = std::max(high, placed[i].address + placed[i].size - target::kInterleavedRegion.begin);
      }
    }
    report_.max_data_bytes = std::max(report_.max_data_bytes, high);
  }
}

const schema::Allocation& Linker::allocation(BufferId buffer, LogicalTile tile) const {
  const auto found = data_.find(data_key(buffer, physical(tile)));
  if (found == data_.end()) {
    throw LinkError(fmt::format("internal: buffer '{}' has no allocation on {}",
                                program_.buffers[buffer].name, physical(tile)));
  }
  return found->second;
}

std::uint32_t Linker::address(const lower::Location& location) const {
  return allocation(location.buffer, location.tile).address + location.offset;
}

}  // namespace tessera::compiler::emit::linking
