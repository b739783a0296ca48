#pragma once
// The device kernels of a build with the Poplar SDK (issue 21 item 3): which
// source in kernels/device/ defines each registry kernel, built once through
// the kernel cache (kernel_cache.hpp) and read as a Colossus object for the
// link step (emit::DeviceCode, compiler/emit/link.hpp).
//
// The sources say which kernels they define: each entry is
// `TESSERA_DEVICE_KERNEL(symbol, body)` (kernels/device/device_abi.hpp) or
// `TESSERA_DEVICE_SUPERVISED_KERNEL(symbol, …)` (supervised_entry.hpp), so
// the map symbol → source is read from the sources themselves and cannot
// drift from them. A source defines a family of kernels and is compiled
// whole, once, however many of its kernels the package calls: the linker keeps
// only the sections the called entries reach (each entry is its own
// `.text.<symbol>` section). The command is §3.6's with no specialising
// flags (the sources take their shapes from registers) and the repository
// root as the include directory (the sources include "kernels/…").

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "compiler/elf/kernel_cache.hpp"
#include "compiler/elf/object.hpp"
#include "compiler/emit/link.hpp"

namespace tessera::compiler::elf {

// Where the device sources are: $TESSERA_DEVICE_SOURCES (a directory holding
// kernels/device/), else the source tree this build came from.
inline constexpr const char* kDeviceSourcesVariable = "TESSERA_DEVICE_SOURCES";
std::filesystem::path default_device_source_root();

// symbol → source file, from every kernels/device/*.cpp under `root`;
// InputError when the directory is missing or two sources define one symbol.
std::map<std::string, std::filesystem::path, std::less<>> scan_device_sources(
    const std::filesystem::path& root);

class DeviceSources final : public emit::DeviceCode {
 public:
  // `root` holds kernels/device/ (and kernels/amp_layout.hpp, which sources include).
  DeviceSources(std::filesystem::path root, KernelCache& cache);

  // The object of the source defining `kernel`, built (or taken from the
  // cache) on the first call for that source; nullptr when no source defines it.
  const ObjectFile* object(std::string_view kernel) override;

  // How many sources this build compiled or took from the cache, and how many popc ran for.
  std::size_t sources_used() const noexcept { return objects_.size(); }
  std::size_t sources_built() const noexcept { return built_; }

 private:
  std::filesystem::path root_;
  KernelCache& cache_;
  std::map<std::string, std::filesystem::path, std::less<>> sources_;
  std::map<std::filesystem::path, std::unique_ptr<ObjectFile>> objects_;
  std::size_t built_ = 0;
};

}  // namespace tessera::compiler::elf
