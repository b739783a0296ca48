#include "target/topology.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace tessera::target {
namespace {

constexpr PhysicalTile P(std::uint16_t id) { return PhysicalTile(id); }
constexpr LogicalTile L(std::uint16_t id) { return LogicalTile(id); }

// The strong types must not convert into each other or from plain integers.
static_assert(!std::is_convertible_v<PhysicalTile, LogicalTile>);
static_assert(!std::is_convertible_v<LogicalTile, PhysicalTile>);
static_assert(!std::is_convertible_v<int, PhysicalTile>);
static_assert(!std::is_convertible_v<std::uint16_t, LogicalTile>);
static_assert(!std::is_constructible_v<PhysicalTile, LogicalTile>);

// The formula is usable at compile time.
static_assert(c600_physical(L(100)) == P(260));

struct MapVector {
  std::uint16_t logical;
  std::uint16_t physical;
};

// Reference §1.2.
constexpr MapVector kC600Vectors[] = {
    {46, 1409},  // [T]
    {274, 9},    // [T] finalize_point_receiver patches source 9
    {100, 260},  // [SDK] logical 100's host op is in t_260.elf
    {0, 0},      // computed from the formula, from here on
    {1, 2},     {2, 64}, {3, 66},   {44, 1408}, {45, 1410}, {47, 1411},
    {48, 1345}, {92, 4}, {736, 32}, {900, 613}, {1286, 53}, {1471, 63},
};

TEST(Topology, C600MatchesTheReferenceVectors) {
  const Topology c600 = Topology::c600();
  for (const MapVector& golden : kC600Vectors) {
    SCOPED_TRACE(fmt::format("{}", L(golden.logical)));
    EXPECT_EQ(c600_physical(L(golden.logical)), P(golden.physical));
    EXPECT_EQ(c600.physical(L(golden.logical)), P(golden.physical));
    EXPECT_EQ(c600.logical(P(golden.physical)), L(golden.logical));
  }
}

TEST(Topology, C600IsABijectionOfAllTiles) {
  const Topology c600 = Topology::c600();
  ASSERT_EQ(c600.size(), 1472u);
  std::vector<bool> seen(kTileCount, false);
  for (const PhysicalTile tile : c600.physical_tiles()) {
    ASSERT_TRUE(on_chip(tile)) << tile;
    ASSERT_FALSE(seen[tile.value]) << tile << " appears twice";
    seen[tile.value] = true;
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
}

TEST(Topology, C600InverseRoundTripsEveryTile) {
  const Topology c600 = Topology::c600();
  for (int id = 0; id < kTileCount; ++id) {
    const LogicalTile logical = L(static_cast<std::uint16_t>(id));
    const PhysicalTile physical = P(static_cast<std::uint16_t>(id));
    ASSERT_EQ(c600.logical(c600.physical(logical)), logical);
    ASSERT_TRUE(c600.contains(physical));
    ASSERT_EQ(c600.physical(*c600.logical(physical)), physical);
  }
}

TEST(Topology, C600LogicalPairsLandOnPhysicalPairs) {
  for (std::uint16_t pair = 0; pair < kTileCount / 2; ++pair) {
    const PhysicalTile even = c600_physical(L(static_cast<std::uint16_t>(2 * pair)));
    const PhysicalTile odd = c600_physical(L(static_cast<std::uint16_t>(2 * pair + 1)));
    ASSERT_TRUE(is_pair_primary(even)) << even;
    ASSERT_EQ(pair_partner(even), odd);
  }
}

TEST(Topology, GeometryOfAPhysicalId) {
  EXPECT_EQ(row(P(260)), 4);
  EXPECT_EQ(column(P(260)), 4);
  EXPECT_EQ(row(P(1471)), 22);
  EXPECT_EQ(column(P(1471)), 63);
  EXPECT_EQ(pair_partner(P(64)), P(66));
  EXPECT_EQ(pair_partner(P(66)), P(64));
  EXPECT_TRUE(is_pair_primary(P(1409)));
  EXPECT_FALSE(is_pair_primary(P(1411)));
  EXPECT_EQ(column_group(P(53)), 13);
  EXPECT_EQ(mirrored_column_group(13), 2);
  EXPECT_EQ(mirrored_column_group(7), 7);
}

TEST(Topology, FormatsTilesWithTheirIdSpace) {
  EXPECT_EQ(fmt::format("{}", P(260)), "p260");
  EXPECT_EQ(fmt::format("{}", L(100)), "L100");
}

TEST(Topology, FromPhysicalKeepsLogicalOrder) {
  const Topology topology = Topology::from_physical({P(32), P(53), P(0)});
  EXPECT_EQ(topology.size(), 3u);
  EXPECT_EQ(topology.physical(L(1)), P(53));
  EXPECT_EQ(topology.logical(P(0)), L(2));
  EXPECT_EQ(topology.logical(P(1)), std::nullopt);
  EXPECT_FALSE(topology.contains(P(1471)));
  EXPECT_FALSE(topology.contains(P(5000)));
  EXPECT_EQ(
      std::vector<PhysicalTile>(topology.physical_tiles().begin(), topology.physical_tiles().end()),
      (std::vector<PhysicalTile>{P(32), P(53), P(0)}));
}

struct InvalidTopology {
  const char* name;
  std::vector<PhysicalTile> physical;
  std::vector<std::string> message_parts;
};

TEST(Topology, FromPhysicalRejectsInvalidMaps) {
  const InvalidTopology cases[] = {
      {"empty", {}, {"at least one tile"}},
      {"duplicate", {P(0), P(260), P(7), P(260)}, {"physical[3]", "p260", "L1"}},
      {"off the chip", {P(0), P(1472)}, {"physical[1]", "p1472"}},
      {"far off the chip", {P(0xFFFF)}, {"physical[0]", "p65535"}},
  };
  for (const InvalidTopology& invalid : cases) {
    SCOPED_TRACE(invalid.name);
    try {
      (void)Topology::from_physical(invalid.physical);
      ADD_FAILURE() << "expected TopologyError";
    } catch (const TopologyError& error) {
      for (const std::string& part : invalid.message_parts) {
        EXPECT_NE(error.message().find(part), std::string::npos)
            << "'" << error.message() << "' lacks '" << part << "'";
      }
    }
  }
}

TEST(Topology, PhysicalOfAnUnknownLogicalTileNamesIt) {
  const Topology topology = Topology::from_physical({P(4), P(6)});
  try {
    (void)topology.physical(L(2));
    FAIL() << "expected TopologyError";
  } catch (const TopologyError& error) {
    EXPECT_EQ(error.message(), "L2 is outside this topology of 2 tiles");
  }
  EXPECT_THROW((void)Topology::c600().physical(L(1472)), TopologyError);
  EXPECT_THROW((void)c600_physical(L(1472)), TopologyError);
}

TEST(Topology, ParsesTilesAsTheyAreFormatted) {
  const Topology c600 = Topology::c600();
  EXPECT_EQ(parse_tile("p260", c600), P(260));
  EXPECT_EQ(parse_tile("260", c600), P(260));
  EXPECT_EQ(parse_tile("L0", c600), P(0));
  EXPECT_EQ(parse_tile("L1", c600), c600_physical(L(1)));
  EXPECT_EQ(parse_tile(fmt::format("{}", P(1471)), c600), P(1471));
  const Topology small = Topology::from_physical({P(4), P(6)});
  EXPECT_EQ(parse_tile("L1", small), P(6));
}

TEST(Topology, RejectsTileNamesItCannotPlace) {
  const Topology c600 = Topology::c600();
  for (const char* text : {"", "p", "L", "x5", "p-1", "5x", "p 5", "P5", "l5", "65536"}) {
    SCOPED_TRACE(text);
    try {
      (void)parse_tile(text, c600);
      ADD_FAILURE() << "expected TopologyError";
    } catch (const TopologyError& error) {
      EXPECT_NE(error.message().find("is not a tile"), std::string::npos) << error.message();
    }
  }
  EXPECT_THROW((void)parse_tile("p1472", c600), TopologyError);
  EXPECT_THROW((void)parse_tile("L1472", c600), TopologyError);
  EXPECT_THROW((void)parse_tile("L2", Topology::from_physical({P(4), P(6)})), TopologyError);
}

RC_GTEST_PROP(TopologyProperties, C600FormulaAgreesWithTheMapAndItsInverse, ()) {
  static const Topology c600 = Topology::c600();
  const auto id = *rc::gen::inRange<std::uint16_t>(0, kTileCount);
  const PhysicalTile physical = c600_physical(L(id));
  RC_ASSERT(on_chip(physical));
  RC_ASSERT(c600.physical(L(id)) == physical);
  RC_ASSERT(c600.logical(physical) == std::optional(L(id)));
}

// ---------------------------------------------------------------------------
// Route model

struct RouteVector {
  std::uint16_t source;
  std::uint16_t destination;
  int ttm;
};

// Reference §1.3, computed examples that reproduce the HEAD/OLD oracle rows.
constexpr RouteVector kTtmVectors[] = {
    {0, 53, -23},  {0, 9, -23},  {32, 260, 49}, {32, 613, -34},
    {53, 63, -14}, {1024, 0, 3}, {0, 64, -31},  {0, 66, -30},
};

TEST(Route, TtmMatchesTheReferenceVectors) {
  for (const RouteVector& golden : kTtmVectors) {
    SCOPED_TRACE(fmt::format("{} -> {}", P(golden.source), P(golden.destination)));
    EXPECT_EQ(ttm(P(golden.source), P(golden.destination)), golden.ttm);
  }
}

static_assert(ttm(P(0), P(53)) == -23);

struct DirectionVector {
  std::uint16_t source;
  std::uint16_t destination;
  FabricDirection direction;
};

// Reference §1.3.
constexpr DirectionVector kDirectionVectors[] = {
    {0, 53, FabricDirection::kOne},
    {32, 260, FabricDirection::kTwo},
    {53, 63, FabricDirection::kTwo},
    {1024, 0, FabricDirection::kOne},
};

TEST(Route, DirectionMatchesTheReferenceVectors) {
  for (const DirectionVector& golden : kDirectionVectors) {
    SCOPED_TRACE(fmt::format("{} -> {}", P(golden.source), P(golden.destination)));
    EXPECT_EQ(direction(P(golden.source), P(golden.destination)), golden.direction);
  }
  EXPECT_EQ(static_cast<int>(FabricDirection::kOne), 1);
  EXPECT_EQ(static_cast<int>(FabricDirection::kTwo), 2);
}

// §5.4 [T]: logical 0 sends 64-bit pairs to logical {2, 3} = physical {64, 66}.
TEST(Route, PairedReceiveFromTheReferenceVector) {
  EXPECT_EQ(pttm(P(0), P(64)), -30);
  EXPECT_EQ(pttm(P(0), P(66)), -30);
  // Xp = pttm + max(1 - min pttm, 0) puts the source select at event 1.
  EXPECT_EQ(pttm(P(0), P(64)) + std::max(1 - pttm(P(0), P(64)), 0), 1);
  // The early member (smaller own ttm) owns the paired XPIC stream: physical 64.
  EXPECT_LT(ttm(P(0), P(64)), ttm(P(0), P(66)));
}

TEST(Route, OffChipTilesAreRejected) {
  EXPECT_THROW((void)ttm(P(1472), P(0)), TopologyError);
  EXPECT_THROW((void)ttm(P(0), P(1472)), TopologyError);
  EXPECT_THROW((void)pttm(P(0), P(4095)), TopologyError);
  EXPECT_THROW((void)direction(P(0xFFFF), P(0)), TopologyError);
  try {
    (void)ttm(P(0), P(2000));
    FAIL() << "expected TopologyError";
  } catch (const TopologyError& error) {
    EXPECT_NE(error.message().find("p2000"), std::string::npos) << error.message();
  }
}

// The reference quotes about -77..+112 over sampled pairs; the exhaustive
// extremes are pinned so a change to the fit shows up here.
TEST(Route, TtmOverAllPairsStaysInItsKnownRange) {
  int lowest = 0;
  int highest = 0;
  for (int s = 0; s < kTileCount; ++s) {
    for (int d = 0; d < kTileCount; ++d) {
      const int value = ttm(P(static_cast<std::uint16_t>(s)), P(static_cast<std::uint16_t>(d)));
      lowest = std::min(lowest, value);
      highest = std::max(highest, value);
    }
  }
  EXPECT_EQ(lowest, -78);
  EXPECT_EQ(highest, 112);
}

RC_GTEST_PROP(RouteProperties, PttmIsTheLaterOfThePair, ()) {
  const auto s = P(*rc::gen::inRange<std::uint16_t>(0, kTileCount));
  const auto d = P(*rc::gen::inRange<std::uint16_t>(0, kTileCount));
  RC_ASSERT(pttm(s, d) == pttm(s, pair_partner(d)));
  RC_ASSERT(pttm(s, d) >= ttm(s, d));
  RC_ASSERT(pttm(s, d) >= ttm(s, pair_partner(d)));
}

}  // namespace
}  // namespace tessera::target
