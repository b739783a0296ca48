#pragma once
// The headers a kernel source includes, for its cache key (kernel_cache.hpp).
// The prior art keyed only on the source's bytes, so an edited header reused a
// stale object (package-elf-profile.md §3.6's first flaw).
//
// The scan follows `#include "…"` (the including file's directory, then the
// include directories) and `#include <…>` (the include directories) through
// every file it finds, each once. It over-approximates on purpose: an include
// inside `#if 0` or a comment is followed too, which can only make the key
// change more often, never less. A name found nowhere is kept as a name (an
// SDK or system header, covered by the tools' hashes; or a file that does
// not exist yet, whose creation changes the scan and so the key). A computed
// include (`#include MACRO`) is an InputError: the key could not cover it.

#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace tessera::compiler::elf {

struct IncludedFiles {
  std::vector<std::filesystem::path> found;  // canonical, sorted, without the source itself
  std::vector<std::string> unresolved;       // include names found in no directory, sorted
};

IncludedFiles included_files(const std::filesystem::path& source,
                             std::span<const std::filesystem::path> include_dirs);

}  // namespace tessera::compiler::elf
