// resolve(): golden cases worked by hand from the partition rule (prior art
// §1.2: partition i of p gets ⌊B/p⌋ blocks, plus one if i < B mod p), and
// properties against a brute-force oracle that assigns every element
// independently.

#include <algorithm>
#include <map>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "compiler/layout/resolve.hpp"

namespace tessera::compiler {
namespace {

constexpr ElementType kF32{DType::kF32, 0};
constexpr ElementType kF16{DType::kF16, 0};

using Extents = std::vector<ShardExtent>;

Layout tiled(ElementType precision, std::vector<AxisTiling> tiling, std::uint32_t replicas = 1) {
  Layout layout = single_tile_layout(precision);
  layout.tiling = std::move(tiling);
  layout.replicas = replicas;
  return layout;
}

TEST(Resolve, ThousandElementsOverSevenTiles) {
  // B = 1000 blocks of 1, p = 7: ⌊1000/7⌋ = 142, 1000 mod 7 = 6, so six shards of 143, one of 142.
  const ResolvedLayout r = resolve(split_layout(kF32, 0, 7), Shape{1000});
  ASSERT_EQ(r.shards.size(), 7u);
  EXPECT_EQ(r.padded_shape, std::vector<std::uint64_t>{1000});
  const std::uint64_t starts[] = {0, 143, 286, 429, 572, 715, 858, 1000};
  for (std::uint16_t i = 0; i < 7; ++i) {
    const Shard& shard = r.shards[i];
    EXPECT_EQ(shard.tile, target::LogicalTile(i));
    EXPECT_EQ(shard.extents, (Extents{{starts[i], starts[i + 1], starts[i + 1]}}));
    const std::uint64_t bytes = (starts[i + 1] - starts[i]) * 4;
    EXPECT_EQ(shard.bytes, bytes);
    EXPECT_EQ(shard.logical_bytes, bytes);
    EXPECT_EQ(shard.allocation_bytes, i < 6 ? 576u : 568u);  // 572 rounds up to 8
    EXPECT_EQ(host_runs(shard), (std::vector<ByteRun>{{0, starts[i] * 4, bytes}}));
  }
  EXPECT_EQ(r.max_allocation_bytes, 576u);
}

TEST(Resolve, RowsSplitOnAxisZero) {
  // [10, 6] f16 over 4: rows 3, 3, 2, 2; every shard is whole rows, so one run each.
  const ResolvedLayout r = resolve(split_layout(kF16, 0, 4), Shape{10, 6});
  const std::uint64_t starts[] = {0, 3, 6, 8, 10};
  for (std::size_t i = 0; i < 4; ++i) {
    const Shard& shard = r.shards[i];
    EXPECT_EQ(shard.extents, (Extents{{starts[i], starts[i + 1], starts[i + 1]}, {0, 6, 6}}));
    const std::uint64_t bytes = (starts[i + 1] - starts[i]) * 12;
    EXPECT_EQ(host_runs(shard), (std::vector<ByteRun>{{0, starts[i] * 12, bytes}}));
    EXPECT_EQ(host_run_count(shard), 1u);
  }
}

TEST(Resolve, ColumnsSplitOnAxisOneInBlocks) {
  // [3, 10] f32, axis 1 in blocks of 4 over 3: B = 3 blocks → columns [0,4) [4,8) [8,10)
  // (the last block short); each shard is one run per row.
  const ResolvedLayout r = resolve(tiled(kF32, {{1, 3, 4, 1}}), Shape{3, 10});
  ASSERT_EQ(r.shards.size(), 3u);
  EXPECT_EQ(r.shards[0].extents, (Extents{{0, 3, 3}, {0, 4, 4}}));
  EXPECT_EQ(r.shards[1].extents, (Extents{{0, 3, 3}, {4, 8, 8}}));
  EXPECT_EQ(r.shards[2].extents, (Extents{{0, 3, 3}, {8, 10, 10}}));
  EXPECT_EQ(host_runs(r.shards[1]),
            (std::vector<ByteRun>{{0, 16, 16}, {16, 56, 16}, {32, 96, 16}}));
  EXPECT_EQ(host_runs(r.shards[2]), (std::vector<ByteRun>{{0, 32, 8}, {8, 72, 8}, {16, 112, 8}}));
  EXPECT_EQ(r.shards[2].host.loops, (std::vector<HostMapping::Loop>{{3, 8, 40}}));
}

TEST(Resolve, PaddingToAMultiple) {
  // [10] f32 padded to 16, blocks of 8 over 3: B = 2 → [0,8) [8,16) and an empty third;
  // the second holds 2 real elements and 6 of padding.
  const ResolvedLayout r = resolve(tiled(kF32, {{0, 3, 8, 8}}), Shape{10});
  EXPECT_EQ(r.padded_shape, std::vector<std::uint64_t>{16});
  EXPECT_EQ(r.shards[0].extents, (Extents{{0, 8, 8}}));
  EXPECT_EQ(r.shards[1].extents, (Extents{{8, 10, 16}}));
  EXPECT_EQ(r.shards[2].extents, (Extents{{16, 16, 16}}));
  EXPECT_EQ(r.shards[1].bytes, 32u);
  EXPECT_EQ(r.shards[1].logical_bytes, 8u);
  EXPECT_EQ(r.shards[2].bytes, 0u);
  EXPECT_EQ(r.shards[2].allocation_bytes, 0u);
  EXPECT_EQ(host_runs(r.shards[1]), (std::vector<ByteRun>{{0, 32, 8}}));
  EXPECT_TRUE(host_runs(r.shards[2]).empty());
}

TEST(Resolve, PaddingInsideRows) {
  // [2, 5] f16, axis 1 padded to 8 in blocks of 4 over 2: the second shard is
  // columns [4, 5) real, [5, 8) padding; its rows are 8 bytes apart in the shard.
  const ResolvedLayout r = resolve(tiled(kF16, {{1, 2, 4, 4}}), Shape{2, 5});
  EXPECT_EQ(r.shards[1].extents, (Extents{{0, 2, 2}, {4, 5, 8}}));
  EXPECT_EQ(r.shards[1].bytes, 16u);
  EXPECT_EQ(host_runs(r.shards[1]), (std::vector<ByteRun>{{0, 8, 2}, {8, 18, 2}}));
  // An unsplit but padded axis: partitions 1.
  const ResolvedLayout padded = resolve(tiled(kF16, {{1, 1, 1, 8}}), Shape{2, 5});
  EXPECT_EQ(padded.shards.size(), 1u);
  EXPECT_EQ(padded.shards[0].extents, (Extents{{0, 2, 2}, {0, 5, 8}}));
  EXPECT_EQ(host_runs(padded.shards[0]), (std::vector<ByteRun>{{0, 0, 10}, {16, 10, 10}}));
}

TEST(Resolve, ReplicasVaryFastest) {
  // [6] f32 split in 2, 2 replicas: shard k is replica k mod 2 of partition k / 2.
  const ResolvedLayout r = resolve(tiled(kF32, {{0, 2, 1, 1}}, 2), Shape{6});
  ASSERT_EQ(r.shards.size(), 4u);
  const std::uint32_t replicas[] = {0, 1, 0, 1};
  const std::uint64_t starts[] = {0, 0, 3, 3};
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(r.shards[k].replica, replicas[k]);
    EXPECT_EQ(r.shards[k].extents[0].start, starts[k]);
    EXPECT_EQ(r.shards[k].partition, std::vector<std::uint32_t>{static_cast<std::uint32_t>(k / 2)});
  }
  // Pure broadcast: three whole copies.
  const ResolvedLayout copies = resolve(tiled(kF32, {}, 3), Shape{4});
  ASSERT_EQ(copies.shards.size(), 3u);
  for (const Shard& shard : copies.shards) {
    EXPECT_EQ(host_runs(shard), (std::vector<ByteRun>{{0, 0, 16}}));
  }
}

TEST(Resolve, TwoSplitAxesPackInTilingOrder) {
  // [4, 6]: axis 1 in 3 (entry 0, fastest), axis 0 in 2.
  const ResolvedLayout r = resolve(tiled(kF32, {{1, 3, 1, 1}, {0, 2, 1, 1}}), Shape{4, 6});
  ASSERT_EQ(r.shards.size(), 6u);
  for (std::size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(r.shards[k].extents[1].start, (k % 3) * 2);
    EXPECT_EQ(r.shards[k].extents[0].start, (k / 3) * 2);
  }
}

TEST(Resolve, ScalarsAndTileLists) {
  const std::vector<target::LogicalTile> tiles = {target::LogicalTile(40), target::LogicalTile(7)};
  const ResolvedLayout r = resolve(tiled(kF16, {}, 2), Shape{}, tiles);
  EXPECT_EQ(r.shards[0].tile, target::LogicalTile(40));
  EXPECT_EQ(r.shards[1].tile, target::LogicalTile(7));
  EXPECT_EQ(r.shards[0].bytes, 2u);
  EXPECT_EQ(r.shards[0].allocation_bytes, 8u);
  EXPECT_EQ(host_runs(r.shards[0]), (std::vector<ByteRun>{{0, 0, 2}}));

  EXPECT_THROW(resolve(tiled(kF16, {}, 2), Shape{}, std::span(tiles).first(1)), LayoutError);
  const std::vector<target::LogicalTile> off_chip = {target::LogicalTile(1472)};
  EXPECT_THROW(resolve(tiled(kF16, {}), Shape{}, off_chip), LayoutError);
  const std::vector<target::LogicalTile> twice = {target::LogicalTile(3), target::LogicalTile(3)};
  try {
    resolve(tiled(kF16, {}, 2), Shape{}, twice);
    ADD_FAILURE() << "accepted";
  } catch (const LayoutError& error) {
    EXPECT_NE(std::string(error.what()).find("tile L3 is given twice"), std::string::npos);
  }
}

TEST(Resolve, OverflowIsAnError) {
  // Padding 3 up to a multiple of 2^63 needs 2^64.
  try {
    resolve(tiled(kF32, {{0, 1, 1, std::uint64_t{1} << 63}}), Shape{3});
    ADD_FAILURE() << "accepted";
  } catch (const LayoutError& error) {
    EXPECT_NE(std::string(error.what()).find("overflows"), std::string::npos) << error.what();
  }
  EXPECT_THROW(resolve(split_layout(kF32, 0, 2), Shape{0}), LayoutError);
}

// ---- Properties against an independent oracle -----------------------------------------

struct Case {
  Layout layout;
  Shape shape;
};

// Uniform over [low, high) whatever RapidCheck's current size (inRange alone
// favours the low end early in a run, which would make most cases scalars).
template <typename T>
T uniform(T low, T high) {
  return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(low, high));
}

Case random_case() {
  Case c;
  c.shape.resize(uniform<std::size_t>(0, 4));
  for (auto& extent : c.shape) extent = uniform<std::uint32_t>(1, 13);
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kU8, DType::kF8F143};
  c.layout.precision = {dtypes[uniform(0, 4)], 0};
  c.layout.replicas = uniform<std::uint32_t>(1, 4);
  c.layout.alignment = 1u << uniform(0, 5);
  for (std::uint32_t axis = 0; axis < c.shape.size(); ++axis) {
    if (!*rc::gen::arbitrary<bool>()) continue;
    c.layout.tiling.push_back({axis, uniform<std::uint32_t>(1, 6), uniform<std::uint64_t>(1, 5),
                               uniform<std::uint64_t>(1, 7)});
  }
  // Any order of entries is a valid packing order.
  std::reverse(c.layout.tiling.begin(), c.layout.tiling.end());
  return c;
}

// The oracle: deals B blocks round-robin to count each partition's share
// (which gives ⌊B/p⌋ + [i < B mod p] without that formula), lays the shares
// out in order, and says which partition element x of the padded axis is in.
std::uint32_t oracle_partition(std::uint64_t x, std::uint64_t padded, const AxisTiling& tiling) {
  const std::uint64_t blocks = (padded + tiling.block_size - 1) / tiling.block_size;
  std::vector<std::uint64_t> share(tiling.partitions, 0);
  for (std::uint64_t b = 0; b < blocks; ++b) ++share[b % tiling.partitions];
  std::uint64_t block = x / tiling.block_size;
  for (std::uint32_t i = 0; i < tiling.partitions; ++i) {
    if (block < share[i]) return i;
    block -= share[i];
  }
  return tiling.partitions;  // not reached for x < padded
}

// Calls f(coordinate) for every coordinate of a box.
template <typename F>
void for_each_coordinate(const std::vector<std::uint64_t>& extents, F&& f) {
  std::vector<std::uint64_t> c(extents.size(), 0);
  for (const auto extent : extents) {
    if (extent == 0) return;
  }
  while (true) {
    f(c);
    std::size_t a = c.size();
    while (a > 0 && ++c[a - 1] == extents[a - 1]) c[--a] = 0;
    if (a == 0) return;
  }
}

bool contains(const Shard& shard, const std::vector<std::uint64_t>& c, bool logical) {
  for (std::size_t a = 0; a < c.size(); ++a) {
    const auto end = logical ? shard.extents[a].logical_end : shard.extents[a].physical_end;
    if (c[a] < shard.extents[a].start || c[a] >= end) return false;
  }
  return true;
}

RC_GTEST_PROP(ResolveProperty, MatchesTheOracleElementByElement, ()) {
  const Case c = random_case();
  const ResolvedLayout r = resolve(c.layout, c.shape);
  const std::uint64_t element_size = schema::dtype_size(c.layout.precision.dtype);
  RC_ASSERT(r.shards.size() == tile_count(c.layout));

  // Padded shape from the definition.
  std::vector<std::uint64_t> padded(c.shape.begin(), c.shape.end());
  for (const AxisTiling& t : c.layout.tiling) {
    padded[t.axis] =
        (c.shape[t.axis] + t.padding_multiple - 1) / t.padding_multiple * t.padding_multiple;
  }
  RC_ASSERT(r.padded_shape == padded);

  // Every padded element lies in exactly one shard per replica: the one the oracle names.
  for_each_coordinate(padded, [&](const std::vector<std::uint64_t>& x) {
    std::uint64_t cell = 0, stride = 1;
    for (const AxisTiling& t : c.layout.tiling) {
      cell += stride * oracle_partition(x[t.axis], padded[t.axis], t);
      stride *= t.partitions;
    }
    bool logical = true;
    for (std::size_t a = 0; a < x.size(); ++a) logical = logical && x[a] < c.shape[a];
    for (std::uint32_t replica = 0; replica < c.layout.replicas; ++replica) {
      const std::size_t expected = cell * c.layout.replicas + replica;
      for (std::size_t k = 0; k < r.shards.size(); ++k) {
        if (r.shards[k].replica != replica) continue;
        RC_ASSERT(contains(r.shards[k], x, false) == (k == expected));
        RC_ASSERT(contains(r.shards[k], x, true) == (k == expected && logical));
      }
    }
  });

  // Sizes: bytes from the physical box, allocation the next multiple of the alignment.
  for (const Shard& shard : r.shards) {
    std::uint64_t elements = 1, logical = 1;
    for (const ShardExtent& e : shard.extents) {
      RC_ASSERT(e.start <= e.logical_end && e.logical_end <= e.physical_end);
      elements *= e.physical_size();
      logical *= e.logical_size();
    }
    RC_ASSERT(shard.bytes == elements * element_size);
    RC_ASSERT(shard.logical_bytes == logical * element_size);
    RC_ASSERT(shard.allocation_bytes >= shard.offset + shard.bytes);
    RC_ASSERT(shard.allocation_bytes % c.layout.alignment == 0);
    RC_ASSERT(shard.allocation_bytes < shard.bytes + c.layout.alignment);
    RC_ASSERT(shard.allocation_bytes <= r.max_allocation_bytes);
  }
}

RC_GTEST_PROP(ResolveProperty, HostRunsPartitionTheTensorAndMapEachElement, ()) {
  const Case c = random_case();
  const ResolvedLayout r = resolve(c.layout, c.shape);
  const std::uint64_t element_size = schema::dtype_size(c.layout.precision.dtype);
  std::uint64_t tensor_bytes = element_size;
  for (const auto extent : c.shape) tensor_bytes *= extent;

  for (std::uint32_t replica = 0; replica < c.layout.replicas; ++replica) {
    // host byte → (shard, shard byte), from the runs; every host byte exactly once.
    std::map<std::uint64_t, std::pair<std::size_t, std::uint64_t>> where;
    for (std::size_t k = 0; k < r.shards.size(); ++k) {
      const Shard& shard = r.shards[k];
      if (shard.replica != replica) continue;
      const auto runs = host_runs(shard);
      RC_ASSERT(runs.size() == host_run_count(shard));
      std::uint64_t run_bytes = 0;
      for (const ByteRun& run : runs) {
        RC_ASSERT(run.bytes > 0);
        RC_ASSERT(run.shard_offset + run.bytes <= shard.bytes);
        run_bytes += run.bytes;
        for (std::uint64_t b = 0; b < run.bytes; ++b) {
          RC_ASSERT(where.emplace(run.host_offset + b, std::pair{k, run.shard_offset + b}).second);
        }
      }
      RC_ASSERT(run_bytes == shard.logical_bytes);
    }
    RC_ASSERT(where.size() == tensor_bytes);
    RC_ASSERT(where.empty() || where.rbegin()->first == tensor_bytes - 1);

    // Each element's bytes sit where row-major order inside its shard's physical box puts them.
    std::vector<std::uint64_t> shape(c.shape.begin(), c.shape.end());
    std::uint64_t host_element = 0;
    for_each_coordinate(shape, [&](const std::vector<std::uint64_t>& x) {
      const auto [k, shard_byte] = where.at(host_element * element_size);
      const Shard& shard = r.shards[k];
      RC_ASSERT(contains(shard, x, true));
      std::uint64_t offset = 0;
      for (std::size_t a = 0; a < x.size(); ++a) {
        offset = offset * shard.extents[a].physical_size() + (x[a] - shard.extents[a].start);
      }
      RC_ASSERT(shard_byte == offset * element_size);
      ++host_element;
    });
  }
}

}  // namespace
}  // namespace tessera::compiler
