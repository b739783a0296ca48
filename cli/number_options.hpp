#pragma once
// Numbers on the tessera command line, parsed one way everywhere.
//
// Unsigned options (counts, sizes, seeds, cycles) are declared as string
// options and read through parse_unsigned: decimal digits, or 0x and hex
// digits, and nothing else — no sign, no spaces, no exponent, in range for
// the option's type. Boost's own conversion would take "-5" (and " -5") as
// 2^64 − 5; here a negative value is a UsageError naming the option.
//
// Durations are seconds within a documented range (parse_seconds).

#include <chrono>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <boost/program_options.hpp>

namespace tessera::cli {

// The full 64-bit parse; UsageError("OPTION: 'TEXT' is ...") when refused.
std::uint64_t parse_unsigned_up_to(std::string_view text, std::string_view option,
                                   std::uint64_t max);

template <std::unsigned_integral T>
T parse_unsigned(std::string_view text, std::string_view option) {
  return static_cast<T>(parse_unsigned_up_to(text, option, std::numeric_limits<T>::max()));
}

// The value of unsigned option `name` (declared po::value<std::string>());
// nullopt when it is absent and has no default.
template <std::unsigned_integral T>
std::optional<T> unsigned_option(const boost::program_options::variables_map& values,
                                 const std::string& name) {
  if (!values.count(name)) return std::nullopt;
  return parse_unsigned<T>(values[name].as<std::string>(), "--" + name);
}

// Seconds (a decimal number, e.g. 60 or 2.5) from `min` to `max`, in whole
// milliseconds; UsageError naming the option and the range otherwise (inf,
// nan, a sign, a suffix, out of range), so that no value wraps a deadline,
// overflows the conversion or rounds to nothing.
std::chrono::milliseconds parse_seconds(std::string_view text, std::string_view option,
                                        std::chrono::milliseconds min,
                                        std::chrono::milliseconds max);

// "0.001 to 86400 seconds", for help texts and messages.
std::string seconds_range(std::chrono::milliseconds min, std::chrono::milliseconds max);

}  // namespace tessera::cli
