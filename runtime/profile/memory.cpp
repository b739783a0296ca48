#include "runtime/profile/memory.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/checked.hpp"
#include "target/memory_map.hpp"

namespace tessera::profile {
namespace {

using Range = std::pair<std::uint64_t, std::uint64_t>;

std::uint64_t union_bytes(std::vector<Range> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t bytes = 0, covered_to = 0;
  for (const auto& [begin, end] : ranges) {
    const std::uint64_t from = std::max(begin, covered_to);
    if (end > from) {
      bytes += end - from;
      covered_to = end;
    }
  }
  return bytes;
}

}  // namespace

std::string_view memory_category_name(MemoryCategory category) noexcept {
  switch (category) {
    case MemoryCategory::kCode:
      return "code";
    case MemoryCategory::kRows:
      return "rows";
    case MemoryCategory::kTensors:
      return "tensors";
    case MemoryCategory::kStaging:
      return "staging";
  }
  return "?";
}

MemoryCategory memory_category(schema::AllocationKind kind) noexcept {
  switch (kind) {
    case schema::AllocationKind::kCode:
    case schema::AllocationKind::kRuntime:
      return MemoryCategory::kCode;
    case schema::AllocationKind::kExchangeRow:
      return MemoryCategory::kRows;
    case schema::AllocationKind::kTensor:
      return MemoryCategory::kTensors;
    case schema::AllocationKind::kStaging:
    case schema::AllocationKind::kScratch:
      return MemoryCategory::kStaging;
  }
  return MemoryCategory::kStaging;
}

std::vector<TileMemory> memory_use(const schema::Debug& debug) {
  std::vector<TileMemory> tiles;
  for (std::size_t t = 0; t < debug.tiles.size(); ++t) {
    const auto& tile = debug.tiles[t];
    std::array<std::vector<Range>, kMemoryCategories> by_category;
    std::vector<Range> all;
    for (std::size_t a = 0; a < tile.allocations.size(); ++a) {
      const auto& allocation = tile.allocations[a];
      const std::string what = fmt::format("debug.tiles[{}].allocations[{}]", t, a);
      if (allocation.address < target::kSramBase) {
        throw InputError(what, fmt::format("address {:#x} is below the SRAM at {:#x}",
                                           allocation.address, target::kSramBase));
      }
      const std::uint64_t end =
          checked_range(allocation.address, allocation.size, target::kSramEnd, what);
      const Range range{allocation.address, end};
      by_category[static_cast<std::size_t>(memory_category(allocation.kind))].push_back(range);
      all.push_back(range);
    }
    TileMemory memory{tile.tile, {}, 0, 0};
    for (std::size_t c = 0; c < kMemoryCategories; ++c) {
      memory.category_bytes[c] = union_bytes(std::move(by_category[c]));
    }
    memory.used_bytes = union_bytes(std::move(all));
    memory.free_bytes = target::kSramSize - memory.used_bytes;
    tiles.push_back(memory);
  }
  return tiles;
}

std::vector<TileMemory> fullest_tiles(std::vector<TileMemory> tiles, std::size_t count) {
  std::stable_sort(tiles.begin(), tiles.end(), [](const TileMemory& a, const TileMemory& b) {
    return a.used_bytes != b.used_bytes ? a.used_bytes > b.used_bytes : a.tile < b.tile;
  });
  if (tiles.size() > count) tiles.resize(count);
  return tiles;
}

}  // namespace tessera::profile
