#include "sim/sync_controller.hpp"

#include <algorithm>

namespace tessera::sim {

void InternalSync::reset(std::size_t tile_count, std::size_t participants,
                         std::uint64_t latency) {
  round_of_.assign(tile_count, 0);
  rounds_.clear();
  participants_ = participants;
  latency_ = latency;
}

std::vector<Release> InternalSync::arrive(std::size_t tile, std::uint64_t cycle) {
  const std::uint64_t round = round_of_.at(tile)++;
  Round& state = rounds_[round];
  state.arrivals.push_back(Release{tile, cycle});
  ++state.present;
  return complete_if_ready(round);
}

std::vector<Release> InternalSync::skip(std::size_t tile) {
  const std::uint64_t round = round_of_.at(tile)++;
  ++rounds_[round].present;
  return complete_if_ready(round);
}

std::size_t InternalSync::present(std::uint64_t round) const {
  const auto it = rounds_.find(round);
  return it == rounds_.end() ? 0 : it->second.present;
}

std::vector<Release> InternalSync::complete_if_ready(std::uint64_t round) {
  auto it = rounds_.find(round);
  if (it == rounds_.end() || it->second.present < participants_) return {};
  std::uint64_t last = 0;
  for (const auto& arrival : it->second.arrivals) last = std::max(last, arrival.cycle);
  std::vector<Release> releases = std::move(it->second.arrivals);
  for (auto& release : releases) {
    release.cycle = last + latency_;
    release.round = round;
  }
  rounds_.erase(it);
  return releases;
}

}  // namespace tessera::sim
