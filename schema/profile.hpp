#pragma once
// Cycle profiles (profile.capnp): per-tile steps with raw 32-bit cycle
// counters. The simulator and the C600 backend produce them; `tessera run
// --profile FILE` writes one. A profile is a separate file from the package
// and names the package it ran by build digest.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "target/topology.hpp"

namespace tessera::schema {

enum class ClockOrigin : std::uint8_t { kPerTile, kShared };
enum class StepKind : std::uint8_t { kExchange, kCompute, kSynchronization, kIdle, kHost };
std::string_view step_kind_name(StepKind kind) noexcept;

struct ProfileStep {
  StepKind kind = StepKind::kCompute;
  std::string kernel;
  std::string operation;
  // The loop iteration the step ran in ("op 3 (repeat …) iteration 5", outer
  // loops first, " / " between), empty outside loops: what `--by layer` groups.
  std::string layer;
  std::vector<std::pair<std::string, std::string>> metadata;
  // Raw counters; they wrap, so a step's length is (end − start) mod 2^32.
  std::uint32_t start_cycle = 0;
  std::uint32_t end_cycle = 0;
  std::uint32_t cycles() const noexcept { return end_cycle - start_cycle; }
  friend bool operator==(const ProfileStep&, const ProfileStep&) = default;
};

struct TileProfile {
  target::PhysicalTile tile;
  std::vector<ProfileStep> steps;  // in execution order
  friend bool operator==(const TileProfile&, const TileProfile&) = default;
};

struct Profile {
  std::uint64_t clock_hz = 0;
  std::vector<std::uint8_t> build_digest;  // of the package that ran
  ClockOrigin origin = ClockOrigin::kShared;
  std::vector<TileProfile> tiles;  // sorted by physical tile, unique
  friend bool operator==(const Profile&, const Profile&) = default;
};

// Throws PackageError (path + reason) on a profile that breaks a rule:
// clock > 0, digest of 32 bytes or empty, tiles sorted, unique, on the chip.
void validate(const Profile& profile);

std::vector<std::uint8_t> serialize_profile(const Profile& profile);
// Atomic like write_package: PATH.partial, then rename.
void write_profile(const std::filesystem::path& path, const Profile& profile);
// Bounded traversal, every field checked (schema version, enums, UTF-8, the rules above).
Profile read_profile(std::span<const std::uint8_t> bytes);
// The same for a file, with the path as the error's context; a file larger
// than kMaxProfileFileBytes is refused before it is read.
inline constexpr std::uint64_t kMaxProfileFileBytes = std::uint64_t{4} << 30;
Profile read_profile_file(const std::filesystem::path& path);

}  // namespace tessera::schema
