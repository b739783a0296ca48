#include "kernels/device/device_kernels.hpp"

#include <algorithm>
#include <array>

#include "kernels/device/kernel_list.hpp"

namespace tessera::device {
namespace entry {
#define TESSERA_DECLARE_ENTRY(symbol) void symbol(const Registers&, TileMemory&);
TESSERA_DEVICE_KERNEL_LIST(TESSERA_DECLARE_ENTRY)
#undef TESSERA_DECLARE_ENTRY
}  // namespace entry

namespace {
#define TESSERA_TABLE_ENTRY(symbol) DeviceKernel{#symbol, &entry::symbol},
constexpr std::array kKernels{TESSERA_DEVICE_KERNEL_LIST(TESSERA_TABLE_ENTRY)};
#undef TESSERA_TABLE_ENTRY
}  // namespace

std::span<const DeviceKernel> device_kernels() { return kKernels; }

const DeviceKernel* find_device_kernel(std::string_view symbol) {
  const auto it = std::find_if(kKernels.begin(), kKernels.end(),
                               [&](const DeviceKernel& k) { return k.symbol == symbol; });
  return it == kKernels.end() ? nullptr : &*it;
}

}  // namespace tessera::device
