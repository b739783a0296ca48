#include "driver/ipucfg.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "driver/device.hpp"
#include "driver/errors.hpp"
#include "driver/registers.hpp"
#include "support/checked.hpp"
#include "support/little_endian.hpp"
#include "target/config_space.hpp"

namespace tessera::driver {
namespace {

constexpr std::uintmax_t kMaxIpucfgFileBytes = 64u << 20;

}  // namespace

std::vector<ConfigWrite> parse_ipucfg(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kIpucfgHeaderBytes) {
    throw ConfigurationFileError(
        "header", fmt::format("{} bytes; the header alone takes {}", bytes.size(),
                              kIpucfgHeaderBytes));
  }
  if (std::memcmp(bytes.data(), kIpucfgMagic, sizeof kIpucfgMagic) != 0) {
    throw ConfigurationFileError("magic", "the file does not start with \"IPUCFG1\\0\"");
  }
  const std::uint32_t count = load_u32_le(bytes.data() + 8);
  const std::uint64_t expected = checked_add<std::uint64_t>(
      kIpucfgHeaderBytes, checked_mul<std::uint64_t>(count, kIpucfgEntryBytes, "count"), "count");
  if (bytes.size() != expected) {
    throw ConfigurationFileError(
        "count", fmt::format("{} entries need exactly {} bytes; the file has {}", count, expected,
                             bytes.size()));
  }
  std::vector<ConfigWrite> writes;
  writes.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t at = kIpucfgHeaderBytes + std::size_t{i} * kIpucfgEntryBytes;
    const ConfigWrite write{load_u32_le(bytes.data() + at), load_u32_le(bytes.data() + at + 4)};
    if (!target::is_config_word_offset(write.offset)) {
      throw ConfigurationFileError(
          fmt::format("entries[{}].offset", i),
          fmt::format("{:#x} (file offset {:#x}) is not a 4-aligned word inside the {:#x}-byte BAR",
                      write.offset, at, target::kConfigSpaceSize));
    }
    writes.push_back(write);
  }
  return writes;
}

std::vector<ConfigWrite> read_ipucfg(const std::filesystem::path& path) {
  return with_context(fmt::format("reading {}", path.string()), [&] {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error) throw IoError(fmt::format("cannot read: {}", error.message()));
    if (size > kMaxIpucfgFileBytes) {
      throw ConfigurationFileError(
          "size", fmt::format("{} bytes; a configuration capture is at most {}", size,
                              kMaxIpucfgFileBytes));
    }
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
    if (!in || !in.read(reinterpret_cast<char*>(bytes.data()),
                        static_cast<std::streamsize>(bytes.size()))) {
      throw IoError("cannot read the file");
    }
    return parse_ipucfg(bytes);
  });
}

std::size_t replay_configuration(Device& device, std::span<const ConfigWrite> writes) {
  std::size_t written = 0;
  for (const ConfigWrite& write : writes) {
    // The capture holds the SDK's own HSP handshakes; replaying them would
    // hand the device credits nobody asked for.
    if (target::is_hsp_mark_register(write.offset)) continue;
    device.write_config(write.offset, write.value);
    ++written;
  }
  for (const std::uint32_t mark : {reg::kHspGs1, reg::kHspGs2}) {
    const std::uint32_t value = device.write_config_flushed(mark, 0);
    if ((value & reg::kHspMarkMask) != 0) {
      throw DeviceError(fmt::format("{}: after the configuration replay {} reads {:#x}, not 0",
                                    device.path(), register_name(mark), value));
    }
  }
  spdlog::debug("{}: replayed {} configuration writes", device.path(), written);
  return written;
}

}  // namespace tessera::driver
