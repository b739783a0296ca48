#pragma once
// Synchronization between tiles (reference §6): the device-wide internal
// sync (`sync 3`) in rounds, with `sans 0` as a declared non-participation in
// the current round. Plain C++: it decides who is released when; the chip
// turns releases into SystemC events.
//
// A round completes when every participating tile has arrived at it or
// skipped it; all arrivals are then released together at the last arrival
// plus the sync latency. A tile that halted without skipping never arrives,
// so the others wait forever — a Deadlock, as it would be on the hardware.

#include <cstdint>
#include <map>
#include <vector>

namespace tessera::sim {

struct Release {
  std::size_t tile = 0;  // index among the chip's tiles
  std::uint64_t cycle = 0;
  std::uint64_t round = 0;  // the internal-sync round completed (it opens an exchange phase)
};

class InternalSync {
 public:
  // `participants` is the number of tiles taking part (the started ones).
  void reset(std::size_t tile_count, std::size_t participants, std::uint64_t latency);

  // A tile arrives at the internal sync at `cycle`; returns the releases
  // this completes (empty while others are missing).
  std::vector<Release> arrive(std::size_t tile, std::uint64_t cycle);
  // A tile skips the current round (`sans 0`).
  std::vector<Release> skip(std::size_t tile);

  // The round a tile is in (how many internal syncs it passed or skipped).
  std::uint64_t round_of(std::size_t tile) const { return round_of_.at(tile); }
  // How many tiles have arrived at or skipped a round.
  std::size_t present(std::uint64_t round) const;

 private:
  struct Round {
    std::vector<Release> arrivals;
    std::size_t present = 0;
  };
  std::vector<Release> complete_if_ready(std::uint64_t round);

  std::vector<std::uint64_t> round_of_;
  std::map<std::uint64_t, Round> rounds_;
  std::size_t participants_ = 0;
  std::uint64_t latency_ = 0;
};

}  // namespace tessera::sim
