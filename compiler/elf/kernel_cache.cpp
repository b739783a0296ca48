#include "compiler/elf/kernel_cache.hpp"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "compiler/elf/include_scan.hpp"
#include "compiler/elf/object.hpp"
#include "schema/sha256.hpp"
#include "support/atomic_file.hpp"
#include "support/logging.hpp"
#include "support/subprocess.hpp"

namespace tessera::compiler::elf {
namespace {

constexpr const char* kObjectName = "kernel.o";
constexpr const char* kDigestName = "kernel.o.sha256";

std::vector<std::uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(fmt::format("{}: cannot open", path.string()));
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (in.bad()) throw IoError(fmt::format("{}: cannot read", path.string()));
  return bytes;
}

// Length-prefixed fields: "ab" + "c" and "a" + "bc" hash differently.
class KeyStream {
 public:
  void field(std::string_view text) {
    length(text.size());
    stream_.update(text);
  }
  void field(std::span<const std::uint8_t> bytes) {
    length(bytes.size());
    stream_.update(bytes);
  }
  void length(std::uint64_t n) {
    std::uint8_t bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(n >> (8 * i));
    stream_.update(std::span<const std::uint8_t>(bytes));
  }
  std::string finish() { return schema::to_hex(stream_.finish()); }

 private:
  schema::Sha256Stream stream_;
};

bool implies_o2(const std::vector<std::string>& flags) {
  return std::none_of(flags.begin(), flags.end(),
                      [](const std::string& f) { return f.rfind("-O", 0) == 0; });
}

// Removes a directory tree when it goes out of scope; never throws.
class WorkDirectory {
 public:
  explicit WorkDirectory(const std::filesystem::path& parent) {
    std::string pattern = (parent / "build-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw IoError(fmt::format("{}: cannot create a build directory", parent.string()));
    }
    path_ = pattern;
  }
  ~WorkDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  WorkDirectory(const WorkDirectory&) = delete;
  WorkDirectory& operator=(const WorkDirectory&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

std::string command_line(const std::vector<std::string>& argv) {
  std::string text;
  for (const auto& arg : argv) {
    if (!text.empty()) text += ' ';
    text += arg;
  }
  return text;
}

SubprocessResult run_tool(const std::vector<std::string>& argv) {
  SubprocessResult result = run_subprocess(argv);
  if (result.exit_status != 0) {
    std::string err = result.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    throw KernelBuildError(fmt::format("{} failed with exit status {}: {}", command_line(argv),
                                       result.exit_status, err.empty() ? "(no stderr)" : err));
  }
  return result;
}

// Why the entry at `entry` cannot be used, or empty when it can.
std::string entry_problem(const std::filesystem::path& entry) {
  std::error_code error;
  if (!std::filesystem::exists(entry / kDigestName, error)) return "no digest";
  try {
    const auto object = read_bytes(entry / kObjectName);
    const auto digest = read_bytes(entry / kDigestName);
    const std::string recorded(digest.begin(), digest.end());
    if (recorded != schema::to_hex(schema::sha256(object)))
      return "the object does not match its digest";
    (void)read_object((entry / kObjectName).string(), object);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

std::filesystem::path default_kernel_cache_directory() {
  auto variable = [](const char* name) -> const char* {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
  };
  if (const char* dir = variable("TESSERA_KERNEL_CACHE")) return dir;
  if (const char* dir = variable("XDG_CACHE_HOME"))
    return std::filesystem::path(dir) / "tessera" / "kernels";
  if (const char* dir = variable("HOME")) {
    return std::filesystem::path(dir) / ".cache" / "tessera" / "kernels";
  }
  throw UsageError("no kernel cache directory: set TESSERA_KERNEL_CACHE (or HOME)");
}

KernelCache::KernelCache(std::filesystem::path directory, PoplarTools tools)
    : directory_(std::move(directory)), tools_(std::move(tools)) {
  KeyStream tools_key;
  tools_key.field(read_bytes(tools_.popc));
  tools_key.field(read_bytes(tools_.objdump));
  tool_digest_ = tools_key.finish();
}

std::string KernelCache::key(const KernelBuild& build) const {
  KeyStream key;
  key.field("tessera-kernel-cache-v1");
  key.field(build.target);
  const bool o2 = implies_o2(build.flags);
  key.length(build.flags.size() + (o2 ? 1 : 0));
  if (o2) key.field("-O2");
  for (const auto& flag : build.flags) key.field(flag);
  key.length(build.include_dirs.size());
  for (const auto& dir : build.include_dirs) key.field(dir.string());
  key.field(read_bytes(build.source));
  const IncludedFiles headers = included_files(build.source, build.include_dirs);
  key.length(headers.found.size());
  for (const auto& header : headers.found) {
    key.field(header.string());
    key.field(read_bytes(header));
  }
  key.length(headers.unresolved.size());
  for (const auto& name : headers.unresolved) key.field(name);
  key.field(tool_digest_);
  return key.finish();
}

CachedKernel KernelCache::build(const KernelBuild& build) {
  return with_context(fmt::format("building kernel {}", build.source.string()), [&] {
    CachedKernel result;
    result.key = key(build);
    const auto entry = directory_ / result.key;
    result.object = entry / kObjectName;
    const std::string problem = entry_problem(entry);
    if (problem.empty()) return result;
    std::error_code error;
    if (std::filesystem::exists(entry, error)) {
      spdlog::warn("kernel cache entry {} is unusable ({}); rebuilding it", entry.string(),
                   problem);
    }
    std::filesystem::create_directories(directory_);
    const WorkDirectory work(directory_);
    const auto gp = (work.path() / "kernel.gp").string();
    std::vector<std::string> popc{tools_.popc.string(), "--target", build.target};
    if (implies_o2(build.flags)) popc.push_back("-O2");
    popc.insert(popc.end(), build.flags.begin(), build.flags.end());
    for (const auto& dir : build.include_dirs) popc.push_back("-I" + dir.string());
    popc.push_back(build.source.string());
    popc.push_back("-o");
    popc.push_back(gp);
    run_tool(popc);
    const SubprocessResult extracted =
        run_tool({tools_.objdump.string(), "extract", build.target, gp});
    const std::vector<std::uint8_t> object(extracted.out.begin(), extracted.out.end());
    with_context(fmt::format("{} extract", tools_.objdump.string()),
                 [&] { (void)read_object("the extracted object", object); });

    // An input edited while the tools ran would file this object under the
    // old content's key; refuse rather than cache a mismatch.
    if (key(build) != result.key) {
      throw KernelBuildError("the source or a header changed while it was compiled; build again");
    }
    // The entry directory only once there is something to put in it.
    std::filesystem::create_directories(entry);
    write_file_atomically(result.object, object);
    const std::string digest = schema::to_hex(schema::sha256(object));
    write_file_atomically(
        entry / kDigestName,
        std::span(reinterpret_cast<const std::uint8_t*>(digest.data()), digest.size()));
    result.built = true;
    return result;
  });
}

}  // namespace tessera::compiler::elf
