#pragma once
// Loading tile images onto a C600 (driver-host-protocol.md §3): the
// autoloader installs the secondary bootloader on every tile; the bootloader
// then takes 64-tile batches of framed images from a host transport buffer,
// one GS1 credit per batch; an all-0xFF transport (the execute sentinel) ends
// the load, and the final mark starts every supervisor at 0x4C010.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "driver/bootloader.hpp"
#include "support/host_buffer.hpp"
#include "target/loader_batch.hpp"
#include "target/memory_map.hpp"
#include "target/topology.hpp"

namespace tessera::driver {

class Device;

// §3.3: one buffer, attached as index 0 for the whole load.
inline constexpr std::size_t kTransportSize = 0x2842000;
inline constexpr std::uint32_t kTransportBufferIndex = 0;
// Bytes 0..511 are the descriptor table (64 × {u32 offset, u32 frames}); the
// rest of the first 4 KiB stays zero; frames start at 4096.
inline constexpr std::uint32_t kDescriptorAreaBytes = 4096;
inline constexpr unsigned kTilesPerBatch = target::kLoaderBatchTiles;
inline constexpr std::uint32_t kDescriptorBytes = 8;
// §3.4 frame header: index, physical tile, flags (this bit on the last frame), 0.
inline constexpr std::uint32_t kFrameHeaderBytes = 16;
inline constexpr std::uint32_t kFrameTrailerBytes = 16;
inline constexpr std::uint32_t kLastFrameFlag = 0x08000000;
inline constexpr std::uint8_t kTrailerByte = 0xFF;
inline constexpr std::uint8_t kExecuteSentinelByte = 0xFF;
static_assert(kFrameHeaderBytes + target::kLoaderFramePayload + kFrameTrailerBytes ==
              target::kLoaderFrameBytes);
// A whole batch of maximal images fits the transport.
static_assert(kDescriptorAreaBytes + std::size_t{kTilesPerBatch} * target::kLoaderMaxFrames *
                                         target::kLoaderFrameBytes <=
              kTransportSize);
// §3.6: "the secondary loader consumes 23 tile batches before handing HSP
// ownership to the resident host-exchange program" (1472 / 64).
inline constexpr std::uint32_t kHostExchangeHandoffMark = 23;

// One tile's image: its bytes from kLoadBase (0x4C010) up.
struct TileLoadImage {
  target::PhysicalTile tile;
  std::vector<std::uint8_t> image;
};

// Frames needed for `image_bytes` after padding to kMinImagePayload; ImageError
// above 643.
std::uint32_t frame_count(std::size_t image_bytes, target::PhysicalTile tile);
// The framed image (§3.4), padded to at least kMinImagePayload (17 frames).
std::vector<std::uint8_t> frame_tile(target::PhysicalTile tile, std::span<const std::uint8_t> image);

// The autoloader parameters of §3.2 for an image of `bytes` (a whole number of KiB).
struct AutoloaderWords {
  std::uint32_t stage_target;    // zone | kib << 10
  std::uint32_t stage_csr;       // DATA_PRESENT | GO | lp
  std::uint32_t install_target;  // zone | 624 << 10 | kib
  std::uint32_t install_csr;     // (count − 1) << 9 | GO | lp
};
AutoloaderWords autoloader_words(std::size_t bootloader_bytes, unsigned tile_count);

// §3.2: stages the bootloader through AUTOLD_DATA and installs it on tiles
// 0..tile_count−1. DeviceTimeout when GO does not clear.
void install_bootloader(Device& device, const Bootloader& bootloader, unsigned tile_count);

// §3.5: the exchange-buffer request-ID guard around a load.
class ExchangeGuard {
 public:
  // Saves CCSR, writes control(63) to all 16 DCXCRs, clears NO_SNOOP and
  // ECRC_ENABLE in CCSR (read back), then restores instances 0–7 to ID 0.
  explicit ExchangeGuard(Device& device);
  // Writes the run values (control(0) for 0–7, control(1) for 8–15) and the saved CCSR.
  void restore();

 private:
  Device* device_;
  std::uint32_t saved_ccsr_;
};

class Loader {
 public:
  explicit Loader(Device& device);
  ~Loader();  // an unfinished load restores the guard and detaches the transport
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Everything up to and including the execute sentinel (§3.2–§3.6 step 2).
  // Images are loaded in physical-tile order; their count must be a nonzero
  // multiple of 64 with count − 1 ≤ 0x7FF (ImageError otherwise).
  void load(const Bootloader& bootloader, std::span<const TileLoadImage> images);
  // §3.6 steps 3–4: writes the final mark (count/64 when 0), waits for GS1 = 0
  // ("application initial sync"), restores the guard, detaches the transport.
  void start(std::uint32_t final_mark);

  bool loaded() const noexcept { return transport_ != nullptr; }
  std::size_t tile_count() const noexcept { return tile_count_; }

 private:
  void finish() noexcept;

  Device* device_;
  std::unique_ptr<HostBuffer> transport_;
  std::optional<ExchangeGuard> guard_;
  std::size_t tile_count_ = 0;
};

}  // namespace tessera::driver
