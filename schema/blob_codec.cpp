#include "schema/blob_codec.hpp"

#include <zstd.h>

#include <fmt/format.h>

#include "schema/package_error.hpp"
#include "support/error.hpp"

namespace tessera::schema {

StoredBlob encode_blob(std::span<const std::uint8_t> bytes, int level) {
  BlobEncoder encoder(level);
  const BlobEncoder::Encoded encoded = encoder.encode(bytes);
  return StoredBlob{encoded.codec, {encoded.data.begin(), encoded.data.end()}};
}

BlobEncoder::BlobEncoder(int level) : level_(level), context_(ZSTD_createCCtx()) {
  if (context_ == nullptr) throw Error("zstd compression failed: no memory for a context");
}

BlobEncoder::~BlobEncoder() { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(context_)); }

BlobEncoder::Encoded BlobEncoder::encode(std::span<const std::uint8_t> bytes) {
  const std::size_t bound = ZSTD_compressBound(bytes.size());
  if (frame_.size() < bound) frame_.resize(bound);
  const std::size_t written = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(context_), frame_.data(),
                                                bound, bytes.data(), bytes.size(), level_);
  if (ZSTD_isError(written)) {
    throw Error(fmt::format("zstd compression failed: {}", ZSTD_getErrorName(written)));
  }
  if (written < bytes.size()) return {BlobCodec::kZstd, {frame_.data(), written}};
  return {BlobCodec::kRaw, bytes};
}

std::vector<std::uint8_t> decode_blob(BlobCodec codec, std::span<const std::uint8_t> data,
                                      std::uint64_t declared_size, std::uint64_t cap) {
  if (declared_size > cap) {
    throw PackageError(fmt::format("uncompressedSize {} exceeds the limit of {} bytes",
                                   declared_size, cap));
  }
  if (codec == BlobCodec::kRaw) {
    if (data.size() != declared_size) {
      throw PackageError(fmt::format("raw data holds {} bytes but uncompressedSize is {}",
                                     data.size(), declared_size));
    }
    return {data.begin(), data.end()};
  }
  const std::size_t frame_size = ZSTD_findFrameCompressedSize(data.data(), data.size());
  if (ZSTD_isError(frame_size)) {
    throw PackageError(fmt::format("not a zstd frame: {}", ZSTD_getErrorName(frame_size)));
  }
  if (frame_size != data.size()) {
    throw PackageError(fmt::format("{} bytes follow the zstd frame", data.size() - frame_size));
  }
  const unsigned long long content_size = ZSTD_getFrameContentSize(data.data(), data.size());
  if (content_size == ZSTD_CONTENTSIZE_UNKNOWN || content_size == ZSTD_CONTENTSIZE_ERROR) {
    throw PackageError("the zstd frame does not record its content size");
  }
  if (content_size != declared_size) {
    throw PackageError(fmt::format("the zstd frame holds {} bytes but uncompressedSize is {}",
                                   content_size, declared_size));
  }
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(declared_size));
  const std::size_t produced = ZSTD_decompress(bytes.data(), bytes.size(), data.data(), data.size());
  if (ZSTD_isError(produced)) {
    throw PackageError(fmt::format("zstd decoding failed: {}", ZSTD_getErrorName(produced)));
  }
  if (produced != declared_size) {
    throw PackageError(
        fmt::format("zstd decoding produced {} bytes, not {}", produced, declared_size));
  }
  return bytes;
}

}  // namespace tessera::schema
