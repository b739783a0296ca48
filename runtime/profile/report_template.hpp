#pragma once
// report.html, compiled in (report_template.cpp.in; CMake embeds the file).
#include <string_view>

namespace tessera::profile {
std::string_view report_template() noexcept;
}  // namespace tessera::profile
