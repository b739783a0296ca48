#pragma once
// The host build's table of device sources: for each registry symbol with a
// device source in kernels/device/, its portable entry (device_abi.hpp).
// Host-only: popc builds each source into its own object instead.

#include <span>
#include <string_view>

#include "kernels/device/device_abi.hpp"

namespace tessera::device {

using PortableEntry = void (*)(const Registers&, TileMemory&);

struct DeviceKernel {
  std::string_view symbol;
  PortableEntry entry;
};

std::span<const DeviceKernel> device_kernels();
// nullptr when the symbol has no device source.
const DeviceKernel* find_device_kernel(std::string_view symbol);

}  // namespace tessera::device
