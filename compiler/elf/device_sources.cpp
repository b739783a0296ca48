#include "compiler/elf/device_sources.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::compiler::elf {
namespace {

// The entry macros (kernels/device/device_abi.hpp, supervised_entry.hpp).
constexpr std::string_view kEntryMacros[] = {"TESSERA_DEVICE_KERNEL(",
                                             "TESSERA_DEVICE_SUPERVISED_KERNEL("};

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The symbols of `text`'s entry lines, TESSERA_DEVICE_KERNEL(symbol, …) or
// TESSERA_DEVICE_SUPERVISED_KERNEL(symbol, …); a macro's own #define (in a
// header, not scanned anyway) would start with '#'.
std::vector<std::string> entries(const std::string& text) {
  std::vector<std::string> symbols;
  for (const std::string_view macro : kEntryMacros) {
    for (std::size_t at = text.find(macro); at != std::string::npos;
         at = text.find(macro, at + 1)) {
      const std::size_t line = text.rfind('\n', at);
      const std::size_t first = line == std::string::npos ? 0 : line + 1;
      if (text.find_first_not_of(" \t", first) != at) continue;  // not at a line's start
      std::size_t begin = at + macro.size();
      while (begin < text.size() && (text[begin] == ' ' || text[begin] == '\t')) ++begin;
      std::size_t end = begin;
      while (end < text.size() && identifier_char(text[end])) ++end;
      if (end > begin) symbols.emplace_back(text.substr(begin, end - begin));
    }
  }
  return symbols;
}

}  // namespace

std::filesystem::path default_device_source_root() {
  if (const char* root = std::getenv(kDeviceSourcesVariable); root != nullptr && *root != '\0') {
    return root;
  }
  return TESSERA_DEVICE_SOURCE_ROOT;
}

std::map<std::string, std::filesystem::path, std::less<>> scan_device_sources(
    const std::filesystem::path& root) {
  const std::filesystem::path directory = root / "kernels" / "device";
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) {
    throw InputError(fmt::format(
        "device kernel sources: no directory {} (set {} to a tree holding kernels/device/)",
        directory.string(), kDeviceSourcesVariable));
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.is_regular_file() && entry.path().extension() == ".cpp")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // directory order is the file system's
  std::map<std::string, std::filesystem::path, std::less<>> sources;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw IoError(fmt::format("{}: cannot open", file.string()));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto& symbol : entries(text)) {
      const auto [at, inserted] = sources.emplace(symbol, file);
      if (!inserted) {
        throw InputError(fmt::format("device kernel sources: {} is defined in {} and in {}", symbol,
                                     at->second.string(), file.string()));
      }
    }
  }
  return sources;
}

DeviceSources::DeviceSources(std::filesystem::path root, KernelCache& cache)
    : root_(std::move(root)), cache_(cache), sources_(scan_device_sources(root_)) {}

const ObjectFile* DeviceSources::object(std::string_view kernel) {
  const auto source = sources_.find(kernel);
  if (source == sources_.end()) return nullptr;
  auto found = objects_.find(source->second);
  if (found == objects_.end()) {
    const CachedKernel cached = cache_.build({source->second, {root_}, {}, "ipu21"});
    // Named by its source, so a link error says which family it is about.
    ObjectFile read = read_object_file(cached.object);
    read.name = std::filesystem::relative(source->second, root_).string();
    found = objects_.emplace(source->second, std::make_unique<ObjectFile>(std::move(read))).first;
    if (cached.built) ++built_;
  }
  const ObjectFile* object = found->second.get();
  // The cache checked that the object reads; an object that lacks an entry
  // its source declares is the tools' fault, named here rather than as an
  // undefined symbol at link time.
  const bool defines =
      std::any_of(object->symbols.begin(), object->symbols.end(),
                  [&](const Symbol& s) { return s.name == kernel && s.defined() && s.global(); });
  if (!defines) {
    throw KernelBuildError(fmt::format("{}: popc's object ({}) defines no global '{}'",
                                       source->second.string(), object->name, kernel));
  }
  return object;
}

}  // namespace tessera::compiler::elf
