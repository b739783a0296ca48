// F143 quantisation and expansion (the codec: kernels/f143.hpp, one owner;
// kernels-siglip-f143.md §1.3, §3).
//
// tessera_quantize_f16_to_f143: out[i] = the F143 code of in[i] at `scale`
//   (the stored value is x·2^−scale, as the host encoder stores it).
//   $m2 out (codes), $m3 in (f16), $m4 count, $m5 scale (signed).
// tessera_quantize_a16_to_a32_f143: the same for an A16 activation shard of
//   `rows` rows and `columns` logical columns, into the A32 layout the native
//   FP8 GEMM reads (32-column panels: two A16 panels make one); A32 padding
//   columns hold code 0x00.
//   $m2 out (A32 codes), $m3 in (A16), $m4 rows, $m5 columns, $m6 scale.
// tessera_expand_f143_to_f16: out[i] = decode(in[i])·2^scale as f16.
//   $m2 out (f16), $m3 in (codes), $m4 count, $m5 scale (signed).
//
// Quantisation rounds under the call's mode (the device quantises
// activations with ESR set, §1.3): to nearest even as f143::encode does
// (looked up in a per-scale table of encode over every f16 input), or
// stochastically (kernels/rounding.hpp), one draw per element — elements
// balanced-contiguous over the workers, or rows balanced-contiguous with each
// row's logical columns in order. Expansion is exact wherever the value is an
// f16 (scales −14 … 8 for every code); elsewhere it rounds to nearest even
// (overflow to ±Inf, underflow to subnormals or zero) [INF: the device's
// f8v4tof16 out of range is not documented]; code 0x80 gives the quiet NaN.
//
// Preconditions: the scale in [−32, 31] (the hardware's 6-bit field); flat
// counts a multiple of 4 (the device converts four codes, one word, at a
// time; the prior art silently dropped a remainder); an expand covers at most
// one 64 × 64 scale block (H6: one scale per call, expand_span gives each
// block's span); word-aligned flat pointers, 8-byte aligned A16/A32 ones;
// output and input disjoint (their element sizes differ). Zero elements
// touch nothing.
#include "kernels/f143_kernels.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "kernels/f143.hpp"
#include "kernels/half.hpp"
#include "kernels/kernel_shapes.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/rounding.hpp"
#include "kernels/shape_checks.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3
constexpr unsigned kCount = 4;              // $m4 (flat)
constexpr unsigned kFlatScale = 5;          // $m5 (flat)
constexpr unsigned kRows = 4;               // $m4 (A16 → A32)
constexpr unsigned kColumns = 5;            // $m5 (A16 → A32)
constexpr unsigned kShardScale = 6;         // $m6 (A16 → A32)

constexpr std::uint64_t kA16Panel = 16;
constexpr std::uint64_t kA32Panel = 32;

int scale_of(const Registers& r, unsigned reg) { return static_cast<std::int32_t>(r[reg]); }

Violation scale_violation(const Registers& r, unsigned reg) {
  const int scale = scale_of(r, reg);
  if (f143::valid_scale(scale)) return std::nullopt;
  return fmt::format(
      "$m{} (scale) = {} is outside [{}, {}], the range of the hardware's 6-bit "
      "scale field",
      reg, scale, f143::kMinScale, f143::kMaxScale);
}

// f143::encode of every f16 input at one scale, built on first use.
const std::array<std::uint8_t, 65536>& nearest_codes(int scale) {
  constexpr std::size_t kScales = f143::kMaxScale - f143::kMinScale + 1;
  static std::array<std::once_flag, kScales> built;
  static std::array<std::unique_ptr<std::array<std::uint8_t, 65536>>, kScales> tables;
  const auto index = static_cast<std::size_t>(scale - f143::kMinScale);
  std::call_once(built[index], [&] {
    auto table = std::make_unique<std::array<std::uint8_t, 65536>>();
    for (std::uint32_t h = 0; h < table->size(); ++h) {
      (*table)[h] = f143::encode(f16_to_f32(static_cast<std::uint16_t>(h)), scale);
    }
    tables[index] = std::move(table);
  });
  return *tables[index];
}

// The f16 of every F143 code at one scale (f143::decode, NaN as the quiet
// NaN), for every scale, built once: most expands are a panel or two of
// codes, and building their table on each call cost several times the
// expansion itself.
using ExpandTable = std::array<std::uint16_t, 256>;
const ExpandTable& expanded_codes(int scale) {
  if (!f143::valid_scale(scale)) {
    throw std::invalid_argument("F143 scale " + std::to_string(scale) + " is outside [" +
                                std::to_string(f143::kMinScale) + ", " +
                                std::to_string(f143::kMaxScale) + "]");
  }
  static const auto tables = [] {
    std::array<ExpandTable, f143::kMaxScale - f143::kMinScale + 1> all{};
    for (int s = f143::kMinScale; s <= f143::kMaxScale; ++s) {
      auto& table = all[static_cast<std::size_t>(s - f143::kMinScale)];
      for (unsigned code = 0; code < table.size(); ++code) {
        const float value = f143::decode(static_cast<std::uint8_t>(code), s);
        table[code] = value != value ? kF16QuietNan : f32_to_f16(value);
      }
    }
    return all;
  }();
  return tables[static_cast<std::size_t>(scale - f143::kMinScale)];
}

std::uint8_t quantize_one(std::uint16_t x, int scale, RandomStream& stream) {
  return round_f143_stochastic(f16_to_f32(x), scale, stream.next());
}

// ---- flat

std::uint64_t codes_bytes(const Registers& r) { return r[kCount]; }
std::uint64_t halves_bytes(const Registers& r) { return std::uint64_t{r[kCount]} * 2; }

Violation flat_precondition(const Registers& r, bool expand) {
  if (auto v = scale_violation(r, kFlatScale)) return v;
  if (auto v = not_multiple(r, kCount, "count", kF143GroupElements,
                            "the device converts four codes (one word) at a time")) {
    return v;
  }
  if (expand && r[kCount] > kExpandMaxElements) {
    return fmt::format(
        "$m4 (count) = {} is more than one 64 x 64 scale block ({} elements): an "
        "expand takes one scale, so its span must lie inside one block (H6)",
        r[kCount], kExpandMaxElements);
  }
  const OperandExtent out{kOut, expand ? "expanded" : "codes",
                          expand ? halves_bytes(r) : codes_bytes(r)};
  const OperandExtent in{kIn, expand ? "codes" : "source",
                         expand ? codes_bytes(r) : halves_bytes(r)};
  if (auto v = misaligned(r, {kOut, kIn}, 4)) return v;
  for (const auto& operand : {out, in}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  return overlaps_because(r, out, in, "the element sizes differ");
}

void quantize_flat(KernelCall& call) {
  const std::uint64_t count = call.reg(kCount);
  if (count != 0) {
    const int scale = scale_of(call.registers, kFlatScale);
    const auto in = call.memory.read<std::uint16_t>(kIn, call.reg(kIn), count);
    const auto out = call.memory.write<std::uint8_t>(kOut, call.reg(kOut), count);
    if (call.rounding == Rounding::kNearestEven) {
      const auto& table = nearest_codes(scale);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = table[in[i]];
    } else {
      for (unsigned w = 0; w < kWorkerCount; ++w) {
        RandomStream& stream = *worker_stream(call, w);
        const std::uint64_t begin = worker_begin(count, w);
        const std::uint64_t end = begin + worker_share(count, w);
        for (std::uint64_t i = begin; i < end; ++i) out[i] = quantize_one(in[i], scale, stream);
      }
    }
  }
  call.cycles = f143_convert_cycles(count);
}

void expand_flat(KernelCall& call) {
  const std::uint64_t count = call.reg(kCount);
  if (count != 0) {
    const auto& table = expanded_codes(scale_of(call.registers, kFlatScale));
    const auto in = call.memory.read<std::uint8_t>(kIn, call.reg(kIn), count);
    const auto out = call.memory.write<std::uint16_t>(kOut, call.reg(kOut), count);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = table[in[i]];
  }
  call.cycles = f143_convert_cycles(count);
}

// ---- A16 → A32

std::uint64_t a16_bytes(const Registers& r) {
  return saturating_mul(panel_block_elements(r[kRows], r[kColumns]), 2);
}
std::uint64_t a32_bytes(const Registers& r) {
  return saturating_mul(r[kRows], amp::round_up(r[kColumns], kA32Panel));
}

Violation shard_precondition(const Registers& r) {
  if (auto v = scale_violation(r, kShardScale)) return v;
  const OperandExtent out{kOut, "codes", a32_bytes(r)};
  const OperandExtent in{kIn, "source", a16_bytes(r)};
  if (auto v = misaligned(r, {kOut, kIn}, 8)) return v;
  for (const auto& operand : {out, in}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  return overlaps_because(r, out, in, "the layouts differ, so no alias is element-wise");
}

void quantize_shard(KernelCall& call) {
  const std::uint64_t rows = call.reg(kRows);
  const std::uint64_t columns = call.reg(kColumns);
  const std::uint64_t codes = saturating_mul(rows, amp::round_up(columns, kA32Panel));
  if (codes != 0) {
    const int scale = scale_of(call.registers, kShardScale);
    const auto in =
        call.memory.read<std::uint16_t>(kIn, call.reg(kIn), panel_block_elements(rows, columns));
    const auto out = call.memory.write<std::uint8_t>(kOut, call.reg(kOut), codes);
    const bool nearest = call.rounding == Rounding::kNearestEven;
    const auto* table = nearest ? &nearest_codes(scale) : nullptr;
    for (unsigned w = 0; w < kWorkerCount; ++w) {
      RandomStream* stream = worker_stream(call, w);
      const std::uint64_t first = worker_begin(rows, w);
      for (std::uint64_t r = first; r < first + worker_share(rows, w); ++r) {
        // Each row's 16 columns of A16 panel p are 16 consecutive codes of
        // A32 panel p/2 (amp_layout.hpp places both runs).
        for (std::uint64_t k = 0; k < amp::round_up(columns, kA32Panel); k += kA16Panel) {
          const auto codes_run = out.subspan(amp::left_offset(r, k, rows, kA32Panel), kA16Panel);
          const std::uint64_t valid = k < columns ? std::min(kA16Panel, columns - k) : 0;
          const auto source = valid == 0
                                  ? KernelSpan<const std::uint16_t>()
                                  : in.subspan(amp::left_offset(r, k, rows, kA16Panel), kA16Panel);
          for (std::uint64_t n = 0; n < kA16Panel; ++n) {
            codes_run[n] = n >= valid ? std::uint8_t{0}
                           : nearest  ? (*table)[source[n]]
                                      : quantize_one(source[n], scale, *stream);
          }
        }
      }
    }
  }
  call.cycles = quantize_a16_to_a32_cycles(rows, columns);
}

}  // namespace

ExpandSpan expand_span(std::uint32_t inner, std::uint32_t columns, std::uint32_t scale_block) {
  if (inner == 0 || inner > f143::kBlockRows || inner % 16 != 0 || columns % 16 != 0 ||
      std::uint64_t{scale_block} * f143::kBlockColumns >= columns) {
    throw std::invalid_argument(fmt::format(
        "no scale block {} in a B16x16 block of {} K rows (a multiple of 16, at most {}) x {} "
        "columns (a multiple of 16)",
        scale_block, inner, f143::kBlockRows, columns));
  }
  // Column groups of 16 hold inner·16 elements each, one after another.
  const std::uint64_t first_column = std::uint64_t{scale_block} * f143::kBlockColumns;
  const std::uint64_t span_columns =
      std::min<std::uint64_t>(f143::kBlockColumns, columns - first_column);
  return {first_column * inner, span_columns * inner};
}

void add_f143_kernels(KernelRegistry& registry) {
  registry.add(KernelSpec{std::string(kQuantizeF16ToF143),
                          KernelKind::kKernel,
                          {OperandSpec{kOut, Access::kWrite, "codes", codes_bytes},
                           OperandSpec{kIn, Access::kRead, "source", halves_bytes}},
                          [](const Registers& r) { return flat_precondition(r, false); },
                          quantize_flat});
  registry.add(KernelSpec{std::string(kQuantizeA16ToA32F143),
                          KernelKind::kKernel,
                          {OperandSpec{kOut, Access::kWrite, "codes", a32_bytes},
                           OperandSpec{kIn, Access::kRead, "source", a16_bytes}},
                          shard_precondition,
                          quantize_shard});
  registry.add(KernelSpec{std::string(kExpandF143ToF16),
                          KernelKind::kKernel,
                          {OperandSpec{kOut, Access::kWrite, "expanded", halves_bytes},
                           OperandSpec{kIn, Access::kRead, "codes", codes_bytes}},
                          [](const Registers& r) { return flat_precondition(r, true); },
                          expand_flat});
}

}  // namespace tessera::kernels
