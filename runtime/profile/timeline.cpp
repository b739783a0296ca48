#include "runtime/profile/timeline.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace tessera::profile {

Timeline::Timeline(const schema::Profile& profile) : profile_(&profile) {
  // Where each tile's first step sits against the first tile's (shared
  // origin), as a signed wrapping delta; the earliest becomes offset 0.
  std::vector<std::int64_t> bases(profile.tiles.size(), 0);
  if (profile.origin == schema::ClockOrigin::kShared) {
    std::optional<std::uint32_t> reference;
    std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
    for (std::size_t t = 0; t < profile.tiles.size(); ++t) {
      const auto& steps = profile.tiles[t].steps;
      if (steps.empty()) continue;
      if (!reference) reference = steps.front().start_cycle;
      bases[t] = static_cast<std::int32_t>(steps.front().start_cycle - *reference);
      earliest = std::min(earliest, bases[t]);
    }
    if (reference) {
      for (auto& base : bases) base -= earliest;
    }
  }
  tiles_.resize(profile.tiles.size());
  for (std::size_t t = 0; t < profile.tiles.size(); ++t) {
    const auto& steps = profile.tiles[t].steps;
    std::uint64_t offset = static_cast<std::uint64_t>(bases[t]);
    TileSpan& span = tiles_[t];
    span.first = span.end = offset;
    for (std::size_t s = 0; s < steps.size(); ++s) {
      if (s > 0)
        offset += static_cast<std::uint32_t>(steps[s].start_cycle - steps[s - 1].start_cycle);
      const Sample sample{static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(s), offset,
                          steps[s].cycles()};
      samples_.push_back(sample);
      span.end = std::max(span.end, sample.end());
      span.stepped += sample.cycles;
    }
    total_cycles_ = std::max(total_cycles_, span.end);
  }
}

}  // namespace tessera::profile
