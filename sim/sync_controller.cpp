#include "sim/sync_controller.hpp"

#include <algorithm>

namespace tessera::sim {

void SyncRounds::reset(std::size_t tile_count, std::size_t participants, std::uint64_t latency,
                       std::function<bool()> grant) {
  round_of_.assign(tile_count, 0);
  rounds_.clear();
  participants_ = participants;
  latency_ = latency;
  grant_ = std::move(grant);
  waiting_for_grant_ = false;
}

std::vector<Release> SyncRounds::arrive(std::size_t tile, std::uint64_t cycle) {
  const std::uint64_t round = round_of_.at(tile)++;
  Round& state = rounds_[round];
  state.arrivals.push_back(Release{tile, cycle, round});
  ++state.present;
  return complete_if_ready(round, 0);
}

std::vector<Release> SyncRounds::skip(std::size_t tile) {
  const std::uint64_t round = round_of_.at(tile)++;
  ++rounds_[round].present;
  return complete_if_ready(round, 0);
}

std::vector<Release> SyncRounds::retry(std::uint64_t not_before) {
  if (rounds_.empty()) return {};
  return complete_if_ready(rounds_.begin()->first, not_before);
}

std::size_t SyncRounds::present(std::uint64_t round) const {
  const auto it = rounds_.find(round);
  return it == rounds_.end() ? 0 : it->second.present;
}

std::vector<Release> SyncRounds::complete_if_ready(std::uint64_t round, std::uint64_t not_before) {
  // Rounds complete in order: a later round cannot overtake a pending one.
  if (rounds_.empty() || round != rounds_.begin()->first) return {};
  auto it = rounds_.begin();
  if (it->second.present < participants_) return {};
  if (grant_ && !grant_()) {
    waiting_for_grant_ = true;
    return {};
  }
  waiting_for_grant_ = false;
  std::uint64_t last = not_before;
  for (const auto& arrival : it->second.arrivals) last = std::max(last, arrival.cycle);
  std::vector<Release> releases = std::move(it->second.arrivals);
  for (auto& release : releases) release.cycle = last + latency_;
  rounds_.erase(it);
  return releases;
}

void HostSyncRounds::reset(std::size_t tile_count, std::size_t participants,
                           std::uint64_t latency, std::function<bool()> grant) {
  next_round_.assign(tile_count, 0);
  arrivals_.clear();
  skipped_.clear();
  participants_ = participants;
  latency_ = latency;
  round_ = 0;
  grant_ = std::move(grant);
}

std::vector<Release> HostSyncRounds::arrive(std::size_t tile, std::uint64_t cycle) {
  const std::uint64_t round = next_round_.at(tile)++;
  arrivals_[round].push_back(Release{tile, cycle, round});
  return complete_if_ready(0);
}

std::vector<Release> HostSyncRounds::leave(std::size_t tile) {
  std::uint64_t& next = next_round_.at(tile);
  for (std::uint64_t k = 0; k < kRoundsPerPhase; ++k) ++skipped_[next + k];
  next += kRoundsPerPhase;
  return complete_if_ready(0);
}

std::size_t HostSyncRounds::present(std::uint64_t round) const {
  const auto arrived = arrivals_.find(round);
  const auto skipped = skipped_.find(round);
  return (arrived == arrivals_.end() ? 0 : arrived->second.size()) +
         (skipped == skipped_.end() ? 0 : skipped->second);
}

std::vector<Release> HostSyncRounds::retry(std::uint64_t not_before) {
  return complete_if_ready(not_before);
}

void HostSyncRounds::pass_rounds_everyone_skips() {
  // Each tile arrives at or skips a round once, so a round skipped by every
  // participant has no arrivals.
  for (auto skipped = skipped_.find(round_);
       skipped != skipped_.end() && skipped->second >= participants_;
       skipped = skipped_.find(round_)) {
    skipped_.erase(skipped);
    ++round_;
  }
}

std::vector<Release> HostSyncRounds::complete_if_ready(std::uint64_t not_before) {
  pass_rounds_everyone_skips();
  const auto arrived = arrivals_.find(round_);
  if (arrived == arrivals_.end() || arrived->second.empty()) return {};
  const auto skipped = skipped_.find(round_);
  const std::size_t skipping = skipped == skipped_.end() ? 0 : skipped->second;
  if (arrived->second.size() + skipping < participants_) return {};
  if (grant_ && !grant_()) return {};
  std::uint64_t last = not_before;
  for (const auto& arrival : arrived->second) last = std::max(last, arrival.cycle);
  std::vector<Release> releases = std::move(arrived->second);
  arrivals_.erase(arrived);
  if (skipped != skipped_.end()) skipped_.erase(skipped);
  for (auto& release : releases) release.cycle = last + latency_;
  ++round_;
  return releases;
}

}  // namespace tessera::sim
