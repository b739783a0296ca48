#include "cli/device_build.hpp"

#include <cstdlib>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "compiler/elf/poplar_tools.hpp"

namespace po = boost::program_options;

namespace tessera::cli {

void add_sdk_option(CommandSyntax& syntax) {
  syntax.options.add_options()(
      "sdk", po::value<std::string>()->value_name("DIR"),
      "build and link the device kernels with the Poplar SDK in DIR (DIR/bin/popc, "
      "DIR/bin/pop-objdump; default $TESSERA_POPLAR_SDK, else none: emulated only)");
}

std::unique_ptr<DeviceBuild> DeviceBuild::open(const po::variables_map& values) {
  std::optional<std::filesystem::path> sdk;
  if (values.count("sdk")) sdk = values["sdk"].as<std::string>();
  const char* variable = std::getenv(compiler::elf::kPoplarSdkVariable);
  if (!sdk && (variable == nullptr || *variable == '\0')) return nullptr;
  return std::make_unique<DeviceBuild>(compiler::elf::find_poplar_tools(sdk),
                                       compiler::elf::default_kernel_cache_directory());
}

DeviceBuild::DeviceBuild(compiler::elf::PoplarTools tools, std::filesystem::path cache)
    : cache_(cache, tools), sources_(compiler::elf::default_device_source_root(), cache_) {
  spdlog::info("device kernels: {} into {}", tools.popc.string(), cache.string());
}

std::string DeviceBuild::summary(const schema::Application& application) const {
  return fmt::format("device kernels: {} sources ({} built by popc, {} from the cache); {}",
                     sources_.sources_used(), sources_.sources_built(),
                     sources_.sources_used() - sources_.sources_built(),
                     application.hardware_loadable
                         ? std::string("hardware-loadable")
                         : "not hardware-loadable: " + application.not_loadable_reason);
}

}  // namespace tessera::cli
