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
//
// Each placement first keeps the buffers a tile sends from and receives into
// in one phase apart (AllocationRequest::apart_from) and, when that leaves
// the data no room, tries again without: keeping them apart shortens the
// phases but must not make a tile fail that would place, nor spill weights
// into region 0 that its code needs.
namespace {

std::vector<schema::Allocation> place_preferring_apart(PhysicalTile tile,
                                                       const std::vector<AllocationRequest>& requests,
                                                       RegionSplit split = {}) {
  try {
    return place_tile(tile, requests, split);
  } catch (const PlacementError&) {
    const bool any = std::any_of(requests.begin(), requests.end(),
                                 [](const AllocationRequest& r) { return !r.apart_from.empty(); });
    if (!any) throw;
    std::vector<AllocationRequest> together = requests;
    for (AllocationRequest& request : together) request.apart_from.clear();
    return place_tile(tile, together, split);
  }
}

}  // namespace

std::vector<schema::Allocation> Linker::place_tile_data(PhysicalTile tile,
                                                        std::vector<AllocationRequest> requests,
                                                        const std::vector<bool>& weight) {
  try {
    return place_preferring_apart(tile, requests);
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
        auto placed = place_preferring_apart(tile, requests, split);
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

// Per tile, the pairs of distinct buffers (lower id first) it sends from
// and receives into in one exchange phase, each pair once.
std::map<LogicalTile, std::vector<std::pair<BufferId, BufferId>>> Linker::buffers_kept_apart() const {
  struct Use {
    LogicalTile tile;
    BufferId buffer;
    bool receives;
    auto operator<=>(const Use&) const = default;
  };
  std::map<LogicalTile, std::vector<std::pair<BufferId, BufferId>>> apart;
  std::vector<Use> uses;
  for (const Step& step : program_.steps) {
    if (step.kind != StepKind::kExchange) continue;
    uses.clear();
    for (const auto& transfer : step.transfers) {
      uses.push_back({transfer.source.tile, transfer.source.buffer, false});
      for (const auto& destination : transfer.destinations) {
        uses.push_back({destination.tile, destination.buffer, true});
      }
    }
    std::sort(uses.begin(), uses.end());
    uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
    for (std::size_t first = 0; first < uses.size();) {
      std::size_t last = first;
      while (last < uses.size() && uses[last].tile == uses[first].tile) ++last;
      for (std::size_t s = first; s < last; ++s) {
        if (uses[s].receives) continue;
        for (std::size_t r = first; r < last; ++r) {
          if (!uses[r].receives || uses[r].buffer == uses[s].buffer) continue;
          apart[uses[first].tile].push_back(std::minmax(uses[s].buffer, uses[r].buffer));
        }
      }
      first = last;
    }
  }
  for (auto& [tile, pairs] : apart) {
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  }
  return apart;
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
  const auto apart = buffers_kept_apart();
  for (const auto& [tile, list] : requests) {
    std::vector<AllocationRequest> plain;
    std::vector<bool> weight;
    for (const auto& [b, request] : list) {
      plain.push_back(request);
      weight.push_back(weights.contains(b));
    }
    // `list` is in buffer order: a buffer's request is found by bisection.
    const auto request_of = [&list](BufferId b) -> std::optional<std::uint32_t> {
      const auto it = std::lower_bound(list.begin(), list.end(), b,
                                       [](const auto& entry, BufferId id) { return entry.first < id; });
      if (it == list.end() || it->first != b) return std::nullopt;
      return static_cast<std::uint32_t>(it - list.begin());
    };
    if (const auto pairs = apart.find(tile); pairs != apart.end()) {
      for (const auto& [a, b] : pairs->second) {
        const auto i = request_of(a), j = request_of(b);
        if (!i || !j) continue;  // a buffer without bytes here
        plain[*i].apart_from.push_back(*j);
        plain[*j].apart_from.push_back(*i);
      }
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
