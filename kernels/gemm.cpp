// The AMP GEMM kernels' registry entries: ABI, footprints, preconditions,
// host models and costs (kernels/gemm.hpp; arithmetic in gemm_core.cpp).
//
// A model asks once per operand for the span its loop bounds touch — A with
// its read tail, B, C — converts A and one column group of B at a time to
// f32 and hands them to the core. Zero rows touch nothing.
#include "kernels/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "kernels/amp_layout.hpp"
#include "kernels/costs.hpp"
#include "kernels/gemm_core.hpp"
#include "kernels/operand_checks.hpp"
#include "support/error.hpp"
#include "target/exchange_timing.hpp"
#include "target/memory_map.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kGemmOutputRegister;
constexpr unsigned kLeft = kGemmLeftRegister;
constexpr unsigned kWeights = kGemmWeightRegister;
constexpr unsigned kRows = kGemmRowsRegister;
constexpr unsigned kInner = kGemmInnerRegister;
constexpr unsigned kColumns = kGemmColumnsRegister;
constexpr unsigned kScale = kGemmScaleRegister;

constexpr unsigned kPanelColumns = amp::kPanelColumns;

// The A block travels in one exchange transfer; C lives in the 32 KiB
// interleaved operand window (§1.1 planner limits).
constexpr std::uint64_t kTransferBytes = std::uint64_t{target::kMaxTransferWords} * 4;
constexpr std::uint64_t kOutputWindowBytes = target::kInterleavedOperandWindow.size();

// Products of register values can pass 2^64 (rows · K · bytes); saturate, so
// such a footprint reads as "too large" and is refused, never wrapped small.
std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<std::uint64_t>::max()
                                                : product;
}

std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
}

std::string describe(std::uint64_t begin, std::uint64_t bytes) {
  return fmt::format("[{:#x}, {:#x})", begin, begin + bytes);
}

bool inside(const target::AddressRange& region, std::uint64_t begin, std::uint64_t bytes) {
  return begin >= region.begin && begin + bytes <= region.end;
}

// ---- Preconditions

Violation row_violation(GemmFamily family, std::uint32_t rows, std::uint32_t inner,
                        std::uint32_t columns) {
  const GemmFormat f = gemm_format(family);
  if (rows < kGemmMinimumRows) {
    return fmt::format(
        "$m5 (rows) = {} is below the {} GEMM's minimum of {} rows: the six workers split the "
        "rows balanced contiguous and each needs two, or the device kernel's per-worker loop count "
        "({}) wraps (review-findings #5); pad the row shard or choose another kernel",
        rows, f.name, kGemmMinimumRows,
        family == GemmFamily::kF32 ? "rpt rows_per_worker - 2" : "rpt rows_per_worker - 1");
  }
  const std::uint32_t maximum = gemm_maximum_rows(family, inner, columns);
  if (rows <= maximum) return std::nullopt;
  const std::uint64_t left = std::uint64_t{rows} * inner * f.left_bytes;
  const std::uint64_t out = std::uint64_t{rows} * columns * f.output_bytes;
  if (left > kTransferBytes) {
    return fmt::format(
        "$m5 (rows) = {} is above the maximum of {} for K = {}, N = {}: the {}-byte A block must "
        "arrive in one exchange transfer of at most {} words",
        rows, maximum, inner, columns, left, target::kMaxTransferWords);
  }
  return fmt::format(
      "$m5 (rows) = {} is above the maximum of {} for K = {}, N = {}: the {}-byte C block must "
      "fit the {}-byte interleaved operand window",
      rows, maximum, inner, columns, out, kOutputWindowBytes);
}

Violation memory_violation(GemmFamily family, const Registers& r) {
  const GemmFormat f = gemm_format(family);
  const std::uint32_t rows = r[kRows], inner = r[kInner], columns = r[kColumns];
  const OperandExtent out{kOut, "output", gemm_output_bytes(family, rows, columns)};
  const OperandExtent left{kLeft, "left", gemm_left_bytes(family, rows, inner)};
  const OperandExtent weights{kWeights, "weights", gemm_weight_bytes(family, rows, inner, columns)};
  if (auto v = misaligned(r, {kOut, kLeft}, 8)) return v;
  if (auto v = misaligned(r, {kWeights}, f.weight_alignment)) return v;
  for (const auto& operand : {out, left, weights}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  if (!inside(target::kInterleavedRegion, r[kOut], out.bytes)) {
    return fmt::format(
        "$m2 (output) {} is not in interleaved memory {}: the AMP reads and writes the partials "
        "with 128-bit and paired loads, which need it (§1.1)",
        describe(r[kOut], out.bytes), target::kInterleavedRegion);
  }
  if (f.interleaved_weights && !inside(target::kInterleavedRegion, r[kWeights], weights.bytes)) {
    return fmt::format(
        "$m4 (weights) {} is not in interleaved memory {}: the expanded weights are streamed "
        "into the AMP with ld128putcs, which needs it",
        describe(r[kWeights], weights.bytes), target::kInterleavedRegion);
  }
  if (inside(target::kSram, r[kLeft], left.bytes)) {
    const auto left_elements = target::elements_of(
        target::AddressRange(r[kLeft], static_cast<std::uint32_t>(r[kLeft] + left.bytes)));
    const auto out_elements = target::elements_of(
        target::AddressRange(r[kOut], static_cast<std::uint32_t>(r[kOut] + out.bytes)));
    if (left_elements.intersects(out_elements)) {
      return fmt::format(
          "$m3 (left) {} and $m2 (output) {} share a memory element: the AMP's paired loads "
          "(ld2x64pace) read A and the C partials in one cycle, from two elements (§1.1)",
          describe(r[kLeft], left.bytes), describe(r[kOut], out.bytes));
    }
  }
  return overlaps(r, out, weights);
}

// ---- Host model

// F143 codes decoded at every scale, once: [scale + 32][code].
using DecodeTable = std::array<float, 256>;
const DecodeTable& f143_values(int scale) {
  static const auto tables = [] {
    std::array<DecodeTable, f143::kMaxScale - f143::kMinScale + 1> all{};
    for (int s = f143::kMinScale; s <= f143::kMaxScale; ++s) {
      for (unsigned code = 0; code < 256; ++code) {
        all[static_cast<std::size_t>(s - f143::kMinScale)][code] =
            f143::decode(static_cast<std::uint8_t>(code), s);
      }
    }
    return all;
  }();
  return tables[static_cast<std::size_t>(scale - f143::kMinScale)];
}

// Element types of one family's operands and their f32 values.
template <GemmFamily F>
struct Elements;

template <>
struct Elements<GemmFamily::kF32> {
  using Left = float;
  using Weight = float;
  using Output = float;
};
template <>
struct Elements<GemmFamily::kF16> {
  using Left = std::uint16_t;
  using Weight = std::uint16_t;
  using Output = std::uint16_t;
};
template <>
struct Elements<GemmFamily::kF16ExpandedF143> : Elements<GemmFamily::kF16> {};
template <>
struct Elements<GemmFamily::kF143> {
  using Left = std::uint8_t;
  using Weight = std::uint8_t;
  using Output = std::uint16_t;
};

// Per host thread (tiles run on several): A and B in f32, and one column
// group of B transposed to [K][16].
thread_local std::vector<float> left_values;
thread_local std::vector<float> weight_values;
thread_local std::vector<float> group_weights;

template <GemmFamily F, GemmVariant V>
void run(KernelCall& call) {
  using E = Elements<F>;
  constexpr GemmFormat format = gemm_format(F);
  constexpr bool kInit = V == GemmVariant::kInit;
  const std::uint32_t rows = call.reg(kRows), inner = call.reg(kInner),
                      columns = call.reg(kColumns);
  call.cycles = gemm_cycles(F, rows, inner, columns);
  if (rows == 0) return;  // zero work touches nothing (review-findings #3)

  const std::uint64_t left_count = amp::left_elements(rows, inner);
  const std::uint64_t weight_count = amp::weight_elements(inner, columns);
  const std::uint64_t output_count = amp::output_elements(rows, columns);
  const auto left = call.memory.read<typename E::Left>(kLeft, call.reg(kLeft), left_count);
  // The AMP's priming loads read past A's last row; the device discards those
  // bytes, so the model asks for them (they must still be the operand's) and
  // never looks at them.
  call.memory.acquire(kLeft, call.reg(kLeft) + left_count * format.left_bytes,
                      format.left_tail_bytes, Access::kRead, SpanUse::kSparse, 1);
  const auto weights =
      call.memory.read<typename E::Weight>(kWeights, call.reg(kWeights), weight_count);
  const auto out =
      kInit ? call.memory.write<typename E::Output>(kOut, call.reg(kOut), output_count)
            : call.memory.read_write<typename E::Output>(kOut, call.reg(kOut), output_count);

  const gemm::Path path = gemm::vector_path_available() ? gemm::Path::kVector : gemm::Path::kScalar;
  // A and B in f32, each converted once per call, in their own layouts.
  const auto to_f32 = [&](const auto& elements, std::vector<float>& buffer) {
    if constexpr (F == GemmFamily::kF32) {
      return std::span<const float>(elements.std_span());
    } else {
      buffer.resize(elements.size());
      if constexpr (F == GemmFamily::kF143) {
        // F143 weights carry the product scale: a·(b·2^ISCL) = a·b·2^ISCL
        // exactly; activations are decoded at scale 0.
        const bool is_weights = elements.reg() == kWeights;
        const DecodeTable& value =
            f143_values(is_weights ? static_cast<std::int32_t>(call.reg(kScale)) : 0);
        for (std::size_t i = 0; i < elements.size(); ++i) buffer[i] = value[elements[i]];
      } else {
        gemm::widen_f16(elements.std_span(), buffer, path);
      }
      return std::span<const float>(buffer);
    }
  };
  const std::span<const float> left_f32 = to_f32(left, left_values);
  const std::span<const float> weights_f32 = to_f32(weights, weight_values);

  const GemmRounding rounding(call);
  group_weights.resize(std::size_t{inner} * kPanelColumns);
  for (std::uint32_t group = 0; group < columns / kPanelColumns; ++group) {
    // Channel c of each pass's panel holds `pass` contiguous K values of
    // logical column σ(c).
    for (std::uint32_t k0 = 0; k0 < inner; k0 += format.pass) {
      for (unsigned c = 0; c < kPanelColumns; ++c) {
        const std::uint32_t n = group * kPanelColumns + amp::logical_column(c);
        const auto channel =
            weights_f32.subspan(amp::weight_offset(k0, n, inner, format.pass), format.pass);
        for (unsigned k = 0; k < format.pass; ++k) {
          group_weights[(std::size_t{k0} + k) * kPanelColumns + c] = channel[k];
        }
      }
    }
    const gemm::ColumnGroup problem{left_f32, group_weights, rows, inner, format.pass, kInit};
    const auto panel =
        out.subspan(amp::output_offset(0, group * kPanelColumns + amp::logical_column(0), rows),
                    std::size_t{rows} * kPanelColumns);
    if constexpr (F == GemmFamily::kF32) {
      gemm::f32_column_group(problem, panel, path);
    } else {
      gemm::hiho_column_group(problem, panel, rounding, path);
    }
  }
}

template <GemmFamily F, GemmVariant V>
KernelSpec spec(std::string_view name) {
  return KernelSpec{
      std::string(name),
      KernelKind::kKernel,
      {OperandSpec{kOut, V == GemmVariant::kInit ? Access::kWrite : Access::kReadWrite, "output",
                   [](const Registers& r) { return gemm_output_bytes(F, r[kRows], r[kColumns]); }},
       OperandSpec{kLeft, Access::kRead, "left",
                   [](const Registers& r) { return gemm_left_bytes(F, r[kRows], r[kInner]); }},
       OperandSpec{kWeights, Access::kRead, "weights",
                   [](const Registers& r) {
                     return gemm_weight_bytes(F, r[kRows], r[kInner], r[kColumns]);
                   }}},
      [](const Registers& r) { return gemm_violation(F, r); },
      [](KernelCall& call) { run<F, V>(call); }};
}

}  // namespace

std::uint32_t gemm_maximum_rows(GemmFamily family, std::uint32_t inner, std::uint32_t columns) {
  const GemmFormat f = gemm_format(family);
  std::uint64_t maximum = std::numeric_limits<std::uint32_t>::max();
  if (inner != 0)
    maximum = std::min(maximum, kTransferBytes / (std::uint64_t{inner} * f.left_bytes));
  if (columns != 0) {
    maximum = std::min(maximum, kOutputWindowBytes / (std::uint64_t{columns} * f.output_bytes));
  }
  return static_cast<std::uint32_t>(maximum);
}

std::uint64_t gemm_left_bytes(GemmFamily family, std::uint32_t rows, std::uint32_t inner) {
  if (rows == 0) return 0;
  const GemmFormat f = gemm_format(family);
  return saturating_sum(saturating_product(saturating_product(rows, inner), f.left_bytes),
                        f.left_tail_bytes);
}

std::uint64_t gemm_weight_bytes(GemmFamily family, std::uint32_t rows, std::uint32_t inner,
                                std::uint32_t columns) {
  if (rows == 0) return 0;
  return saturating_product(saturating_product(inner, columns), gemm_format(family).weight_bytes);
}

std::uint64_t gemm_output_bytes(GemmFamily family, std::uint32_t rows, std::uint32_t columns) {
  return saturating_product(saturating_product(rows, columns), gemm_format(family).output_bytes);
}

std::optional<std::string> gemm_violation(GemmFamily family, const Registers& r) {
  const GemmFormat f = gemm_format(family);
  const std::uint32_t rows = r[kRows], inner = r[kInner], columns = r[kColumns];
  if (!gemm_columns_supported(family, columns)) {
    const char* supported = family == GemmFamily::kF32   ? "64"
                            : family == GemmFamily::kF16 ? "a multiple of 16 up to 128"
                                                         : "32, 64 or 128";
    return fmt::format("$m7 (columns) = {}; the {} GEMM computes {} output columns", columns,
                       f.name, supported);
  }
  if (inner == 0 || inner % f.pass != 0) {
    return fmt::format(
        "$m6 (inner) = {} is not a positive multiple of {}, the K depth of one {} AMP pass (the "
        "producer pads K with zeros)",
        inner, f.pass, f.name);
  }
  if (family == GemmFamily::kF143) {
    const auto scale = static_cast<std::int32_t>(r[kScale]);
    if (!f143::valid_scale(scale)) {
      return fmt::format(
          "$m8 (product scale) = {} is outside [{}, {}], the range of the 6-bit signed ISCL "
          "field",
          scale, f143::kMinScale, f143::kMaxScale);
    }
  }
  if (rows == 0) return std::nullopt;  // zero work, whatever the pointers
  if (auto v = row_violation(family, rows, inner, columns)) return v;
  return memory_violation(family, r);
}

std::uint64_t gemm_cycles(GemmFamily family, std::uint32_t rows, std::uint32_t inner,
                          std::uint32_t columns) {
  switch (family) {
    case GemmFamily::kF32:
      return gemm_f32_cycles(rows, inner, columns);
    case GemmFamily::kF16:
      return gemm_f16_cycles(rows, inner, columns);
    case GemmFamily::kF16ExpandedF143:
      return gemm_f16_expanded_f143_cycles(rows, inner, columns);
    case GemmFamily::kF143:
      return gemm_f143_cycles(rows, inner, columns);
  }
  return 0;
}

int gemm_f143_product_scale(int activation_scale, const f143::BlockScales& weight_scales,
                            std::uint32_t k_begin, std::uint32_t n_begin, std::uint32_t inner,
                            std::uint32_t columns) {
  if (!f143::valid_scale(activation_scale)) {
    throw UsageError(fmt::format("F143 activation scale {} is outside [{}, {}]", activation_scale,
                                 f143::kMinScale, f143::kMaxScale));
  }
  // Only the part inside the weight counts: the padding past it is zero at
  // any scale.
  const std::uint64_t k_end =
      std::min<std::uint64_t>(std::uint64_t{k_begin} + inner, weight_scales.inner());
  const std::uint64_t n_end =
      std::min<std::uint64_t>(std::uint64_t{n_begin} + columns, weight_scales.columns());
  std::optional<int> weight_scale;
  std::uint64_t first_i = 0, first_j = 0;
  for (std::uint64_t k = k_begin; k < k_end; k = (k / f143::kBlockRows + 1) * f143::kBlockRows) {
    for (std::uint64_t n = n_begin; n < n_end;
         n = (n / f143::kBlockColumns + 1) * f143::kBlockColumns) {
      const auto i = static_cast<std::uint32_t>(k / f143::kBlockRows);
      const auto j = static_cast<std::uint32_t>(n / f143::kBlockColumns);
      const int scale = weight_scales.block_scale(i, j);
      if (!weight_scale) {
        weight_scale = scale;
        first_i = i;
        first_j = j;
      } else if (scale != *weight_scale) {
        throw UsageError(fmt::format(
            "the F143 GEMM call's weight block [{}, {}) x [{}, {}) spans scale block ({}, {}) at "
            "2^{} and ({}, {}) at 2^{}; one call applies one weight scale",
            k_begin, std::uint64_t{k_begin} + inner, n_begin, std::uint64_t{n_begin} + columns,
            first_i, first_j, *weight_scale, i, j, scale));
      }
    }
  }
  const int product_scale = activation_scale + weight_scale.value_or(0);
  if (!f143::valid_scale(product_scale)) {
    throw UsageError(fmt::format(
        "F143 GEMM product scale ISCL = activation scale {} + weight scale {} = {} is outside "
        "[{}, {}]",
        activation_scale, weight_scale.value_or(0), product_scale, f143::kMinScale,
        f143::kMaxScale));
  }
  return product_scale;
}

void add_gemm_kernels(KernelRegistry& registry) {
  registry.add(spec<GemmFamily::kF32, GemmVariant::kInit>(kGemmF32Init));
  registry.add(spec<GemmFamily::kF32, GemmVariant::kAccumulate>(kGemmF32Accumulate));
  registry.add(spec<GemmFamily::kF16, GemmVariant::kInit>(kGemmF16Init));
  registry.add(spec<GemmFamily::kF16, GemmVariant::kAccumulate>(kGemmF16Accumulate));
  registry.add(spec<GemmFamily::kF16ExpandedF143, GemmVariant::kInit>(kGemmF16ExpandedF143Init));
  registry.add(
      spec<GemmFamily::kF16ExpandedF143, GemmVariant::kAccumulate>(kGemmF16ExpandedF143Accumulate));
  registry.add(spec<GemmFamily::kF143, GemmVariant::kInit>(kGemmF143Init));
  registry.add(spec<GemmFamily::kF143, GemmVariant::kAccumulate>(kGemmF143Accumulate));
}

}  // namespace tessera::kernels
