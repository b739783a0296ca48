#pragma once
// The C600's cycle profile: a package built with profiling records cycle
// samples into a buffer on each tile (schema/profile_samples.hpp owns the
// layout); after the run the transport reads the buffers over TDI and turns
// them into the same schema::Profile the simulator produces, with per-tile
// origins (raw 32-bit counters; docs/PROFILES.md "On the C600").

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "schema/model.hpp"
#include "schema/profile.hpp"

namespace tessera::backends::c600 {

// What reading the samples needs from the package, kept from load().
struct SampledPackage {
  std::vector<std::uint8_t> build_digest;
  std::vector<std::string> provenance;
  std::vector<schema::TileDebug> tiles;  // those with a sample buffer, by physical tile
};

// nullopt when no tile's debug section names a sample buffer (built without profiling).
std::optional<SampledPackage> sampled_package(const schema::Application& application);

// Reads each tile's buffer with `read_sram` (header first, then the records
// it says were written) and builds the profile. PackageError (with the
// tile) when a buffer breaks its layout.
using SramReader =
    std::function<void(target::PhysicalTile, std::uint32_t address, std::span<std::uint8_t>)>;
schema::Profile read_device_profile(const SampledPackage& package, const SramReader& read_sram,
                                    std::uint64_t clock_hz);

}  // namespace tessera::backends::c600
