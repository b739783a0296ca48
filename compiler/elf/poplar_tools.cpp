#include "compiler/elf/poplar_tools.hpp"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::compiler::elf {
namespace {

std::filesystem::path tool(const std::filesystem::path& sdk, const char* name) {
  const auto path = sdk / "bin" / name;
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw InputError(
        fmt::format("Poplar SDK {}: no {} (looked for {})", sdk.string(), name, path.string()));
  }
  if (::access(path.c_str(), X_OK) != 0) {
    throw InputError(
        fmt::format("Poplar SDK {}: {} is not executable", sdk.string(), path.string()));
  }
  return std::filesystem::absolute(path);
}

}  // namespace

PoplarTools find_poplar_tools(const std::optional<std::filesystem::path>& sdk) {
  std::filesystem::path directory;
  if (sdk && !sdk->empty()) {
    directory = *sdk;
  } else if (const char* from_environment = std::getenv(kPoplarSdkVariable);
             from_environment != nullptr && *from_environment != '\0') {
    directory = from_environment;
  } else {
    throw UsageError(fmt::format("no Poplar SDK: pass --sdk DIR or set {} to build device kernels",
                                 kPoplarSdkVariable));
  }
  return {tool(directory, "popc"), tool(directory, "pop-objdump")};
}

}  // namespace tessera::compiler::elf
