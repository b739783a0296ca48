#pragma once
// Synchronization between tiles (reference §6), in rounds. Plain C++: it
// decides who is released when; the chip turns releases into SystemC events.
//
// A round completes when every participating tile has arrived at it or
// skipped it (`sans`), and — for host syncs — the host has granted it: all
// arrivals are released together at the later of the last arrival and the
// grant, plus the sync latency. A tile that halted without skipping never
// arrives, so the others wait forever: a Deadlock, as on the hardware.
//
// The device-wide internal sync (`sync 3`, skipped by `sans 0`) needs no
// grant. Host syncs (`sync 7` and `sync 15`, skipped by `sans 1`) each take
// one credit of an HSP mark the host writes (driver-host-protocol.md §8.6):
// while the mark is 0 the device makes no progress past the sync.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace tessera::sim {

struct Release {
  std::size_t tile = 0;  // index among the chip's tiles
  std::uint64_t cycle = 0;
  std::uint64_t round = 0;  // the round completed (an internal one opens an exchange phase)
};

class SyncRounds {
 public:
  // `grant`, when set, is asked once per round that is otherwise complete;
  // false leaves the round pending until retry().
  void reset(std::size_t tile_count, std::size_t participants, std::uint64_t latency,
             std::function<bool()> grant = {});

  // A tile arrives at `cycle`; returns the releases this completes.
  std::vector<Release> arrive(std::size_t tile, std::uint64_t cycle);
  // A tile skips the round it is in.
  std::vector<Release> skip(std::size_t tile);
  // Asks the grant again for the oldest complete round; releases no earlier
  // than `not_before`.
  std::vector<Release> retry(std::uint64_t not_before);

  // The round a tile is in (how many syncs of this kind it passed or skipped).
  std::uint64_t round_of(std::size_t tile) const { return round_of_.at(tile); }
  // How many tiles have arrived at or skipped a round.
  std::size_t present(std::uint64_t round) const;
  // Whether a complete round waits for its grant.
  bool waiting_for_grant() const noexcept { return waiting_for_grant_; }

 private:
  struct Round {
    std::vector<Release> arrivals;
    std::size_t present = 0;
  };
  std::vector<Release> complete_if_ready(std::uint64_t round, std::uint64_t not_before);

  std::vector<std::uint64_t> round_of_;
  std::map<std::uint64_t, Round> rounds_;
  std::size_t participants_ = 0;
  std::uint64_t latency_ = 0;
  std::function<bool()> grant_;
  bool waiting_for_grant_ = false;
};

// Host syncs (zones 7 and 15). A host phase takes two rounds — the targets'
// and owners' entry (`sync 7` / `sync 15`) and everyone's exit (`sync 7`) —
// while a tile with no part in it runs a single `sans 1; sync 1`
// (ipu21-target.md §4.5, §6). Every tile counts the host rounds it has
// arrived at or skipped; `sans 1` skips the two rounds of one host phase
// [INF], so a tile idle in one batch joins the next batch's rounds, never the
// rest of the one it skipped (the startup rendezvous is a single round all
// tiles arrive at). A round completes when every participating tile has
// arrived at it or skipped it, and the host granted it; rounds complete in
// order. A round every tile skips has no host sync in it: it completes at
// once and takes no credit [INF].
class HostSyncRounds {
 public:
  void reset(std::size_t tile_count, std::size_t participants, std::uint64_t latency,
             std::function<bool()> grant);
  std::vector<Release> arrive(std::size_t tile, std::uint64_t cycle);
  // `sans 1`: the tile skips the two rounds of its next host phase.
  std::vector<Release> leave(std::size_t tile);
  std::vector<Release> retry(std::uint64_t not_before);
  // The oldest round not complete yet.
  std::uint64_t round() const noexcept { return round_; }
  // The round a tile's next host sync is in.
  std::uint64_t round_of(std::size_t tile) const { return next_round_.at(tile); }
  // How many tiles have arrived at or skipped a round.
  std::size_t present(std::uint64_t round) const;
  // Whether the oldest round has every tile and waits only for the host's
  // grant: the host can make progress; otherwise only the tiles can.
  bool waiting_for_grant() const { return present(round_) >= participants_; }

 private:
  static constexpr std::uint64_t kRoundsPerPhase = 2;
  std::vector<Release> complete_if_ready(std::uint64_t not_before);
  void pass_rounds_everyone_skips();

  std::vector<std::uint64_t> next_round_;  // per tile: the round its next host sync is in
  std::map<std::uint64_t, std::vector<Release>> arrivals_;  // by round
  std::map<std::uint64_t, std::size_t> skipped_;            // tiles that skip it, by round
  std::size_t participants_ = 0;
  std::uint64_t latency_ = 0;
  std::uint64_t round_ = 0;
  std::function<bool()> grant_;
};

}  // namespace tessera::sim
