#pragma once
// The build digest: SHA-256 over every semantic field of the decoded model in
// a fixed, length-prefixed order (docs/FORMAT.md). It does not depend on the
// Cap'n Proto encoding or on blob compression, so the same application always
// has the same digest.

#include "schema/model.hpp"

namespace tessera::schema {

Sha256 build_digest(const Application& application);

}  // namespace tessera::schema
