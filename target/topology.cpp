#include "target/topology.hpp"

#include <charconv>
#include <ostream>
#include <utility>

namespace tessera::target {

std::ostream& operator<<(std::ostream& out, PhysicalTile tile) {
  return out << fmt::format("{}", tile);
}

std::ostream& operator<<(std::ostream& out, LogicalTile tile) {
  return out << fmt::format("{}", tile);
}

namespace detail {

void throw_off_chip(PhysicalTile tile, const char* role) {
  throw TopologyError(fmt::format("{}: {} is not a C600 tile (physical ids are 0..{})", role, tile,
                                  kTileCount - 1));
}

void throw_logical_off_chip(LogicalTile tile) {
  throw TopologyError(
      fmt::format("{} is not a C600 logical tile (logical ids are 0..{})", tile, kTileCount - 1));
}

}  // namespace detail

Topology Topology::c600() {
  std::vector<PhysicalTile> physical;
  physical.reserve(kTileCount);
  for (int logical = 0; logical < kTileCount; ++logical) {
    physical.push_back(c600_physical(LogicalTile(static_cast<std::uint16_t>(logical))));
  }
  return Topology(std::move(physical));
}

Topology Topology::from_physical(std::vector<PhysicalTile> physical) {
  return Topology(std::move(physical));
}

// Validates while building the inverse, so a topology that exists is injective
// and on-chip.
Topology::Topology(std::vector<PhysicalTile> physical) : physical_(std::move(physical)) {
  if (physical_.empty()) {
    throw TopologyError("a topology needs at least one tile");
  }
  // No duplicates and every id below 1472 bound the size, so no logical index
  // below can exceed 1471.
  logical_.fill(kUnmapped);
  for (std::size_t index = 0; index < physical_.size(); ++index) {
    const PhysicalTile tile = physical_[index];
    if (!on_chip(tile)) {
      throw TopologyError(
          fmt::format("physical[{}]: {} is not a C600 tile (physical ids are 0..{})", index, tile,
                      kTileCount - 1));
    }
    std::uint16_t& slot = logical_[tile.value];
    if (slot != kUnmapped) {
      throw TopologyError(fmt::format("physical[{}]: {} is already the tile of {}", index, tile,
                                      LogicalTile(slot)));
    }
    slot = static_cast<std::uint16_t>(index);
  }
}

PhysicalTile Topology::physical(LogicalTile tile) const {
  if (tile.value >= physical_.size()) {
    throw TopologyError(fmt::format("{} is outside this topology of {} tiles", tile, size()));
  }
  return physical_[tile.value];
}

std::optional<LogicalTile> Topology::logical(PhysicalTile tile) const noexcept {
  if (!on_chip(tile) || logical_[tile.value] == kUnmapped) {
    return std::nullopt;
  }
  return LogicalTile(logical_[tile.value]);
}

PhysicalTile parse_tile(std::string_view text, const Topology& topology) {
  const bool logical = text.starts_with('L');
  const std::string_view digits = text.substr(logical || text.starts_with('p') ? 1 : 0);
  unsigned value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || error != std::errc{} || end != digits.data() + digits.size() ||
      value > 0xFFFF) {
    throw TopologyError(
        fmt::format("'{}' is not a tile: write p260 or 260 (physical) or L100 (logical)", text));
  }
  const auto id = static_cast<std::uint16_t>(value);
  if (logical) return topology.physical(LogicalTile(id));
  if (!on_chip(PhysicalTile(id))) detail::throw_off_chip(PhysicalTile(id), "tile");
  return PhysicalTile(id);
}

}  // namespace tessera::target
