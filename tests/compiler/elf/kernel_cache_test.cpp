// The popc build cache against the fake SDK (fake_sdk/bin): compiled once,
// keyed by content (source, every included header, flags, target, tools),
// corrupt entries rebuilt, tool failures reported with their stderr, and the
// cached object linkable (issue 21 items 3 and 6).
#include "compiler/elf/kernel_cache.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/elf/include_scan.hpp"
#include "compiler/elf/linker.hpp"
#include "compiler/elf/object.hpp"
#include "schema/sha256.hpp"
#include "tests/compiler/elf/expect_error.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::compiler::elf {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

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

// A copy of the fake SDK (so a test may edit a tool), a cache directory and a
// kernel source including a header that includes another from an include dir.
class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = scratch_.path("");
    fs::create_directories(sdk() / "bin");
    for (const char* tool : {"popc", "pop-objdump"}) {
      fs::copy_file(fs::path(TESSERA_FAKE_SDK) / "bin" / tool, sdk() / "bin" / tool);
    }
    ::setenv("FAKE_POPC_HELPER", TESSERA_FAKE_POPC_HELPER, 1);
    ::setenv("FAKE_POPC_LOG", log().c_str(), 1);
    ::unsetenv("FAKE_OBJDUMP_GARBAGE");
    write_text(source(), "#include \"kernel.h\"\nvoid kernel() {}\n");
    write_text(root_ / "src" / "kernel.h",
               "#include <detail/inner.h>\n#include <ipu_vector_math>\n");
    write_text(inner(), "#define ROWS 4\n");
  }
  void TearDown() override {
    ::unsetenv("FAKE_POPC_LOG");
    ::unsetenv("FAKE_OBJDUMP_GARBAGE");
  }

  fs::path sdk() const { return root_ / "sdk"; }
  fs::path cache_dir() const { return root_ / "cache"; }
  fs::path log() const { return root_ / "popc.log"; }
  fs::path source() const { return root_ / "src" / "kernel.cpp"; }
  fs::path inner() const { return root_ / "include" / "detail" / "inner.h"; }
  KernelBuild build(std::vector<std::string> flags = {}) const {
    return {source(), {root_ / "include"}, std::move(flags), "ipu21"};
  }
  KernelCache cache() const { return KernelCache(cache_dir(), find_poplar_tools(sdk())); }

  tessera::testing::ScratchDirectory scratch_;
  fs::path root_;
};

TEST_F(KernelCacheTest, FindsTheToolsFromTheSdkOrTheEnvironment) {
  const PoplarTools tools = find_poplar_tools(sdk());
  EXPECT_EQ(tools.popc.filename(), "popc");
  EXPECT_EQ(tools.objdump.filename(), "pop-objdump");
  ::setenv(kPoplarSdkVariable, sdk().c_str(), 1);
  EXPECT_EQ(find_poplar_tools(std::nullopt).popc, tools.popc);
  ::unsetenv(kPoplarSdkVariable);
  expect_error<UsageError>([] { find_poplar_tools(std::nullopt); },
                           {"no Poplar SDK", "--sdk DIR", "TESSERA_POPLAR_SDK"});
  fs::remove(sdk() / "bin" / "pop-objdump");
  expect_error<InputError>([&] { find_poplar_tools(sdk()); },
                           {"no pop-objdump", "bin/pop-objdump"});
}

TEST_F(KernelCacheTest, CompilesOnceAndTheObjectLinks) {
  KernelCache kernels = cache();
  const CachedKernel first = kernels.build(build({"-DKERNEL_SYMBOL=tessera_add_f32"}));
  EXPECT_TRUE(first.built);
  EXPECT_EQ(first.key.size(), 64u);
  EXPECT_EQ(first.object, cache_dir() / first.key / "kernel.o");
  const CachedKernel second = kernels.build(build({"-DKERNEL_SYMBOL=tessera_add_f32"}));
  EXPECT_FALSE(second.built);
  EXPECT_EQ(second.object, first.object);
  EXPECT_EQ(lines(log()), 1u);
  // -O2 is implied without an -O flag, after the target (§3.6's command).
  EXPECT_NE(read_text(log()).find("--target ipu21 -O2 -DKERNEL_SYMBOL=tessera_add_f32 -I"),
            std::string::npos)
      << read_text(log());
  // No build directory is left behind.
  for (const auto& entry : fs::directory_iterator(cache_dir())) {
    EXPECT_EQ(entry.path().filename().string().rfind("build-", 0), std::string::npos);
  }

  const std::vector<ObjectFile> objects{read_object_file(second.object)};
  LinkOptions options;
  options.entry = "tessera_add_f32";
  const LinkedImage image = link(objects, options);
  EXPECT_EQ(image.entry, target::kLinkerRegion1.begin);
}

TEST_F(KernelCacheTest, TheKeyIsEveryIncludedHeadersContentNotItsTime) {
  KernelCache kernels = cache();
  const std::string original = kernels.key(build());
  // The header two levels down is found through the include directory.
  const IncludedFiles headers = included_files(source(), build().include_dirs);
  EXPECT_EQ(headers.found,
            (std::vector<fs::path>{fs::weakly_canonical(inner()),
                                   fs::weakly_canonical(root_ / "src" / "kernel.h")}));
  EXPECT_EQ(headers.unresolved, std::vector<std::string>{"ipu_vector_math"});

  kernels.build(build());
  write_text(inner(), "#define ROWS 5\n");
  EXPECT_NE(kernels.key(build()), original);
  EXPECT_TRUE(kernels.build(build()).built);
  // Restored content, new mtime: the first entry again, no compilation.
  write_text(inner(), "#define ROWS 4\n");
  fs::last_write_time(inner(), fs::file_time_type::clock::now() + std::chrono::hours(1));
  EXPECT_EQ(kernels.key(build()), original);
  EXPECT_FALSE(kernels.build(build()).built);
  EXPECT_EQ(lines(log()), 2u);
  // A header that appears where an include was unresolved changes the key.
  write_text(root_ / "include" / "ipu_vector_math", "// now here\n");
  EXPECT_NE(kernels.key(build()), original);
}

TEST_F(KernelCacheTest, TheKeyCoversFlagsTargetAndTools) {
  const KernelCache kernels = cache();
  const std::string plain = kernels.key(build());
  EXPECT_NE(kernels.key(build({"-DROWS=8"})), plain);
  EXPECT_NE(kernels.key(build({"-O3"})), plain);
  EXPECT_EQ(kernels.key(build({"-O2"})), plain);  // the implied flag, spelled out
  KernelBuild other_target = build();
  other_target.target = "ipu2";
  EXPECT_NE(kernels.key(other_target), plain);
  // Flags run together differently are different keys (length-framed fields).
  EXPECT_NE(kernels.key(build({"-DA", "-DB"})), kernels.key(build({"-DA-DB"})));
  // A different popc (same name, same place): a different key.
  std::ofstream(sdk() / "bin" / "popc", std::ios::app) << "# rebuilt\n";
  EXPECT_NE(cache().key(build()), plain);
}

TEST_F(KernelCacheTest, ACorruptEntryIsRebuiltNeverTrusted) {
  KernelCache kernels = cache();
  const CachedKernel first = kernels.build(build());
  const auto digest = first.object.parent_path() / "kernel.o.sha256";
  const std::string good = read_text(first.object);

  // A flipped byte: the digest no longer matches.
  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x40);
  write_text(first.object, flipped);
  EXPECT_TRUE(kernels.build(build()).built);
  EXPECT_EQ(read_text(first.object), good);

  // No digest (a build interrupted before its commit point).
  fs::remove(digest);
  EXPECT_TRUE(kernels.build(build()).built);
  EXPECT_TRUE(fs::exists(digest));

  // A digest that matches bytes which are no object: still rebuilt.
  write_text(first.object, "garbage");
  const std::string garbage = "garbage";
  write_text(digest, schema::to_hex(schema::sha256(std::span(
                         reinterpret_cast<const std::uint8_t*>(garbage.data()), garbage.size()))));
  EXPECT_TRUE(kernels.build(build()).built);
  EXPECT_EQ(read_text(first.object), good);
  EXPECT_FALSE(kernels.build(build()).built);
  EXPECT_EQ(lines(log()), 4u);
}

TEST_F(KernelCacheTest, AToolFailureIsReportedWithItsStderr) {
  KernelCache kernels = cache();
  write_text(source(), "#include \"kernel.h\"\n#error ROWS must be a multiple of 4\n");
  expect_error<KernelBuildError>([&] { kernels.build(build()); },
                                 {"building kernel", "popc --target ipu21", "exit status 1",
                                  "error: ROWS must be a multiple of 4"});
  // Nothing was cached: the next build runs popc again.
  expect_error<KernelBuildError>([&] { kernels.build(build()); }, {"exit status 1"});
  EXPECT_EQ(lines(log()), 2u);

  write_text(source(), "void kernel() {}\n");
  ::setenv("FAKE_OBJDUMP_GARBAGE", "1", 1);
  expect_error<ObjectError>([&] { kernels.build(build()); },
                            {"pop-objdump extract", "the extracted object", "ELF header"});
  ::unsetenv("FAKE_OBJDUMP_GARBAGE");
  EXPECT_TRUE(kernels.build(build()).built);
}

TEST_F(KernelCacheTest, AComputedIncludeCannotBeKeyed) {
  write_text(source(), "#define HEADER \"kernel.h\"\n#include HEADER\n");
  const KernelCache kernels = cache();
  expect_error<InputError>([&] { (void)kernels.key(build()); },
                           {"kernel.cpp:2", "computed #include 'HEADER'"});
}

TEST(KernelCacheDirectory, ComesFromTheEnvironment) {
  const char* saved_cache = std::getenv("TESSERA_KERNEL_CACHE");
  const std::string saved = saved_cache ? saved_cache : "";
  ::setenv("TESSERA_KERNEL_CACHE", "/tmp/kernels-here", 1);
  EXPECT_EQ(default_kernel_cache_directory(), fs::path("/tmp/kernels-here"));
  ::unsetenv("TESSERA_KERNEL_CACHE");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(default_kernel_cache_directory(), fs::path("/tmp/xdg/tessera/kernels"));
  ::unsetenv("XDG_CACHE_HOME");
  if (saved_cache) ::setenv("TESSERA_KERNEL_CACHE", saved.c_str(), 1);
}

}  // namespace
}  // namespace tessera::compiler::elf
