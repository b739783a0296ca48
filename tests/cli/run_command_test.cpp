// `tessera run` on a package that moves data through the whole host-call
// protocol: .npy and .bin inputs and outputs, checked against the CPU
// reference; bad inputs fail before anything runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "schema/profile.hpp"
#include "schema/writer.hpp"
#include "support/little_endian.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/runtime/ring_package.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera {
namespace {

using runtime::HostTensor;
using target::PhysicalTile;
using testing::run_tessera;

runtime::testing::RingSpec ring() {
  return {{PhysicalTile(1), PhysicalTile(70), PhysicalTile(700)}, 300};
}

std::vector<std::uint32_t> x_values() {
  std::vector<std::uint32_t> x(900);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint32_t>(i * 7919u + 3u);
  return x;
}

class RunCommand : public ::testing::Test {
 protected:
  RunCommand() {
    package_ = scratch_.path("ring.ipuexe");
    schema::write_package(runtime::testing::ring_package(ring()), package_);
    x_npy_ = scratch_.path("x.npy");
    runtime::write_tensor_file(
        x_npy_, HostTensor(schema::DType::kU32, {900}, words_to_bytes(x_values())));
  }

  std::vector<std::uint32_t> read_words(const std::string& path, const char* name) {
    schema::Binding y{name, schema::DType::kU32, {900}, {}};
    const HostTensor tensor = runtime::read_tensor_file(path, y);
    std::vector<std::uint32_t> words(900);
    for (std::size_t i = 0; i < words.size(); ++i) words[i] = load_u32_le(tensor.bytes().data() + 4 * i);
    return words;
  }

  tessera::testing::ScratchDirectory scratch_;
  std::string package_;
  std::string x_npy_;
};

TEST_F(RunCommand, RunsTheProtocolAndWritesNpyOutputs) {
  const std::string y = scratch_.path("y.npy");
  const std::string profile = scratch_.path("run.profile");
  const std::string trace = scratch_.path("trace.json");
  const auto result = run_tessera({"run", package_, "--input", "x=" + x_npy_, "--output",
                                   "y=" + y, "--profile", profile, "--trace", trace});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("the device halted after"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("wrote y u32[900] to " + y), std::string::npos) << result.out;
  EXPECT_EQ(read_words(y, "y"), runtime::testing::ring_reference(ring(), x_values()));
  std::ifstream in(profile, std::ios::binary);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_FALSE(schema::read_profile(bytes).tiles.empty());
  EXPECT_GT(std::filesystem::file_size(trace), 0u);
}

TEST_F(RunCommand, TakesRawBinFilesAndHostJitter) {
  const std::string x_bin = scratch_.path("x.bin");
  const auto bytes = words_to_bytes(x_values());
  std::ofstream(x_bin, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const std::string y = scratch_.path("y.bin");
  const auto result = run_tessera({"run", package_, "-i", "x=" + x_bin, "-o", "y=" + y,
                                   "--jitter-us", "20", "--jitter-seed", "9"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(read_words(y, "y"), runtime::testing::ring_reference(ring(), x_values()));
}

TEST_F(RunCommand, TakesAThreadCountForTheSimulator) {
  const std::string y = scratch_.path("y.npy");
  const auto result = run_tessera({"run", package_, "-i", "x=" + x_npy_, "-o", "y=" + y,
                                   "--threads", "2"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(read_words(y, "y"), runtime::testing::ring_reference(ring(), x_values()));
  const auto refused = run_tessera({"run", package_, "-i", "x=" + x_npy_, "--threads", "0"});
  EXPECT_EQ(refused.exit_status, 2);
  EXPECT_NE(refused.err.find("--threads: 0 is outside 1 to 1024"), std::string::npos) << refused.err;
}

TEST_F(RunCommand, AShapeMismatchIsAClearErrorBeforeAnythingRuns) {
  const std::string wrong = scratch_.path("wrong.npy");
  runtime::write_tensor_file(wrong, HostTensor(schema::DType::kU32, {30, 30},
                                               std::vector<std::uint8_t>(3600)));
  const auto result = run_tessera({"run", package_, "--input", "x=" + wrong});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("u32[900]"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("u32[30, 30]"), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST_F(RunCommand, MissingAndUnknownBindingsAreNamed) {
  auto result = run_tessera({"run", package_});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.err.find("give it with --input x=FILE"), std::string::npos) << result.err;
  result = run_tessera({"run", package_, "--input", "x=" + x_npy_, "--output", "z=z.npy"});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.err.find("no output 'z'"), std::string::npos) << result.err;
  result = run_tessera({"run", package_, "--input", "x"});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.err.find("expected NAME=FILE"), std::string::npos) << result.err;
  result = run_tessera({"run", package_, "--input", "x=" + x_npy_, "--backend", "tpu"});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.err.find("choose sim or c600"), std::string::npos) << result.err;
  result = run_tessera({"run", package_, "--input", "x=" + x_npy_, "--backend", "c600"});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.err.find("needs --bootloader FILE"), std::string::npos) << result.err;
}

TEST_F(RunCommand, TheC600BackendRefusesAnEmulatedPackageOrAMissingDevice) {
  // No C600 here: the device node does not exist, and that is said plainly.
  const std::string boot = scratch_.write("boot.elf", "not used");
  const auto result =
      run_tessera({"run", package_, "--input", "x=" + x_npy_, "--backend", "c600", "--device",
                   scratch_.path("ipu7"), "--bootloader", boot, "--ipucfg", boot});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("ipu7"), std::string::npos) << result.err;
}

// Issue 15 item 1: a page of 1 TiB passed `validate`, and `run` mapped it
// with MAP_POPULATE after starting the tiles, then died of SIGABRT.
TEST_F(RunCommand, APackageAskingForTooMuchHostMemoryIsRefusedNotRun) {
  schema::Application app = schema::canonical(runtime::testing::ring_package(ring()));
  app.host_exchange.pages.back().size = std::uint64_t{1} << 40;
  const std::string greedy = scratch_.path("greedy.ipuexe");
  const auto bytes = schema::serialize_unchecked_for_testing(app);
  std::ofstream(greedy, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  const auto validated = run_tessera({"validate", greedy});
  EXPECT_EQ(validated.exit_status, 1) << validated.out;
  EXPECT_NE(validated.err.find("greedy.ipuexe: hostExchange.pages[1].size: 0x10000000000 bytes"),
            std::string::npos)
      << validated.err;
  const auto ran = run_tessera({"run", greedy, "--input", "x=" + x_npy_});
  EXPECT_EQ(ran.exit_status, 1) << ran.err;
  EXPECT_NE(ran.err.find("more than the 0x10000000 a package may pin"), std::string::npos)
      << ran.err;
}

}  // namespace
}  // namespace tessera
