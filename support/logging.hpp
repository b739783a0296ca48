#pragma once
// Logging goes through spdlog's default logger, which Tessera points at
// standard error so that standard output stays free for results.

#include <span>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

namespace tessera {

// The level names accepted by --log-level, most verbose first.
std::span<const std::string_view> log_level_names() noexcept;

// Parses a level name; throws UsageError listing the valid names.
spdlog::level::level_enum parse_log_level(std::string_view name);

// Routes the default logger to stderr and sets its level.
void configure_logging(spdlog::level::level_enum level);

}  // namespace tessera
