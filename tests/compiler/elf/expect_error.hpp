#pragma once
// EXPECT that `body` throws exactly an `E` whose text contains every one of `parts`.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace tessera::compiler::elf::testing {

template <class E, class F>
void expect_error(F&& body, std::initializer_list<std::string_view> parts) {
  try {
    body();
    ADD_FAILURE() << "no error; expected one containing '" << *parts.begin() << "'";
  } catch (const E& error) {
    const std::string text = error.what();
    for (const auto part : parts) {
      EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
    }
  }
}

}  // namespace tessera::compiler::elf::testing
