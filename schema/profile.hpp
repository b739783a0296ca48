#pragma once
// Cycle profiles (profile.capnp): per-tile steps with raw 32-bit cycle
// counters. The simulator and the C600 backend produce them; `tessera run
// --profile FILE` writes one. A profile is a separate file from the package
// and names the package it ran by build digest.
//
// A SigLIP so400m run has 37 M steps but far fewer distinct texts, so
// the profile holds names the way the file does (format 2): every distinct
// text once in `names`, every distinct step label (kind, kernel, operation,
// layer, metadata) once in `labels`, and a step is a label index and its two
// counters (12 bytes). Producers intern through ProfileInterner.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "target/topology.hpp"

namespace tessera::schema {

enum class ClockOrigin : std::uint8_t { kPerTile, kShared };
enum class StepKind : std::uint8_t { kExchange, kCompute, kSynchronization, kIdle, kHost };
std::string_view step_kind_name(StepKind kind) noexcept;

// What a step is, its texts as indices into Profile::names (0 is "").
struct StepLabel {
  StepKind kind = StepKind::kCompute;
  std::uint32_t kernel = 0;     // "" when the step runs no kernel
  std::uint32_t operation = 0;  // graph operation (provenance)
  // The loop iteration the step ran in ("op 3 (repeat …) iteration 5", outer
  // loops first, " / " between), "" outside loops: what `--by layer` groups.
  std::uint32_t layer = 0;
  std::vector<std::uint32_t> metadata;  // name, value, name, value, ...
  friend bool operator==(const StepLabel&, const StepLabel&) = default;
};

// A step label with its texts: what hand-built profiles and tests spell out.
struct StepText {
  StepKind kind = StepKind::kCompute;
  std::string kernel;
  std::string operation;
  std::string layer;
  std::vector<std::pair<std::string, std::string>> metadata;
  friend auto operator<=>(const StepText&, const StepText&) = default;
};

struct ProfileStep {
  std::uint32_t label = 0;  // into Profile::labels
  // Raw counters; they wrap, so a step's length is (end − start) mod 2^32.
  std::uint32_t start_cycle = 0;
  std::uint32_t end_cycle = 0;
  std::uint32_t cycles() const noexcept { return end_cycle - start_cycle; }
  friend bool operator==(const ProfileStep&, const ProfileStep&) = default;
};
// What a profile's memory per step is (ProfileInterning.AStepIsTwelveBytes).
static_assert(sizeof(ProfileStep) == 12);

struct TileProfile {
  target::PhysicalTile tile;
  std::vector<ProfileStep> steps;  // in execution order
  friend bool operator==(const TileProfile&, const TileProfile&) = default;
};

struct Profile {
  std::uint64_t clock_hz = 0;
  std::vector<std::uint8_t> build_digest;  // of the package that ran
  ClockOrigin origin = ClockOrigin::kShared;
  // Samples the device could not record (its sample buffers were full): the
  // steps they began are missing (schema/profile_samples.hpp). 0 on the simulator.
  std::uint64_t dropped_samples = 0;
  std::vector<std::string> names = {""};  // name 0 is "", so an unset index reads as empty
  std::vector<StepLabel> labels;
  std::vector<TileProfile> tiles;  // sorted by physical tile, unique

  const StepLabel& label(const ProfileStep& step) const { return labels[step.label]; }
  const std::string& name(std::uint32_t index) const { return names[index]; }
  StepKind kind(const ProfileStep& step) const { return label(step).kind; }
  const std::string& kernel(const ProfileStep& step) const { return names[label(step).kernel]; }
  const std::string& operation(const ProfileStep& step) const {
    return names[label(step).operation];
  }
  const std::string& layer(const ProfileStep& step) const { return names[label(step).layer]; }
  StepText text(const StepLabel& label) const;
  StepText text(const ProfileStep& step) const { return text(label(step)); }
  // Equal tables and steps (what a write and a read keep).
  friend bool operator==(const Profile&, const Profile&) = default;
};

// Adds names and labels to a profile's tables, each distinct one once, as a
// producer (the simulator, the C600 backend, a reader of format 1, a test)
// appends steps. It indexes the tables the profile already holds; the
// profile must outlive it and nothing else may change its tables meanwhile.
class ProfileInterner {
 public:
  explicit ProfileInterner(Profile& profile);
  std::uint32_t name(std::string_view text);
  std::uint32_t label(const StepLabel& label);
  std::uint32_t label(const StepText& text);
  ProfileStep step(const StepText& text, std::uint32_t start, std::uint32_t end) {
    return {label(text), start, end};
  }

 private:
  struct LabelHash {
    std::size_t operator()(const StepLabel& label) const noexcept;
  };
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };
  Profile& profile_;
  std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>> names_;
  std::unordered_map<StepLabel, std::uint32_t, LabelHash> labels_;
};

// Throws PackageError (path + reason) on a profile that breaks a rule:
// clock > 0, digest of 32 bytes or empty, tiles sorted, unique, on the chip,
// name 0 is "", every label's names and every step's label exist.
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
