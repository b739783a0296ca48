#pragma once
// Generic access to an instruction struct's operands, in table order, so that
// encoder, decoder, disassembler and parser can walk kFields and the data
// members together. The structured binding below fails to compile when a
// struct's member count differs from its kFields row: the table and the
// struct cannot drift apart.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>

#include "target/isa.hpp"

namespace tessera::target::isa::detail {

template <class T>
constexpr auto tie_operands(T& instruction) {
  constexpr std::size_t n = std::remove_const_t<T>::kFields.size();
  if constexpr (n == 0) {
    return std::tie();
  } else if constexpr (n == 1) {
    auto& [a] = instruction;
    return std::tie(a);
  } else if constexpr (n == 2) {
    auto& [a, b] = instruction;
    return std::tie(a, b);
  } else if constexpr (n == 3) {
    auto& [a, b, c] = instruction;
    return std::tie(a, b, c);
  } else if constexpr (n == 4) {
    auto& [a, b, c, d] = instruction;
    return std::tie(a, b, c, d);
  } else if constexpr (n == 7) {
    auto& [a, b, c, d, e, f, g] = instruction;
    return std::tie(a, b, c, d, e, f, g);
  } else {
    static_assert(n == 0, "add a case to tie_operands for this operand count");
  }
}

// An operand as the signed 64-bit value the field table talks about.
template <class V>
constexpr std::int64_t operand_value(V value) {
  if constexpr (std::is_enum_v<V>) {
    return static_cast<std::int64_t>(static_cast<std::underlying_type_t<V>>(value));
  } else {
    return static_cast<std::int64_t>(value);
  }
}

// The inverse, for a value already known to fit the field.
template <class V>
constexpr V operand_from_value(std::int64_t value) {
  if constexpr (std::is_enum_v<V>) {
    return static_cast<V>(static_cast<std::underlying_type_t<V>>(value));
  } else {
    return static_cast<V>(value);
  }
}

// Calls f(field_spec, operand_reference) for each operand of `instruction`.
template <class T, class F>
constexpr void for_each_operand(T& instruction, F&& f) {
  auto operands = tie_operands(instruction);
  using Plain = std::remove_const_t<T>;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(Plain::kFields[I], std::get<I>(operands)), ...);
  }(std::make_index_sequence<Plain::kFields.size()>{});
}

// Throws the EncodingError the encoder would throw for `value` in `field`
// (range, then alignment); the one owner of those messages.
void check_field(std::string_view mnemonic, const FieldSpec& field, std::int64_t value);

template <class T>
inline constexpr bool kIsTableRow = !std::is_same_v<T, Unknown>;

}  // namespace tessera::target::isa::detail
