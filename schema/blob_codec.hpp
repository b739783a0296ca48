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

// encode_blob for many blobs: one zstd context and one frame buffer, reused.
// A fresh context per blob (what ZSTD_compress does) allocates and clears
// the level's tables each time, which for a package's thousands of small
// blobs cost more than compressing them. zstd's output depends only on the
// bytes and the level, not on what the context compressed before, so the
// frames are encode_blob's.
class BlobEncoder {
 public:
  explicit BlobEncoder(int level = kDefaultZstdLevel);
  ~BlobEncoder();
  BlobEncoder(const BlobEncoder&) = delete;
  BlobEncoder& operator=(const BlobEncoder&) = delete;

  // The stored form of `bytes`: its codec, and its data — `bytes` itself
  // when raw, else the frame, valid until the next call.
  struct Encoded {
    BlobCodec codec = BlobCodec::kRaw;
    std::span<const std::uint8_t> data;
  };
  Encoded encode(std::span<const std::uint8_t> bytes);

 private:
  int level_;
  void* context_;  // a ZSTD_CCtx (zstd.h stays out of this header)
  std::vector<std::uint8_t> frame_;
};

// Decodes stored data that claims to hold `declared_size` bytes. Throws
// PackageError (with no field path; the caller adds it) when:
//   - declared_size exceeds `cap` (checked before anything is allocated);
//   - raw data is not exactly declared_size bytes;
//   - zstd data is not exactly one frame that records its content size, that
//     size differs from declared_size, or decoding yields another length.
std::vector<std::uint8_t> decode_blob(BlobCodec codec, std::span<const std::uint8_t> data,
                                      std::uint64_t declared_size, std::uint64_t cap);

}  // namespace tessera::schema
