// The profile file (schema/profile.capnp): version 2 writes each distinct
// text and step label once and reads back the same profile; version 1 files
// (steps with their own texts) still read; other versions and indices that
// point nowhere are clear errors. The oracle for the interning is the wire
// message itself, read with Cap'n Proto's generated reader.
#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <set>

#include "schema/package_error.hpp"
#include "schema/profile.hpp"
#include "schema/wire.hpp"

namespace tessera::schema {
namespace {

ProfileStep step(StepKind kind, std::string kernel, std::string operation, std::string layer,
                 std::uint32_t start, std::uint32_t end) {
  ProfileStep s;
  s.kind = kind;
  s.kernel = std::move(kernel);
  s.operation = std::move(operation);
  s.layer = std::move(layer);
  s.start_cycle = start;
  s.end_cycle = end;
  return s;
}

// Two tiles of 3 layers × (exchange, matmul, sync): labels repeat per tile.
Profile layered() {
  Profile profile;
  profile.clock_hz = 1'500'000'000;
  for (std::uint16_t t = 0; t < 2; ++t) {
    TileProfile tile{target::PhysicalTile(t), {}};
    std::uint32_t at = 0xFFFFFFF0u;
    for (int l = 0; l < 3; ++l) {
      const std::string layer = "op 1 (repeat %0) iteration " + std::to_string(l);
      ProfileStep row = step(StepKind::kExchange, "", "op 3 (matmul <&>)", layer, at, at + 7);
      row.metadata.emplace_back("phase", std::to_string(4 + l));
      tile.steps.push_back(row);
      tile.steps.push_back(
          step(StepKind::kCompute, "tessera_gemm_f16", "op 3 (matmul <&>)", layer, at + 7, at + 40));
      ProfileStep wait = step(StepKind::kSynchronization, "", "op 3 (matmul <&>)", layer, at + 40,
                              at + 50 + t);
      wait.metadata.emplace_back("zone", "0x1");
      tile.steps.push_back(wait);
      at += 50 + t;
    }
    tile.steps.push_back(step(StepKind::kHost, "", "host output y", "", at, at + 3));
    profile.tiles.push_back(std::move(tile));
  }
  return profile;
}

kj::Array<capnp::word> words_of(const std::vector<std::uint8_t>& bytes) {
  auto words = kj::heapArray<capnp::word>(bytes.size() / 8);
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  return words;
}

std::vector<std::uint8_t> bytes_of(capnp::MessageBuilder& message) {
  const auto words = capnp::messageToFlatArray(message);
  const auto bytes = words.asBytes();
  return {bytes.begin(), bytes.end()};
}

std::string read_error(const std::vector<std::uint8_t>& bytes) {
  try {
    (void)read_profile(bytes);
  } catch (const PackageError& error) {
    return error.what();
  }
  return "(read)";
}

TEST(ProfileFile, RoundTripsEveryField) {
  const Profile profile = layered();
  EXPECT_EQ(read_profile(serialize_profile(profile)), profile);
}

TEST(ProfileFile, EachTextAndLabelIsWrittenOnce) {
  const Profile profile = layered();
  const auto bytes = serialize_profile(profile);
  const auto words = words_of(bytes);
  capnp::FlatArrayMessageReader message(words);
  const auto root = message.getRoot<wire::Profile>();
  EXPECT_EQ(root.getSchemaVersion(), 2u);
  // The distinct texts, counted here from the steps.
  std::set<std::string> texts = {""};
  std::set<std::tuple<StepKind, std::string, std::string, std::string,
                      std::vector<std::pair<std::string, std::string>>>>
      labels;
  std::size_t steps = 0;
  for (const auto& tile : profile.tiles) {
    for (const auto& s : tile.steps) {
      texts.insert({s.kernel, s.operation, s.layer});
      for (const auto& [name, value] : s.metadata) texts.insert({name, value});
      labels.insert({s.kind, s.kernel, s.operation, s.layer, s.metadata});
      ++steps;
    }
  }
  EXPECT_EQ(root.getNames().size(), texts.size());
  std::set<std::string> written;
  for (const auto name : root.getNames()) written.insert(name.cStr());
  EXPECT_EQ(written, texts);
  EXPECT_EQ(root.getLabels().size(), labels.size());
  EXPECT_LT(root.getLabels().size(), steps);
  for (const auto tile : root.getTiles()) {
    EXPECT_EQ(tile.getSteps().size(), 0u) << "version 1's steps stay empty";
  }
}

// A version 1 file, as tessera wrote them before names were interned.
std::vector<std::uint8_t> version_1(const Profile& profile) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<wire::Profile>();
  root.setSchemaVersion(1);
  root.setClockHz(profile.clock_hz);
  root.setOrigin(static_cast<wire::ClockOrigin>(profile.origin));
  auto tiles = root.initTiles(static_cast<unsigned>(profile.tiles.size()));
  for (unsigned t = 0; t < tiles.size(); ++t) {
    tiles[t].setPhysicalTile(profile.tiles[t].tile.value);
    const auto& in = profile.tiles[t].steps;
    auto steps = tiles[t].initSteps(static_cast<unsigned>(in.size()));
    for (unsigned s = 0; s < steps.size(); ++s) {
      steps[s].setKind(static_cast<wire::StepKind>(in[s].kind));
      steps[s].setKernel(in[s].kernel);
      steps[s].setOperation(in[s].operation);
      auto metadata = steps[s].initMetadata(static_cast<unsigned>(in[s].metadata.size()));
      for (unsigned m = 0; m < metadata.size(); ++m) {
        metadata[m].setName(in[s].metadata[m].first);
        metadata[m].setValue(in[s].metadata[m].second);
      }
      steps[s].setStartCycle(in[s].start_cycle);
      steps[s].setEndCycle(in[s].end_cycle);
    }
  }
  return bytes_of(message);
}

TEST(ProfileFile, VersionOneFilesStillRead) {
  Profile profile = layered();
  for (auto& tile : profile.tiles) {
    for (auto& s : tile.steps) s.layer.clear();  // version 1 has no layers
  }
  EXPECT_EQ(read_profile(version_1(profile)), profile);
}

TEST(ProfileFile, UnknownVersionsAndDanglingIndicesAreClearErrors) {
  {
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<wire::Profile>();
    root.setSchemaVersion(3);
    root.setClockHz(1);
    EXPECT_NE(read_error(bytes_of(message)).find("3 is not a version this reader knows (1 to 2)"),
              std::string::npos)
        << read_error(bytes_of(message));
  }
  const auto with = [](auto change) {
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<wire::Profile>();
    root.setSchemaVersion(2);
    root.setClockHz(1);
    root.initNames(1).set(0, "");
    root.initLabels(1);
    auto steps = root.initTiles(1)[0].initPackedSteps(1);
    steps[0].setEndCycle(5);
    change(root);
    return read_error(bytes_of(message));
  };
  EXPECT_EQ(with([](wire::Profile::Builder) {}), "(read)");
  EXPECT_NE(with([](wire::Profile::Builder root) {
              root.getTiles()[0].getPackedSteps()[0].setLabel(1);
            }).find("tiles[0].packedSteps[0].label: 1 is not a label (the profile has 1)"),
            std::string::npos);
  EXPECT_NE(with([](wire::Profile::Builder root) { root.getLabels()[0].setOperation(9); })
                .find("labels[0].operation: 9 is not a name (the profile has 1)"),
            std::string::npos);
  EXPECT_NE(with([](wire::Profile::Builder root) { root.getLabels()[0].initMetadata(3); })
                .find("labels[0].metadata: 3 indices are not name, value pairs"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::schema
