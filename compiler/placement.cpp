#include "compiler/placement.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "support/checked.hpp"

namespace tessera::compiler {
namespace {

using target::AddressRange;

// How much a memory report lists: the largest live allocations and free
// gaps, enough to see what fills a tile without pages of exchange rows.
constexpr std::size_t kReportedAllocations = 16;
constexpr std::size_t kReportedGaps = 8;

constexpr std::uint32_t element_size(MemoryPlacement region) noexcept {
  return region == MemoryPlacement::kInterleaved ? target::kInterleavedElementSize
                                                 : target::kStandardElementSize;
}

std::string_view region_name(MemoryPlacement region) noexcept {
  switch (region) {
    case MemoryPlacement::kStandard: return "standard memory";
    case MemoryPlacement::kInterleaved: return "interleaved memory";
    case MemoryPlacement::kAnywhere: return "any memory";
    case MemoryPlacement::kStandardFirst: return "standard, then interleaved memory";
  }
  return "?";
}

std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::uint64_t align_down(std::uint64_t value, std::uint64_t alignment) {
  return value / alignment * alignment;
}

struct Placed {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::size_t request = 0;
};

// The bytes a request occupies in `region` and the alignment it needs there.
struct Footprint {
  std::uint64_t bytes = 0;
  std::uint64_t alignment = 0;
};

Footprint footprint(const AllocationRequest& request, MemoryPlacement region) {
  // A size beyond any tile's memory stays beyond it (no wrap): it fits no gap.
  Footprint f{0, request.alignment};
  if (__builtin_add_overflow(request.size, std::uint64_t{request.tail}, &f.bytes)) {
    f.bytes = std::numeric_limits<std::uint64_t>::max();
  }
  if (request.whole_elements) {
    const std::uint32_t element = element_size(region);
    f.alignment = std::max<std::uint64_t>(f.alignment, element);
    if (f.bytes <= target::kSram.size()) f.bytes = align_up(f.bytes, element);
  }
  return f;
}

// `ranges` clipped to [begin, end).
std::vector<AddressRange> clipped(const std::vector<AddressRange>& ranges, std::uint32_t begin,
                                  std::uint32_t end) {
  std::vector<AddressRange> out;
  for (const AddressRange& range : ranges) {
    const std::uint32_t from = std::max(range.begin, begin), to = std::min(range.end, end);
    if (from < to) out.push_back({from, to});
  }
  return out;
}

// Where a request of `placement` may go in `region` under `split`.
std::vector<AddressRange> ranges_for(MemoryPlacement placement, MemoryPlacement region,
                                     RegionSplit split) {
  const std::vector<AddressRange> all = placeable_ranges(region);
  if (region != MemoryPlacement::kStandard) return all;
  if (!split.code_end) return all;
  // Code stops short of the split by the supervisor's fetch lookahead, so
  // with an element-aligned split no row fetches from an element that holds
  // data it may move (reference §2.2).
  return placement == MemoryPlacement::kStandard
             ? clipped(all, 0, *split.code_end - target::kFetchLookahead)
             : clipped(all, *split.code_end, target::kStandardRegion.end);
}

// Free gaps of `range` around the live allocations (sorted by begin).
std::vector<AddressRange> gaps(const AddressRange& range, const std::vector<Placed>& live) {
  std::vector<AddressRange> free;
  std::uint32_t cursor = range.begin;
  for (const Placed& placed : live) {
    if (placed.end <= cursor || placed.begin >= range.end) continue;
    if (placed.begin > cursor) free.push_back({cursor, placed.begin});
    cursor = std::max(cursor, placed.end);
  }
  if (cursor < range.end) free.push_back({cursor, range.end});
  return free;
}

std::string memory_report(target::PhysicalTile tile, std::span<const AllocationRequest> requests,
                          const AllocationRequest& failed, const std::vector<Placed>& live,
                          const std::vector<MemoryPlacement>& regions, RegionSplit split) {
  std::string text = fmt::format(
      "{}: cannot place '{}' ({} bytes{}{}, align {}) in {} at step {}\n  live at step {}:", tile,
      failed.name, failed.size, failed.tail ? fmt::format(" + {} tail", failed.tail) : "",
      failed.whole_elements ? ", whole elements" : "", failed.alignment,
      region_name(failed.placement), failed.live_from, failed.live_from);
  // A full tile holds hundreds of allocations (exchange rows, host batches):
  // the report names the largest, in address order, and counts the rest.
  std::uint64_t total = 0;
  for (const Placed& placed : live) total += placed.end - placed.begin;
  std::vector<const Placed*> listed;
  for (const Placed& placed : live) listed.push_back(&placed);
  const auto larger = [](const Placed* a, const Placed* b) { return a->end - a->begin > b->end - b->begin; };
  const auto by_address = [](const Placed* a, const Placed* b) { return a->begin < b->begin; };
  if (listed.size() > kReportedAllocations) {
    std::stable_sort(listed.begin(), listed.end(), larger);
    listed.resize(kReportedAllocations);
    std::sort(listed.begin(), listed.end(), by_address);
  }
  std::uint64_t listed_bytes = 0;
  for (const Placed* placed : listed) {
    const AllocationRequest& request = requests[placed->request];
    listed_bytes += placed->end - placed->begin;
    text += fmt::format("\n    [{:#07x}, {:#07x}) {:>7} B  '{}'{} (live {}..{})", placed->begin,
                        placed->end, placed->end - placed->begin, request.name,
                        request.tensor.empty() ? "" : fmt::format(" = {}", request.tensor),
                        request.live_from,
                        request.live_until == schema::kLiveToEnd ? std::string("end")
                                                                 : std::to_string(request.live_until));
  }
  if (live.empty()) text += " nothing";
  if (listed.size() < live.size()) {
    text += fmt::format("\n    … and {} smaller allocations, {} bytes", live.size() - listed.size(),
                        total - listed_bytes);
  }
  text += fmt::format("\n  {} bytes live; free gaps:", total);
  std::vector<std::pair<AddressRange, MemoryPlacement>> free;
  for (const MemoryPlacement region : regions) {
    for (const AddressRange& range : ranges_for(failed.placement, region, split)) {
      for (const AddressRange& gap : gaps(range, live)) free.emplace_back(gap, region);
    }
  }
  std::uint64_t free_bytes = 0;
  for (const auto& [gap, region] : free) free_bytes += gap.size();
  const std::size_t all_gaps = free.size();
  if (free.size() > kReportedGaps) {
    std::stable_sort(free.begin(), free.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    free.resize(kReportedGaps);
    std::sort(free.begin(), free.end(),
              [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
  }
  for (const auto& [gap, region] : free) {
    text += fmt::format("\n    [{:#07x}, {:#07x}) {:>7} B  ({})", gap.begin, gap.end, gap.size(),
                        region_name(region));
  }
  if (free.size() < all_gaps) {
    text += fmt::format("\n    … {} gaps in all, {} bytes free", all_gaps, free_bytes);
  }
  return text;
}

void check_request(target::PhysicalTile tile, const AllocationRequest& request, std::size_t index,
                   std::size_t count) {
  const auto where = [&] { return fmt::format("{}: allocation request {} ('{}')", tile, index, request.name); };
  if (request.size == 0) throw PlacementError(fmt::format("{}: size 0", where()));
  if (request.alignment == 0 || (request.alignment & (request.alignment - 1)) != 0) {
    throw PlacementError(fmt::format("{}: alignment {} is not a power of two", where(), request.alignment));
  }
  if (request.live_until <= request.live_from) {
    throw PlacementError(fmt::format("{}: lifetime [{}, {}) is empty", where(), request.live_from,
                                     request.live_until));
  }
  for (const std::uint32_t other : request.apart_from) {
    if (other >= count || other == index) {
      throw PlacementError(fmt::format("{}: apart from request {}, which is {}", where(), other,
                                       other == index ? "itself" : "not in the list"));
    }
  }
}

bool overlap_in_time(const AllocationRequest& a, const AllocationRequest& b) {
  return a.live_from < b.live_until && b.live_from < a.live_until;
}

// The elements `request` should keep apart from: those of the placed
// requests it names that are live with it.
target::ElementSet elements_to_avoid(std::span<const AllocationRequest> requests,
                                     const AllocationRequest& request,
                                     const std::vector<std::optional<Placed>>& placed) {
  target::ElementSet avoid;
  for (const std::uint32_t other : request.apart_from) {
    if (!placed[other] || !overlap_in_time(request, requests[other])) continue;
    avoid |= target::elements_of({placed[other]->begin, placed[other]->end});
  }
  return avoid;
}

// The start nearest the default one within `gap` (bottom up, or from the
// top) at which `bytes` touch none of `avoid`, or nullopt: each try moves
// past the conflicting element farthest along the way it goes.
std::optional<std::uint64_t> start_apart(const AddressRange& gap, std::uint64_t bytes,
                                         std::uint64_t alignment, bool from_top,
                                         target::ElementSet avoid) {
  std::uint64_t start = from_top ? align_down(gap.end - bytes, alignment) : align_up(gap.begin, alignment);
  while (start >= gap.begin && start + bytes <= gap.end) {
    const target::ElementSet shared =
        target::elements_of({static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(start + bytes)}) & avoid;
    if (shared.empty()) return start;
    const std::uint32_t mask = shared.mask();
    if (from_top) {
      const target::MemoryElement lowest(static_cast<unsigned>(std::countr_zero(mask)));
      const std::uint64_t end = target::element_range(lowest).begin;
      if (end < gap.begin + bytes) return std::nullopt;
      start = align_down(end - bytes, alignment);
    } else {
      const target::MemoryElement highest(static_cast<unsigned>(31 - std::countl_zero(mask)));
      start = align_up(target::element_range(highest).end, alignment);
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<AddressRange> placeable_ranges(MemoryPlacement region) {
  switch (region) {
    case MemoryPlacement::kStandard:
      // Around the host aperture and the runtime state, below the fetch limit.
      return {AddressRange{target::kLinkerRegion1.begin, target::kLinkerRegion1.end},
              AddressRange{target::kLinkerRegion2.begin, target::kStandardRegion.end}};
    case MemoryPlacement::kInterleaved:
      return {AddressRange{target::kInterleavedRegion.begin, target::kLoadLimit}};
    case MemoryPlacement::kAnywhere: {
      auto ranges = placeable_ranges(MemoryPlacement::kInterleaved);
      for (const auto& range : placeable_ranges(MemoryPlacement::kStandard)) ranges.push_back(range);
      return ranges;
    }
    case MemoryPlacement::kStandardFirst: {
      auto ranges = placeable_ranges(MemoryPlacement::kStandard);
      for (const auto& range : placeable_ranges(MemoryPlacement::kInterleaved)) ranges.push_back(range);
      return ranges;
    }
  }
  return {};
}

std::vector<schema::Allocation> place_tile(target::PhysicalTile tile,
                                           std::span<const AllocationRequest> requests,
                                           RegionSplit split) {
  for (std::size_t i = 0; i < requests.size(); ++i) check_request(tile, requests[i], i, requests.size());
  std::vector<std::size_t> order(requests.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(requests[a].live_from, requests[a].live_until) <
           std::pair(requests[b].live_from, requests[b].live_until);
  });

  std::vector<schema::Allocation> result(requests.size());
  std::vector<Placed> live;  // sorted by begin
  std::vector<std::optional<Placed>> placed_at(requests.size());  // by request
  for (const std::size_t index : order) {
    const AllocationRequest& request = requests[index];
    std::erase_if(live, [&](const Placed& placed) {
      return requests[placed.request].live_until <= request.live_from;
    });
    const target::ElementSet avoid = elements_to_avoid(requests, request, placed_at);
    const std::vector<MemoryPlacement> regions =
        request.placement == MemoryPlacement::kAnywhere
            ? std::vector{MemoryPlacement::kInterleaved, MemoryPlacement::kStandard}
        : request.placement == MemoryPlacement::kStandardFirst
            ? std::vector{MemoryPlacement::kStandard, MemoryPlacement::kInterleaved}
            : std::vector{request.placement};
    std::optional<Placed> best;
    std::uint64_t best_leftover = 0;
    bool best_apart = false;  // whether `best` keeps clear of `avoid`
    // Data that lives from the start or to the end (bound weights, which
    // live from the parameters' load to their last layer; constants) takes
    // the top of its gap, so it piles up at the top of a region and leaves
    // the rest one range for the data that comes and goes: whole-element
    // requests find whole elements there, and region 1's last element, which
    // the load limit leaves short of whole, holds weights instead of staying
    // empty. Code keeps the bottom-up order (its addresses are not data's
    // concern).
    const bool from_top = (request.live_from == 0 || request.live_until == schema::kLiveToEnd) &&
                          request.placement != MemoryPlacement::kStandard;
    for (const MemoryPlacement region : regions) {
      const Footprint need = footprint(request, region);
      for (const AddressRange& range : ranges_for(request.placement, region, split)) {
        for (const AddressRange& gap : gaps(range, live)) {
          std::uint64_t start = align_up(gap.begin, need.alignment);
          if (start > gap.end || need.bytes > gap.end - start) continue;
          if (from_top) start = align_down(gap.end - need.bytes, need.alignment);
          bool apart = true;
          if (!avoid.empty()) {
            const auto moved = start_apart(gap, need.bytes, need.alignment, from_top, avoid);
            apart = moved.has_value();
            if (moved) start = *moved;
          }
          const std::uint64_t end = start + need.bytes;
          const std::uint64_t leftover = gap.end - end + (start - gap.begin);
          if (!best || (apart && !best_apart) ||
              (apart == best_apart &&
               (leftover < best_leftover ||
                (leftover == best_leftover && (from_top ? start > best->begin : start < best->begin))))) {
            best = Placed{static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end), index};
            best_leftover = leftover;
            best_apart = apart;
          }
        }
      }
      if (best) break;  // the preferred region had room
    }
    if (!best) throw PlacementError(memory_report(tile, requests, request, live, regions, split));
    placed_at[index] = *best;
    live.insert(std::upper_bound(live.begin(), live.end(), *best,
                                 [](const Placed& a, const Placed& b) { return a.begin < b.begin; }),
                *best);
    result[index] = schema::Allocation{static_cast<std::uint32_t>(index + 1),
                                       request.name,
                                       request.tensor,
                                       best->begin,
                                       best->end - best->begin,
                                       request.live_from,
                                       request.live_until,
                                       request.kind,
                                       request.provenance};
  }
  return result;
}

void require_fits_alone(target::PhysicalTile tile, const AllocationRequest& request) {
  (void)place_tile(tile, std::span(&request, 1));
}

}  // namespace tessera::compiler
