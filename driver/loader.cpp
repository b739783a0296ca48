#include "driver/loader.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "driver/device.hpp"
#include "driver/errors.hpp"
#include "driver/registers.hpp"
#include "support/checked.hpp"
#include "support/little_endian.hpp"

namespace tessera::driver {
namespace {

void wait_autoloader(Device& device, std::string_view what) {
  const auto deadline = std::chrono::steady_clock::now() + device.timeouts().autoloader;
  while (true) {
    const std::uint32_t csr = device.read_config(reg::kAutoloadCsr);
    if ((csr & reg::kAutoloadGo) == 0) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      throw DeviceTimeout(fmt::format("{}: autoloader {}: {} still has GO set ({:#x}) after {} ms",
                                      device.path(), what, register_name(reg::kAutoloadCsr), csr,
                                      device.timeouts().autoloader.count()));
    }
    std::this_thread::sleep_for(device.timeouts().autoloader_poll);
  }
}

}  // namespace

std::uint32_t frame_count(std::size_t image_bytes, target::PhysicalTile tile) {
  const std::size_t padded = std::max<std::size_t>(image_bytes, target::kMinImagePayload);
  const std::size_t frames =
      (padded + target::kLoaderFramePayload - 1) / target::kLoaderFramePayload;
  if (frames > target::kLoaderMaxFrames) {
    throw ImageError(fmt::format("tiles[{}]", tile),
                     fmt::format("a {}-byte image needs {} loader frames; at most {} fit below {:#x}",
                                 image_bytes, frames, target::kLoaderMaxFrames,
                                 target::kLoadLimit));
  }
  return static_cast<std::uint32_t>(frames);
}

std::vector<std::uint8_t> frame_tile(target::PhysicalTile tile,
                                     std::span<const std::uint8_t> image) {
  const std::uint32_t frames = frame_count(image.size(), tile);
  std::vector<std::uint8_t> out(std::size_t{frames} * target::kLoaderFrameBytes, 0);
  for (std::uint32_t i = 0; i < frames; ++i) {
    std::uint8_t* frame = out.data() + std::size_t{i} * target::kLoaderFrameBytes;
    store_u32_le(i, frame);
    store_u32_le(tile.value, frame + 4);
    store_u32_le(i + 1 == frames ? kLastFrameFlag : 0, frame + 8);
    const std::size_t from = std::size_t{i} * target::kLoaderFramePayload;
    if (from < image.size()) {
      const std::size_t n = std::min<std::size_t>(target::kLoaderFramePayload, image.size() - from);
      std::copy_n(image.begin() + static_cast<std::ptrdiff_t>(from), n, frame + kFrameHeaderBytes);
    }
    std::fill_n(frame + kFrameHeaderBytes + target::kLoaderFramePayload, kFrameTrailerBytes,
                kTrailerByte);
  }
  return out;
}

AutoloaderWords autoloader_words(std::size_t bootloader_bytes, unsigned tile_count) {
  const auto kib = static_cast<std::uint32_t>(bootloader_bytes / 1024);
  const std::uint32_t lp =
      (static_cast<std::uint32_t>(bootloader_bytes / 4) - 1) & reg::kAutoloadLoadPointerMask;
  return AutoloaderWords{
      reg::kAutoloadZone | kib << reg::kAutoloadAddressShift,
      reg::kAutoloadDataPresent | reg::kAutoloadGo | lp,
      reg::kAutoloadZone | reg::kAutoloadTileSramKib << reg::kAutoloadAddressShift | kib,
      (tile_count - 1) << reg::kAutoloadTileShift | reg::kAutoloadGo | lp,
  };
}

void install_bootloader(Device& device, const Bootloader& bootloader, unsigned tile_count) {
  if (bootloader.image.empty() || bootloader.image.size() % 1024 != 0 ||
      bootloader.image.size() > target::kBootloaderMaxSize) {
    throw UsageError(fmt::format("bootloader image of {} bytes is not 1 to 4 whole KiB",
                                 bootloader.image.size()));
  }
  const AutoloaderWords words = autoloader_words(bootloader.image.size(), tile_count);
  device.write_config(reg::kAutoloadCsr, 0);
  for (std::size_t i = 0; i * 4 < bootloader.image.size(); ++i) {
    device.write_config(reg::kAutoloadData, load_u32_le(bootloader.image.data() + i * 4));
    if (i % reg::kAutoloadFlushInterval == reg::kAutoloadFlushInterval - 1) {
      (void)device.read_config(reg::kAutoloadCsr);  // flush posted writes
    }
  }
  device.write_config(reg::kAutoloadTarget, words.stage_target);
  device.write_config(reg::kAutoloadCsr, words.stage_csr);
  wait_autoloader(device, "staging the bootloader");
  device.write_config(reg::kAutoloadTarget, words.install_target);
  device.write_config(reg::kAutoloadCsr, words.install_csr);
  wait_autoloader(device, fmt::format("installing the bootloader on {} tiles", tile_count));
}

ExchangeGuard::ExchangeGuard(Device& device)
    : device_(&device), saved_ccsr_(device.read_config(reg::kCcsr)) {
  for (unsigned i = 0; i < reg::kXbInstances; ++i) {
    device.write_config(reg::xb_dcxcr(i), reg::xb_control(63));
  }
  device.write_config_flushed(reg::kCcsr,
                              saved_ccsr_ & ~(reg::kCcsrNoSnoop | reg::kCcsrEcrcEnable));
  for (unsigned i = 0; i < reg::kXbInstancesPerInterface; ++i) {
    device.write_config(reg::xb_dcxcr(i), reg::xb_control(0));
  }
}

void ExchangeGuard::restore() {
  for (unsigned i = 0; i < reg::kXbInstances; ++i) {
    device_->write_config(reg::xb_dcxcr(i),
                          reg::xb_control(i < reg::kXbInstancesPerInterface ? 0 : 1));
  }
  device_->write_config(reg::kCcsr, saved_ccsr_);
}

Loader::Loader(Device& device) : device_(&device) {}

Loader::~Loader() { finish(); }

void Loader::finish() noexcept {
  if (!transport_) return;
  try {
    if (guard_) guard_->restore();
  } catch (const Error& error) {
    spdlog::warn("{}: restoring the exchange-buffer state: {}", device_->path(), error.what());
  }
  guard_.reset();
  device_->detach_buffer(kTransportBufferIndex);
  transport_.reset();
}

void Loader::load(const Bootloader& bootloader, std::span<const TileLoadImage> images) {
  if (transport_) throw UsageError(fmt::format("{}: a load is already pending", device_->path()));
  const std::size_t count = images.size();
  if (count == 0 || count % kTilesPerBatch != 0 || count - 1 > reg::kAutoloadTileMask) {
    throw ImageError("tiles", fmt::format("{} tiles; the loader takes a nonzero multiple of {} "
                                          "tiles, at most {}",
                                          count, kTilesPerBatch, reg::kAutoloadTileMask + 1));
  }
  std::vector<const TileLoadImage*> order;
  for (const auto& image : images) {
    if (!target::on_chip(image.tile)) {
      throw ImageError("tiles", fmt::format("{} is not a tile of the C600", image.tile));
    }
    order.push_back(&image);
  }
  std::sort(order.begin(), order.end(),
            [](const TileLoadImage* a, const TileLoadImage* b) { return a->tile < b->tile; });
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (order[i]->tile == order[i - 1]->tile) {
      throw ImageError("tiles", fmt::format("{} has two images", order[i]->tile));
    }
  }
  // Frame every image before touching the device, so a bad one fails cleanly.
  std::vector<std::vector<std::uint8_t>> framed;
  framed.reserve(count);
  for (const auto* image : order) framed.push_back(frame_tile(image->tile, image->image));

  install_bootloader(*device_, bootloader, static_cast<unsigned>(count));
  device_->write_config(reg::kExchangeWindowBase, reg::kExchangeWindowHexopt);
  transport_ = std::make_unique<HostBuffer>(kTransportSize);
  tile_count_ = count;
  try {
    device_->attach_buffer(kTransportBufferIndex, transport_->device_memory().address, kTransportSize);
  } catch (...) {
    transport_.reset();
    throw;
  }
  try {
    guard_.emplace(*device_);
    for (std::size_t first = 0, batch = 0; first < count; first += kTilesPerBatch, ++batch) {
      transport_->fill(0, kTransportSize, 0);
      std::vector<std::uint8_t> table(kTilesPerBatch * kDescriptorBytes, 0);
      std::size_t cursor = kDescriptorAreaBytes;
      for (unsigned slot = 0; slot < kTilesPerBatch; ++slot) {
        const auto& frames = framed[first + slot];
        checked_range(cursor, frames.size(), kTransportSize, "transport batch");
        store_u32_le(static_cast<std::uint32_t>(cursor), table.data() + slot * kDescriptorBytes);
        store_u32_le(static_cast<std::uint32_t>(frames.size() / target::kLoaderFrameBytes),
                     table.data() + slot * kDescriptorBytes + 4);
        transport_->copy_in(cursor, frames);
        cursor += frames.size();
      }
      transport_->copy_in(0, table);  // copy_in fences before and after
      device_->write_mark(reg::kHspGs1, 1);
      device_->wait_mark_zero(reg::kHspGs1, fmt::format("bootloader batch {} (tiles {}..{})", batch,
                                                        order[first]->tile,
                                                        order[first + kTilesPerBatch - 1]->tile));
    }
    transport_->fill(0, kTransportSize, kExecuteSentinelByte);
    device_->wait_mark_zero(reg::kHspGs1, "before the execute sentinel");
    device_->write_mark(reg::kHspGs1, 1);
    device_->wait_mark_zero(reg::kHspGs1, "execute sentinel");
  } catch (...) {
    finish();
    throw;
  }
  spdlog::debug("{}: {} tiles loaded; waiting for the final mark", device_->path(), count);
}

void Loader::start(std::uint32_t final_mark) {
  if (!transport_) throw UsageError(fmt::format("{}: nothing is loaded", device_->path()));
  const std::uint32_t mark =
      final_mark != 0 ? final_mark : static_cast<std::uint32_t>(tile_count_ / kTilesPerBatch);
  try {
    device_->write_mark(reg::kHspGs1, mark);
    device_->wait_mark_zero(reg::kHspGs1, "application initial sync (final mark)");
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

}  // namespace tessera::driver
