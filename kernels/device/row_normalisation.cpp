// Device sources of the row-major softmax and f32 LayerNorm (host models and
// ABI: kernels/row_normalisation.cpp; numerics: row_normalisation.hpp):
//   tessera_softmax_rows_{f32,f16}: $m2 out, $m3 in (rows × columns,
//     row-major), $m4 rows, $m5 columns.
//   tessera_layer_norm_rows_f32: $m2 out, $m3 in, $m4 affine [γ | β] f32,
//     $m5 rows, $m6 columns, $m7 ε (Q30).
//   (tessera_layer_norm_rows_f16, the f16 form, is a LayerNorm of
//   layer_norm.hpp's numerics: kernels/device/layer_norm.cpp.)
// Rows go to the workers balanced contiguous (odd-length f16 rows in pairs:
// no two workers store into one word). A row is read whole before any
// of it is written (out may alias in exactly), and nothing row-sized is kept
// on the worker's stack (0x100 bytes on the device): the softmax stores its
// f32 exponentials in the output (f32) or recomputes them (f16: an f16
// output cannot hold them unrounded).
//
// The arithmetic is the model's but for exp (device_math.hpp): softmax in
// f32 — m = the row's max (any NaN makes the row NaN), e_j = exp(x_j − m),
// their sum sequentially from e_0, one reciprocal, y_j = e_j·(1/sum), an f16
// result rounded once to nearest even; LayerNorm with Σx and Σx² in four
// lanes by column mod 4 combined (l0 + l1) + (l2 + l3), variance clamped
// ≥ 0, rstd = 1/√(var + ε), ((x − mean)·rstd)·γ + β. NaN results canonical.
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/device_math.hpp"

namespace tessera::device {
namespace {

struct F32 {
  using Bits = std::uint32_t;
  static float load(Bits bits) { return f32_from_bits(bits); }
  static Bits store(float value) { return canonical_f32(value); }
};
struct F16 {
  using Bits = std::uint16_t;
  static float load(Bits bits) { return f32_from_bits(widen_f16(bits)); }
  static Bits store(float value) { return narrow_f32(canonical_f32(value)); }
};

template <typename E>
void softmax_row(Array<const typename E::Bits> in, Array<typename E::Bits> out) {
  const std::uint32_t n = in.size();
  float m = E::load(in[0]);
  for (std::uint32_t j = 1; j < n; ++j) {
    const float x = E::load(in[j]);
    if (x != x || x > m) m = x;
    if (m != m) break;  // NaN: the whole row is NaN
  }
  float sum = 0.0f;
  for (std::uint32_t j = 0; j < n; ++j) {
    const float e = exp_f32(E::load(in[j]) - m);
    sum = j == 0 ? e : sum + e;
    if constexpr (sizeof(typename E::Bits) == 4) out[j] = f32_bits(e);  // reread below
  }
  const float reciprocal = 1.0f / sum;
  for (std::uint32_t j = 0; j < n; ++j) {
    float e;
    if constexpr (sizeof(typename E::Bits) == 4) {
      e = f32_from_bits(out[j]);
    } else {
      e = exp_f32(E::load(in[j]) - m);
    }
    out[j] = E::store(e * reciprocal);
  }
}

template <typename E>
void softmax_rows(const Registers& r, TileMemory& memory, unsigned worker) {
  using Bits = typename E::Bits;
  const std::uint32_t columns = r[5];
  // f16 rows of odd length end mid-word: such rows go to workers in pairs,
  // so no two workers store into one word.
  const std::uint32_t unit = sizeof(Bits) == 2 && columns % 2 != 0 ? 2 : 1;
  const Share rows = word_share(r[4], unit, worker);
  if (rows.count == 0 || columns == 0) return;
  const std::uint32_t row_bytes = columns * std::uint32_t{sizeof(Bits)};
  for (std::uint32_t row = rows.first; row < rows.first + rows.count; ++row) {
    // The f32 form writes e_j over x_j (after reading it): in place is fine.
    softmax_row<E>(memory.array<const Bits>(r[3] + row * row_bytes, columns),
                   memory.array<Bits>(r[2] + row * row_bytes, columns));
  }
}

void layer_norm_rows(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t columns = r[6];
  const Share rows = balanced_share(r[5], worker);
  if (rows.count == 0 || columns == 0) return;
  const float epsilon = static_cast<float>(r[7]) * exact_power_of_two(-30);
  const auto gamma = memory.array<const float>(r[4], columns);
  const auto beta = memory.array<const float>(r[4] + 4 * columns, columns);
  for (std::uint32_t row = rows.first; row < rows.first + rows.count; ++row) {
    const auto x = memory.array<const float>(r[3] + row * columns * 4, columns);
    const auto y = memory.array<std::uint32_t>(r[2] + row * columns * 4, columns);
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float squares[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (std::uint32_t c = 0; c < columns; ++c) {
      sum[c % 4] += x[c];
      squares[c % 4] += x[c] * x[c];
    }
    const float count = static_cast<float>(columns);
    const float mean = ((sum[0] + sum[1]) + (sum[2] + sum[3])) / count;
    float variance = ((squares[0] + squares[1]) + (squares[2] + squares[3])) / count - mean * mean;
    if (variance < 0.0f) variance = 0.0f;
    const float rstd = rsqrt_f32(variance + epsilon);
    for (std::uint32_t c = 0; c < columns; ++c) {
      y[c] = canonical_f32(((x[c] - mean) * rstd) * gamma[c] + beta[c]);
    }
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_softmax_rows_f32,
                      ::tessera::device::softmax_rows<::tessera::device::F32>)
TESSERA_DEVICE_KERNEL(tessera_softmax_rows_f16,
                      ::tessera::device::softmax_rows<::tessera::device::F16>)
TESSERA_DEVICE_KERNEL(tessera_layer_norm_rows_f32, ::tessera::device::layer_norm_rows)
