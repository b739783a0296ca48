#pragma once
#include <string_view>

namespace tessera {
// The project version, e.g. "0.1.0".
std::string_view version() noexcept;
// The git revision the build came from ("abc123def456", "-dirty" when the tree
// had uncommitted changes), or "unknown" outside a git checkout.
std::string_view git_revision() noexcept;
}  // namespace tessera
