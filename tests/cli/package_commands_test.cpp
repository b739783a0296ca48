// `tessera validate`, `tessera inspect` and `capnp decode` on real package files.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "schema/digest.hpp"
#include "schema/sha256.hpp"
#include "schema/writer.hpp"
#include "tests/cli/tessera_cli.hpp"
#include "tests/testing/process.hpp"
#include "tests/testing/scratch.hpp"
#include "tests/testing/sample_package.hpp"

namespace {

using tessera::testing::ProcessResult;
using tessera::testing::run_process;

ProcessResult tessera_cli(std::vector<std::string> args) {
  return tessera::testing::run_tessera(std::move(args));
}

class PackageFile : public ::testing::Test {
 protected:
  PackageFile() {
    path_ = scratch_.path("sample.ipuexe");
    digest_ = tessera::schema::write_package(tessera::testing::sample_application(), path_);
  }

  tessera::testing::ScratchDirectory scratch_;
  std::string path_;
  tessera::schema::Sha256 digest_{};
};

TEST_F(PackageFile, ValidateAcceptsAValidPackage) {
  const auto result = tessera_cli({"validate", path_});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out, path_ + ": valid, build digest " + tessera::schema::to_hex(digest_) + "\n");
}

TEST_F(PackageFile, ValidateRejectsACorruptPackageOnOneLine) {
  std::vector<char> bytes(std::filesystem::file_size(path_));
  std::ifstream(path_, std::ios::binary).read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes[bytes.size() - 20] = static_cast<char>(bytes[bytes.size() - 20] ^ 0x55);
  std::ofstream(path_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const auto result = tessera_cli({"validate", path_});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_TRUE(result.err.starts_with("tessera validate: error: " + path_ + ": ")) << result.err;
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
}

TEST(PackageArguments, AMissingPackageIsNamed) {
  const auto result = tessera::testing::run_tessera({"validate"});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_EQ(result.err, "tessera validate: PACKAGE is missing (see 'tessera validate --help')\n");
}

TEST_F(PackageFile, ValidateOfAMissingFileFails) {
  const auto result = tessera_cli({"validate", scratch_.path("missing.ipuexe")});
  EXPECT_EQ(result.exit_status, 1);
  EXPECT_NE(result.err.find("missing.ipuexe"), std::string::npos);
}

TEST_F(PackageFile, InspectSummarizes) {
  const auto result = tessera_cli({"inspect", path_});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("compiler           tessera-test 0.0.0"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("tiles              2 (4 segments)"), std::string::npos);
  EXPECT_NE(result.out.find("blobs              3 (576 bytes uncompressed)"), std::string::npos);
  EXPECT_NE(result.out.find("hardware loadable  no (kernels are emulated only)"), std::string::npos);
  EXPECT_NE(result.out.find("entry points       main"), std::string::npos);
}

TEST_F(PackageFile, InspectListsTilesBindingsAndDebug) {
  const auto result = tessera_cli({"inspect", path_, "--tiles", "--bindings", "--debug"});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("  p5  entry 0x4c010"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("[0x4c010, 0x4c090)  R-X"), std::string::npos);
  EXPECT_NE(result.out.find("output  logits  f16 [16]  32 bytes in 2 slices"), std::string::npos);
  EXPECT_NE(result.out.find("call        0x4c018  gemm_f16  <- graph: matmul %3"), std::string::npos);
  EXPECT_NE(result.out.find("exchange phase 7: 1 transfers"), std::string::npos);
}

TEST_F(PackageFile, InspectJsonIsMachineReadable) {
  const auto result = tessera_cli({"inspect", path_, "--json", "--tiles", "--bindings", "--debug"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const auto doc = nlohmann::json::parse(result.out);
  EXPECT_EQ(doc["tileCount"], 2);
  EXPECT_EQ(doc["buildDigest"], tessera::schema::to_hex(digest_));
  EXPECT_EQ(doc["tiles"][1]["tile"], 5);
  EXPECT_EQ(doc["outputs"][0]["name"], "logits");
  EXPECT_EQ(doc["debug"]["tiles"][0]["callSites"][0]["kernel"], "gemm_f16");
}

// `capnp decode schema/application.capnp Application < file.ipuexe` must work
// on our files (the format is plain Cap'n Proto, no framing of our own).
TEST_F(PackageFile, CapnpDecodeReadsOurFiles) {
  const auto result = run_process({"/bin/sh", "-c",
                                   std::string(TESSERA_CAPNP_TOOL) + " decode " +
                                       TESSERA_SOURCE_DIR "/schema/application.capnp Application < " +
                                       path_});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("compilerVersion = \"tessera-test 0.0.0\""), std::string::npos)
      << result.out.substr(0, 500);
  EXPECT_NE(result.out.find("kernel = \"gemm_f16\""), std::string::npos);
  EXPECT_NE(result.out.find("inputBindings = [\"image\"]"), std::string::npos)
      << "the schema file names the fields the writer fills";
}

}  // namespace
