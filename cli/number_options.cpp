#include "cli/number_options.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera::cli {

std::uint64_t parse_unsigned_up_to(std::string_view text, std::string_view option,
                                   std::uint64_t max) {
  if (text.find('-') != std::string_view::npos) {
    throw UsageError(fmt::format("{}: '{}' is negative; it takes a whole number from 0 to {}",
                                 option, text, max));
  }
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string_view digits = hex ? text.substr(2) : text;
  std::uint64_t value = 0;
  const auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), value, hex ? 16 : 10);
  if (digits.empty() || end != digits.data() + digits.size() ||
      (error != std::errc() && error != std::errc::result_out_of_range)) {
    throw UsageError(fmt::format(
        "{}: '{}' is not a whole number (decimal digits, or 0x and hex digits)", option, text));
  }
  if (error == std::errc::result_out_of_range || value > max) {
    throw UsageError(fmt::format("{}: '{}' is more than {}", option, text, max));
  }
  return value;
}

std::string seconds_range(std::chrono::milliseconds min, std::chrono::milliseconds max) {
  return fmt::format("{:g} to {:g} seconds", std::chrono::duration<double>(min).count(),
                     std::chrono::duration<double>(max).count());
}

std::chrono::milliseconds parse_seconds(std::string_view text, std::string_view option,
                                        std::chrono::milliseconds min,
                                        std::chrono::milliseconds max) {
  double seconds = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds,
                                            std::chars_format::general);
  const bool number = !text.empty() && error == std::errc() && end == text.data() + text.size();
  const double milliseconds = seconds * 1000;
  // A NaN fails both comparisons, so it is refused with the infinities.
  if (!number || !(milliseconds >= static_cast<double>(min.count()) &&
                   milliseconds <= static_cast<double>(max.count()))) {
    throw UsageError(fmt::format("{}: '{}' is not a number of seconds from {}", option, text,
                                 seconds_range(min, max)));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(milliseconds)));
}

}  // namespace tessera::cli
