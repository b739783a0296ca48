#pragma once
// The clock that turns a C600's cycles into time in traces and profiles: the
// C600 profile default of the prior art's CLI (ipu21-target.md §5.6, "not
// verified") [INF]. The C600 backend's profiles use it; the simulator's default
// (SimOptions::clock_hz) is checked against it (sim/chip_profile.cpp).

#include <cstdint>

namespace tessera::target {

inline constexpr std::uint64_t kC600ClockHz = 1'500'000'000;

}  // namespace tessera::target
