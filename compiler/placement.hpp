#pragma once
// Placement: one per-tile lifetime allocator for everything a tile holds —
// code, exchange rows, host programs and packets, receive staging, tensors —
// decided once, late (ARCHITECTURE.md decision 8).
//
// The rules it honours (ipu21-target.md §2; compiler-prior-art.md §4.1):
//   * code and exchange rows only below 0x80000 (the executable range);
//   * interleaved-class data in region 1; standard-class data in region 0;
//   * nothing in the entry trampoline, the host exchange aperture or the
//     runtime state (target::memory_map's reserved ranges), nothing past
//     the loader limit;
//   * alignment (a power of two), and access tails: a consumer may read
//     `tail` bytes past the payload, so they are part of the allocation;
//   * a request for whole elements (an operand that must not share an
//     element with anything else, an exchange row table) is rounded to whole
//     effective elements — 16 KiB in region 0, 32 KiB in region 1 — in size
//     and alignment, so nothing else can share one;
//   * two allocations whose lifetimes overlap never overlap in memory.
//     Lifetimes are [live_from, live_until) in program steps.
//
// Requests are placed in order of (live_from, live_until, index): at each, the
// allocations that died by then are freed and the request takes the best
// fitting free gap (least leftover, then lowest address). Data that lives
// from the start or to the end (bound weights, constants) takes the top of
// that gap (and, on a tie, the highest), so it piles up at a region's top and
// the data that comes and goes keeps one range below it, with its whole
// elements whole.
// Deterministic.
// When a request does not fit, PlacementError carries a per-tile memory
// report: what is live at that step, how big, where, and the free gaps.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "schema/model.hpp"
#include "support/error.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"

namespace tessera::compiler {

class PlacementError : public Error {
 public:
  using Error::Error;
};

enum class MemoryPlacement : std::uint8_t {
  kStandard,     // region 0 (code, exchange rows: the only fetchable region)
  kInterleaved,  // region 1
  kAnywhere,     // region 1 first (region 0 is scarce and holds the code), then region 0
  // Region 0 first, then region 1: data that may lie in region 0 (bound
  // weights) on a tile whose data outgrew region 1, so region 1 stays for
  // the operands that must be interleaved.
  kStandardFirst,
};

struct AllocationRequest {
  std::string name;
  std::string tensor;  // graph value, empty when none
  schema::AllocationKind kind = schema::AllocationKind::kTensor;
  std::uint64_t size = 0;       // payload bytes (> 0; more than a tile holds is a PlacementError)
  std::uint32_t tail = 0;       // bytes a consumer may read past the payload
  std::uint32_t alignment = 4;  // a power of two
  MemoryPlacement placement = MemoryPlacement::kAnywhere;
  bool whole_elements = false;
  std::uint32_t live_from = 0;
  std::uint32_t live_until = schema::kLiveToEnd;  // exclusive
  std::uint32_t provenance = schema::kNoProvenance;
  // Requests (indices into the same list) whose memory elements this one
  // should not share while both are live: the tile sends from one and
  // receives into the other in one exchange phase, and rule 3 of the
  // element-conflict rules (a send's read window and a receive's write
  // window on one tile may not overlap in time in one element) would make
  // the scheduler serialise them. A preference, not a constraint: a gap
  // position apart from them wins over any that shares their elements, and
  // without one the request takes the usual best fit.
  std::vector<std::uint32_t> apart_from;
};

// The free memory a tile offers, by region: the loadable SRAM minus the
// reserved ranges of target/memory_map.hpp.
std::vector<target::AddressRange> placeable_ranges(MemoryPlacement region);

// Where region 0 is split between code and data on a tile: with a
// `code_end`, kStandard requests (code, rows) end at least the fetch
// lookahead below it (a memory-element boundary, so no row fetches from an
// element holding data), and kAnywhere and kStandardFirst requests use
// region 0 only from `code_end` up. Without one, every request may use all
// of region 0.
struct RegionSplit {
  std::optional<std::uint32_t> code_end;
};

// Places every request on `tile`; the result's i-th allocation (id i + 1)
// answers request i and its size includes tail and element rounding.
// PlacementError (with the memory report) when one does not fit, or when a
// request is malformed (size 0, alignment not a power of two, lifetime empty).
std::vector<schema::Allocation> place_tile(target::PhysicalTile tile,
                                           std::span<const AllocationRequest> requests,
                                           RegionSplit split = {});

// PlacementError with the memory report when `request` does not fit on
// `tile` even with nothing else there: lowering asks for every tensor shard
// before it spends time on moves that could never be placed.
void require_fits_alone(target::PhysicalTile tile, const AllocationRequest& request);

}  // namespace tessera::compiler
