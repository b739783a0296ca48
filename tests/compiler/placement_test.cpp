// The per-tile lifetime allocator: regions, reserved ranges, alignment,
// tails, whole elements, lifetimes, the memory report; and a property over
// random request sets checked against the rules directly.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "compiler/placement.hpp"

namespace tessera::compiler {
namespace {

using target::AddressRange;
using target::PhysicalTile;

const PhysicalTile kTile(7);

AllocationRequest request(std::string name, std::uint32_t size, MemoryPlacement placement,
                          std::uint32_t from = 0, std::uint32_t until = schema::kLiveToEnd) {
  AllocationRequest r;
  r.name = std::move(name);
  r.size = size;
  r.placement = placement;
  r.live_from = from;
  r.live_until = until;
  return r;
}

bool inside_any(const AddressRange& range, MemoryPlacement region) {
  for (const auto& allowed : placeable_ranges(region)) {
    if (allowed.contains(range)) return true;
  }
  return false;
}

TEST(Placement, CodeGoesBelowTheFetchLimitDataToRegionOneFirst) {
  const std::vector requests{request("code", 4096, MemoryPlacement::kStandard),
                             request("x", 1000, MemoryPlacement::kAnywhere)};
  const auto placed = place_tile(kTile, requests);
  EXPECT_LT(placed[0].address + placed[0].size, 0x80000u);
  EXPECT_FALSE(AddressRange::from_size(placed[0].address, placed[0].size).overlaps(target::kExchangeWindow));
  EXPECT_GE(placed[1].address, 0x80000u);
  EXPECT_EQ(placed[0].id, 1u);
  EXPECT_EQ(placed[1].id, 2u);
}

// A split of region 0 (data_placement's, for weights that outgrow region
// 1): code ends a fetch lookahead below it, region-0-first data lies above
// it and falls back to region 1 when region 0 above the split is full.
TEST(Placement, ARegionSplitKeepsCodeBelowAndDataAboveOnElementBoundaries) {
  const std::uint32_t split = 0x80000 - 2 * target::kStandardElementSize;
  std::vector requests{request("code", 0x10000, MemoryPlacement::kStandard),
                       request("w0", 0x6000, MemoryPlacement::kStandardFirst),
                       request("w1", 0x3000, MemoryPlacement::kStandardFirst),
                       request("w2", 0x1000, MemoryPlacement::kStandardFirst)};
  const auto placed = place_tile(kTile, requests, RegionSplit{split});
  EXPECT_LE(placed[0].address + placed[0].size + target::kFetchLookahead, split);
  EXPECT_GE(placed[1].address, split);
  EXPECT_LE(placed[1].address + placed[1].size, 0x80000u);
  EXPECT_GE(placed[2].address, 0x80000u) << "w1 does not fit region 0 above the split after w0";
  EXPECT_GE(placed[3].address, split);
  EXPECT_LT(placed[3].address, 0x80000u);
  // Code that would need memory above the split does not get it.
  requests = {request("code", 0x80000 - target::kLinkerRegion2.begin - target::kFetchLookahead + 8,
                      MemoryPlacement::kStandard)};
  EXPECT_NO_THROW(place_tile(kTile, requests));
  EXPECT_THROW(place_tile(kTile, requests, RegionSplit{split}), PlacementError);
}

TEST(Placement, TailsAlignmentAndWholeElements) {
  AllocationRequest left = request("left", 100, MemoryPlacement::kInterleaved);
  left.tail = 16;
  left.alignment = 32;
  AllocationRequest out = request("out", 100, MemoryPlacement::kInterleaved);
  out.whole_elements = true;
  AllocationRequest rows = request("rows", 5000, MemoryPlacement::kStandard);
  rows.whole_elements = true;
  const auto placed = place_tile(kTile, std::vector{left, out, rows});
  EXPECT_EQ(placed[0].size, 116u);
  EXPECT_EQ(placed[0].address % 32, 0u);
  EXPECT_EQ(placed[1].size, target::kInterleavedElementSize);
  EXPECT_EQ((placed[1].address - 0x80000) % target::kInterleavedElementSize, 0u);
  EXPECT_EQ(placed[2].size, target::kStandardElementSize);
  EXPECT_EQ((placed[2].address - 0x4C000) % target::kStandardElementSize, 0u);
}

// Data that lives from the start or to the end (bound weights, constants)
// takes the top of region 1, so the data that comes and goes finds whole
// elements below it: so400m at batch 2 spilled weights into region 0 (and
// then ran out of room for code) while region 1 had its last, short element
// empty and whole-element scratch could not find whole elements above the
// weights. In miniature: 40 KiB of weights bottom-up take two of region 1's
// 12 whole elements, and an 11th whole element of scratch does not fit; from
// the top they take the short 13th and part of the 12th. Weights that live
// from the start to their last use (step 3) and a constant that lives to the
// end both do.
TEST(Placement, DataThatLivesFromTheStartOrToTheEndTakesTheTop) {
  const std::uint32_t whole = (target::kLoadLimit - target::kInterleavedRegion.begin) /
                              target::kInterleavedElementSize;
  ASSERT_EQ(whole, 12u);
  for (const auto& [from, until] : {std::pair{0u, 3u}, std::pair{1u, schema::kLiveToEnd}}) {
    SCOPED_TRACE(fmt::format("weights live from step {}", from));
    std::vector requests{
        request("weights", 40 * 1024, MemoryPlacement::kInterleaved, from, until)};
    for (std::uint32_t i = 0; i + 1 < whole; ++i) {
      AllocationRequest scratch =
          request(fmt::format("scratch {}", i), 100, MemoryPlacement::kInterleaved, 2, 3);
      scratch.whole_elements = true;
      requests.push_back(scratch);
    }
    const auto placed = place_tile(kTile, requests);
    EXPECT_EQ(placed[0].address + placed[0].size, target::kLoadLimit);
    for (std::size_t i = 1; i < placed.size(); ++i) {
      EXPECT_LE(placed[i].address + placed[i].size, placed[0].address) << requests[i].name;
    }
  }
  // Code keeps its bottom-up order.
  const auto code =
      place_tile(kTile, std::vector{request("code", 4096, MemoryPlacement::kStandard)});
  EXPECT_EQ(code[0].address, target::kLinkerRegion1.begin);
}

TEST(Placement, MemoryIsReusedWhenLifetimesDoNotOverlap) {
  const std::uint32_t big = 300 * 1024;  // most of region 1
  const std::vector requests{request("a", big, MemoryPlacement::kInterleaved, 0, 5),
                             request("b", big, MemoryPlacement::kInterleaved, 5, 9)};
  const auto placed = place_tile(kTile, requests);
  // Two of them do not fit side by side: b takes memory a held (a, live
  // from the start, lies at the top of region 1; b at the bottom).
  EXPECT_TRUE(AddressRange::from_size(placed[0].address, placed[0].size)
                  .overlaps(AddressRange::from_size(placed[1].address, placed[1].size)));
}

TEST(Placement, WhatDoesNotFitGetsAMemoryReport) {
  const std::vector requests{request("weights", 300 * 1024, MemoryPlacement::kInterleaved, 0, 9),
                             request("activations", 200 * 1024, MemoryPlacement::kInterleaved, 3, 6)};
  try {
    place_tile(kTile, requests);
    FAIL() << "placed more than region 1 holds";
  } catch (const PlacementError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("p7: cannot place 'activations' (204800 bytes, align 4) in interleaved memory at step 3"),
              std::string::npos) << what;
    EXPECT_NE(what.find("'weights' (live 0..9)"), std::string::npos) << what;
    EXPECT_NE(what.find("free gaps"), std::string::npos) << what;
  }
}

// A tile full of small allocations (so400m's exchange rows) gets a report of
// the largest few and a count of the rest, not hundreds of lines.
TEST(Placement, AMemoryReportListsTheLargestAllocationsAndCountsTheRest) {
  std::vector<AllocationRequest> requests;
  for (int i = 0; i < 100; ++i) {
    requests.push_back(request(fmt::format("row {}", i), 2048 + 8 * static_cast<std::uint32_t>(i),
                               MemoryPlacement::kInterleaved, 0, 9));
  }
  requests.push_back(request("too big", 300 * 1024, MemoryPlacement::kInterleaved, 3, 9));
  try {
    place_tile(kTile, requests);
    FAIL() << "placed more than region 1 holds";
  } catch (const PlacementError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("'row 99'"), std::string::npos) << what;  // the largest
    EXPECT_NE(what.find("'row 84'"), std::string::npos) << what;  // the 16th largest
    EXPECT_EQ(what.find("'row 83'"), std::string::npos) << what;
    EXPECT_NE(what.find("and 84 smaller allocations"), std::string::npos) << what;
    EXPECT_LT(std::count(what.begin(), what.end(), '\n'), 40) << what;
  }
}

// A tile that sends from one buffer and receives into another in one phase
// keeps them in different elements when memory allows (rule 3 would make
// the scheduler serialise the sends and the receives), and shares an
// element only when no gap keeps them apart.
TEST(Placement, BuffersKeptApartTakeDifferentElements) {
  const auto elements = [](const schema::Allocation& a) {
    return target::elements_of(AddressRange::from_size(a.address, a.size));
  };
  std::vector requests{request("sent", 20000, MemoryPlacement::kInterleaved, 2, 6),
                       request("received", 20000, MemoryPlacement::kInterleaved, 3, 6)};
  auto placed = place_tile(kTile, requests);
  EXPECT_TRUE(elements(placed[0]).intersects(elements(placed[1])))
      << "without the preference best fit packs them into one range";
  requests[1].apart_from = {0};
  placed = place_tile(kTile, requests);
  EXPECT_FALSE(elements(placed[0]).intersects(elements(placed[1])));
  // Both ways round: the one placed first never moves for the other.
  requests[1].apart_from.clear();
  requests[0].apart_from = {1};
  placed = place_tile(kTile, requests);
  EXPECT_TRUE(elements(placed[0]).intersects(elements(placed[1])));
  requests[1].apart_from = {0};
  placed = place_tile(kTile, requests);
  EXPECT_FALSE(elements(placed[0]).intersects(elements(placed[1])));
  // Data from the top keeps apart from above: weights live throughout.
  std::vector top{request("weights", 20000, MemoryPlacement::kInterleaved),
                  request("sent", 20000, MemoryPlacement::kInterleaved, 0, 4)};
  top[0].apart_from = {1};
  top[1].apart_from = {0};
  placed = place_tile(kTile, top);
  EXPECT_FALSE(elements(placed[0]).intersects(elements(placed[1])));
  // Not live together: nothing to keep apart, best fit as ever.
  std::vector later{request("sent", 20000, MemoryPlacement::kInterleaved, 1, 3),
                    request("received", 20000, MemoryPlacement::kInterleaved, 3, 6)};
  later[1].apart_from = {0};
  const auto reused = place_tile(kTile, later);
  EXPECT_EQ(reused[0].address, reused[1].address);
}

TEST(Placement, BuffersShareAnElementWhenNoGapKeepsThemApart) {
  // Region 1 nearly full for the step: one free range, shorter than an
  // element, is all the received buffer can have.
  const std::uint32_t region1 = target::kLoadLimit - target::kInterleavedRegion.begin;
  std::vector requests{request("filler", region1 - 12000, MemoryPlacement::kInterleaved, 0, 9),
                       request("sent", 4000, MemoryPlacement::kInterleaved, 1, 9),
                       request("received", 4000, MemoryPlacement::kInterleaved, 2, 9)};
  requests[2].apart_from = {1};
  const auto placed = place_tile(kTile, requests);
  EXPECT_TRUE(target::elements_of(AddressRange::from_size(placed[1].address, placed[1].size))
                  .intersects(target::elements_of(AddressRange::from_size(placed[2].address, placed[2].size))));
}

TEST(Placement, MalformedRequestsAreNamed) {
  AllocationRequest bad = request("odd", 64, MemoryPlacement::kAnywhere);
  bad.alignment = 12;
  EXPECT_THROW(place_tile(kTile, std::vector{bad}), PlacementError);
  EXPECT_THROW(place_tile(kTile, std::vector{request("empty", 0, MemoryPlacement::kAnywhere)}),
               PlacementError);
  EXPECT_THROW(place_tile(kTile, std::vector{request("never", 4, MemoryPlacement::kAnywhere, 4, 4)}),
               PlacementError);
  AllocationRequest self = request("self", 64, MemoryPlacement::kAnywhere);
  self.apart_from = {0};
  EXPECT_THROW(place_tile(kTile, std::vector{self}), PlacementError);
  self.apart_from = {1};
  EXPECT_THROW(place_tile(kTile, std::vector{self}), PlacementError);
}

// Random requests, some kept apart from others: whatever is placed obeys
// every rule; placing twice gives the same answer.
RC_GTEST_PROP(Placement, EveryPlacementObeysTheRules, ()) {
  const auto count = *rc::gen::inRange<std::size_t>(1, 40);
  std::vector<AllocationRequest> requests;
  for (std::size_t i = 0; i < count; ++i) {
    AllocationRequest r;
    r.name = "r" + std::to_string(i);
    r.size = *rc::gen::inRange<std::uint32_t>(1, 40000);
    r.tail = *rc::gen::element<std::uint32_t>(0, 16, 32);
    r.alignment = *rc::gen::element<std::uint32_t>(4, 8, 32, 64);
    r.placement = *rc::gen::element(MemoryPlacement::kStandard, MemoryPlacement::kInterleaved,
                                    MemoryPlacement::kAnywhere);
    r.whole_elements = *rc::gen::inRange(0, 8) == 0;
    r.live_from = *rc::gen::inRange<std::uint32_t>(0, 20);
    r.live_until = r.live_from + *rc::gen::inRange<std::uint32_t>(1, 20);
    requests.push_back(r);
  }
  // Some kept apart from another: a preference, so every rule below holds
  // all the same (the moved positions included).
  for (std::size_t i = 0; i < count && count > 1; ++i) {
    if (*rc::gen::inRange(0, 4) != 0) continue;
    const auto other = *rc::gen::inRange<std::size_t>(0, count - 1);
    requests[i].apart_from.push_back(static_cast<std::uint32_t>(other < i ? other : other + 1));
  }
  std::vector<schema::Allocation> placed;
  RC_CLASSIFY(count > 20, "many requests");
  try {
    placed = place_tile(kTile, requests);
  } catch (const PlacementError&) {
    RC_TAG("did not fit");
    return;  // a report, not a crash; fitting is not promised
  }
  RC_ASSERT(place_tile(kTile, requests) == placed);
  for (std::size_t i = 0; i < placed.size(); ++i) {
    const auto& r = requests[i];
    const auto range = AddressRange::from_size(placed[i].address, placed[i].size);
    RC_ASSERT(placed[i].size >= r.size + r.tail);
    RC_ASSERT(placed[i].address % r.alignment == 0);
    RC_ASSERT(inside_any(range, r.placement));
    if (r.whole_elements) {
      const std::uint32_t element = placed[i].address >= 0x80000 ? target::kInterleavedElementSize
                                                                 : target::kStandardElementSize;
      RC_ASSERT(placed[i].size % element == 0);
      RC_ASSERT((placed[i].address - (placed[i].address >= 0x80000 ? 0x80000u : 0x4C000u)) % element == 0);
    }
    for (std::size_t j = 0; j < i; ++j) {
      const bool together = r.live_from < requests[j].live_until && requests[j].live_from < r.live_until;
      if (together) {
        RC_ASSERT(!range.overlaps(AddressRange::from_size(placed[j].address, placed[j].size)));
      }
    }
  }
}

}  // namespace
}  // namespace tessera::compiler
