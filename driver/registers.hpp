#pragma once
// Named offsets and fields of the configuration BAR that the driver uses
// (driver-host-protocol.md §2.2, §3.2, §3.5, §6.1). The BAR's size, the HSP
// marks and the TDI window's geometry belong to target/config_space.hpp.

#include <cstdint>

#include "target/config_space.hpp"

namespace tessera::driver::reg {

// PCI control and status: bit 1 NO_SNOOP, bit 10 EXCHANGE_LINK_ECRC_ENABLE.
inline constexpr std::uint32_t kCcsr = 0x2000;
inline constexpr std::uint32_t kCcsrNoSnoop = 1u << 1;
inline constexpr std::uint32_t kCcsrEcrcEnable = 1u << 10;

// The PCI autoloader (§3.2).
inline constexpr std::uint32_t kAutoloadCsr = 0x2068;
inline constexpr std::uint32_t kAutoloadTarget = 0x206C;
inline constexpr std::uint32_t kAutoloadData = 0x2070;  // image-word FIFO
inline constexpr std::uint32_t kAutoloadGo = 1u << 8;   // reads 1 while busy
inline constexpr std::uint32_t kAutoloadDataPresent = 1u << 20;
inline constexpr unsigned kAutoloadTileShift = 9;  // last tile (count − 1), 11 bits
inline constexpr std::uint32_t kAutoloadTileMask = 0x7FF;
inline constexpr std::uint32_t kAutoloadLoadPointerMask = 0x3F;
inline constexpr unsigned kAutoloadZoneShift = 20;
inline constexpr unsigned kAutoloadAddressShift = 10;
// Zone 32 and the address 624 (KiB of tile SRAM) are known only as the values written.
inline constexpr std::uint32_t kAutoloadZone = 32u << kAutoloadZoneShift;
inline constexpr std::uint32_t kAutoloadTileSramKib = 624;
// A posted-write flush (read-back of the CSR) every 32 data words.
inline constexpr unsigned kAutoloadFlushInterval = 32;

inline constexpr std::uint32_t kHspGs1 = target::kHspGs1Control;
inline constexpr std::uint32_t kHspGs2 = target::kHspGs2Control;
inline constexpr std::uint32_t kHspMarkMask = target::kHspMarkMask;

// The only value ever written is HEXOPT (bit 11).
inline constexpr std::uint32_t kExchangeWindowBase = 0x3044;
inline constexpr std::uint32_t kExchangeWindowHexopt = 1u << 11;

// Exchange-buffer (XB) DCXCR registers: 8 per interface (§2.2, §3.5).
inline constexpr unsigned kXbInstances = 16;
inline constexpr unsigned kXbInstancesPerInterface = 8;
constexpr std::uint32_t xb_dcxcr(unsigned instance) noexcept {
  return instance < kXbInstancesPerInterface ? 0x5404 + instance * 0x400
                                             : 0x1B804 + (instance - kXbInstancesPerInterface) * 0x400;
}
// control(id) = 2 | id<<3 | id<<9 | id<<15 | id<<21, id masked to 6 bits.
constexpr std::uint32_t xb_control(std::uint32_t request_id) noexcept {
  const std::uint32_t id = request_id & 0x3F;
  return 2u | id << 3 | id << 9 | id << 15 | id << 21;
}
static_assert(xb_control(0) == 0x2 && xb_control(1) == 0x20820A && xb_control(63) == 0x7FFFFFA);

// TDI registers (§6.1), offsets inside a tile's 0x40-byte block.
namespace tdi {
inline constexpr std::uint32_t kContextStatus = 0;
inline constexpr std::uint32_t kRunBreak = 1;
inline constexpr std::uint32_t kInstruction = 3;
inline constexpr std::uint32_t kInstructionOwner = 4;
inline constexpr std::uint32_t kExceptionState = 5;  // bit 5: break on sync
inline constexpr std::uint32_t kExceptionClear = 6;
inline constexpr std::uint32_t kData = 7;  // $DBG_DATA (CSR 0x70)
inline constexpr std::uint32_t kStatus = 8;
inline constexpr std::uint32_t kStatusClear = 9;
inline constexpr std::uint32_t kIncomingDcount = 10;
inline constexpr std::uint32_t kExchangeControl = 11;

inline constexpr std::uint32_t kStatusBusy = 1u << 3;
inline constexpr std::uint32_t kStatusErrorMask = 0x7;
inline constexpr std::uint32_t kStatusClearValue = 0x6;
inline constexpr std::uint32_t kRunBreakAtov = 1u << 30;  // DBG_RBRK.ATOV
inline constexpr std::uint32_t kBreakOnSync = 1u << 5;
inline constexpr unsigned kErerrShift = 27;
inline constexpr std::uint32_t kErerrMask = 0x7;
}  // namespace tdi

}  // namespace tessera::driver::reg
