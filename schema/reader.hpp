#pragma once
// Reads .ipuexe bytes into a fully validated Application. Every input is
// untrusted: traversal is bounded, decompressed sizes are capped before any
// allocation, each blob's SHA-256 is checked right after decoding, every field
// is validated (schema/validate.hpp), and the build digest is recomputed and
// compared. Any defect is a PackageError naming the field path; no input can
// abort the process.

#include <cstdint>
#include <filesystem>
#include <span>

#include "schema/model.hpp"

namespace tessera::schema {

// The largest package read by default: every blob byte loads into some tile,
// so blobs hold at most 1472 × 624 KiB (897 MiB, stored raw at worst); the
// rest leaves 383 MiB for tables and debug records. A file over the cap is
// refused by its size alone, before anything is read or allocated.
inline constexpr std::uint64_t kDefaultMaxPackageBytes = std::uint64_t{1280} << 20;

struct ReadLimits {
  // The largest package accepted (the file's size, or the bytes given);
  // 0 means kDefaultMaxPackageBytes. Larger trusted packages raise it.
  std::uint64_t max_package_bytes = 0;
  // Cap'n Proto traversal limit in 8-byte words. 0 derives it from the input:
  // four times its size, so that no pointer amplification can make reading
  // cost more than a few passes over the file.
  std::uint64_t traversal_limit_words = 0;
  int nesting_limit = 64;
  // Caps on decompressed bytes, checked before allocating. 0 derives them
  // from the package: every blob byte is loaded into some tile, so no valid
  // package holds more than tiles × SRAM size of blob bytes (tiles counted up
  // to the chip's kTileCount, since the list's length is not yet validated).
  std::uint64_t max_blob_bytes = 0;
  std::uint64_t max_total_blob_bytes = 0;
};

// Decodes and validates package bytes.
Application read_package(std::span<const std::uint8_t> bytes, const ReadLimits& limits = {});

// Reads the file at `path`; errors name the file.
Application read_package_file(const std::filesystem::path& path, const ReadLimits& limits = {});

}  // namespace tessera::schema
