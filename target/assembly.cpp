#include "target/assembly.hpp"

#include <cctype>
#include <charconv>
#include <limits>
#include <ostream>

#include <fmt/format.h>

#include "support/checked.hpp"
#include "target/isa_operands.hpp"

namespace tessera::target::isa {
namespace {

std::string format_operand(const FieldSpec& field, std::int64_t value) {
  switch (field.kind) {
    case FieldKind::kRegister:
      return fmt::format("$m{}", value);
    case FieldKind::kCsr: {
      const auto name = csr_name(static_cast<Csr>(value));
      return name ? fmt::format("${}", *name) : fmt::format("{:#x}", value);
    }
    case FieldKind::kUnsigned:
    case FieldKind::kSigned:
      break;
  }
  if (field.radix == Radix::kHex && value >= 0) return fmt::format("{:#x}", value);
  return fmt::format("{}", value);
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string_view> split_operands(std::string_view text) {
  std::vector<std::string_view> operands;
  if (trim(text).empty()) return operands;
  for (;;) {
    const auto comma = text.find(',');
    operands.push_back(trim(text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return operands;
}

// An integer literal: decimal, or hex with 0x; one optional leading '-'.
// The digits are read as an unsigned magnitude, which takes no sign of its
// own (`--5` and `0x-5` are not numbers) and can hold 2^63, so the most
// negative value needs no negation that would overflow.
std::optional<std::int64_t> parse_integer(std::string_view text) {
  const bool negative = text.starts_with('-');
  if (negative) text.remove_prefix(1);
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t magnitude = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), magnitude, base);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!negative) {
    if (magnitude > kMax) return std::nullopt;
    return static_cast<std::int64_t>(magnitude);
  }
  if (magnitude > kMax + 1) return std::nullopt;
  if (magnitude == kMax + 1) return std::numeric_limits<std::int64_t>::min();
  return -static_cast<std::int64_t>(magnitude);
}

std::int64_t parse_operand(const FieldSpec& field, std::string_view text) {
  switch (field.kind) {
    case FieldKind::kRegister: {
      if (text.starts_with("$m")) {
        const auto number = parse_integer(text.substr(2));
        if (number && *number >= 0 && *number <= 15 && !text.substr(2).starts_with("0x")) {
          return *number;
        }
      }
      throw AssemblyError(fmt::format("'{}' is not a register $m0..$m15", text));
    }
    case FieldKind::kCsr: {
      if (text.starts_with("$")) {
        if (const auto csr = csr_from_name(text.substr(1))) {
          return static_cast<std::int64_t>(*csr);
        }
        throw AssemblyError(fmt::format("'{}' is not a known control register", text));
      }
      break;  // a number
    }
    case FieldKind::kUnsigned:
    case FieldKind::kSigned:
      break;
  }
  const auto value = parse_integer(text);
  if (!value) throw AssemblyError(fmt::format("'{}' is not a number", text));
  return *value;
}

template <class T>
Instruction parse_row(std::string_view mnemonic, const std::vector<std::string_view>& operands) {
  if (operands.size() != T::kFields.size()) {
    throw AssemblyError(fmt::format("{} takes {} operand(s), got {}", mnemonic,
                                    T::kFields.size(), operands.size()));
  }
  T instruction{};
  std::size_t index = 0;
  detail::for_each_operand(instruction, [&](const FieldSpec& field, auto& operand) {
    using V = std::remove_reference_t<decltype(operand)>;
    const std::int64_t value = with_context(
        fmt::format("operand {} ('{}') of {}", index + 1, field.name, mnemonic),
        [&] { return parse_operand(field, operands[index]); });
    try {
      detail::check_field(mnemonic, field, value);
    } catch (const EncodingError& error) {
      throw AssemblyError(error.message());
    }
    operand = detail::operand_from_value<V>(value);
    ++index;
  });
  try {
    (void)encode(instruction);  // rules across fields (sendpic)
  } catch (const EncodingError& error) {
    throw AssemblyError(error.message());
  }
  return instruction;
}

template <class... T>
Instruction parse_by_mnemonic(std::string_view mnemonic,
                              const std::vector<std::string_view>& operands,
                              std::variant<T...>*) {
  std::optional<Instruction> parsed;
  (void)([&] {
    if constexpr (detail::kIsTableRow<T>) {
      if (T::kSpec.mnemonic != mnemonic) return false;
      parsed = parse_row<T>(mnemonic, operands);
      return true;
    } else {
      return false;
    }
  }() || ...);
  if (!parsed) throw AssemblyError(fmt::format("unknown mnemonic '{}'", mnemonic));
  return *parsed;
}

}  // namespace

std::string disassemble(const Instruction& instruction) {
  return std::visit(
      [](const auto& row) -> std::string {
        using T = std::decay_t<decltype(row)>;
        if constexpr (!detail::kIsTableRow<T>) {
          return fmt::format(".word {:#010x}", row.word);
        } else {
          std::string text(T::kSpec.mnemonic);
          bool first = true;
          detail::for_each_operand(row, [&](const FieldSpec& field, const auto& operand) {
            text += first ? " " : ", ";
            first = false;
            text += format_operand(field, detail::operand_value(operand));
          });
          return text;
        }
      },
      instruction);
}

std::ostream& operator<<(std::ostream& out, const Instruction& instruction) {
  return out << disassemble(instruction);
}

Instruction parse_instruction(std::string_view text) {
  text = trim(text);
  const auto space = text.find_first_of(" \t");
  const std::string_view mnemonic = text.substr(0, space);
  const std::string_view rest = space == std::string_view::npos ? "" : text.substr(space);
  if (mnemonic.empty()) throw AssemblyError("empty instruction");
  const auto operands = split_operands(rest);
  if (mnemonic == ".word") {
    if (operands.size() != 1) throw AssemblyError(".word takes one operand");
    const auto value = parse_integer(operands[0]);
    if (!value || *value < 0 || *value > 0xFFFFFFFF) {
      throw AssemblyError(fmt::format("'{}' is not a 32-bit word", operands[0]));
    }
    return Unknown{static_cast<std::uint32_t>(*value)};
  }
  return parse_by_mnemonic(mnemonic, operands, static_cast<Instruction*>(nullptr));
}

std::vector<ListingLine> disassemble_words(std::span<const std::uint32_t> words,
                                           std::uint32_t base) {
  std::vector<ListingLine> lines;
  std::size_t i = 0;
  while (i < words.size()) {
    const Decoded decoded = decode(words.subspan(i));
    ListingLine line;
    line.address = checked_add(base, checked_cast<std::uint32_t>(i * 4, "listing offset"),
                               "listing address");
    line.words.assign(words.begin() + static_cast<std::ptrdiff_t>(i),
                      words.begin() + static_cast<std::ptrdiff_t>(i + decoded.words));
    line.instruction = decoded.instruction;
    lines.push_back(std::move(line));
    i += decoded.words;
  }
  return lines;
}

std::string format_listing_line(const ListingLine& line) {
  std::string words;
  for (const auto word : line.words) {
    if (!words.empty()) words += ' ';
    words += fmt::format("{:08x}", word);
  }
  return fmt::format("{:08x}  {:<17}  {}", line.address, words, disassemble(line.instruction));
}

}  // namespace tessera::target::isa
