#include "compiler/elf/include_scan.hpp"

#include <fstream>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::compiler::elf {
namespace {

struct Directive {
  bool quoted = false;
  std::string name;
};

// The include directive on `line`, if it is one. `#include_next` is treated as `#include`.
std::optional<Directive> parse_include(std::string_view line, const std::string& where) {
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] != '#') return std::nullopt;
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string_view::npos || line.substr(i, 7) != "include") return std::nullopt;
  i += 7;
  if (line.substr(i, 5) == "_next") i += 5;
  i = line.find_first_not_of(" \t", i);
  if (i == std::string_view::npos) throw InputError(where, "#include without a file name");
  const char open = line[i];
  if (open != '"' && open != '<') {
    throw InputError(where,
                     fmt::format("computed #include '{}' cannot be part of the kernel cache key",
                                 std::string(line.substr(i))));
  }
  const char close = open == '"' ? '"' : '>';
  const std::size_t end = line.find(close, i + 1);
  if (end == std::string_view::npos) throw InputError(where, "#include name is not closed");
  return Directive{open == '"', std::string(line.substr(i + 1, end - i - 1))};
}

}  // namespace

IncludedFiles included_files(const std::filesystem::path& source,
                             std::span<const std::filesystem::path> include_dirs) {
  std::set<std::filesystem::path> found;
  std::set<std::string> unresolved;
  const auto root = std::filesystem::weakly_canonical(source);
  std::vector<std::filesystem::path> pending{root};
  std::set<std::filesystem::path> visited{root};
  while (!pending.empty()) {
    const auto file = pending.back();
    pending.pop_back();
    std::ifstream in(file);
    if (!in) throw IoError(fmt::format("{}: cannot open", file.string()));
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
      const auto directive = parse_include(line, fmt::format("{}:{}", file.string(), number));
      if (!directive) continue;
      std::vector<std::filesystem::path> candidates;
      if (directive->quoted) candidates.push_back(file.parent_path() / directive->name);
      for (const auto& dir : include_dirs) candidates.push_back(dir / directive->name);
      bool resolved = false;
      for (const auto& candidate : candidates) {
        std::error_code error;
        if (!std::filesystem::is_regular_file(candidate, error)) continue;
        const auto canonical = std::filesystem::weakly_canonical(candidate);
        if (visited.insert(canonical).second) {
          found.insert(canonical);
          pending.push_back(canonical);
        }
        resolved = true;
        break;
      }
      if (!resolved) unresolved.insert(directive->name);
    }
    if (in.bad()) throw IoError(fmt::format("{}: cannot read", file.string()));
  }
  return {{found.begin(), found.end()}, {unresolved.begin(), unresolved.end()}};
}

}  // namespace tessera::compiler::elf
