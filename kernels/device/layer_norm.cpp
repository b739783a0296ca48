// Device sources of the A16 LayerNorm and the fused residual add + LayerNorm
// (host models and ABI: kernels/layer_norm.cpp; numerics: layer_norm.hpp):
//   tessera_layer_norm_f16: $m2 out (A16), $m3 in (A16), $m4 affine
//     [γ | β] f16, $m5 rows, $m6 columns, $m7 ε (Q30).
//   tessera_add_layer_norm_f16: $m2 out, $m3 residual (read, written back as
//     residual + right), $m4 right, $m5 affine, $m6 rows, $m7 columns, $m8 ε.
// Rows are strided over the workers (row r on worker r mod 6, the model's
// partition). Per row, with nothing row-sized on the worker's stack: (fused)
// residual ← f16(residual + right), padding +0; Σx and Σx² in f32 in four
// lanes by column mod 4, combined (l0 + l1) + (l2 + l3); mean and
// 1/√(var + ε) (variance clamped ≥ 0) rounded to f16; then per column
// f16(f16(f16(f16(x − mean)·rstd)·γ) + β), padding columns +0. Every f16
// operation is one f32 operation rounded once to nearest even (exact for
// f16 operands' sums and products: no double-rounding error). Not here:
// stochastic rounding (ESR on the device).
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/device_math.hpp"

namespace tessera::device {
namespace {

constexpr std::uint32_t kPanel = 16;

struct Abi {
  bool residual;
  unsigned in, right, affine, rows, columns, epsilon;
};
constexpr Abi kPlain{false, 3, 0, 4, 5, 6, 7};
constexpr Abi kFused{true, 3, 4, 5, 6, 7, 8};

std::uint16_t sub_f16(std::uint16_t a, std::uint16_t b) {
  return add_f16(a, static_cast<std::uint16_t>(b ^ 0x8000u));  // a − b = a + (−b), IEEE
}

// Row `row`'s 16 elements of panel j of an A16 block of `rows` rows.
Array<std::uint16_t> panel_row(TileMemory& memory, std::uint32_t base, std::uint32_t rows,
                               std::uint32_t j, std::uint32_t row) {
  return memory.array<std::uint16_t>(base + 2 * kPanel * (j * rows + row), kPanel);
}

template <const Abi& A>
void layer_norm(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[A.rows], columns = r[A.columns];
  if (rows <= worker || columns == 0) return;
  const std::uint32_t panels = (columns + kPanel - 1) / kPanel;
  const float epsilon = static_cast<float>(r[A.epsilon]) * exact_power_of_two(-30);
  const auto gamma = memory.array<const std::uint16_t>(r[A.affine], columns);
  const auto beta = memory.array<const std::uint16_t>(r[A.affine] + 2 * columns, columns);
  for (std::uint32_t row = worker; row < rows; row += kWorkers) {
    if constexpr (A.residual) {
      for (std::uint32_t j = 0; j < panels; ++j) {
        const auto x = panel_row(memory, r[A.in], rows, j, row);
        const auto y = panel_row(memory, r[A.right], rows, j, row);
        for (std::uint32_t n = 0; n < kPanel; ++n) {
          x[n] = kPanel * j + n < columns ? add_f16(x[n], y[n]) : std::uint16_t{0};
        }
      }
    }
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float squares[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (std::uint32_t j = 0; j < panels; ++j) {
      const auto x = panel_row(memory, r[A.in], rows, j, row);
      for (std::uint32_t n = 0; n < kPanel && kPanel * j + n < columns; ++n) {
        const float v = f32_from_bits(widen_f16(x[n]));
        sum[n % 4] += v;  // column 16j + n is n mod 4 in its lane
        squares[n % 4] += v * v;
      }
    }
    const float count = static_cast<float>(columns);
    const float mean = ((sum[0] + sum[1]) + (sum[2] + sum[3])) / count;
    float variance = ((squares[0] + squares[1]) + (squares[2] + squares[3])) / count - mean * mean;
    if (variance < 0.0f) variance = 0.0f;
    const std::uint16_t m = narrow_f32(canonical_f32(mean));
    const std::uint16_t s = narrow_f32(canonical_f32(rsqrt_f32(variance + epsilon)));
    for (std::uint32_t j = 0; j < panels; ++j) {
      const auto x = panel_row(memory, r[A.in], rows, j, row);
      const auto out = panel_row(memory, r[2], rows, j, row);
      for (std::uint32_t n = 0; n < kPanel; ++n) {
        const std::uint32_t c = kPanel * j + n;
        if (c >= columns) {
          out[n] = 0;
          continue;
        }
        const std::uint16_t scaled = mul_f16(sub_f16(x[n], m), s);
        out[n] = add_f16(mul_f16(scaled, gamma[c]), beta[c]);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_layer_norm_f16,
                      ::tessera::device::layer_norm<::tessera::device::kPlain>)
TESSERA_DEVICE_KERNEL(tessera_add_layer_norm_f16,
                      ::tessera::device::layer_norm<::tessera::device::kFused>)
