#include "backends/c600/c600_transport.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/c600/device_lock.hpp"
#include "backends/c600/device_profile.hpp"
#include "driver/bootloader.hpp"
#include "driver/errors.hpp"
#include "driver/ipucfg.hpp"
#include "driver/registers.hpp"
#include "driver/tdi.hpp"
#include "schema/validate.hpp"
#include "support/checked.hpp"
#include "target/config_space.hpp"
#include "target/memory_map.hpp"

namespace tessera::backends::c600 {

using runtime::ContextState;
using runtime::HspMark;
using runtime::WaitOutcome;
using target::PhysicalTile;

std::vector<driver::TileLoadImage> tile_load_images(const schema::Application& application) {
  std::vector<driver::TileLoadImage> images;
  images.reserve(application.tiles.size());
  for (std::size_t t = 0; t < application.tiles.size(); ++t) {
    const schema::TileImage& tile = application.tiles[t];
    const std::string field = fmt::format("tiles[{}] ({})", t, tile.tile);
    if (tile.entry_point != target::kEntryPoint) {
      throw driver::ImageError(field, fmt::format("entry point {:#x}; the bootloader starts "
                                                  "every supervisor at {:#x}",
                                                  tile.entry_point, target::kEntryPoint));
    }
    if (tile.segments.empty()) throw driver::ImageError(field, "no segments");
    std::uint32_t lowest = 0xFFFFFFFF;
    std::uint64_t end = 0;
    for (const auto& segment : tile.segments) {
      lowest = std::min(lowest, segment.address);
      end = std::max(end, checked_add<std::uint64_t>(segment.address, segment.memory_size,
                                                     field + ".segments"));
    }
    if (lowest != target::kLoadBase) {
      throw driver::ImageError(field, fmt::format("lowest segment at {:#x}; the loader writes "
                                                  "images from {:#x}",
                                                  lowest, target::kLoadBase));
    }
    if (end > target::kLoadLimit) {
      throw driver::ImageError(field, fmt::format("image ends at {:#x}, beyond the loadable "
                                                  "limit {:#x}",
                                                  end, target::kLoadLimit));
    }
    driver::TileLoadImage image{tile.tile, std::vector<std::uint8_t>(
                                               static_cast<std::size_t>(end - lowest), 0)};
    for (const auto& segment : tile.segments) {
      const std::vector<std::uint8_t> bytes = schema::segment_bytes(application, segment);
      std::copy(bytes.begin(), bytes.end(), image.image.begin() + (segment.address - lowest));
    }
    images.push_back(std::move(image));
  }
  return images;
}

namespace {

void block_signals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

ContextState to_runtime(driver::TdiContextState state) {
  return static_cast<ContextState>(static_cast<std::uint8_t>(state));
}

class C600Transport final : public runtime::Transport {
 public:
  C600Transport(const C600Options& options, driver::DeviceSystem& system)
      : options_(options),
        lock_(DeviceLock::acquire(options.device, options.lock_directory.empty()
                                                      ? std::filesystem::temp_directory_path()
                                                      : options.lock_directory)),
        device_(open_device(options, system)),
        tdi_(device_),
        topology_(target::Topology::c600()) {
    if (!options_.bootloader.empty()) bootloader_ = driver::read_bootloader(options_.bootloader);
    if (options_.initialize) {
      if (options_.ipucfg.empty()) {
        throw UsageError(fmt::format(
            "{}: no configuration capture given (C600Options::ipucfg, e.g. c600-init.ipucfg)",
            options_.device));
      }
      configuration_ = driver::read_ipucfg(options_.ipucfg);
      initialize();
    }
  }

  std::string description() const override { return fmt::format("C600 at {}", options_.device); }
  const target::Topology& topology() const override { return topology_; }

  void reset() override {
    loader_.reset();
    pending_.reset();
    started_.clear();
    sampled_.reset();
    device_.detach_all_buffers();
    initialize();
  }

  void write_config(std::uint32_t offset, std::uint32_t value) override {
    if (target::is_hsp_mark_register(offset)) {
      throw UsageError(fmt::format("{}: {} is an HSP mark; write it with write_mark()",
                                   options_.device, driver::register_name(offset)));
    }
    device_.write_config(offset, value);
  }
  std::uint32_t read_config(std::uint32_t offset) override { return device_.read_config(offset); }

  void load(const schema::Application& application) override {
    if (!application.hardware_loadable) {
      throw PackageRefused(fmt::format(
          "{}: the package is not hardware-loadable: {}", description(),
          application.not_loadable_reason.empty() ? std::string("(no reason recorded)")
                                                  : application.not_loadable_reason));
    }
    if (!options_.initialize) {
      throw UsageError(fmt::format("{}: opened without initialization (inspection only); "
                                   "loading needs a reset device",
                                   options_.device));
    }
    if (!bootloader_) {
      throw UsageError(fmt::format("{}: no bootloader given (C600Options::bootloader, the "
                                   "SDK's tile_bootloader_cc_ipu21.elf)",
                                   options_.device));
    }
    if (loader_ && loader_->loaded()) {
      throw UsageError(fmt::format("{}: a loaded package waits for start(); reset() discards it",
                                   options_.device));
    }
    with_context("validating the package", [&] { schema::validate(application); });
    const std::vector<driver::TileLoadImage> images = tile_load_images(application);
    started_.clear();
    loader_ = std::make_unique<driver::Loader>(device_);
    loader_->load(*bootloader_, images);
    Pending pending;
    sampled_ = sampled_package(application);
    pending.final_mark = application.host_exchange.startup_mark;
    pending.config_writes = application.device_config_writes;
    for (const auto& image : images) pending.tiles.push_back(image.tile);
    pending_ = std::move(pending);
  }

  void start() override {
    if (!loader_ || !loader_->loaded() || !pending_) {
      throw UsageError(fmt::format("{}: start() before load()", options_.device));
    }
    loader_->start(pending_->final_mark);
    loader_.reset();
    // After the load, as the reference's HEAD does (§3.7).
    for (std::size_t i = 0; i < pending_->config_writes.size(); ++i) {
      const auto& write = pending_->config_writes[i];
      if (!target::is_config_word_offset(write.offset) ||
          target::is_hsp_mark_register(write.offset)) {
        throw InputError(fmt::format("deviceConfigWrites[{}].offset", i),
                         fmt::format("{:#x} is not a writable configuration word", write.offset));
      }
      device_.write_config(write.offset, write.value);
    }
    started_ = std::move(pending_->tiles);
    pending_.reset();
  }

  void attach(std::uint32_t index, runtime::HostBuffer& buffer) override {
    const runtime::DeviceMemory memory = buffer.device_memory();
    device_.write_config(driver::reg::kExchangeWindowBase, driver::reg::kExchangeWindowHexopt);
    device_.attach_buffer(index, memory.address, memory.size);
  }
  void detach(std::uint32_t index) override { device_.detach_buffer(index); }
  void detach_all() override { device_.detach_all_buffers(); }

  void write_mark(HspMark mark, std::uint16_t credits) override {
    device_.write_mark(runtime::hsp_mark_offset(mark), credits);
  }
  std::uint16_t read_mark(HspMark mark) override {
    return device_.read_mark(runtime::hsp_mark_offset(mark));
  }
  WaitOutcome wait_mark_zero(HspMark mark, std::chrono::milliseconds timeout) override {
    if (device_.poll_mark_zero(runtime::hsp_mark_offset(mark), timeout)) return WaitOutcome::kReached;
    return scan_stopped().value_or(WaitOutcome::kTimedOut);
  }
  WaitOutcome wait_halted(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      bool halted = true;
      bool stopped = false;
      for (const PhysicalTile tile : started_) {
        const driver::ContextStatus status = tdi_.context_status(tile);
        for (unsigned c = 0; c < driver::kTdiContexts; ++c) {
          switch (status.state(c)) {
            case driver::TdiContextState::kExcepted: return WaitOutcome::kFaulted;
            case driver::TdiContextState::kExceptedDebug: stopped = true; break;
            case driver::TdiContextState::kRunning: halted = false; break;
            case driver::TdiContextState::kInactive: break;
          }
        }
      }
      if (stopped) return WaitOutcome::kStopped;
      if (halted) return WaitOutcome::kReached;
      if (std::chrono::steady_clock::now() >= deadline) return WaitOutcome::kTimedOut;
      std::this_thread::sleep_for(options_.timeouts.hsp_poll);
    }
  }
  void idle(std::chrono::microseconds duration) override { std::this_thread::sleep_for(duration); }

  runtime::TileState tile_state(PhysicalTile tile) override {
    runtime::TileState state;
    state.tile = tile;
    const driver::ContextStatus status = tdi_.context_status(tile);
    for (unsigned c = 0; c < driver::kTdiContexts; ++c) state.contexts[c] = to_runtime(status.state(c));
    const driver::TdiContextState supervisor = status.state(0);
    if (supervisor == driver::TdiContextState::kExcepted ||
        supervisor == driver::TdiContextState::kExceptedDebug) {
      state.pc = tdi_.read_pc(tile, 0);
      state.detail = fmt::format(
          "supervisor stopped with {}",
          driver::exception_type_name(driver::exception_type_of(tdi_.read_status(tile, 0))));
    } else {
      state.detail = "pc not read: the supervisor is not stopped";
    }
    if (status.ererr() != 0) {
      state.detail += fmt::format("; exchange receive error {}",
                                  driver::exchange_error_name(status.ererr()));
    }
    return state;
  }

  void read_sram(PhysicalTile tile, std::uint32_t address, std::span<std::uint8_t> bytes) override {
    if (bytes.empty()) return;
    const auto [first, count] = word_span(tile, address, bytes.size());
    const unsigned context = debug_context(tile);
    const std::vector<std::uint32_t> words = tdi_.read_words(tile, context, first, count);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const std::size_t at = address - first + i;
      bytes[i] = static_cast<std::uint8_t>(words[at / 4] >> (8 * (at % 4)));
    }
  }

  void write_sram(PhysicalTile tile, std::uint32_t address,
                  std::span<const std::uint8_t> bytes) override {
    if (bytes.empty()) return;
    const auto [first, count] = word_span(tile, address, bytes.size());
    const unsigned context = debug_context(tile);
    const std::size_t head = address - first;
    for (std::size_t w = 0; w < count; ++w) {
      const auto word_address = static_cast<std::uint32_t>(first + 4 * w);
      const std::size_t begin = w * 4;  // byte index of the word in the covered span
      const bool partial = begin < head || begin + 4 > head + bytes.size();
      std::uint32_t word = partial ? tdi_.read_word(tile, context, word_address) : 0;
      for (std::size_t b = 0; b < 4; ++b) {
        const std::size_t at = begin + b;
        if (at < head || at >= head + bytes.size()) continue;
        word &= ~(0xFFu << (8 * b));
        word |= std::uint32_t{bytes[at - head]} << (8 * b);
      }
      tdi_.write_word(tile, context, word_address, word);
    }
  }

  // The package's sample buffers, read over TDI (device_profile.hpp); none
  // when the package was built without profiling.
  std::optional<schema::Profile> profile() override {
    if (!sampled_) return std::nullopt;
    return with_context(fmt::format("{}: reading the cycle samples", description()), [&] {
      return read_device_profile(
          *sampled_,
          [&](PhysicalTile tile, std::uint32_t address, std::span<std::uint8_t> bytes) {
            read_sram(tile, address, bytes);
          },
          options_.clock_hz);
    });
  }

  std::vector<runtime::DeviceFault> faults() override {
    std::vector<runtime::DeviceFault> found;
    for (const PhysicalTile tile : started_) {
      const driver::ContextStatus status = tdi_.context_status(tile);
      for (unsigned c = 0; c < driver::kTdiContexts; ++c) {
        if (status.state(c) != driver::TdiContextState::kExcepted) continue;
        runtime::DeviceFault fault;
        fault.tile = tile;
        fault.context = c;
        fault.pc = tdi_.read_pc(tile, c);
        fault.kind = std::string(
            driver::exception_type_name(driver::exception_type_of(tdi_.read_status(tile, c))));
        fault.message = status.ererr() != 0
                            ? fmt::format("exchange receive error {}",
                                          driver::exchange_error_name(status.ererr()))
                            : std::string("non-debug exception");
        found.push_back(std::move(fault));
      }
    }
    return found;
  }

 private:
  struct Pending {
    std::uint32_t final_mark = 0;
    std::vector<schema::DeviceConfigWrite> config_writes;
    std::vector<PhysicalTile> tiles;
  };

  static driver::Device open_device(const C600Options& options, driver::DeviceSystem& system) {
    if (options.block_signals) block_signals();
    return driver::Device::open(system, options.device, options.timeouts);
  }

  void initialize() {
    device_.initialize();
    with_context(fmt::format("replaying {}", options_.ipucfg.string()),
                 [&] { driver::replay_configuration(device_, configuration_); });
  }

  // The first word and the word count covering [address, address + size).
  std::pair<std::uint32_t, std::size_t> word_span(PhysicalTile tile, std::uint32_t address,
                                                  std::size_t size) const {
    if (!target::on_chip(tile)) {
      throw UsageError(fmt::format("{}: {} is not a tile of the C600", options_.device, tile));
    }
    if (address < target::kSramBase) {
      throw UsageError(fmt::format("{}: {} address {:#x} is below SRAM ({:#x})", options_.device,
                                   tile, address, target::kSramBase));
    }
    checked_range(address, size, target::kSramEnd, fmt::format("{} SRAM access", tile));
    const std::uint32_t first = address & ~3u;
    const std::size_t end = (std::size_t{address} + size + 3) & ~std::size_t{3};
    return {first, (end - first) / 4};
  }

  // An inactive worker context needs no stop (§6.4); otherwise the supervisor, stopped.
  unsigned debug_context(PhysicalTile tile) { return tdi_.inactive_worker(tile).value_or(0); }

  std::optional<WaitOutcome> scan_stopped() {
    for (const PhysicalTile tile : started_) {
      const driver::ContextStatus status = tdi_.context_status(tile);
      for (unsigned c = 0; c < driver::kTdiContexts; ++c) {
        if (status.state(c) == driver::TdiContextState::kExcepted) return WaitOutcome::kFaulted;
        if (status.state(c) == driver::TdiContextState::kExceptedDebug) return WaitOutcome::kStopped;
      }
    }
    return std::nullopt;
  }

  C600Options options_;
  std::unique_ptr<DeviceLock> lock_;  // before device_: owned before opened, released after closed
  driver::Device device_;
  driver::Tdi tdi_;
  target::Topology topology_;
  std::vector<driver::ConfigWrite> configuration_;
  std::optional<driver::Bootloader> bootloader_;
  std::unique_ptr<driver::Loader> loader_;
  std::optional<Pending> pending_;
  std::vector<PhysicalTile> started_;
  std::optional<SampledPackage> sampled_;  // from load(): a package built with profiling
};

}  // namespace

std::unique_ptr<runtime::Transport> open_c600(const C600Options& options,
                                              driver::DeviceSystem& system) {
  return with_context(fmt::format("opening the C600 at {}", options.device),
                      [&] { return std::make_unique<C600Transport>(options, system); });
}

std::unique_ptr<runtime::Transport> open_c600(const C600Options& options) {
  return open_c600(options, driver::linux_system());
}

}  // namespace tessera::backends::c600
