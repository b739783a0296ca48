// FieldPath (schema/field_path.hpp): the lazily spelled field paths the reader
// and the validator name in their errors. Each row is a path built the way
// the validator builds it and the text the error must carry (the spelling of
// docs/FORMAT.md's field paths).
#include <string>

#include <gtest/gtest.h>

#include "schema/field_path.hpp"

namespace tessera::schema {
namespace {

TEST(FieldPath, SpellsRootsFieldsAndIndices) {
  EXPECT_EQ(FieldPath("header.target").str(), "header.target");
  EXPECT_EQ(FieldPath("tiles")[12].str(), "tiles[12]");
  EXPECT_EQ(FieldPath("tiles")[12].field("segments")[3].field("blobOffset").str(),
            "tiles[12].segments[3].blobOffset");
  EXPECT_EQ(FieldPath("hostExchange.calls")[0].field("inputBindings")[2].str(),
            "hostExchange.calls[0].inputBindings[2]");
  // An index on an indexed link is a list in a list.
  EXPECT_EQ(FieldPath("grid")[1][2].str(), "grid[1][2]");
  const std::string text = "debug.exchangePhases[4]";
  EXPECT_EQ(FieldPath(text).field("id").str(), "debug.exchangePhases[4].id");
}

// The validator keeps links in locals, one below the other: each must spell
// the whole chain after the temporaries that built it are gone.
TEST(FieldPath, LinksKeptInLocalsSpellTheirChain) {
  const FieldPath tile = FieldPath("debug.tiles")[7];
  const FieldPath site = tile.field("callSites")[41];
  const FieldPath operand = site.field("operands")[2];
  EXPECT_EQ(tile.str(), "debug.tiles[7]");
  EXPECT_EQ(site.str(), "debug.tiles[7].callSites[41]");
  EXPECT_EQ(operand.field("register").str(), "debug.tiles[7].callSites[41].operands[2].register");
}

}  // namespace
}  // namespace tessera::schema
