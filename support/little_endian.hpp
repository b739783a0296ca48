#pragma once
// 32-bit little-endian words in byte buffers: how tile memory, raw
// instruction files and packages lay out words. One definition for all.

#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

inline std::uint32_t load_u32_le(const std::uint8_t* bytes) noexcept {
  return static_cast<std::uint32_t>(bytes[0]) | static_cast<std::uint32_t>(bytes[1]) << 8 |
         static_cast<std::uint32_t>(bytes[2]) << 16 | static_cast<std::uint32_t>(bytes[3]) << 24;
}

inline void store_u32_le(std::uint32_t value, std::uint8_t* bytes) noexcept {
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

// 16-bit halves (f16 elements).
inline std::uint16_t load_u16_le(const std::uint8_t* bytes) noexcept {
  return static_cast<std::uint16_t>(bytes[0] | bytes[1] << 8);
}

inline void store_u16_le(std::uint16_t value, std::uint8_t* bytes) noexcept {
  bytes[0] = static_cast<std::uint8_t>(value);
  bytes[1] = static_cast<std::uint8_t>(value >> 8);
}

inline void append_u32_le(std::vector<std::uint8_t>& bytes, std::uint32_t value) {
  const std::size_t at = bytes.size();
  bytes.resize(at + 4);
  store_u32_le(value, bytes.data() + at);
}

inline std::vector<std::uint8_t> words_to_bytes(std::span<const std::uint32_t> words) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(words.size() * 4);
  for (const auto word : words) append_u32_le(bytes, word);
  return bytes;
}

}  // namespace tessera
