// The bias add after a GEMM, on its C16 output (kernels/amp_layout.hpp).
//
// tessera_add_bias_c16_{f16,f32}: out(r, n) = in(r, n) + bias(n) for r < rows,
//   n < columns, both C16 blocks of `rows` rows; padding columns
//   (columns ≤ n < 16·⌈columns/16⌉) are written +0.
//   $m2 out (C16), $m3 in (C16), $m4 bias, $m5 rows, $m6 columns (logical).
//
// The bias is stored σ-ordered, as a one-row C16 block (16 values per
// panel, physical column c of panel j holding logical column 16j + σ(c):
// the host packs it so, kernels-siglip-f143.md §0.1), so physical element c
// of every row of panel j adds bias element 16j + c and the kernel never
// permutes. Its padding entries are read (whole panels) but not used.
//
// Pointers are 8-byte aligned (the AMP layouts move 64-bit words); the output
// may alias the input exactly (the bias is added in place after a GEMM) but
// not overlap it otherwise, nor overlap the bias, which every row re-reads.
// The add is float_arith.hpp's (f16: widen, add once in f32, round to nearest
// even; canonical NaNs); stochastic rounding is off. Zero rows or columns
// touch nothing.
#include <algorithm>
#include <array>

#include "kernels/f16_vector.hpp"
#include "kernels/float_arith.hpp"
#include "kernels/kernel_shapes.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/pointwise_kernels.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3
constexpr unsigned kBias = 4;               // $m4
constexpr unsigned kRows = 5;               // $m5
constexpr unsigned kColumns = 6;            // $m6

constexpr std::uint64_t kPanel = amp::kPanelColumns;

template <unsigned S>
std::uint64_t block_bytes(const Registers& r) {
  return saturating_mul(panel_block_elements(r[kRows], r[kColumns]), S);
}

template <unsigned S>
std::uint64_t bias_bytes(const Registers& r) {
  return r[kRows] == 0 ? 0 : amp::padded_columns(r[kColumns]) * S;
}

// Whether physical column c of panel j holds a logical column.
bool holds_column(std::uint64_t panel, unsigned c, std::uint64_t columns) {
  return panel * kPanel + amp::logical_column(c) < columns;
}

void add_panel(KernelSpan<const std::uint32_t> in, KernelSpan<const std::uint32_t> bias,
               KernelSpan<std::uint32_t> out, const std::array<bool, kPanel>& valid) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t c = i % kPanel;
    out[i] = valid[c] ? add_f32_bits(in[i], bias[c]) : 0;
  }
}

// Blocks of whole rows: widen, add the panel's bias in f32, round once.
void add_panel(KernelSpan<const std::uint16_t> in, KernelSpan<const std::uint16_t> bias,
               KernelSpan<std::uint16_t> out, const std::array<bool, kPanel>& valid) {
  constexpr std::size_t kBlock = 32 * kPanel;
  const bool all_valid = std::find(valid.begin(), valid.end(), false) == valid.end();
  std::array<float, kPanel> b{};
  widen_f16(bias.data(), b.data(), kPanel);
  std::array<float, kBlock> x{};
  for (std::size_t first = 0; first < out.size(); first += kBlock) {
    const std::size_t n = std::min(kBlock, out.size() - first);
    widen_f16(in.subspan(first, n).data(), x.data(), n);
    for (std::size_t row = 0; row < kBlock; row += kPanel) {
      for (std::size_t c = 0; c < kPanel; ++c) x[row + c] += b[c];
    }
    canonicalize_nans(x.data(), n);
    const auto sums = out.subspan(first, n);
    narrow_f16(x.data(), sums.data(), n);
    if (all_valid) continue;
    for (std::size_t i = 0; i < n; ++i) {
      if (!valid[i % kPanel]) sums[i] = 0;
    }
  }
}

template <typename Bits>
KernelSpec add_bias(std::string_view name) {
  constexpr unsigned s = sizeof(Bits);
  return KernelSpec{std::string(name),
                    KernelKind::kKernel,
                    {OperandSpec{kOut, Access::kWrite, "sum", block_bytes<s>},
                     OperandSpec{kIn, Access::kRead, "matrix", block_bytes<s>},
                     OperandSpec{kBias, Access::kRead, "bias", bias_bytes<s>}},
                    [](const Registers& r) -> Violation {
                      const OperandExtent out{kOut, "sum", block_bytes<s>(r)};
                      const OperandExtent in{kIn, "matrix", block_bytes<s>(r)};
                      const OperandExtent bias{kBias, "bias", bias_bytes<s>(r)};
                      if (auto v = misaligned(r, {kOut, kIn, kBias}, 8)) return v;
                      for (const auto& operand : {out, in, bias}) {
                        if (auto v = beyond_address_space(r, operand)) return v;
                      }
                      if (auto v = overlaps_unless_aliased(r, out, in)) return v;
                      return overlaps(r, out, bias);
                    },
                    [](KernelCall& call) {
                      const std::uint64_t rows = call.reg(kRows);
                      const std::uint64_t columns = call.reg(kColumns);
                      const std::uint64_t elements = panel_block_elements(rows, columns);
                      if (elements != 0) {
                        const std::uint64_t panels = column_panels(columns);
                        const auto in = call.memory.read<Bits>(kIn, call.reg(kIn), elements);
                        const auto bias =
                            call.memory.read<Bits>(kBias, call.reg(kBias), panels * kPanel);
                        const auto out = call.memory.write<Bits>(kOut, call.reg(kOut), elements);
                        for (std::uint64_t j = 0; j < panels; ++j) {
                          std::array<bool, kPanel> valid{};
                          for (unsigned c = 0; c < kPanel; ++c)
                            valid[c] = holds_column(j, c, columns);
                          add_panel(in.subspan(j * rows * kPanel, rows * kPanel),
                                    bias.subspan(j * kPanel, kPanel),
                                    out.subspan(j * rows * kPanel, rows * kPanel), valid);
                        }
                      }
                      call.cycles = bias_add_cycles(rows, columns, s);
                    }};
}

}  // namespace

void add_bias_kernels(KernelRegistry& registry) {
  registry.add(add_bias<std::uint16_t>(kAddBiasC16F16));
  registry.add(add_bias<std::uint32_t>(kAddBiasC16F32));
}

}  // namespace tessera::kernels
