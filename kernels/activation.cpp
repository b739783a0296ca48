// The tanh GeLU (numerics: kernels/activation_math.hpp, one definition).
//
// tessera_gelu_f16, tessera_gelu_f32: out[i] = gelu(in[i]) for i < count, in
//   any layout (the same in and out).
//   $m2 out, $m3 in, $m4 count (elements).
// tessera_gelu_c16_to_a16_f16: out = gelu(in), from the C16 layout a GEMM
//   writes to the A16 layout the next GEMM reads (undoing σ), for `rows` rows
//   and `columns` logical columns; A16 padding columns are written +0.
//   $m2 out (A16), $m3 in (C16), $m4 rows, $m5 columns.
//
// The f16 kernels round every GeLU step under the call's rounding mode (the
// device's gelu-relayout runs with ESR set, kernels-siglip-f143.md §2):
// nearest even by default, looked up in the 65536-entry table of the
// definition; stochastically, nine draws per element from the worker's
// stream — elements balanced-contiguous over the workers for the flat kernel,
// rows balanced-contiguous for the relayout (a worker's rows in order, each
// row's logical columns in order). The f32 kernel rounds as IEEE f32 does;
// any NaN it produces is the canonical 0x7FC00000.
//
// Flat kernels: word-aligned pointers; the output may alias the input exactly
// (element i is read before it is written) but not overlap it otherwise. The
// relayout: 8-byte aligned, output and input disjoint. Zero elements (rows,
// columns) touch nothing.
#include <bit>

#include "kernels/activation_math.hpp"
#include "kernels/kernel_shapes.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/rounding.hpp"
#include "kernels/shape_checks.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3
constexpr unsigned kCount = 4;              // $m4 (flat)
constexpr unsigned kRows = 4;               // $m4 (relayout)
constexpr unsigned kColumns = 5;            // $m5 (relayout)

constexpr std::uint64_t kPanel = amp::kPanelColumns;

template <unsigned S>
std::uint64_t count_bytes(const Registers& r) {
  return std::uint64_t{r[kCount]} * S;
}

std::uint64_t block_bytes(const Registers& r) {
  return saturating_mul(panel_block_elements(r[kRows], r[kColumns]), 2);
}

template <unsigned S>
Violation flat_precondition(const Registers& r) {
  const OperandExtent out{kOut, "activation", count_bytes<S>(r)};
  const OperandExtent in{kIn, "source", count_bytes<S>(r)};
  if (auto v = misaligned(r, {kOut, kIn}, 4)) return v;
  for (const auto& operand : {out, in}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  return overlaps_unless_aliased(r, out, in);
}

void gelu_flat_f16(KernelCall& call) {
  const std::uint64_t count = call.reg(kCount);
  if (count != 0) {
    const auto in = call.memory.read<std::uint16_t>(kIn, call.reg(kIn), count);
    const auto out = call.memory.write<std::uint16_t>(kOut, call.reg(kOut), count);
    if (call.rounding == Rounding::kNearestEven) {
      const auto& table = gelu_f16_nearest_table();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = table[in[i]];
    } else {
      for (unsigned w = 0; w < kWorkerCount; ++w) {
        F16Rounding rounding(call.rounding, worker_stream(call, w));
        const std::uint64_t begin = worker_begin(count, w);
        const std::uint64_t end = begin + worker_share(count, w);
        for (std::uint64_t i = begin; i < end; ++i) out[i] = gelu_f16(in[i], rounding);
      }
    }
  }
  call.cycles = gelu_cycles(count);
}

void gelu_flat_f32(KernelCall& call) {
  const std::uint64_t count = call.reg(kCount);
  if (count != 0) {
    const auto in = call.memory.read<float>(kIn, call.reg(kIn), count);
    const auto out = call.memory.write<float>(kOut, call.reg(kOut), count);
    gelu_f32_many(in.data(), out.data(), out.size());
  }
  call.cycles = gelu_cycles(count);
}

void gelu_relayout(KernelCall& call) {
  const std::uint64_t rows = call.reg(kRows);
  const std::uint64_t columns = call.reg(kColumns);
  const std::uint64_t elements = panel_block_elements(rows, columns);
  if (elements != 0) {
    const auto in = call.memory.read<std::uint16_t>(kIn, call.reg(kIn), elements);
    const auto out = call.memory.write<std::uint16_t>(kOut, call.reg(kOut), elements);
    const std::uint64_t panels = column_panels(columns);
    const auto& table = gelu_f16_nearest_table();
    const bool nearest = call.rounding == Rounding::kNearestEven;
    for (unsigned w = 0; w < kWorkerCount; ++w) {
      F16Rounding rounding(call.rounding, worker_stream(call, w));
      const std::uint64_t first_row = worker_begin(rows, w);
      const std::uint64_t end_row = first_row + worker_share(rows, w);
      for (std::uint64_t r = first_row; r < end_row; ++r) {
        for (std::uint64_t j = 0; j < panels; ++j) {
          const auto source = in.subspan((j * rows + r) * kPanel, kPanel);
          const auto row = out.subspan((j * rows + r) * kPanel, kPanel);
          for (unsigned n = 0; n < kPanel; ++n) {
            if (j * kPanel + n >= columns) {
              row[n] = 0;
              continue;
            }
            const std::uint16_t x = source[amp::physical_column(n)];
            row[n] = nearest ? table[x] : gelu_f16(x, rounding);
          }
        }
      }
    }
  }
  call.cycles = gelu_relayout_cycles(rows, columns);
}

template <unsigned S>
KernelSpec gelu(std::string_view name, void (*model)(KernelCall&)) {
  return KernelSpec{std::string(name),
                    KernelKind::kKernel,
                    {OperandSpec{kOut, Access::kWrite, "activation", count_bytes<S>},
                     OperandSpec{kIn, Access::kRead, "source", count_bytes<S>}},
                    flat_precondition<S>,
                    model};
}

}  // namespace

void add_activation_kernels(KernelRegistry& registry) {
  registry.add(gelu<2>(kGeluF16, gelu_flat_f16));
  registry.add(gelu<4>(kGeluF32, gelu_flat_f32));
  registry.add(KernelSpec{std::string(kGeluC16ToA16F16),
                          KernelKind::kKernel,
                          {OperandSpec{kOut, Access::kWrite, "activation", block_bytes},
                           OperandSpec{kIn, Access::kRead, "source", block_bytes}},
                          [](const Registers& r) -> Violation {
                            const OperandExtent out{kOut, "activation", block_bytes(r)};
                            const OperandExtent in{kIn, "source", block_bytes(r)};
                            if (auto v = misaligned(r, {kOut, kIn}, 8)) return v;
                            for (const auto& operand : {out, in}) {
                              if (auto v = beyond_address_space(r, operand)) return v;
                            }
                            return overlaps_because(
                                r, out, in, "the layouts differ, so no alias is element-wise");
                          },
                          gelu_relayout});
}

}  // namespace tessera::kernels
