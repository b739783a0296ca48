#include "support/logging.hpp"

#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "support/error.hpp"

namespace tessera {
namespace {

struct NamedLevel {
  std::string_view name;
  spdlog::level::level_enum level;
};

constexpr std::array kLevels{
    NamedLevel{"trace", spdlog::level::trace}, NamedLevel{"debug", spdlog::level::debug},
    NamedLevel{"info", spdlog::level::info},   NamedLevel{"warn", spdlog::level::warn},
    NamedLevel{"error", spdlog::level::err},   NamedLevel{"critical", spdlog::level::critical},
    NamedLevel{"off", spdlog::level::off},
};

constexpr auto kNames = [] {
  std::array<std::string_view, kLevels.size()> names{};
  for (std::size_t i = 0; i < kLevels.size(); ++i) names[i] = kLevels[i].name;
  return names;
}();

}  // namespace

std::span<const std::string_view> log_level_names() noexcept { return kNames; }

spdlog::level::level_enum parse_log_level(std::string_view name) {
  for (const auto& entry : kLevels) {
    if (entry.name == name) return entry.level;
  }
  throw UsageError(fmt::format("unknown log level '{}' (expected one of: {})", name,
                               fmt::join(kNames, ", ")));
}

void configure_logging(spdlog::level::level_enum level) {
  static const auto logger = [] {
    auto created = spdlog::stderr_color_mt("tessera");
    created->set_pattern("%^[%l]%$ %v");
    spdlog::set_default_logger(created);
    return created;
  }();
  logger->set_level(level);
}

}  // namespace tessera
