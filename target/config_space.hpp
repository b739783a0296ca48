#pragma once
// The C600's configuration space: the 512 KiB region the kernel driver maps
// (reference: driver-host-protocol.md §1.1, §2, §6). Offsets are bytes from
// its start; every access is a 4-aligned 32-bit word.

#include <cstdint>

#include "target/topology.hpp"

namespace tessera::target {

inline constexpr std::uint32_t kConfigSpaceSize = 0x80000;        // the mapped "configuration BAR"
inline constexpr std::uint32_t kConfigLastWordOffset = 0x7FFFC;   // highest word offset

// Host-sync-point marks: 16-bit counts the host writes and polls [HW].
inline constexpr std::uint32_t kHspGs1Control = 0x302C;
inline constexpr std::uint32_t kHspGs2Control = 0x3030;
inline constexpr std::uint32_t kHspMarkMask = 0xFFFF;

// Tile debug interface window: 16 registers of 4 bytes per physical tile [HW].
inline constexpr std::uint32_t kTdiBase = 0x30000;
inline constexpr std::uint32_t kTdiTileStride = 0x40;
inline constexpr std::uint32_t kTdiRegisterCount = 16;

// Offset of TDI register `reg` of `tile` (tile on the chip, reg < 16).
constexpr std::uint32_t tdi_register_offset(PhysicalTile tile, std::uint32_t reg) noexcept {
  return kTdiBase + tile.value * kTdiTileStride + reg * 4;
}

// Whether a word offset lies in the configuration space and is 4-aligned.
constexpr bool is_config_word_offset(std::uint32_t offset) noexcept {
  return offset % 4 == 0 && offset <= kConfigLastWordOffset;
}

// The HSP mark registers belong to the host-exchange protocol (runtime/), not
// to a package's configuration writes.
constexpr bool is_hsp_mark_register(std::uint32_t offset) noexcept {
  return offset == kHspGs1Control || offset == kHspGs2Control;
}

}  // namespace tessera::target
