#include "support/logging.hpp"

#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "support/error.hpp"
#include "support/terminal_text.hpp"

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

// %* in the pattern: the message, escaped, since log messages quote names
// from packages and graphs (support/terminal_text.hpp).
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& destination) override {
    const std::string text =
        escape_for_terminal(std::string_view(message.payload.data(), message.payload.size()));
    destination.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>();
  }
};

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
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<EscapedMessage>('*').set_pattern("%^[%l]%$ %*");
    created->set_formatter(std::move(formatter));
    spdlog::set_default_logger(created);
    return created;
  }();
  logger->set_level(level);
}

}  // namespace tessera
