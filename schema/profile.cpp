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

std::vector<std::uint8_t> serialize_profile(const Profile& profile) {
  validate(profile);
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Profile>();
  root.setSchemaVersion(kProfileSchemaVersion);
  root.setClockHz(profile.clock_hz);
  root.setBuildDigest(kj::arrayPtr(profile.build_digest.data(), profile.build_digest.size()));
  root.setOrigin(static_cast<wire::ClockOrigin>(profile.origin));
  auto tiles = root.initTiles(static_cast<unsigned>(profile.tiles.size()));
  for (unsigned i = 0; i < tiles.size(); ++i) {
    const TileProfile& tile = profile.tiles[i];
    tiles[i].setPhysicalTile(tile.tile.value);
    auto steps = tiles[i].initSteps(static_cast<unsigned>(tile.steps.size()));
    for (unsigned s = 0; s < steps.size(); ++s) {
      const ProfileStep& step = tile.steps[s];
      steps[s].setKind(static_cast<wire::StepKind>(step.kind));
      steps[s].setKernel(as_text(step.kernel));
      steps[s].setOperation(as_text(step.operation));
      auto metadata = steps[s].initMetadata(static_cast<unsigned>(step.metadata.size()));
      for (unsigned m = 0; m < metadata.size(); ++m) {
        metadata[m].setName(as_text(step.metadata[m].first));
        metadata[m].setValue(as_text(step.metadata[m].second));
      }
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
    if (root.getSchemaVersion() != kProfileSchemaVersion) {
      fail("schemaVersion", fmt::format("{} is not the supported version {}",
                                        root.getSchemaVersion(), kProfileSchemaVersion));
    }
    profile.clock_hz = root.getClockHz();
    const auto digest = root.getBuildDigest();
    profile.build_digest.assign(digest.begin(), digest.end());
    profile.origin = static_cast<ClockOrigin>(enum_value(root.getOrigin(), "origin"));
    unsigned t = 0;
    for (const auto tile : root.getTiles()) {
      const std::string path = fmt::format("tiles[{}]", t++);
      TileProfile out{target::PhysicalTile(tile.getPhysicalTile()), {}};
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
