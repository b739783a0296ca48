#pragma once
// Reading untrusted Cap'n Proto fields into the model: the checks every
// reader of our schemas (packages, profiles) makes the same way. Internal to
// schema/.

#include <capnp/schema.h>

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "schema/field_path.hpp"
#include "schema/package_error.hpp"
#include "support/utf8.hpp"

namespace tessera::schema::wire_read {

[[noreturn]] inline void fail(const FieldPath& path, std::string message) {
  throw PackageError(path.str(), std::move(message));
}

// Text that must be valid UTF-8.
inline std::string text(capnp::Text::Reader value, const FieldPath& path) {
  const std::string_view view(value.cStr(), value.size());
  if (!is_valid_utf8(view)) fail(path, "is not valid UTF-8");
  return std::string(view);
}

// An enum value from the wire; values this reader's schema does not know
// (a newer writer, or a forged file) are errors.
template <class Enum>
std::uint16_t enum_value(Enum value, const FieldPath& path) {
  const auto raw = static_cast<std::uint16_t>(value);
  if (raw >= capnp::Schema::from<Enum>().getEnumerants().size()) {
    fail(path, fmt::format("{} is not a known value", raw));
  }
  return raw;
}

}  // namespace tessera::schema::wire_read
