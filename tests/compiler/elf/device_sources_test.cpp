// Which device source defines each kernel, and each source built once
// through the kernel cache against the fake SDK (issue 21 items 3 and 6).
#include "compiler/elf/device_sources.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "kernels/registry.hpp"
#include "tests/compiler/elf/expect_error.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::compiler::elf {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::size_t lines(const fs::path& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(DeviceSources, EveryRegistryKernelHasExactlyOneSourceInTheTree) {
  // The tree's own sources: every kernel and helper of the registry is
  // defined by some kernels/device/*.cpp (scan_device_sources refuses a
  // symbol defined twice), and nothing else is.
  const auto sources = scan_device_sources(TESSERA_SOURCE_ROOT);
  std::set<std::string> registry;
  for (const auto& spec : kernels::KernelRegistry::standard().all()) registry.insert(spec.name);
  std::set<std::string> scanned;
  for (const auto& [symbol, file] : sources) scanned.insert(symbol);
  EXPECT_EQ(scanned, registry);
  EXPECT_EQ(sources.at("tessera_add_f32").filename(), "elementwise.cpp");
  EXPECT_EQ(sources.at("tessera_copy_words").filename(), "runtime_helpers.cpp");
  EXPECT_EQ(sources.at("tessera_gemm_f16_init").filename(), "gemm.cpp");
}

class DeviceSourcesBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = scratch_.path("");
    ::setenv("FAKE_POPC_HELPER", TESSERA_FAKE_POPC_HELPER, 1);
    ::setenv("FAKE_POPC_LOG", log().c_str(), 1);
    ::unsetenv("FAKE_OBJDUMP_GARBAGE");
    write_text(tree() / "kernels/device/device_abi.hpp", "#define TESSERA_DEVICE_KERNEL(s, b)\n");
    write_text(tree() / "kernels/device/pair.cpp",
               "#include \"kernels/device/device_abi.hpp\"\n"
               "TESSERA_DEVICE_KERNEL(tessera_first, body)\n"
               "  TESSERA_DEVICE_KERNEL(tessera_second,\n"
               "                        body)\n"
               "// TESSERA_DEVICE_KERNEL(tessera_commented, body)\n");
    write_text(tree() / "kernels/device/single.cpp", "TESSERA_DEVICE_KERNEL(tessera_third, b)\n");
    write_text(tree() / "kernels/device/supervised.cpp",
               "TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_fourth, program, body)\n");
    write_text(tree() / "kernels/device/notes.txt", "TESSERA_DEVICE_KERNEL(tessera_text, b)\n");
  }
  void TearDown() override { ::unsetenv("FAKE_POPC_LOG"); }

  fs::path tree() const { return root_ / "tree"; }
  fs::path log() const { return root_ / "popc.log"; }
  KernelCache cache() const {
    return KernelCache(root_ / "cache", find_poplar_tools(fs::path(TESSERA_FAKE_SDK)));
  }

  tessera::testing::ScratchDirectory scratch_;
  fs::path root_;
};

TEST_F(DeviceSourcesBuild, ScansEntriesOfBothMacrosAtTheStartOfALineInCppFilesOnly) {
  const auto sources = scan_device_sources(tree());
  ASSERT_EQ(sources.size(), 4u);
  EXPECT_EQ(sources.at("tessera_first").filename(), "pair.cpp");
  EXPECT_EQ(sources.at("tessera_second").filename(), "pair.cpp");
  EXPECT_EQ(sources.at("tessera_third").filename(), "single.cpp");
  // The supervised entries (the AMP GEMM's, kernels/device/supervised_entry.hpp).
  EXPECT_EQ(sources.at("tessera_fourth").filename(), "supervised.cpp");
}

TEST_F(DeviceSourcesBuild, EachSourceIsBuiltOnceAndServedFromTheCacheAfter) {
  KernelCache kernels = cache();
  {
    DeviceSources device(tree(), kernels);
    const ObjectFile* first = device.object("tessera_first");
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(device.object("tessera_second"), first);  // one object for the family
    EXPECT_EQ(first->name, "kernels/device/pair.cpp");
    EXPECT_NE(device.object("tessera_third"), first);
    EXPECT_EQ(device.object("tessera_add_f32"), nullptr);  // no source here defines it
    EXPECT_EQ(device.sources_used(), 2u);
    EXPECT_EQ(device.sources_built(), 2u);
    EXPECT_EQ(lines(log()), 2u);
  }
  DeviceSources again(tree(), kernels);
  ASSERT_NE(again.object("tessera_second"), nullptr);
  EXPECT_EQ(again.sources_used(), 1u);
  EXPECT_EQ(again.sources_built(), 0u);
  EXPECT_EQ(lines(log()), 2u);  // popc did not run again
  // The command is §3.6's with the tree as include directory.
  std::ifstream in(log());
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find("--target ipu21 -O2 -I" + tree().string() + " "), std::string::npos) << line;
}

TEST_F(DeviceSourcesBuild, APopcFailureIsReportedWithItsStderr) {
  write_text(tree() / "kernels/device/single.cpp",
             "TESSERA_DEVICE_KERNEL(tessera_third, b)\n#error no vector unit\n");
  KernelCache kernels = cache();
  DeviceSources device(tree(), kernels);
  expect_error<KernelBuildError>([&] { device.object("tessera_third"); },
                                 {"single.cpp", "error: no vector unit", "exit status 1"});
}

TEST_F(DeviceSourcesBuild, ATwiceDefinedSymbolOrAMissingTreeIsAnInputError) {
  write_text(tree() / "kernels/device/again.cpp", "TESSERA_DEVICE_KERNEL(tessera_third, b)\n");
  expect_error<InputError>([&] { scan_device_sources(tree()); },
                           {"tessera_third is defined in", "again.cpp", "single.cpp"});
  expect_error<InputError>([&] { scan_device_sources(root_ / "nowhere"); },
                           {"no directory", "TESSERA_DEVICE_SOURCES"});
}

}  // namespace
}  // namespace tessera::compiler::elf
