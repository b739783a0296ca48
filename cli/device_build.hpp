#pragma once
// `--sdk DIR` for the commands that compile (compile, siglip compile, siglip
// run): the device kernels of a hardware package (docs/HARDWARE.md). One
// place, so every compiling command finds the SDK, the cache and the device
// sources the same way.

#include <memory>
#include <string>

#include <boost/program_options.hpp>

#include "cli/command.hpp"
#include "compiler/elf/device_sources.hpp"
#include "compiler/elf/kernel_cache.hpp"
#include "schema/model.hpp"

namespace tessera::cli {

void add_sdk_option(CommandSyntax& syntax);

class DeviceBuild {
 public:
  // The build --sdk DIR (else $TESSERA_POPLAR_SDK) names; nullptr when
  // neither does: the compile is then emulated only, exactly as without
  // this option. InputError naming a missing tool.
  static std::unique_ptr<DeviceBuild> open(const boost::program_options::variables_map& values);

  DeviceBuild(compiler::elf::PoplarTools tools, std::filesystem::path cache);
  DeviceBuild(const DeviceBuild&) = delete;
  DeviceBuild& operator=(const DeviceBuild&) = delete;

  compiler::emit::DeviceCode* code() { return &sources_; }
  // "device kernels: N sources (B built by popc, C from the cache); hardware-loadable"
  std::string summary(const schema::Application& application) const;

 private:
  compiler::elf::KernelCache cache_;
  compiler::elf::DeviceSources sources_;
};

}  // namespace tessera::cli
