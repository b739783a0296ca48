#include "target/isa.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "target/isa_operands.hpp"

namespace tessera::target::isa {
namespace {

// ---- Compile-time checks of the table --------------------------------------

// A row is well formed when its fields fit in 32 bits, do not overlap each
// other, and do not overlap its opcode bits.
constexpr bool well_formed(const InstructionSpec& spec) {
  for (std::uint8_t word = 0; word < spec.words; ++word) {
    std::uint32_t seen = 0;
    for (const auto& field : spec.fields) {
      if (field.word >= spec.words) return false;
      if (field.word != word) continue;
      if (field.low.lsb + field.low.width > 32 || field.high.lsb + field.high.width > 32) {
        return false;
      }
      if (field.width() == 0 || field.width() > 31) return false;
      if ((seen & field.mask()) != 0) return false;
      if ((field.low.mask() & field.high.mask()) != 0) return false;
      seen |= field.mask();
    }
    if (word == 0 && (seen & spec.opcode) != 0) return false;
  }
  return true;
}

template <class... T>
constexpr bool all_well_formed(std::variant<T...>*) {
  return ([] {
    if constexpr (detail::kIsTableRow<T>) {
      return well_formed(T::kSpec);
    } else {
      return true;
    }
  }() && ...);
}
static_assert(all_well_formed(static_cast<Instruction*>(nullptr)),
              "an instruction row has overlapping or out-of-word fields");

template <class... T>
constexpr auto make_spec_list(std::variant<T...>*) {
  std::array<const InstructionSpec*, sizeof...(T) - 1> specs{};
  std::size_t i = 0;
  (
      [&] {
        if constexpr (detail::kIsTableRow<T>) specs[i++] = &T::kSpec;
      }(),
      ...);
  return specs;
}
constexpr auto kSpecs = make_spec_list(static_cast<Instruction*>(nullptr));

// Two rows overlap when some word matches both. The decoder takes the earlier
// one, so the later one stays reachable only if the earlier is strictly more
// specific (nop before setzi is the one such pair).
constexpr bool precedence_is_sound() {
  for (std::size_t i = 0; i < kSpecs.size(); ++i) {
    for (std::size_t j = i + 1; j < kSpecs.size(); ++j) {
      const auto& a = *kSpecs[i];
      const auto& b = *kSpecs[j];
      const std::uint32_t common = a.match_mask() & b.match_mask();
      const bool overlap = ((a.opcode ^ b.opcode) & common) == 0;
      if (!overlap) continue;
      const bool a_more_specific =
          (a.match_mask() & b.match_mask()) == b.match_mask() && a.match_mask() != b.match_mask();
      if (!a_more_specific) return false;
    }
  }
  return true;
}
static_assert(precedence_is_sound(), "an instruction row shadows a later one");

// ---- Fields ----------------------------------------------------------------

std::string format_value(const FieldSpec& field, std::int64_t value) {
  if (field.radix == Radix::kHex && value >= 0) return fmt::format("{:#x}", value);
  return fmt::format("{}", value);
}

}  // namespace

void detail::check_field(std::string_view mnemonic, const FieldSpec& field, std::int64_t value) {
  if (value < field.min_value() || value > field.max_value()) {
    throw EncodingError(fmt::format("{}: field '{}' = {} is out of range [{}, {}]", mnemonic,
                                    field.name, format_value(field, value),
                                    format_value(field, field.min_value()),
                                    format_value(field, field.max_value())));
  }
  const std::int64_t unbiased = value - field.bias;
  if (unbiased % field.scale != 0) {
    throw EncodingError(fmt::format("{}: field '{}' = {} is not a multiple of {}", mnemonic,
                                    field.name, format_value(field, value), field.scale));
  }
}

namespace {

// The bits that represent `value` in `field`, placed in its word.
std::uint32_t place_field(std::string_view mnemonic, const FieldSpec& field, std::int64_t value) {
  detail::check_field(mnemonic, field, value);
  const std::int64_t unbiased = value - field.bias;
  // Two's complement in the field's width; the range check above makes the
  // truncation exact.
  const auto stored = static_cast<std::uint32_t>(unbiased / field.scale) &
                      static_cast<std::uint32_t>((std::uint64_t{1} << field.width()) - 1);
  const std::uint32_t low = stored & ((std::uint32_t{1} << field.low.width) - 1);
  const std::uint32_t high = stored >> field.low.width;
  return (low << field.low.lsb) | (field.high.width == 0 ? 0u : high << field.high.lsb);
}

std::int64_t extract_field(const FieldSpec& field, std::span<const std::uint32_t> words) {
  const std::uint32_t word = words[field.word];
  std::uint64_t stored = (word & field.low.mask()) >> field.low.lsb;
  if (field.high.width != 0) {
    stored |= static_cast<std::uint64_t>((word & field.high.mask()) >> field.high.lsb)
              << field.low.width;
  }
  auto value = static_cast<std::int64_t>(stored);
  if (field.kind == FieldKind::kSigned && (stored >> (field.width() - 1)) != 0) {
    value -= std::int64_t{1} << field.width();
  }
  return value * field.scale + field.bias;
}

template <class T>
Encoded encode_row(const T& instruction) {
  if constexpr (requires { T::check(instruction); }) T::check(instruction);
  Encoded encoded;
  encoded.count = T::kSpec.words;
  encoded.words[0] = T::kSpec.opcode;
  detail::for_each_operand(instruction, [&](const FieldSpec& field, const auto& operand) {
    encoded.words[field.word] |=
        place_field(T::kSpec.mnemonic, field, detail::operand_value(operand));
  });
  return encoded;
}

template <class T>
T decode_row(std::span<const std::uint32_t> words) {
  T instruction{};
  detail::for_each_operand(instruction, [&](const FieldSpec& field, auto& operand) {
    operand = detail::operand_from_value<std::remove_reference_t<decltype(operand)>>(
        extract_field(field, words));
  });
  return instruction;
}

template <class... T>
Decoded decode_in_order(std::span<const std::uint32_t> words, std::variant<T...>*) {
  const std::uint32_t first = words[0];
  Decoded result{Unknown{first}, 1};
  (void)([&] {
    if constexpr (detail::kIsTableRow<T>) {
      if ((first & T::kSpec.match_mask()) != T::kSpec.opcode) return false;
      if (words.size() < T::kSpec.words) return true;  // truncated: stays Unknown
      T candidate = decode_row<T>(words);
      // A row with a cross-field rule (sendpic) must not decode a word that
      // its encoder would refuse; such a word is Unknown.
      if constexpr (requires { T::check(candidate); }) {
        try {
          T::check(candidate);
        } catch (const EncodingError&) {
          return true;
        }
      }
      result = Decoded{candidate, T::kSpec.words};
      return true;
    } else {
      return false;
    }
  }() || ...);
  return result;
}

// ---- CSR names -------------------------------------------------------------

struct NamedCsr {
  Csr csr;
  std::string_view name;
};

constexpr std::array kCsrNames{
    NamedCsr{Csr::kPc, "PC"},
    NamedCsr{Csr::kStatus, "SR"},
    NamedCsr{Csr::kDebugData, "DBG_DATA"},
    NamedCsr{Csr::kDebugControl, "DBG_CTL"},
    NamedCsr{Csr::kDebugExceptionStatus, "DBG_ECSR"},
    NamedCsr{Csr::kDebugExceptionClear, "DBG_ECLR"},
    NamedCsr{Csr::kInstructionBreak0, "IBRK0"},
    NamedCsr{Csr::kInstructionBreak1, "IBRK1"},
    NamedCsr{Csr::kIncomingMux, "INCOMING_MUX"},
    NamedCsr{Csr::kIncomingMuxPair, "INCOMING_MUXPAIR"},
    NamedCsr{Csr::kIncomingFormat, "INCOMING_FORMAT"},
    NamedCsr{Csr::kIncomingBase, "INCOMING_BASE"},
    NamedCsr{Csr::kIncomingDcount, "INCOMING_DCOUNT"},
    NamedCsr{Csr::kOutgoingBase, "OUTGOING_BASE"},
};

}  // namespace

std::optional<std::string_view> csr_name(Csr csr) noexcept {
  for (const auto& entry : kCsrNames) {
    if (entry.csr == csr) return entry.name;
  }
  return std::nullopt;
}

std::optional<Csr> csr_from_name(std::string_view name) noexcept {
  for (const auto& entry : kCsrNames) {
    if (entry.name == name) return entry.csr;
  }
  // BRINGUP's names for the exchange registers 0xA0..0xA7.
  if (name.size() == 2 && name[0] == 'A' && name[1] >= '0' && name[1] <= '7') {
    return static_cast<Csr>(0xA0 + (name[1] - '0'));
  }
  return std::nullopt;
}

void Setzi::check(const Setzi& instruction) {
  if (instruction.dst == Reg::m14 && instruction.value == 0) {
    throw EncodingError(fmt::format(
        "setzi $m14, 0 has no encoding: its word {:#010x} is nop's, which leaves $m14 as it was; "
        "write `add $m14, $m15, 0` to zero $m14",
        kNopWord));
  }
}

void SendPic::check(const SendPic& instruction) {
  constexpr std::uint32_t kXpicLimit = 1u << 13;
  if (instruction.control < 2 && instruction.value >= kXpicLimit) {
    throw EncodingError(fmt::format(
        "sendpic: field 'value' = {:#x} is out of range [0, {:#x}] for an XPIC control",
        instruction.value, kXpicLimit - 1));
  }
}

Encoded encode(const Instruction& instruction) {
  return std::visit(
      [](const auto& row) -> Encoded {
        using T = std::decay_t<decltype(row)>;
        if constexpr (detail::kIsTableRow<T>) {
          return encode_row(row);
        } else {
          Encoded raw;
          raw.words[0] = row.word;
          raw.count = 1;
          return raw;
        }
      },
      instruction);
}

void encode_into(const Instruction& instruction, std::vector<std::uint32_t>& out) {
  const Encoded encoded = encode(instruction);
  out.insert(out.end(), encoded.words.begin(), encoded.words.begin() + encoded.count);
}

Decoded decode(std::span<const std::uint32_t> words) {
  if (words.empty()) throw std::invalid_argument("isa::decode: no words to decode");
  return decode_in_order(words, static_cast<Instruction*>(nullptr));
}

const InstructionSpec* spec_of(const Instruction& instruction) noexcept {
  return std::visit(
      [](const auto& row) -> const InstructionSpec* {
        using T = std::decay_t<decltype(row)>;
        if constexpr (detail::kIsTableRow<T>) {
          return &T::kSpec;
        } else {
          return nullptr;
        }
      },
      instruction);
}

std::uint32_t alignment_of(const Instruction& instruction) noexcept {
  const InstructionSpec* spec = spec_of(instruction);
  return spec == nullptr ? 4u : spec->alignment;
}

std::optional<std::string> misplacement(const Instruction& instruction, std::uint32_t address) {
  const std::uint32_t alignment = alignment_of(instruction);
  if (address % alignment == 0) return std::nullopt;
  const InstructionSpec* spec = spec_of(instruction);
  return fmt::format("{} at {:#x}: the instruction needs {} {}-byte boundary",
                     spec == nullptr ? std::string_view(".word") : spec->mnemonic, address,
                     alignment == 8 ? "an" : "a", alignment);
}

Encoded encode_at(const Instruction& instruction, std::uint32_t address) {
  if (auto why = misplacement(instruction, address)) throw EncodingError(std::move(*why));
  return encode(instruction);
}

std::vector<std::uint32_t> encode_program(std::span<const Instruction> program,
                                          std::uint32_t base) {
  std::vector<std::uint32_t> words;
  std::uint64_t address = base;
  for (std::size_t i = 0; i < program.size(); ++i) {
    if (address > 0xFFFFFFFFu) {
      throw EncodingError(fmt::format("instruction {}: past the end of the address space", i));
    }
    const Encoded encoded = with_context(fmt::format("instruction {}", i), [&] {
      return encode_at(program[i], static_cast<std::uint32_t>(address));
    });
    words.insert(words.end(), encoded.words.begin(), encoded.words.begin() + encoded.count);
    address += 4 * std::uint64_t{encoded.count};
  }
  return words;
}

std::size_t word_count(const Instruction& instruction) noexcept {
  const InstructionSpec* spec = spec_of(instruction);
  return spec == nullptr ? 1 : spec->words;
}

std::optional<std::uint32_t> code_target(const Instruction& instruction) noexcept {
  if (const auto* call = std::get_if<Call>(&instruction)) return call->target;
  if (const auto* bri = std::get_if<Bri>(&instruction)) return bri->target;
  if (const auto* brz = std::get_if<Brz>(&instruction)) return brz->target;
  return std::nullopt;
}

std::span<const InstructionSpec* const> all_specs() noexcept { return kSpecs; }

}  // namespace tessera::target::isa
