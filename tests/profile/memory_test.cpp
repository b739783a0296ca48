// Memory use per tile from a hand-built debug section: each category's bytes
// counted once where allocations share them, free the rest of the SRAM.
#include <gtest/gtest.h>

#include "runtime/profile/memory.hpp"
#include "support/error.hpp"
#include "target/memory_map.hpp"

namespace tessera::profile {
namespace {

schema::Allocation allocation(std::uint32_t id, schema::AllocationKind kind, std::uint32_t address,
                              std::uint32_t size) {
  schema::Allocation a;
  a.id = id;
  a.kind = kind;
  a.address = address;
  a.size = size;
  return a;
}

TEST(ProfileMemory, CategoriesCountSharedBytesOnce) {
  using K = schema::AllocationKind;
  schema::Debug debug;
  debug.tiles.push_back(
      {target::PhysicalTile(3),
       {},
       {allocation(0, K::kCode, 0x4C000, 0x1000), allocation(1, K::kRuntime, 0x4D000, 0x100),
        allocation(2, K::kTensor, 0x50000, 0x100),
        // another live range over half of #2's bytes
        allocation(3, K::kTensor, 0x50080, 0x100), allocation(4, K::kExchangeRow, 0x60000, 0x40),
        allocation(5, K::kStaging, 0x70000, 0x20), allocation(6, K::kScratch, 0x70010, 0x20)},
       {},
       {}});
  debug.tiles.push_back(
      {target::PhysicalTile(4), {}, {allocation(0, K::kTensor, 0x4C000, 0x8000)}, {}, {}});
  const auto tiles = memory_use(debug);
  ASSERT_EQ(tiles.size(), 2u);
  const TileMemory& t = tiles[0];
  EXPECT_EQ(t.category_bytes, (std::array<std::uint64_t, 4>{0x1100, 0x40, 0x180, 0x30}));
  EXPECT_EQ(t.used_bytes, 0x1100u + 0x40u + 0x180u + 0x30u);
  EXPECT_EQ(t.free_bytes, target::kSramSize - t.used_bytes);
  const auto fullest = fullest_tiles(tiles, 1);
  ASSERT_EQ(fullest.size(), 1u);
  EXPECT_EQ(fullest[0].tile, target::PhysicalTile(4));  // 0x8000 > 0x12f0
}

TEST(ProfileMemory, AnAllocationOutsideTheSramIsAnInputError) {
  schema::Debug debug;
  debug.tiles.push_back({target::PhysicalTile(0),
                         {},
                         {allocation(7, schema::AllocationKind::kTensor, 0xE7F00, 0x200)},
                         {},
                         {}});
  try {
    (void)memory_use(debug);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("allocations[0]"), std::string::npos) << error.what();
  }
  debug.tiles[0].allocations[0].address = 0xFFFFFF00;  // + size overflows 32 bits: still an error
  debug.tiles[0].allocations[0].size = 0x200;
  EXPECT_THROW((void)memory_use(debug), InputError);
}

}  // namespace
}  // namespace tessera::profile
