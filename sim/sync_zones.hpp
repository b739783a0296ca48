#pragma once
// The sync zones the chip tells apart when a tile waits (sim/chip.cpp handles
// them; the cycle profile names the wait by them).
#include <cstdint>

namespace tessera::sim {

// Zones that involve the host: a device sync that takes an HSP credit.
constexpr bool is_host_zone(std::uint32_t zone) noexcept { return zone == 7 || zone == 15; }
// `sync 0`: a tile waits for the host to serve its packets (a host phase).
constexpr std::uint32_t kHostReceiveZone = 0;

// A tile whose exchange row returned waits here, like at a sync, until the
// phase's words have moved (the fabric needs every row of the phase).
constexpr std::uint32_t kExchangeWait = 0x100;

}  // namespace tessera::sim
