#include "schema/profile.hpp"

#include <capnp/message.h>
#include <capnp/schema.h>
#include <capnp/serialize.h>

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "schema/package_error.hpp"
#include "schema/wire.hpp"
#include "schema/wire_read.hpp"
#include "support/atomic_file.hpp"
#include "support/checked.hpp"
#include "support/utf8.hpp"
#include "target/memory_map.hpp"

namespace tessera::schema {
namespace {

static_assert(static_cast<int>(wire::ClockOrigin::PER_TILE) == static_cast<int>(ClockOrigin::kPerTile) &&
              static_cast<int>(wire::ClockOrigin::SHARED) == static_cast<int>(ClockOrigin::kShared));
static_assert(static_cast<int>(wire::StepKind::EXCHANGE) == static_cast<int>(StepKind::kExchange) &&
              static_cast<int>(wire::StepKind::COMPUTE) == static_cast<int>(StepKind::kCompute) &&
              static_cast<int>(wire::StepKind::SYNCHRONIZATION) ==
                  static_cast<int>(StepKind::kSynchronization) &&
              static_cast<int>(wire::StepKind::IDLE) == static_cast<int>(StepKind::kIdle) &&
              static_cast<int>(wire::StepKind::HOST) == static_cast<int>(StepKind::kHost));

using wire_read::enum_value;
using wire_read::fail;
using wire_read::text;

kj::StringPtr as_text(const std::string& value) { return {value.c_str(), value.size()}; }

}  // namespace

std::string_view step_kind_name(StepKind kind) noexcept {
  switch (kind) {
    case StepKind::kExchange: return "exchange";
    case StepKind::kCompute: return "compute";
    case StepKind::kSynchronization: return "synchronization";
    case StepKind::kIdle: return "idle";
    case StepKind::kHost: return "host";
  }
  return "?";
}

StepText Profile::text(const StepLabel& label) const {
  StepText text{label.kind, names[label.kernel], names[label.operation], names[label.layer], {}};
  for (std::size_t m = 0; m + 1 < label.metadata.size(); m += 2) {
    text.metadata.emplace_back(names[label.metadata[m]], names[label.metadata[m + 1]]);
  }
  return text;
}

std::size_t ProfileInterner::LabelHash::operator()(const StepLabel& label) const noexcept {
  std::size_t hash = static_cast<std::size_t>(label.kind);
  const auto mix = [&](std::uint32_t value) { hash = hash * 0x9E3779B97F4A7C15ull + value; };
  mix(label.kernel);
  mix(label.operation);
  mix(label.layer);
  for (const auto index : label.metadata) mix(index);
  return hash;
}

ProfileInterner::ProfileInterner(Profile& profile) : profile_(profile) {
  if (profile_.names.empty()) profile_.names.emplace_back();
  for (std::size_t i = 0; i < profile_.names.size(); ++i) {
    names_.try_emplace(profile_.names[i], static_cast<std::uint32_t>(i));
  }
  for (std::size_t i = 0; i < profile_.labels.size(); ++i) {
    labels_.try_emplace(profile_.labels[i], static_cast<std::uint32_t>(i));
  }
}

std::uint32_t ProfileInterner::name(std::string_view text) {
  if (const auto it = names_.find(text); it != names_.end()) return it->second;
  const auto index =
      checked_cast<std::uint32_t>(profile_.names.size(), "the profile's names");
  profile_.names.emplace_back(text);
  names_.emplace(profile_.names.back(), index);
  return index;
}

std::uint32_t ProfileInterner::label(const StepLabel& label) {
  if (const auto it = labels_.find(label); it != labels_.end()) return it->second;
  const auto index =
      checked_cast<std::uint32_t>(profile_.labels.size(), "the profile's labels");
  profile_.labels.push_back(label);
  labels_.emplace(label, index);
  return index;
}

std::uint32_t ProfileInterner::label(const StepText& text) {
  StepLabel label{text.kind, name(text.kernel), name(text.operation), name(text.layer), {}};
  for (const auto& [key, value] : text.metadata) {
    label.metadata.push_back(name(key));
    label.metadata.push_back(name(value));
  }
  return this->label(label);
}

void validate(const Profile& profile) {
  if (profile.clock_hz == 0) fail("clockHz", "must be positive");
  if (!profile.build_digest.empty() && profile.build_digest.size() != 32) {
    fail("buildDigest", fmt::format("{} bytes, not a 32-byte SHA-256", profile.build_digest.size()));
  }
  if (profile.names.empty() || !profile.names.front().empty()) {
    fail("names", "name 0 must be \"\"");
  }
  const auto name = [&](std::uint32_t index, const std::string& path) {
    if (index >= profile.names.size()) {
      fail(path, fmt::format("{} is not a name (the profile has {})", index, profile.names.size()));
    }
  };
  for (std::size_t l = 0; l < profile.labels.size(); ++l) {
    const StepLabel& label = profile.labels[l];
    const std::string path = fmt::format("labels[{}]", l);
    if (static_cast<unsigned>(label.kind) > static_cast<unsigned>(StepKind::kHost)) {
      fail(path + ".kind", fmt::format("{} is not a step kind", static_cast<unsigned>(label.kind)));
    }
    name(label.kernel, path + ".kernel");
    name(label.operation, path + ".operation");
    name(label.layer, path + ".layer");
    if (label.metadata.size() % 2 != 0) {
      fail(path + ".metadata",
           fmt::format("{} indices are not name, value pairs", label.metadata.size()));
    }
    for (const auto index : label.metadata) name(index, path + ".metadata");
  }
  for (std::size_t i = 0; i < profile.tiles.size(); ++i) {
    const auto tile = profile.tiles[i].tile;
    const std::string path = fmt::format("tiles[{}].physicalTile", i);
    if (!target::on_chip(tile)) fail(path, fmt::format("{} is not on the chip", tile));
    if (i > 0 && !(profile.tiles[i - 1].tile < tile)) {
      fail(path, fmt::format("{} is not after {} (tiles sorted, each once)", tile,
                             profile.tiles[i - 1].tile));
    }
    const auto& steps = profile.tiles[i].steps;
    for (std::size_t s = 0; s < steps.size(); ++s) {
      if (steps[s].label >= profile.labels.size()) {
        fail(fmt::format("tiles[{}].packedSteps[{}].label", i, s),
             fmt::format("{} is not a label (the profile has {})", steps[s].label,
                         profile.labels.size()));
      }
    }
  }
}

namespace {

void write_tables(const Profile& profile, wire::Profile::Builder root) {
  auto names = root.initNames(checked_cast<unsigned>(profile.names.size(), "the profile's names"));
  for (unsigned i = 0; i < names.size(); ++i) names.set(i, as_text(profile.names[i]));
  auto labels =
      root.initLabels(checked_cast<unsigned>(profile.labels.size(), "the profile's labels"));
  for (unsigned i = 0; i < labels.size(); ++i) {
    const StepLabel& label = profile.labels[i];
    labels[i].setKind(static_cast<wire::StepKind>(label.kind));
    labels[i].setKernel(label.kernel);
    labels[i].setOperation(label.operation);
    labels[i].setLayer(label.layer);
    auto metadata = labels[i].initMetadata(static_cast<unsigned>(label.metadata.size()));
    for (unsigned m = 0; m < metadata.size(); ++m) metadata.set(m, label.metadata[m]);
  }
}

// Version 2's tables, as the file has them (validate() checks the indices).
void read_tables(wire::Profile::Reader root, Profile& profile) {
  profile.names.clear();
  unsigned n = 0;
  for (const auto name : root.getNames()) {
    profile.names.push_back(text(name, fmt::format("names[{}]", n++)));
  }
  if (profile.names.empty()) profile.names.emplace_back();  // a profile with no steps
  unsigned l = 0;
  for (const auto label : root.getLabels()) {
    const std::string path = fmt::format("labels[{}]", l++);
    StepLabel out;
    out.kind = static_cast<StepKind>(enum_value(label.getKind(), path + ".kind"));
    out.kernel = label.getKernel();
    out.operation = label.getOperation();
    out.layer = label.getLayer();
    for (const auto index : label.getMetadata()) out.metadata.push_back(index);
    profile.labels.push_back(std::move(out));
  }
}

}  // namespace

std::vector<std::uint8_t> serialize_profile(const Profile& profile) {
  validate(profile);
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Profile>();
  root.setSchemaVersion(kProfileSchemaVersion);
  root.setClockHz(profile.clock_hz);
  root.setBuildDigest(kj::arrayPtr(profile.build_digest.data(), profile.build_digest.size()));
  root.setOrigin(static_cast<wire::ClockOrigin>(profile.origin));
  root.setDroppedSamples(profile.dropped_samples);
  write_tables(profile, root);
  auto tiles = root.initTiles(static_cast<unsigned>(profile.tiles.size()));
  for (unsigned i = 0; i < tiles.size(); ++i) {
    const TileProfile& tile = profile.tiles[i];
    tiles[i].setPhysicalTile(tile.tile.value);
    auto steps = tiles[i].initPackedSteps(
        checked_cast<unsigned>(tile.steps.size(), "a tile's steps"));
    for (unsigned s = 0; s < steps.size(); ++s) {
      const ProfileStep& step = tile.steps[s];
      steps[s].setLabel(step.label);
      steps[s].setStartCycle(step.start_cycle);
      steps[s].setEndCycle(step.end_cycle);
    }
  }
  const auto words = capnp::messageToFlatArray(message);
  const auto bytes = words.asBytes();
  return {bytes.begin(), bytes.end()};
}

void write_profile(const std::filesystem::path& path, const Profile& profile) {
  write_file_atomically(path, serialize_profile(profile));
}

Profile read_profile(std::span<const std::uint8_t> bytes) {
  if (bytes.size() % sizeof(capnp::word) != 0) {
    fail("profile", fmt::format("{} bytes is not a whole number of 8-byte words", bytes.size()));
  }
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / 8);
  if (!bytes.empty()) std::memcpy(words.begin(), bytes.data(), bytes.size());
  capnp::ReaderOptions options;
  options.traversalLimitInWords = words.size() * 4 + 1024;
  Profile profile;
  try {
    capnp::FlatArrayMessageReader message(words, options);
    if (message.getEnd() != words.end()) fail("profile", "bytes follow the message");
    const auto root = message.getRoot<wire::Profile>();
    const std::uint32_t version = root.getSchemaVersion();
    if (version != kProfileSchemaVersion && version != kFirstProfileSchemaVersion) {
      fail("schemaVersion", fmt::format("{} is not a version this reader knows ({} to {}); a "
                                        "newer tessera wrote it",
                                        version, kFirstProfileSchemaVersion,
                                        kProfileSchemaVersion));
    }
    profile.clock_hz = root.getClockHz();
    const auto digest = root.getBuildDigest();
    profile.build_digest.assign(digest.begin(), digest.end());
    profile.origin = static_cast<ClockOrigin>(enum_value(root.getOrigin(), "origin"));
    profile.dropped_samples = root.getDroppedSamples();
    if (version != kFirstProfileSchemaVersion) read_tables(root, profile);
    ProfileInterner interner(profile);  // version 1: its texts interned as they are read
    unsigned t = 0;
    for (const auto tile : root.getTiles()) {
      const std::string path = fmt::format("tiles[{}]", t++);
      TileProfile out{target::PhysicalTile(tile.getPhysicalTile()), {}};
      if (version == kFirstProfileSchemaVersion) {
        unsigned s = 0;
        for (const auto step : tile.getSteps()) {
          const std::string step_path = fmt::format("{}.steps[{}]", path, s++);
          StepText item;
          item.kind = static_cast<StepKind>(enum_value(step.getKind(), step_path + ".kind"));
          item.kernel = text(step.getKernel(), step_path + ".kernel");
          item.operation = text(step.getOperation(), step_path + ".operation");
          for (const auto entry : step.getMetadata()) {
            item.metadata.emplace_back(text(entry.getName(), step_path + ".metadata.name"),
                                       text(entry.getValue(), step_path + ".metadata.value"));
          }
          out.steps.push_back(interner.step(item, step.getStartCycle(), step.getEndCycle()));
        }
      } else {
        const auto steps = tile.getPackedSteps();
        out.steps.reserve(steps.size());
        for (const auto step : steps) {
          out.steps.push_back({step.getLabel(), step.getStartCycle(), step.getEndCycle()});
        }
      }
      profile.tiles.push_back(std::move(out));
    }
  } catch (const kj::Exception& error) {
    throw PackageError("profile", fmt::format("malformed Cap'n Proto message: {}",
                                              error.getDescription().cStr()));
  }
  validate(profile);
  return profile;
}

Profile read_profile_file(const std::filesystem::path& path) {
  return with_context(path.string(), [&] {
    std::error_code error;
    const std::uintmax_t size = std::filesystem::file_size(path, error);
    if (error) throw IoError(error.message());
    if (size > kMaxProfileFileBytes) {
      throw PackageError("profile", fmt::format("{} bytes is more than the {} a profile may have",
                                                size, kMaxProfileFileBytes));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IoError("cannot open");
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
    if (static_cast<std::uintmax_t>(in.gcount()) != size) throw IoError("short read");
    return read_profile(bytes);
  });
}

}  // namespace tessera::schema
