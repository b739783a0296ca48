#pragma once
// A profile's steps placed on one clock: every step becomes a sample with an
// offset from the run's origin and its wrapping 32-bit duration. Everything
// that reads a profile (queries, the report) works on these samples, so the
// wrapping arithmetic lives here once.
//
// Offsets accumulate the wrapping distance from each step's start to the
// next one's, so a tile may run longer than 2^32 cycles as long as no single
// gap or step does. With a shared origin (the simulator) the tiles' first
// starts are compared as signed 32-bit wrapping deltas (a skew below 2^31
// cycles); with per-tile origins (hardware samples) every tile starts at 0.

#include <cstdint>
#include <vector>

#include "schema/profile.hpp"

namespace tessera::profile {

struct Sample {
  std::uint32_t tile_index = 0;  // into Profile::tiles
  std::uint32_t step_index = 0;  // into that tile's steps
  std::uint64_t offset = 0;      // start, in cycles from the run's origin
  std::uint32_t cycles = 0;      // (end - start) mod 2^32
  std::uint64_t end() const noexcept { return offset + cycles; }
};

struct TileSpan {
  std::uint64_t first = 0;    // offset of the tile's first step
  std::uint64_t end = 0;      // end of its last step (first when it has none)
  std::uint64_t stepped = 0;  // cycles its steps cover
};

class Timeline {
 public:
  explicit Timeline(const schema::Profile& profile);

  const schema::Profile& profile() const noexcept { return *profile_; }
  const std::vector<Sample>& samples() const noexcept { return samples_; }  // by tile, then step
  const std::vector<TileSpan>& tiles() const noexcept { return tiles_; }    // by Profile::tiles
  const schema::ProfileStep& step(const Sample& sample) const {
    return profile_->tiles[sample.tile_index].steps[sample.step_index];
  }
  const schema::TileProfile& tile(const Sample& sample) const {
    return profile_->tiles[sample.tile_index];
  }
  // The run's length: the latest end of any tile (offsets start at 0).
  std::uint64_t total_cycles() const noexcept { return total_cycles_; }
  double milliseconds(std::uint64_t cycles) const noexcept {
    return static_cast<double>(cycles) * 1e3 / static_cast<double>(profile_->clock_hz);
  }

 private:
  const schema::Profile* profile_;
  std::vector<Sample> samples_;
  std::vector<TileSpan> tiles_;
  std::uint64_t total_cycles_ = 0;
};

}  // namespace tessera::profile
