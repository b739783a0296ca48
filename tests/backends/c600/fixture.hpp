#pragma once
// A c600 transport over the fake device, with a bootloader ELF and the real
// configuration capture, in a scratch lock directory.

#include <fstream>
#include <memory>

#include "backends/c600/c600_transport.hpp"
#include "tests/driver/elf_builder.hpp"
#include "tests/driver/fake_device.hpp"
#include "tests/testing/scratch.hpp"

namespace tessera::testing {

inline backends::c600::C600Options fake_options(const ScratchDirectory& scratch) {
  backends::c600::C600Options options;
  options.device = FakeDevice::kDefaultPath;
  const auto elf = bootloader_elf(3000);
  const std::string bootloader = scratch.path("bootloader.elf");
  std::ofstream(bootloader, std::ios::binary)
      .write(reinterpret_cast<const char*>(elf.data()), static_cast<std::streamsize>(elf.size()));
  options.bootloader = bootloader;
  options.ipucfg = TESSERA_DRIVER_TEST_DATA "/c600-init.ipucfg";
  options.lock_directory = scratch.path("");
  options.block_signals = false;
  options.timeouts.hsp = std::chrono::milliseconds(2000);
  options.timeouts.hsp_poll = std::chrono::microseconds(10);
  options.timeouts.autoloader_poll = std::chrono::microseconds(10);
  return options;
}

}  // namespace tessera::testing
