#include "schema/profile.hpp"

#include <capnp/message.h>
#include <capnp/schema.h>
#include <capnp/serialize.h>

#include <cstring>
#include <fstream>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "schema/package_error.hpp"
#include "schema/wire.hpp"
#include "schema/wire_read.hpp"
#include "support/atomic_file.hpp"
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

void validate(const Profile& profile) {
  if (profile.clock_hz == 0) fail("clockHz", "must be positive");
  if (!profile.build_digest.empty() && profile.build_digest.size() != 32) {
    fail("buildDigest", fmt::format("{} bytes, not a 32-byte SHA-256", profile.build_digest.size()));
  }
  for (std::size_t i = 0; i < profile.tiles.size(); ++i) {
    const auto tile = profile.tiles[i].tile;
    const std::string path = fmt::format("tiles[{}].physicalTile", i);
    if (!target::on_chip(tile)) fail(path, fmt::format("{} is not on the chip", tile));
    if (i > 0 && !(profile.tiles[i - 1].tile < tile)) {
      fail(path, fmt::format("{} is not after {} (tiles sorted, each once)", tile,
                             profile.tiles[i - 1].tile));
    }
  }
}

namespace {

// Version 2's tables: each distinct text and step label once, in first use.
class Interner {
 public:
  Interner() { name(""); }  // name 0 is "", so an unset index reads as empty

  std::uint32_t name(const std::string& text) {
    const auto [it, added] = names_.try_emplace(text, static_cast<std::uint32_t>(order_.size()));
    if (added) order_.push_back(&it->first);
    return it->second;
  }

  std::uint32_t label(const ProfileStep& step) {
    Label label{step.kind, name(step.kernel), name(step.operation), name(step.layer), {}};
    for (const auto& [key, value] : step.metadata) {
      label.metadata.push_back(name(key));
      label.metadata.push_back(name(value));
    }
    const auto [it, added] = labels_.try_emplace(label, static_cast<std::uint32_t>(labels_.size()));
    if (added) label_order_.push_back(&it->first);
    return it->second;
  }

  void write(wire::Profile::Builder root) const {
    auto names = root.initNames(static_cast<unsigned>(order_.size()));
    for (unsigned i = 0; i < names.size(); ++i) names.set(i, as_text(*order_[i]));
    auto labels = root.initLabels(static_cast<unsigned>(label_order_.size()));
    for (unsigned i = 0; i < labels.size(); ++i) {
      const Label& label = *label_order_[i];
      labels[i].setKind(static_cast<wire::StepKind>(label.kind));
      labels[i].setKernel(label.kernel);
      labels[i].setOperation(label.operation);
      labels[i].setLayer(label.layer);
      auto metadata = labels[i].initMetadata(static_cast<unsigned>(label.metadata.size()));
      for (unsigned m = 0; m < metadata.size(); ++m) metadata.set(m, label.metadata[m]);
    }
  }

 private:
  struct Label {
    StepKind kind;
    std::uint32_t kernel, operation, layer;
    std::vector<std::uint32_t> metadata;
    friend auto operator<=>(const Label&, const Label&) = default;
  };
  std::unordered_map<std::string, std::uint32_t> names_;
  std::vector<const std::string*> order_;
  std::map<Label, std::uint32_t> labels_;
  std::vector<const Label*> label_order_;
};

// Version 2's labels as the steps they describe (cycles unset).
std::vector<ProfileStep> read_labels(wire::Profile::Reader root) {
  std::vector<std::string> names;
  unsigned n = 0;
  for (const auto name : root.getNames()) names.push_back(text(name, fmt::format("names[{}]", n++)));
  const auto name = [&](std::uint32_t index, const std::string& path) -> const std::string& {
    if (index >= names.size()) {
      fail(path, fmt::format("{} is not a name (the profile has {})", index, names.size()));
    }
    return names[index];
  };
  std::vector<ProfileStep> labels;
  unsigned l = 0;
  for (const auto label : root.getLabels()) {
    const std::string path = fmt::format("labels[{}]", l++);
    ProfileStep step;
    step.kind = static_cast<StepKind>(enum_value(label.getKind(), path + ".kind"));
    step.kernel = name(label.getKernel(), path + ".kernel");
    step.operation = name(label.getOperation(), path + ".operation");
    step.layer = name(label.getLayer(), path + ".layer");
    const auto metadata = label.getMetadata();
    if (metadata.size() % 2 != 0) {
      fail(path + ".metadata", fmt::format("{} indices are not name, value pairs", metadata.size()));
    }
    for (unsigned m = 0; m < metadata.size(); m += 2) {
      step.metadata.emplace_back(name(metadata[m], path + ".metadata"),
                                 name(metadata[m + 1], path + ".metadata"));
    }
    labels.push_back(std::move(step));
  }
  return labels;
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
  Interner interner;
  auto tiles = root.initTiles(static_cast<unsigned>(profile.tiles.size()));
  for (unsigned i = 0; i < tiles.size(); ++i) {
    const TileProfile& tile = profile.tiles[i];
    tiles[i].setPhysicalTile(tile.tile.value);
    auto steps = tiles[i].initPackedSteps(static_cast<unsigned>(tile.steps.size()));
    for (unsigned s = 0; s < steps.size(); ++s) {
      const ProfileStep& step = tile.steps[s];
      steps[s].setLabel(interner.label(step));
      steps[s].setStartCycle(step.start_cycle);
      steps[s].setEndCycle(step.end_cycle);
    }
  }
  interner.write(root);
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
    const std::vector<ProfileStep> labels =
        version == kFirstProfileSchemaVersion ? std::vector<ProfileStep>{} : read_labels(root);
    unsigned t = 0;
    for (const auto tile : root.getTiles()) {
      const std::string path = fmt::format("tiles[{}]", t++);
      TileProfile out{target::PhysicalTile(tile.getPhysicalTile()), {}};
      if (version == kFirstProfileSchemaVersion) {
        unsigned s = 0;
        for (const auto step : tile.getSteps()) {
          const std::string step_path = fmt::format("{}.steps[{}]", path, s++);
          ProfileStep item;
          item.kind = static_cast<StepKind>(enum_value(step.getKind(), step_path + ".kind"));
          item.kernel = text(step.getKernel(), step_path + ".kernel");
          item.operation = text(step.getOperation(), step_path + ".operation");
          for (const auto entry : step.getMetadata()) {
            item.metadata.emplace_back(text(entry.getName(), step_path + ".metadata.name"),
                                       text(entry.getValue(), step_path + ".metadata.value"));
          }
          item.start_cycle = step.getStartCycle();
          item.end_cycle = step.getEndCycle();
          out.steps.push_back(std::move(item));
        }
      } else {
        const auto steps = tile.getPackedSteps();
        out.steps.reserve(steps.size());
        for (unsigned s = 0; s < steps.size(); ++s) {
          const std::uint32_t label = steps[s].getLabel();
          if (label >= labels.size()) {
            fail(fmt::format("{}.packedSteps[{}].label", path, s),
                 fmt::format("{} is not a label (the profile has {})", label, labels.size()));
          }
          ProfileStep item = labels[label];
          item.start_cycle = steps[s].getStartCycle();
          item.end_cycle = steps[s].getEndCycle();
          out.steps.push_back(std::move(item));
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
