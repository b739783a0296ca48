#pragma once
// Every rule a package must satisfy, checked on the decoded model (the writer
// before writing, the reader after decoding). Each failure is a PackageError
// whose message starts with the field path, e.g.
//   "tiles[12].segments[3].blobOffset: 0xffffffffffffffff + fileSize 0x1 exceeds ..."
// The rules are listed in docs/FORMAT.md.

#include <cstdint>
#include <span>
#include <vector>

#include "schema/model.hpp"

namespace tessera::schema {

void validate(const Application& application);

// The rules on tiles, their segments and the blobs they use, which need
// only each blob's size (blob_sizes[i] for blob i). validate() runs them on
// the decoded blobs; the reader runs them first on the declared sizes,
// before it decompresses anything, so that the tiles bound the blob bytes a
// package can make it decode (a blob holds no byte no segment loads).
void validate_tiles(const std::vector<TileImage>& tiles, std::span<const std::uint64_t> blob_sizes);

// One rule on its own: every segment names an existing blob. canonical()
// needs it before it can renumber blobs.
void validate_blob_references(const Application& application);

}  // namespace tessera::schema
