#include "support/logging.hpp"

#include <gtest/gtest.h>

#include "support/error.hpp"

namespace tessera {
namespace {

TEST(Logging, EveryListedNameParses) {
  for (const auto name : log_level_names()) {
    EXPECT_NO_THROW(parse_log_level(name)) << name;
  }
  EXPECT_EQ(parse_log_level("debug"), spdlog::level::debug);
  EXPECT_EQ(parse_log_level("error"), spdlog::level::err);
}

TEST(Logging, UnknownNameListsTheValidOnes) {
  try {
    parse_log_level("loud");
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "unknown log level 'loud' (expected one of: trace, debug, info, warn, error, "
              "critical, off)");
  }
}

TEST(Logging, ConfigureSetsTheDefaultLoggerLevel) {
  configure_logging(spdlog::level::info);
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::info);
  EXPECT_EQ(spdlog::default_logger()->name(), "tessera");
  configure_logging(spdlog::level::warn);
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::warn);
}

}  // namespace
}  // namespace tessera
