#pragma once
// How blob bytes are stored: raw, or one zstd frame when that is strictly
// smaller. Decoding untrusted data checks sizes before allocating.

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::schema {

enum class BlobCodec : std::uint8_t { kRaw, kZstd };

struct StoredBlob {
  BlobCodec codec = BlobCodec::kRaw;
  std::vector<std::uint8_t> data;
};

inline constexpr int kDefaultZstdLevel = 3;

// zstd at `level` when the frame is strictly smaller than the bytes, raw
// otherwise.
StoredBlob encode_blob(std::span<const std::uint8_t> bytes, int level = kDefaultZstdLevel);

// Decodes stored data that claims to hold `declared_size` bytes. Throws
// PackageError (with no field path; the caller adds it) when:
//   - declared_size exceeds `cap` (checked before anything is allocated);
//   - raw data is not exactly declared_size bytes;
//   - zstd data is not exactly one frame that records its content size, that
//     size differs from declared_size, or decoding yields another length.
std::vector<std::uint8_t> decode_blob(BlobCodec codec, std::span<const std::uint8_t> data,
                                      std::uint64_t declared_size, std::uint64_t cap);

}  // namespace tessera::schema
