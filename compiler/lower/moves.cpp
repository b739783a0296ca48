#include "compiler/lower/moves.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "compiler/lower/lower.hpp"
#include "kernels/registry.hpp"
#include "support/checked.hpp"
#include "support/error.hpp"
#include "support/little_endian.hpp"
#include "target/exchange_timing.hpp"

namespace tessera::compiler::lower {
namespace {

bool whole_words(std::uint32_t offset, std::uint32_t bytes) { return offset % 4 == 0 && bytes % 4 == 0; }

std::uint32_t round_down_word(std::uint32_t value) { return value & ~3u; }
std::uint32_t round_up_word(std::uint32_t value) { return (value + 3u) & ~3u; }

// Appends a transfer, cut into pieces of at most the words one message
// carries: a planned transfer (the debug section's record of it) is one
// message.
void append_transfer(std::vector<Transfer>& transfers, const Location& source, std::uint32_t words,
                     const std::vector<Location>& destinations, std::uint32_t provenance) {
  for (std::uint32_t done = 0; done < words;) {
    const std::uint32_t piece = std::min(words - done, target::kMaxTransferWords);
    std::vector<Location> to = destinations;
    for (auto& destination : to) destination.offset += 4 * done;
    transfers.push_back(Transfer{Location{source.tile, source.buffer, source.offset + 4 * done}, piece,
                                 std::move(to), provenance});
    done += piece;
  }
}

// Element moves within one tile from one buffer into another.
struct TableGroup {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;  // (destination, source) elements
};

}  // namespace

MoveLowering::MoveLowering(Program& program, std::string label, std::uint32_t provenance,
                           std::uint32_t element_bytes)
    : program_(program), label_(std::move(label)), provenance_(provenance),
      element_bytes_(element_bytes) {}

void MoveLowering::move(const Location& destination, const Location& source) {
  move_run(destination, source, element_bytes_);
}

void MoveLowering::move_run(const Location& destination, const Location& source, std::uint32_t bytes) {
  if (bytes == 0 || bytes % element_bytes_ != 0) {
    throw LoweringError(fmt::format("internal: a move of {} bytes is not whole {}-byte elements ({})",
                                    bytes, element_bytes_, label_));
  }
  const RunKey key{destination.tile, destination.buffer, source.tile, source.buffer};
  if (!last_key_ || *last_key_ != key) {
    last_key_ = key;
    last_runs_ = &runs_[key];  // std::map: the reference stays valid as the map grows
  }
  auto& runs = *last_runs_;
  if (!runs.empty()) {
    Run& last = runs.back();
    if (last.destination + last.bytes == destination.offset && last.source + last.bytes == source.offset) {
      last.bytes = checked_add(last.bytes, bytes, "move run bytes");
      return;
    }
  }
  runs.push_back({destination.offset, source.offset, bytes});
}

std::string MoveLowering::move_kernel() const {
  switch (element_bytes_) {
    case 4: return std::string(kernels::kMoveElementsB32);
    case 2: return std::string(kernels::kMoveElementsB16);
    default: return std::string(kernels::kMoveElementsB8);
  }
}

std::vector<Transfer> MoveLowering::finish(std::map<LogicalTile, std::vector<KernelRun>>& compute) {
  const std::uint32_t s = element_bytes_;
  // Whole-word transfers by source range → their destinations (multicast).
  std::map<std::tuple<Location, std::uint32_t>, std::vector<Location>> direct;
  // Per destination tile, element moves grouped by (destination, source) buffer.
  std::map<LogicalTile, std::map<std::pair<BufferId, BufferId>, TableGroup>> tables;
  std::map<LogicalTile, std::vector<KernelRun>> copies;
  // Staging: per destination tile, the runs to bring in, by source (tile, buffer).
  std::map<LogicalTile, std::map<std::pair<LogicalTile, BufferId>, std::vector<std::pair<BufferId, Run>>>>
      staged;

  auto add_pairs = [&](LogicalTile tile, BufferId to, BufferId from, const Run& run) {
    auto& group = tables[tile][{to, from}];
    for (std::uint32_t b = 0; b < run.bytes; b += s) {
      group.pairs.emplace_back((run.destination + b) / s, (run.source + b) / s);
    }
  };

  // A run within one tile whose ends sit at the same place in their words:
  // its whole words are one copy_words call when there are enough of them,
  // and only the ≤ 3 bytes before and after them are element moves.
  auto add_local = [&](LogicalTile tile, BufferId to, BufferId from, const Run& run) {
    if (run.destination % 4 == run.source % 4) {
      const std::uint32_t head = std::min(run.bytes, (4 - run.destination % 4) % 4);
      const std::uint32_t words = (run.bytes - head) / 4;
      if (words >= kCopyWordsMinimum) {
        const std::uint32_t tail = run.bytes - head - 4 * words;
        if (head > 0) add_pairs(tile, to, from, Run{run.destination, run.source, head});
        copies[tile].push_back(
            KernelRun{std::string(kernels::kCopyWords),
                      {{2, to, run.destination + head}, {3, from, run.source + head}},
                      {{4, words}},
                      provenance_});
        if (tail > 0) {
          const std::uint32_t done = head + 4 * words;
          add_pairs(tile, to, from, Run{run.destination + done, run.source + done, tail});
        }
        return;
      }
    }
    add_pairs(tile, to, from, run);
  };

  for (const auto& [key, runs] : runs_) {
    const auto& [to_tile, to_buffer, from_tile, from_buffer] = key;
    for (const Run& run : runs) {
      const bool words = whole_words(run.destination, run.bytes) && whole_words(run.source, run.bytes);
      if (to_tile == from_tile) {
        add_local(to_tile, to_buffer, from_buffer, run);
      } else if (words) {
        direct[{Location{from_tile, from_buffer, run.source}, run.bytes / 4}].push_back(
            Location{to_tile, to_buffer, run.destination});
      } else {
        staged[to_tile][{from_tile, from_buffer}].emplace_back(to_buffer, run);
      }
    }
  }

  std::vector<Transfer> transfers;
  for (auto& [source, destinations] : direct) {
    append_transfer(transfers, std::get<0>(source), std::get<1>(source), destinations, provenance_);
  }

  // Staged runs: merge the covering words per source, bring them in, then
  // move each element from the staging buffer into place.
  if (!staged.empty()) {
    Buffer staging;
    staging.name = fmt::format("staging ({})", label_);
    staging.kind = schema::AllocationKind::kStaging;
    staging.provenance = provenance_;
    const BufferId staging_id = checked_cast<BufferId>(program_.buffers.size(), "buffer id");
    for (auto& [tile, by_source] : staged) {
      std::uint32_t cursor = 0;
      for (auto& [source, runs] : by_source) {
        // Word intervals [begin, end) covering the runs, merged.
        std::vector<std::pair<std::uint32_t, std::uint32_t>> intervals;
        for (const auto& [to_buffer, run] : runs) {
          intervals.emplace_back(round_down_word(run.source), round_up_word(run.source + run.bytes));
        }
        std::sort(intervals.begin(), intervals.end());
        std::vector<std::pair<std::uint32_t, std::uint32_t>> merged;
        for (const auto& interval : intervals) {
          if (!merged.empty() && interval.first <= merged.back().second) {
            merged.back().second = std::max(merged.back().second, interval.second);
          } else {
            merged.push_back(interval);
          }
        }
        // Where each merged interval lands in the staging buffer.
        std::vector<std::uint32_t> landing;
        for (const auto& [begin, end] : merged) {
          landing.push_back(cursor);
          append_transfer(transfers, Location{source.first, source.second, begin}, (end - begin) / 4,
                          {Location{tile, staging_id, cursor}}, provenance_);
          cursor = checked_add(cursor, end - begin, "staging bytes");
        }
        for (const auto& [to_buffer, run] : runs) {
          const auto it = std::upper_bound(merged.begin(), merged.end(),
                                           std::pair{run.source, ~0u}) - 1;
          const std::uint32_t at = landing[static_cast<std::size_t>(it - merged.begin())] +
                                   (run.source - it->first);
          add_local(tile, to_buffer, staging_id, Run{run.destination, at, run.bytes});
        }
      }
      staging.bytes[tile] = cursor;
    }
    program_.add_buffer(std::move(staging));
  }

  // Tables: one constant buffer, per tile the groups back to back.
  if (!tables.empty()) {
    Buffer table;
    table.name = fmt::format("move table ({})", label_);
    table.kind = schema::AllocationKind::kScratch;
    table.provenance = provenance_;
    const BufferId table_id = checked_cast<BufferId>(program_.buffers.size(), "buffer id");
    std::map<LogicalTile, std::vector<KernelRun>> moves;
    for (const auto& [tile, groups] : tables) {
      std::vector<std::uint8_t> bytes;
      for (const auto& [buffers, group] : groups) {
        const auto offset = checked_cast<std::uint32_t>(bytes.size(), "move table offset");
        for (const auto& [to, from] : group.pairs) {
          append_u32_le(bytes, to);
          append_u32_le(bytes, from);
        }
        const std::uint32_t out_elements = program_.buffers[buffers.first].bytes.at(tile) / s;
        const std::uint32_t in_elements = program_.buffers[buffers.second].bytes.at(tile) / s;
        moves[tile].push_back(
            KernelRun{move_kernel(),
                      {{2, buffers.first, 0}, {3, buffers.second, 0}, {4, table_id, offset}},
                      {{5, checked_cast<std::uint32_t>(group.pairs.size(), "move table entries")},
                       {6, out_elements},
                       {7, in_elements}},
                      provenance_});
      }
      table.bytes[tile] = checked_cast<std::uint32_t>(bytes.size(), "move table bytes");
      table.contents[tile] = std::move(bytes);
    }
    program_.add_buffer(std::move(table));
    for (auto& [tile, runs] : moves) {
      auto& list = copies[tile];
      list.insert(list.end(), runs.begin(), runs.end());
    }
  }
  for (auto& [tile, runs] : copies) {
    auto& list = compute[tile];
    list.insert(list.end(), runs.begin(), runs.end());
  }
  runs_.clear();
  last_key_.reset();
  last_runs_ = nullptr;
  return transfers;
}

}  // namespace tessera::compiler::lower
