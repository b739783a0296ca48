#pragma once
// The `.ipucfg` configuration capture and its replay (driver-host-protocol.md
// §2.3). The file is untrusted input: every field is checked before use.
//
// Format (little-endian): "IPUCFG1\0" (8 bytes), u32 count, then count ×
// {u32 offset, u32 value}. The size must be exactly 12 + 8·count; every
// offset must be a 4-aligned word inside the 512 KiB BAR. No checksum.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace tessera::driver {

class Device;

struct ConfigWrite {
  std::uint32_t offset = 0;
  std::uint32_t value = 0;
  friend bool operator==(const ConfigWrite&, const ConfigWrite&) = default;
};

inline constexpr char kIpucfgMagic[8] = {'I', 'P', 'U', 'C', 'F', 'G', '1', '\0'};
inline constexpr std::size_t kIpucfgHeaderBytes = 12;
inline constexpr std::size_t kIpucfgEntryBytes = 8;

// ConfigurationFileError naming the field ("entries[17].offset") and its
// file offset for any defect.
std::vector<ConfigWrite> parse_ipucfg(std::span<const std::uint8_t> bytes);
// Reads and parses; IoError when the file cannot be read. Files larger than
// 64 MiB are refused before reading (the format's 2^32 entries would be 32 GiB).
std::vector<ConfigWrite> read_ipucfg(const std::filesystem::path& path);

// Replays a capture (§2.3): every entry in file order except the HSP marks
// (GS1/GS2 handshakes captured with the configuration); then GS1 = 0 and
// GS2 = 0, each of which must read back 0 in its low 16 bits (DeviceError).
// Returns how many entries were written.
std::size_t replay_configuration(Device& device, std::span<const ConfigWrite> writes);

}  // namespace tessera::driver
