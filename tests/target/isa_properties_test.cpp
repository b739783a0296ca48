// Properties of the instruction table over random operands (RapidCheck).
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "target/assembly.hpp"
#include "target/isa.hpp"
#include "target/isa_operands.hpp"

namespace tessera::target::isa {
namespace {

// A valid value for `field`: its bounds half the time, else anywhere in range
// on the field's alignment grid.
std::int64_t valid_value(const FieldSpec& field) {
  const std::int64_t steps = (field.max_value() - field.min_value()) / field.scale;
  const std::int64_t step = *rc::gen::oneOf(rc::gen::just<std::int64_t>(0),
                                            rc::gen::just(steps),
                                            rc::gen::inRange<std::int64_t>(0, steps + 1));
  return field.min_value() + step * field.scale;
}

template <class T>
rc::Gen<Instruction> valid_row() {
  return rc::gen::exec([]() -> Instruction {
    T instruction{};
    detail::for_each_operand(instruction, [](const FieldSpec& field, auto& operand) {
      operand = detail::operand_from_value<std::remove_reference_t<decltype(operand)>>(
          valid_value(field));
    });
    // The two encodings the table's rules exclude: an XPIC value above 13
    // bits in sendpic, and setzi $m14, 0 (the nop word).
    if constexpr (std::is_same_v<T, SendPic>) {
      if (instruction.control < 2) instruction.value %= 0x2000;
    }
    if constexpr (std::is_same_v<T, Setzi>) {
      if (instruction.dst == Reg::m14 && instruction.value == 0) instruction.value = 1;
    }
    return instruction;
  });
}

template <class... T>
rc::Gen<Instruction> any_valid_instruction(std::variant<T...>*) {
  std::vector<rc::Gen<Instruction>> rows;
  ([&] {
    if constexpr (detail::kIsTableRow<T>) rows.push_back(valid_row<T>());
  }(), ...);
  return rc::gen::exec([rows] {
    const auto index = *rc::gen::inRange<std::size_t>(0, rows.size());
    return *rows[index];
  });
}

rc::Gen<Instruction> valid_instruction() {
  return any_valid_instruction(static_cast<Instruction*>(nullptr));
}

RC_GTEST_PROP(IsaProperties, DecodeInvertsEncode, ()) {
  const Instruction instruction = *valid_instruction();
  const Encoded encoded = encode(instruction);
  const Decoded decoded = decode(encoded.span());
  RC_ASSERT(decoded.instruction == instruction);
  RC_ASSERT(decoded.words == encoded.count);
}

RC_GTEST_PROP(IsaProperties, ParseInvertsDisassemble, ()) {
  const Instruction instruction = *valid_instruction();
  RC_ASSERT(parse_instruction(disassemble(instruction)) == instruction);
}

// Sets one operand of a valid instruction to a value outside its field (out
// of range, or off the alignment grid) and expects the encoder to refuse.
template <class T>
void expect_rejected_when_a_field_is_wrong() {
  T instruction = std::get<T>(*valid_row<T>());
  const std::size_t which = *rc::gen::inRange<std::size_t>(0, T::kFields.size());
  std::size_t index = 0;
  bool changed = false;
  detail::for_each_operand(instruction, [&](const FieldSpec& field, auto& operand) {
    using V = std::remove_reference_t<decltype(operand)>;
    if (index++ != which) return;
    std::vector<std::int64_t> wrong = {field.min_value() - 1, field.max_value() + 1,
                                       *rc::gen::inRange<std::int64_t>(field.max_value() + 1,
                                                                       field.max_value() + (1ll << 33))};
    if (field.scale > 1) wrong.push_back(field.min_value() + 1);
    const std::int64_t value = *rc::gen::elementOf(wrong);
    using Stored = typename std::conditional_t<std::is_enum_v<V>, std::underlying_type<V>,
                                               std::type_identity<V>>::type;
    if (!std::in_range<Stored>(value)) return;  // the operand's type cannot hold it
    operand = detail::operand_from_value<V>(value);
    changed = true;
  });
  RC_PRE(changed);
  RC_ASSERT_THROWS_AS(encode(instruction), EncodingError);
}

template <class... T>
void reject_wrong_field_in_some_row(std::variant<T...>*) {
  std::vector<void (*)()> checks;
  ([&] {
    if constexpr (detail::kIsTableRow<T>) {
      if constexpr (T::kFields.size() > 0) checks.push_back(&expect_rejected_when_a_field_is_wrong<T>);
    }
  }(), ...);
  checks[*rc::gen::inRange<std::size_t>(0, checks.size())]();
}

RC_GTEST_PROP(IsaProperties, EncoderRejectsEveryOutOfRangeField, ()) {
  reject_wrong_field_in_some_row(static_cast<Instruction*>(nullptr));
}

// Any words decode without crashing, and whatever decodes to an instruction
// re-encodes to exactly the words it came from: the table is a bijection
// between encodable instructions and the words they match.
RC_GTEST_PROP(IsaProperties, DecodingAnyWordsIsTotalAndCanonical,
              (std::uint32_t first, std::uint32_t second)) {
  const std::vector<std::uint32_t> words = {first, second};
  const Decoded decoded = decode(words);
  if (std::holds_alternative<Unknown>(decoded.instruction)) {
    RC_ASSERT(decoded.words == 1u);
    return;
  }
  const Encoded encoded = encode(decoded.instruction);
  RC_ASSERT(encoded.count == decoded.words);
  RC_ASSERT(encoded.words[0] == first);
  if (encoded.count == 2) RC_ASSERT(encoded.words[1] == second);
}

RC_GTEST_PROP(IsaProperties, ParsingArbitraryTextFailsOnlyWithAssemblyErrors, ()) {
  // Text built from the alphabet assembly uses, so that many inputs get deep.
  const auto text = *rc::gen::container<std::string>(
      rc::gen::elementOf(std::string("sendpicybrzlt0123456789xabcdef$m ,-.AIN_")));
  try {
    (void)parse_instruction(text);
  } catch (const AssemblyError&) {
  }
}

}  // namespace
}  // namespace tessera::target::isa
