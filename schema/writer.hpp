#pragma once
// Serializes an application to the .ipuexe bytes: canonical form first, then
// validation, then one Cap'n Proto message whose blobs are zstd-compressed
// when that is strictly smaller. The same application always gives the same
// bytes and the same build digest.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "schema/blob_codec.hpp"
#include "schema/model.hpp"

namespace tessera::schema {

struct WriteOptions {
  int zstd_level = kDefaultZstdLevel;
  bool compress = true;  // false stores every blob raw
};

// The package bytes. Throws PackageError when the application is invalid.
std::vector<std::uint8_t> serialize_package(const Application& application,
                                            const WriteOptions& options = {});

// Writes the package to `path` through support/atomic_file.hpp (a temporary
// file created exclusively next to it, renamed into place), so a failed write
// never leaves a truncated package and nothing planted there redirects it.
// Returns its digest.
Sha256 write_package(const Application& application, const std::filesystem::path& path,
                     const WriteOptions& options = {});

// Serializes the application exactly as given — no canonical form, no
// validation — with a digest over what it is given. Only for tests and fuzz
// seeds that need packages breaking one rule; never for real output.
std::vector<std::uint8_t> serialize_unchecked_for_testing(const Application& application,
                                                          const WriteOptions& options = {});

}  // namespace tessera::schema
