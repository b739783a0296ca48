#pragma once
// runtime::Transport over driver/: a Graphcore C600 through the Linux kernel
// driver. See README.md for the sequence each method runs.

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "driver/device.hpp"
#include "driver/loader.hpp"
#include "driver/system.hpp"
#include "runtime/transport.hpp"
#include "schema/model.hpp"
#include "support/error.hpp"
#include "target/clock.hpp"

namespace tessera::backends::c600 {

struct C600Options {
  // The device node (driver-host-protocol.md §1.1; /dev/ipuN).
  std::string device = "/dev/ipu0";
  // The SDK's secondary bootloader ELF (tile_bootloader_cc_ipu21.elf). Needed
  // by load(); read and checked when the transport opens.
  std::filesystem::path bootloader;
  // The configuration capture replayed at open and reset (c600-init.ipucfg).
  std::filesystem::path ipucfg;
  // Where the per-device lock file lives; empty: the system temp directory.
  std::filesystem::path lock_directory;
  driver::Timeouts timeouts;
  // Open resets the device (§1.5) and replays the configuration. false opens
  // it as it is, to inspect a running device; load() then refuses.
  bool initialize = true;
  // Block every maskable signal on the calling thread before the monitoring
  // ioctls (§1.6: the driver signals the process [INF]); threads created
  // later inherit the mask.
  bool block_signals = true;
  // The clock a profile of a package built with profiling reports times at.
  std::uint64_t clock_hz = target::kC600ClockHz;
};

// The package asks for something this backend cannot do (not hardware-loadable).
class PackageRefused : public Error {
 public:
  using Error::Error;
};

// Opens, locks and (unless options.initialize is false) initializes the
// device; the transport owns it exclusively until destroyed.
std::unique_ptr<runtime::Transport> open_c600(const C600Options& options);
// The same through another system interface (tests use a fake device).
std::unique_ptr<runtime::Transport> open_c600(const C600Options& options,
                                              driver::DeviceSystem& system);

// Each tile's loader image: its segments from 0x4C010 up to the highest end,
// gaps zero-filled (§3.3). ImageError when a tile does not start at 0x4C010,
// enters elsewhere or ends beyond 0xE7BB0.
std::vector<driver::TileLoadImage> tile_load_images(const schema::Application& application);

}  // namespace tessera::backends::c600
