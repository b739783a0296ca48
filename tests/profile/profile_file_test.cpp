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

StepText text(StepKind kind, std::string kernel, std::string operation, std::string layer,
               std::vector<std::pair<std::string, std::string>> metadata = {}) {
  return {kind, std::move(kernel), std::move(operation), std::move(layer), std::move(metadata)};
}

// Two tiles of 3 layers × (exchange, matmul, sync): labels repeat per tile.
// `layers` false: the same without loop iterations (as version 1 has none).
Profile layered(bool layers = true) {
  Profile profile;
  profile.clock_hz = 1'500'000'000;
  ProfileInterner names(profile);
  for (std::uint16_t t = 0; t < 2; ++t) {
    TileProfile tile{target::PhysicalTile(t), {}};
    std::uint32_t at = 0xFFFFFFF0u;
    for (int l = 0; l < 3; ++l) {
      const std::string layer = layers ? "op 1 (repeat %0) iteration " + std::to_string(l) : "";
      tile.steps.push_back(names.step(text(StepKind::kExchange, "", "op 3 (matmul <&>)", layer,
                                           {{"phase", std::to_string(4 + l)}}),
                                      at, at + 7));
      tile.steps.push_back(names.step(
          text(StepKind::kCompute, "tessera_gemm_f16", "op 3 (matmul <&>)", layer), at + 7, at + 40));
      tile.steps.push_back(names.step(text(StepKind::kSynchronization, "", "op 3 (matmul <&>)",
                                           layer, {{"zone", "0x1"}}),
                                      at + 40, at + 50 + t));
      at += 50 + t;
    }
    tile.steps.push_back(names.step(text(StepKind::kHost, "", "host output y", ""), at, at + 3));
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
    for (const auto& step : tile.steps) {
      const StepText s = profile.text(step);
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
    std::vector<StepText> in;
    for (const auto& step : profile.tiles[t].steps) in.push_back(profile.text(step));
    const auto& counters = profile.tiles[t].steps;
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
      steps[s].setStartCycle(counters[s].start_cycle);
      steps[s].setEndCycle(counters[s].end_cycle);
    }
  }
  return bytes_of(message);
}

TEST(ProfileFile, VersionOneFilesStillRead) {
  // Read back interned in first use, as the writer of `profile` interned.
  const Profile profile = layered(false);
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

// The profile in memory holds each text and label once, however many steps
// name it: a step is 12 bytes (a label index and two counters), so a run's
// profile grows by 12 bytes a step, not by its texts (a so400m run has 37 M).
TEST(ProfileInterning, ManyStepsOfAFewNamesHoldEachNameOnce) {
  Profile profile;
  profile.clock_hz = 1;
  ProfileInterner names(profile);
  const std::string operation(200, 'o');  // longer than any small-string buffer
  TileProfile tile{target::PhysicalTile(3), {}};
  constexpr std::uint32_t kSteps = 100'000;
  for (std::uint32_t s = 0; s < kSteps; ++s) {
    const StepText label = s % 2 == 0 ? text(StepKind::kCompute, "gemm", operation, "iteration 1")
                                      : text(StepKind::kSynchronization, "", operation,
                                             "iteration 1", {{"zone", "0x1"}});
    tile.steps.push_back(names.step(label, s, s + 1));
  }
  profile.tiles.push_back(std::move(tile));
  EXPECT_EQ(profile.names,
            (std::vector<std::string>{"", "gemm", operation, "iteration 1", "zone", "0x1"}));
  ASSERT_EQ(profile.labels.size(), 2u);
  EXPECT_EQ(profile.labels[1],
            (StepLabel{StepKind::kSynchronization, 0, 2, 3, std::vector<std::uint32_t>{4, 5}}));
  EXPECT_EQ(sizeof(ProfileStep), 12u);
  EXPECT_EQ(profile.tiles[0].steps.size(), kSteps);
  EXPECT_EQ(profile.text(profile.tiles[0].steps[kSteps - 1]),
            text(StepKind::kSynchronization, "", operation, "iteration 1", {{"zone", "0x1"}}));
  // An interner over a profile that has tables adds to them, never repeats them.
  ProfileInterner again(profile);
  EXPECT_EQ(again.name(operation), 2u);
  EXPECT_EQ(again.label(text(StepKind::kCompute, "gemm", operation, "iteration 1")), 0u);
  EXPECT_EQ(again.name("new"), 6u);
}

TEST(ProfileInterning, AProfileInMemoryWithDanglingIndicesIsRefused) {
  Profile profile = layered();
  profile.tiles[0].steps[0].label = static_cast<std::uint32_t>(profile.labels.size());
  EXPECT_THROW((void)serialize_profile(profile), PackageError);
  profile = layered();
  profile.labels[0].operation = static_cast<std::uint32_t>(profile.names.size());
  EXPECT_THROW((void)serialize_profile(profile), PackageError);
  profile = layered();
  profile.names[0] = "x";
  EXPECT_THROW((void)serialize_profile(profile), PackageError);
}

}  // namespace
}  // namespace tessera::schema
