#pragma once
// IPU21 / C600 topology: tile ids, the logical → physical map and the route
// model (reference §1).
//
// Two id spaces exist and must never be mixed. Physical ids (`p = row·64 +
// col`) are what the hardware sees: exchange timing, XREQ owners, host muxes,
// loader frames and SDK ELF names all use them. Logical ids are Poplar's
// numbering, and the program's view of the tiles. Both are strong types, so
// passing one where the other is expected does not compile.
//
// Formatting: fmt prints a PhysicalTile as `p260` and a LogicalTile as `L100`,
// so an error message always says which space a number belongs to;
// parse_tile reads those forms back.

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::target {

inline constexpr int kRows = 23;
inline constexpr int kColumns = 64;
inline constexpr int kTileCount = kRows * kColumns;  // 1472
static_assert(kTileCount == 1472);

// A physical tile id. Any 16-bit value can be held (host encoders accept ids
// up to 0xFFF); whether it names a tile of the chip is checked where it is
// used (Topology, the route model).
struct PhysicalTile {
  std::uint16_t value = 0;

  constexpr PhysicalTile() = default;
  constexpr explicit PhysicalTile(std::uint16_t id) : value(id) {}
  friend constexpr auto operator<=>(const PhysicalTile&, const PhysicalTile&) = default;
};

// A logical tile id, the program's numbering. Meaningful only with a Topology.
struct LogicalTile {
  std::uint16_t value = 0;

  constexpr LogicalTile() = default;
  constexpr explicit LogicalTile(std::uint16_t id) : value(id) {}
  friend constexpr auto operator<=>(const LogicalTile&, const LogicalTile&) = default;
};

// For GoogleTest and stream logging; same text as the fmt formatters.
std::ostream& operator<<(std::ostream& out, PhysicalTile tile);
std::ostream& operator<<(std::ostream& out, LogicalTile tile);

// A tile id that is not on the chip, or a topology that is not an injective
// logical → physical map.
class TopologyError : public Error {
 public:
  using Error::Error;
};

constexpr bool on_chip(PhysicalTile tile) noexcept { return tile.value < kTileCount; }

// Geometry (§1.1). Defined for any id; callers that need a chip tile check
// on_chip() first.
constexpr int row(PhysicalTile tile) noexcept { return tile.value >> 6; }
constexpr int column(PhysicalTile tile) noexcept { return tile.value & 63; }

// Tiles p and p^2 share the 64-bit paired exchange resources; the primary is
// the member with bit 1 clear.
constexpr PhysicalTile pair_partner(PhysicalTile tile) noexcept {
  return PhysicalTile(static_cast<std::uint16_t>(tile.value ^ 2u));
}
constexpr bool is_pair_primary(PhysicalTile tile) noexcept { return (tile.value & 2u) == 0; }

// One of the 16 column groups of 4 columns (g(x) in §1.3).
constexpr int column_group(PhysicalTile tile) noexcept { return (tile.value >> 2) & 15; }
// Groups above 7 mirror onto 7..0, as if measured from a central spine
// between the two column halves [INF].
constexpr int mirrored_column_group(int group) noexcept { return group > 7 ? group ^ 15 : group; }

namespace detail {
[[noreturn]] void throw_off_chip(PhysicalTile tile, const char* role);
[[noreturn]] void throw_logical_off_chip(LogicalTile tile);

// disp of §1.3, read as the signed distance between the source's column mux
// and the destination's column group [INF]. Its sign picks the fabric direction.
constexpr int mux_displacement(PhysicalTile source, PhysicalTile destination) noexcept {
  const int s = source.value;
  const int d = destination.value;
  const int source_group = column_group(source);
  const int source_mux = mirrored_column_group(source_group) + ((source_group >> 3) ^ (s & 1));
  const int d_low = d & 3;
  const int d_half = column_group(destination) >> 3;
  const int k = d_low > 1 ? (d_half == (d & 1) ? 2 : 4) : (d_half == d_low ? 1 : 5);
  return 6 * (mirrored_column_group(column_group(destination)) - source_mux) + k;
}

constexpr void require_route_ends(PhysicalTile source, PhysicalTile destination) {
  if (!on_chip(source)) throw_off_chip(source, "route source");
  if (!on_chip(destination)) throw_off_chip(destination, "route destination");
}
}  // namespace detail

// The C600 logical → physical formula (§1.2): logical pairs fill 32 blocks of
// 23 rows, serpentine down one column and up the next; the two lanes of a
// logical pair land on a physical pair (col, col+2). Throws TopologyError for
// L ≥ 1472.
constexpr PhysicalTile c600_physical(LogicalTile logical) {
  if (logical.value >= kTileCount) detail::throw_logical_off_chip(logical);
  const int pair = logical.value / 2;
  const int lane = logical.value & 1;
  const int block = pair / kRows;
  const int r = (block & 1) != 0 ? kRows - 1 - pair % kRows : pair % kRows;
  const int col = (block / 2) * 4 + (block & 1);
  return PhysicalTile(static_cast<std::uint16_t>(r * kColumns + col + 2 * lane));
}

// An injective map logical → physical with an O(1) inverse. c600() is the
// whole chip; from_physical() builds smaller ones for tests.
class Topology {
 public:
  static Topology c600();
  // physical[L] is the physical tile of logical tile L. Throws TopologyError
  // when the list is empty, names an off-chip id or names a physical tile twice.
  static Topology from_physical(std::vector<PhysicalTile> physical);

  std::size_t size() const noexcept { return physical_.size(); }
  // Throws TopologyError when `tile` is not a logical tile of this topology.
  PhysicalTile physical(LogicalTile tile) const;
  // The logical tile placed on `tile`, if any.
  std::optional<LogicalTile> logical(PhysicalTile tile) const noexcept;
  bool contains(PhysicalTile tile) const noexcept { return logical(tile).has_value(); }
  // Physical tiles in logical order: element L is the tile of logical L.
  std::span<const PhysicalTile> physical_tiles() const noexcept { return physical_; }

 private:
  static constexpr std::uint16_t kUnmapped = 0xFFFF;

  explicit Topology(std::vector<PhysicalTile> physical);

  std::vector<PhysicalTile> physical_;
  std::array<std::uint16_t, kTileCount> logical_;  // by physical id; kUnmapped if unused
};

// A tile named as a person types it: `p260` (or a bare `260`) is physical,
// `L100` is logical and is placed through `topology`. The inverse of the fmt
// formatters. Throws TopologyError for malformed text, an off-chip physical
// id, or a logical id outside the topology.
PhysicalTile parse_tile(std::string_view text, const Topology& topology);

// ---------------------------------------------------------------------------
// Route model (§1.3). An empirical fit [INF]: it reproduces the C++ oracle,
// the SDK rows and every hardware-verified exchange of the reference stack, but
// it is not documented hardware behaviour (reference §7). Every function
// throws TopologyError for an off-chip id.

// The two fabric directions; the value is the sctl bit that selects it.
enum class FabricDirection : std::uint8_t { kOne = 1, kTwo = 2 };

constexpr FabricDirection direction(PhysicalTile source, PhysicalTile destination) {
  detail::require_route_ends(source, destination);
  return detail::mux_displacement(source, destination) < 1 ? FabricDirection::kTwo
                                                           : FabricDirection::kOne;
}

// "Time to mux": events between a word leaving `source` and the instant
// `destination` must have its incoming mux select `source`. May be negative.
constexpr int ttm(PhysicalTile source, PhysicalTile destination) {
  detail::require_route_ends(source, destination);
  const int s = source.value;
  const int d = destination.value;
  const auto edge = [](PhysicalTile tile) {
    const int group = column_group(tile);
    return group > 7 ? (4 * group) ^ 60 : 4 * group;
  };
  // Names follow the reference (local, sl, cross, turn); their physical
  // meaning is not known beyond the fit.
  const int local = ((s >> 2) & 8) | ((s >> 3) & 3);
  const int sl = (s >> 2) & 7;
  const int cross = local - column_group(destination) + ((sl >> 1) ^ 3);
  const int turn = ((s ^ d) & 0x20) == 0 ? sl + 1 : 16 - sl;
  const int rows = 2 * (row(source) - row(destination));
  const int displacement = detail::mux_displacement(source, destination);
  const int distance = displacement < 0 ? -displacement : displacement;
  return cross + edge(source) + turn - edge(destination) + rows + distance - 34;
}

// ttm for a paired (64-bit) receive: the later of the destination and its
// pair partner, since both members must be ready.
constexpr int pttm(PhysicalTile source, PhysicalTile destination) {
  const int own = ttm(source, destination);
  const int partner = ttm(source, pair_partner(destination));
  return own > partner ? own : partner;
}

}  // namespace tessera::target

template <>
struct fmt::formatter<tessera::target::PhysicalTile> {
  constexpr auto parse(fmt::format_parse_context& context) {
    if (context.begin() != context.end() && *context.begin() != '}') {
      throw fmt::format_error("PhysicalTile takes no format specification");
    }
    return context.begin();
  }
  template <typename FormatContext>
  auto format(tessera::target::PhysicalTile tile, FormatContext& context) const {
    return fmt::format_to(context.out(), "p{}", tile.value);
  }
};

template <>
struct fmt::formatter<tessera::target::LogicalTile> {
  constexpr auto parse(fmt::format_parse_context& context) {
    if (context.begin() != context.end() && *context.begin() != '}') {
      throw fmt::format_error("LogicalTile takes no format specification");
    }
    return context.begin();
  }
  template <typename FormatContext>
  auto format(tessera::target::LogicalTile tile, FormatContext& context) const {
    return fmt::format_to(context.out(), "L{}", tile.value);
  }
};
