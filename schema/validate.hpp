#pragma once
// Every rule a package must satisfy, checked on the decoded model (the writer
// before writing, the reader after decoding). Each failure is a PackageError
// whose message starts with the field path, e.g.
//   "tiles[12].segments[3].blobOffset: 0xffffffffffffffff + fileSize 0x1 exceeds ..."
// The rules are listed in docs/FORMAT.md.

#include "schema/model.hpp"

namespace tessera::schema {

void validate(const Application& application);

// One rule on its own: every segment names an existing blob. canonical()
// needs it before it can renumber blobs.
void validate_blob_references(const Application& application);

}  // namespace tessera::schema
