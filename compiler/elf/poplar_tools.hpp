#pragma once
// Where the Poplar SDK's kernel compiler and object tool are
// (package-elf-profile.md §3.6): DIR/bin/popc and DIR/bin/pop-objdump, DIR
// from `tessera compile --sdk DIR` or else $TESSERA_POPLAR_SDK. Nothing is
// searched for on PATH: which SDK builds a package is the user's decision,
// and it is part of every kernel's cache key (kernel_cache.hpp).

#include <filesystem>
#include <optional>

namespace tessera::compiler::elf {

struct PoplarTools {
  std::filesystem::path popc;
  std::filesystem::path objdump;  // pop-objdump
};

// The environment variable naming the SDK when no directory is passed.
inline constexpr const char* kPoplarSdkVariable = "TESSERA_POPLAR_SDK";

// UsageError when neither `sdk` nor $TESSERA_POPLAR_SDK names a directory;
// InputError naming the path when a tool is missing or not executable.
PoplarTools find_poplar_tools(const std::optional<std::filesystem::path>& sdk);

}  // namespace tessera::compiler::elf
