#include "compiler/lower/context.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/placement.hpp"
#include "schema/model.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {

bool next_index(Index& index, std::span<const std::uint32_t> shape) {
  for (std::size_t a = shape.size(); a-- > 0;) {
    if (++index[a] < shape[a]) return true;
    index[a] = 0;
  }
  return false;
}

Index broadcast_source(std::span<const std::uint32_t> in_shape, const Index& index) {
  const std::size_t offset = index.size() - in_shape.size();
  Index from(in_shape.size(), 0);
  for (std::size_t a = 0; a < in_shape.size(); ++a) from[a] = in_shape[a] == 1 ? 0 : index[a + offset];
  return from;
}

std::uint32_t element_bytes(const TensorType& type) { return schema::dtype_size(type.dtype()); }

Location Storage::location(std::span<const std::uint64_t> index) const {
  const ElementPlace place = locator->locate(index);
  return {resolved.shards[place.shard].tile, buffer,
          checked_cast<std::uint32_t>(place.offset, "element offset")};
}

Storage::Run Storage::run(std::span<const std::uint64_t> index) const {
  const ElementLocator::Run found = locator->locate_run(index);
  return {{resolved.shards[found.place.shard].tile, buffer,
           checked_cast<std::uint32_t>(found.place.offset, "element offset")},
          found.elements};
}

void move_same_index(MoveLowering& moves, const Storage& to, const Storage& from,
                     std::span<const std::uint32_t> shape, std::uint32_t element_size) {
  Index index(shape.size(), 0);
  if (shape.empty()) {
    moves.move(to.location(index), from.location(index));
    return;
  }
  const std::uint64_t columns = shape.back();
  do {
    for (std::uint64_t c = 0; c < columns;) {
      index.back() = c;
      const Storage::Run out = to.run(index);
      const Storage::Run in = from.run(index);
      const std::uint64_t elements = std::min({out.elements, in.elements, columns - c});
      moves.move_run(out.location, in.location,
                     checked_cast<std::uint32_t>(elements * element_size, "move run bytes"));
      c += elements;
    }
    index.back() = 0;
  } while (next_index(index, shape.first(shape.size() - 1)));
}

std::map<LogicalTile, std::vector<KernelRun>> binary_elementwise_runs(
    const std::string& kernel, const Storage& out, BufferId a, BufferId b,
    std::uint32_t element_size, std::uint32_t provenance) {
  std::map<LogicalTile, std::vector<KernelRun>> compute;
  for (const Shard& shard : out.resolved.shards) {
    const auto elements = checked_cast<std::uint32_t>(shard.bytes / element_size, "shard elements");
    if (elements == 0) continue;
    const auto offset = checked_cast<std::uint32_t>(shard.offset, "shard offset");
    compute[shard.tile].push_back(
        KernelRun{kernel, {{2, out.buffer, offset}, {3, a, offset}, {4, b, offset}}, {{5, elements}},
                  provenance});
  }
  return compute;
}

LoweringContext::LoweringContext(const Graph& graph, LayoutPolicy layouts, Program& program,
                                 std::optional<bool> gemm_a_homes,
                                 plan::AttentionPlanOptions attention)
    : graph_(graph),
      layouts_(std::move(layouts)),
      gemm_a_homes_(gemm_a_homes),
      attention_(std::move(attention)),
      program_(program) {}

Storage& LoweringContext::allocate(ValueId value, const TensorType& type, std::string name,
                                   std::uint32_t provenance, bool binding) {
  const TensorPlacement placement = layouts_.place(value, type, binding);
  return allocate_at(value, type, placement, std::move(name), provenance);
}

Storage& LoweringContext::allocate_at(ValueId value, const TensorType& type,
                                      const TensorPlacement& placement, std::string name,
                                      std::uint32_t provenance) {
  return keep(make(type, placement, std::move(name), format_value(value), provenance), value);
}

const Storage& LoweringContext::scratch_at(const TensorType& type, const TensorPlacement& placement,
                                           std::string name, std::string tensor,
                                           std::uint32_t provenance) {
  std::unique_ptr<Storage> held = make(type, placement, std::move(name), std::move(tensor), provenance);
  program_.buffers[held->buffer].kind = schema::AllocationKind::kScratch;
  held->locator = std::make_unique<ElementLocator>(held->resolved);
  owned_.push_back(std::move(held));
  return *owned_.back();
}

std::unique_ptr<Storage> LoweringContext::make(const TensorType& type, const TensorPlacement& placement,
                                               std::string name, std::string tensor,
                                               std::uint32_t provenance) {
  auto held = std::make_unique<Storage>();
  held->resolved = resolve(placement.layout, type.shape, placement.tiles);
  Buffer buffer;
  buffer.name = std::move(name);
  buffer.tensor = std::move(tensor);
  buffer.alignment = held->resolved.layout.alignment;
  buffer.provenance = provenance;
  require_placeable(buffer, held->resolved);
  for (const Shard& shard : held->resolved.shards) {
    buffer.bytes[shard.tile] = checked_cast<std::uint32_t>(shard.allocation_bytes, "shard bytes");
  }
  held->buffer = program_.add_buffer(std::move(buffer));
  return held;
}

const Storage& LoweringContext::scratch_like(const Storage& like, std::string name,
                                             std::string tensor, std::uint32_t provenance) {
  auto held = std::make_unique<Storage>();
  held->resolved = like.resolved;
  Buffer buffer = program_.buffers[like.buffer];
  buffer.name = std::move(name);
  buffer.tensor = std::move(tensor);
  buffer.provenance = provenance;
  held->buffer = program_.add_buffer(std::move(buffer));
  held->locator = std::make_unique<ElementLocator>(held->resolved);
  owned_.push_back(std::move(held));
  return *owned_.back();
}


Storage& LoweringContext::keep(std::unique_ptr<Storage> held, ValueId value) {
  held->locator = std::make_unique<ElementLocator>(held->resolved);
  Storage& result = *held;
  storage_[value] = held.get();
  owned_.push_back(std::move(held));
  return result;
}

BufferId LoweringContext::shared_zeros(const std::string& key, std::uint32_t bytes,
                                       std::uint32_t tiles, bool whole_elements,
                                       std::uint32_t provenance) {
  auto [it, inserted] = shared_zeros_.try_emplace(key, 0);
  if (inserted) {
    Buffer buffer;
    buffer.name = key;
    buffer.kind = schema::AllocationKind::kScratch;
    buffer.whole_elements = whole_elements;
    buffer.provenance = provenance;
    it->second = program_.add_buffer(std::move(buffer));
  }
  Buffer& buffer = program_.buffers[it->second];
  buffer.whole_elements = buffer.whole_elements || whole_elements;
  for (std::uint32_t t = 0; t < tiles; ++t) {
    const LogicalTile tile(static_cast<std::uint16_t>(t));
    std::uint32_t& size = buffer.bytes[tile];
    size = std::max(size, bytes);
    buffer.contents[tile].resize(size, 0);
  }
  return it->second;
}

void LoweringContext::copy_value(const Storage& from, const Storage& to, const TensorType& type,
                                 std::uint32_t provenance, const std::string& label) {
  MoveLowering moves(program_, label, provenance, element_bytes(type));
  move_same_index(moves, to, from, type.shape, element_bytes(type));
  finish_steps(moves, {}, provenance);
}

void LoweringContext::finish_steps(MoveLowering& moves,
                                   std::map<LogicalTile, std::vector<KernelRun>> compute,
                                   std::uint32_t provenance) {
  std::map<LogicalTile, std::vector<KernelRun>> runs;
  std::vector<Transfer> transfers = moves.finish(runs);
  for (auto& [tile, list] : compute) {
    auto& all = runs[tile];
    all.insert(all.end(), list.begin(), list.end());
  }
  if (!transfers.empty()) {
    program_.steps.push_back(Step{StepKind::kExchange, 0, std::move(transfers), {}, provenance});
  }
  if (!runs.empty()) program_.steps.push_back(Step{StepKind::kCompute, 0, {}, std::move(runs), provenance});
}

void LoweringContext::require_placeable(const Buffer& buffer, const ResolvedLayout& resolved) {
  const Shard* largest = nullptr;
  for (const Shard& shard : resolved.shards) {
    if (largest == nullptr || shard.allocation_bytes > largest->allocation_bytes) largest = &shard;
  }
  if (largest == nullptr || largest->allocation_bytes == 0) return;
  require_placeable(buffer, largest->tile, largest->allocation_bytes, resolved.layout.memory_class);
}

void LoweringContext::require_placeable(const Buffer& buffer, LogicalTile tile, std::uint64_t bytes,
                                        MemoryClass memory_class) {
  AllocationRequest request;
  request.name = buffer.name;
  request.tensor = buffer.tensor;
  request.kind = buffer.kind;
  request.size = bytes;
  request.alignment = buffer.alignment;
  request.placement = memory_class == MemoryClass::kInterleaved ? MemoryPlacement::kInterleaved
                                                                : MemoryPlacement::kStandard;
  request.provenance = buffer.provenance;
  require_fits_alone(target::c600_physical(tile), request);
}

std::vector<HostSlice> LoweringContext::slices(const Storage& held) const {
  std::vector<HostSlice> result;
  for (const Shard& shard : held.resolved.shards) {
    if (shard.replica != 0) continue;
    for (const ByteRun& run : host_runs(shard)) {
      result.push_back(HostSlice{shard.tile, held.buffer,
                                 checked_cast<std::uint32_t>(run.shard_offset, "slice offset"),
                                 run.host_offset, checked_cast<std::uint32_t>(run.bytes, "slice bytes")});
    }
  }
  return result;
}

}  // namespace tessera::compiler::lower
