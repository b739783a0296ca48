#pragma once
#include <string_view>

namespace tessera {

// Whether text is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF).
bool is_valid_utf8(std::string_view text) noexcept;

}  // namespace tessera
