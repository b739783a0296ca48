#pragma once
// The popc build cache (issue 21 item 3; package-elf-profile.md §3.6): each
// specialised kernel source is compiled once per distinct input, and the
// Colossus object is kept for every later build.
//
// The key is SHA-256 (OpenSSL, schema/sha256.hpp) over, framed with u64
// little-endian lengths so no two inputs run together:
//   "tessera-kernel-cache-v1", the target, the flags in order (with the -O2
//   implied when no flag starts with -O), the include directories, the
//   source's bytes, every header it includes (include_scan.hpp: path and
//   bytes, sorted by path; unresolved names as names), and the bytes of
//   popc and of pop-objdump.
// Content, never mtimes (the prior art's third flaw): a rebuilt tool with the
// same timestamp, or a header edited and restored, gives the right answer.
//
// An entry is DIR/<key>/kernel.o and DIR/<key>/kernel.o.sha256 (its digest),
// each written atomically (support/atomic_file.hpp), the digest last: it is
// the commit point. A hit needs the digest to match and the object to read as
// a valid Colossus relocatable (object.hpp); anything else is a corrupt entry,
// rebuilt and replaced, never trusted. Concurrent builds of one key are safe:
// each rename installs a complete entry.
//
// The commands (§3.6):
//   popc --target T [-O2] FLAGS… [-I DIR]… SOURCE -o WORK/kernel.gp
//   pop-objdump extract T WORK/kernel.gp   > the object (stdout)
// A non-zero exit is a KernelBuildError with the command and the tool's stderr.

#include <filesystem>
#include <string>
#include <vector>

#include "compiler/elf/poplar_tools.hpp"
#include "support/error.hpp"

namespace tessera::compiler::elf {

class KernelBuildError : public Error {
 public:
  using Error::Error;
};

struct KernelBuild {
  std::filesystem::path source;
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::string> flags;  // the -D macros that specialise the kernel (§3.6)
  std::string target = "ipu21";
};

struct CachedKernel {
  std::filesystem::path object;  // DIR/<key>/kernel.o
  std::string key;               // 64 hex digits
  bool built = false;            // false: served from the cache
};

// $TESSERA_KERNEL_CACHE, else $XDG_CACHE_HOME/tessera/kernels, else
// $HOME/.cache/tessera/kernels; UsageError when none is set.
std::filesystem::path default_kernel_cache_directory();

class KernelCache {
 public:
  // Hashes the tools once (they are part of every key).
  KernelCache(std::filesystem::path directory, PoplarTools tools);

  std::string key(const KernelBuild& build) const;
  // The cached object for `build`, compiling it first when there is none or
  // the entry is corrupt.
  CachedKernel build(const KernelBuild& build);

 private:
  std::filesystem::path directory_;
  PoplarTools tools_;
  std::string tool_digest_;  // SHA-256 of popc's and pop-objdump's bytes
};

}  // namespace tessera::compiler::elf
