#pragma once
// The generated Cap'n Proto types and the header constants every package
// carries. Only writer, reader and tools that print the raw form include this.

#include <cstdint>
#include <string_view>

#include "schema/application.capnp.h"
#include "schema/profile.capnp.h"

namespace tessera::schema {

// Owned by the schema files: bump them there.
inline constexpr std::uint32_t kPackageSchemaVersion = wire::PACKAGE_SCHEMA_VERSION;
inline constexpr std::uint32_t kProfileSchemaVersion = wire::PROFILE_SCHEMA_VERSION;
// The oldest profile version read_profile still reads (steps with their own texts).
inline constexpr std::uint32_t kFirstProfileSchemaVersion = 1;

inline constexpr std::string_view kTargetName = "ipu21";

}  // namespace tessera::schema
