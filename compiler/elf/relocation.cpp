#include "compiler/elf/relocation.hpp"

#include <array>
#include <limits>

#include <fmt/format.h>

namespace tessera::compiler::elf {
namespace {

// One row per type: §3.2's table as data, so the checks, the writes and the
// error messages cannot disagree.
struct Rule {
  RelocationType type;
  std::string_view name;
  std::uint32_t width;  // bytes at r_offset
  unsigned bits;        // field width after scaling (64: the whole u64)
  unsigned shift;       // log2 of the scale: the value must be a multiple of 1 << shift
  bool image_relative;  // counts from the image base, not from 0
  bool run_split;       // R_COLOSSUS_RUN's split immediate
};

constexpr std::array<Rule, 14> kRules{{
    {RelocationType::kNone, "R_COLOSSUS_NONE", 0, 0, 0, false, false},
    {RelocationType::k8, "R_COLOSSUS_8", 1, 8, 0, false, false},
    {RelocationType::k16, "R_COLOSSUS_16", 2, 16, 0, false, false},
    {RelocationType::k20, "R_COLOSSUS_20", 4, 20, 0, false, false},
    {RelocationType::k32, "R_COLOSSUS_32", 4, 32, 0, false, false},
    {RelocationType::k64, "R_COLOSSUS_64", 8, 64, 0, false, false},
    {RelocationType::kRelative16S2, "R_COLOSSUS_RELATIVE_16_S2", 2, 16, 2, true, false},
    {RelocationType::k18S2, "R_COLOSSUS_18_S2", 4, 18, 2, false, false},
    {RelocationType::k19S2, "R_COLOSSUS_19_S2", 4, 19, 2, false, false},
    // run/runall's 16-bit word offset from the image base: bits 15:12 go to
    // instruction bits 19:16 and bits 11:0 to 11:0 (ipu21-target.md, the run encoding).
    {RelocationType::kRun, "R_COLOSSUS_RUN", 4, 16, 2, true, true},
    {RelocationType::k16S3, "R_COLOSSUS_16_S3", 2, 16, 3, false, false},
    {RelocationType::k16S4, "R_COLOSSUS_16_S4", 2, 16, 4, false, false},
    {RelocationType::k16S5, "R_COLOSSUS_16_S5", 2, 16, 5, false, false},
    {RelocationType::k21, "R_COLOSSUS_21", 4, 21, 0, false, false},
}};

const Rule& rule(RelocationType type) {
  for (const Rule& r : kRules) {
    if (r.type == type) return r;
  }
  throw UsageError(fmt::format("relocation type {} has no rule", static_cast<unsigned>(type)));
}

// The bits of a RUN word the split immediate does not own.
constexpr std::uint32_t kRunKeptBits = 0xFFF0F000;

std::string describe(const RelocationRange& range) {
  if (range.step == 1) return fmt::format("allowed [{:#x}, {:#x}]", range.lowest, range.highest);
  return fmt::format("allowed [{:#x}, {:#x}] in steps of {}", range.lowest, range.highest,
                     range.step);
}

}  // namespace

std::optional<RelocationType> relocation_type(std::uint32_t number) {
  for (const Rule& r : kRules) {
    if (static_cast<std::uint32_t>(r.type) == number) return r.type;
  }
  return std::nullopt;
}

std::string_view relocation_name(RelocationType type) { return rule(type).name; }

std::uint32_t relocation_width(RelocationType type) { return rule(type).width; }

RelocationRange relocation_range(RelocationType type, std::uint32_t image_base) {
  const Rule& r = rule(type);
  RelocationRange range;
  range.lowest = r.image_relative ? image_base : 0;
  range.step = std::uint64_t{1} << r.shift;
  if (r.bits >= 64) {
    range.highest = std::numeric_limits<std::uint64_t>::max();
  } else {
    // At most 16 + 5 or 21 bits scaled, plus a 32-bit base: no overflow.
    range.highest = range.lowest + ((((std::uint64_t{1} << r.bits) - 1)) << r.shift);
  }
  return range;
}

void apply_relocation(RelocationType type, std::int64_t value, std::span<std::uint8_t> field,
                      std::uint32_t image_base) {
  const Rule& r = rule(type);
  if (field.size() != r.width) {
    throw UsageError(
        fmt::format("{}: field of {} bytes, expected {}", r.name, field.size(), r.width));
  }
  if (type == RelocationType::kNone) return;
  const RelocationRange range = relocation_range(type, image_base);
  if (value < 0) {
    // -(value + 1) + 1: the magnitude without negating INT64_MIN.
    const std::uint64_t magnitude = static_cast<std::uint64_t>(-(value + 1)) + 1;
    throw LinkError(
        fmt::format("{}: value -{:#x} is negative: {}", r.name, magnitude, describe(range)));
  }
  const auto v = static_cast<std::uint64_t>(value);
  if (v < range.lowest || v > range.highest) {
    throw LinkError(fmt::format("{}: value {:#x} is out of range: {}", r.name, v, describe(range)));
  }
  const std::uint64_t offset = v - range.lowest;
  if (offset % range.step != 0) {
    throw LinkError(fmt::format("{}: value {:#x} is not a multiple of {}: {}", r.name, v,
                                range.step, describe(range)));
  }
  const std::uint64_t scaled = offset >> r.shift;

  std::uint64_t old = 0;
  for (std::size_t i = 0; i < field.size(); ++i) old |= std::uint64_t{field[i]} << (8 * i);
  std::uint64_t updated = 0;
  if (r.run_split) {
    updated = (old & kRunKeptBits) | ((scaled >> 12) & 0xF) << 16 | (scaled & 0xFFF);
  } else {
    const std::uint64_t mask =
        r.bits >= 64 ? std::numeric_limits<std::uint64_t>::max() : (std::uint64_t{1} << r.bits) - 1;
    updated = (old & ~mask) | scaled;
  }
  for (std::size_t i = 0; i < field.size(); ++i) {
    field[i] = static_cast<std::uint8_t>(updated >> (8 * i));
  }
}

}  // namespace tessera::compiler::elf
