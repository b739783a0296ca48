#pragma once
// How full each tile's SRAM is, from the package's debug section (its
// allocations), by category: code, exchange rows, tensors, staging, free.
// Allocations that share bytes at different live ranges count those bytes
// once: a category's size is the union of its allocations' address ranges,
// and free is what no allocation covers.

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "schema/model.hpp"

namespace tessera::profile {

enum class MemoryCategory : std::uint8_t { kCode, kRows, kTensors, kStaging };
inline constexpr std::size_t kMemoryCategories = 4;
std::string_view memory_category_name(MemoryCategory category) noexcept;
// Code and the runtime's helpers are code; scratch space is staging.
MemoryCategory memory_category(schema::AllocationKind kind) noexcept;

struct TileMemory {
  target::PhysicalTile tile;
  std::array<std::uint64_t, kMemoryCategories> category_bytes{};
  std::uint64_t used_bytes = 0;  // the union over every category
  std::uint64_t free_bytes = 0;  // SRAM size − used
};

// One entry per tile the debug section describes, in its order. Throws
// InputError for an allocation outside the SRAM (checked arithmetic).
std::vector<TileMemory> memory_use(const schema::Debug& debug);

// The `count` fullest tiles (most used bytes first; ties by tile).
std::vector<TileMemory> fullest_tiles(std::vector<TileMemory> tiles, std::size_t count);

}  // namespace tessera::profile
