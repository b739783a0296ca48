#pragma once
// Checked arithmetic for values that come from outside the process (files,
// packages, command lines). One small set of helpers, used everywhere, instead
// of ad-hoc `a + b > n` comparisons that wrap. Each failure is an
// ArithmeticError naming what was computed.

#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "support/error.hpp"

namespace tessera {

// a + b, or ArithmeticError("<what>: a + b overflows").
template <std::unsigned_integral T>
T checked_add(T a, T b, std::string_view what = "value") {
  T sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw ArithmeticError(fmt::format("{}: {:#x} + {:#x} overflows {}-bit arithmetic", what, a,
                                      b, std::numeric_limits<T>::digits));
  }
  return sum;
}

// a * b, or ArithmeticError("<what>: a * b overflows").
template <std::unsigned_integral T>
T checked_mul(T a, T b, std::string_view what = "value") {
  T product;
  if (__builtin_mul_overflow(a, b, &product)) {
    throw ArithmeticError(fmt::format("{}: {:#x} * {:#x} overflows {}-bit arithmetic", what, a,
                                      b, std::numeric_limits<T>::digits));
  }
  return product;
}

// a - b, or ArithmeticError when b > a.
template <std::unsigned_integral T>
T checked_sub(T a, T b, std::string_view what = "value") {
  if (b > a) {
    throw ArithmeticError(fmt::format("{}: {:#x} - {:#x} underflows", what, a, b));
  }
  return static_cast<T>(a - b);
}

// Checks that [offset, offset + size) lies inside [0, limit) and returns the
// end offset. Overflow of offset + size is an error, not a wrap.
inline std::uint64_t checked_range(std::uint64_t offset, std::uint64_t size, std::uint64_t limit,
                                   std::string_view what = "range") {
  const std::uint64_t end = checked_add(offset, size, what);
  if (end > limit) {
    throw ArithmeticError(fmt::format("{}: [{:#x}, {:#x}) exceeds the limit {:#x}", what, offset,
                                      end, limit));
  }
  return end;
}

// Converts between integer types, or ArithmeticError when the value does not fit.
template <std::integral To, std::integral From>
To checked_cast(From value, std::string_view what = "value") {
  if (!std::in_range<To>(value)) {
    throw ArithmeticError(fmt::format("{}: {} does not fit in {}{}-bit", what, value,
                                      std::is_signed_v<To> ? "signed " : "unsigned ",
                                      std::numeric_limits<To>::digits +
                                          (std::is_signed_v<To> ? 1 : 0)));
  }
  return static_cast<To>(value);
}

}  // namespace tessera
