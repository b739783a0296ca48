// Device sources of the tanh GeLU (host models and ABI: kernels/activation.cpp;
// numerics: activation_math.hpp):
//   tessera_gelu_f16, tessera_gelu_f32: $m2 out, $m3 in, $m4 count.
//   tessera_gelu_c16_to_a16_f16: $m2 out (A16), $m3 in (C16), $m4 rows,
//     $m5 columns — undoes σ (kernels/amp_layout.hpp), A16 padding columns +0.
// Elements go to the workers balanced contiguous in whole words (word_share;
// the model splits single elements, which only orders its stochastic draws),
// rows balanced contiguous for the relayout. f32: (0.5·x)·(1 + tanh(c0·(x + c1·((x·x)·x)))) with
// the model's f32 constants; f16: the device's nine f16 steps, each rounded to nearest even, tanh
// of an f16 being the f32 tanh of its value rounded once (activation_math.hpp's definition of
// f16v2tanh [INF]). Only tanh is this source's own (device_math.hpp), so results agree with the
// model's within the GeLU bound, not bit for bit. Not here: stochastic rounding (ESR set around the
// f16 loops on the device).
#include "kernels/amp_layout.hpp"
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/device_math.hpp"

namespace tessera::device {
namespace {

constexpr std::uint32_t kC0F32 = 0x3F4C422Au;  // 0.7978846 ≈ √(2/π)
constexpr std::uint32_t kC1F32 = 0x3D372713u;  // 0.044715
constexpr std::uint16_t kC0F16 = 0x3A62;
constexpr std::uint16_t kC1F16 = 0x29B9;

std::uint32_t gelu_f32(std::uint32_t bits) {
  const float x = f32_from_bits(bits);
  const float x3 = (x * x) * x;
  const float t = tanh_f32(f32_from_bits(kC0F32) * (x + f32_from_bits(kC1F32) * x3));
  return canonical_f32((0.5f * x) * (1.0f + t));
}

std::uint16_t tanh_f16(std::uint16_t x) {
  return narrow_f32(canonical_f32(tanh_f32(f32_from_bits(widen_f16(x)))));
}

std::uint16_t gelu_f16(std::uint16_t x) {
  const std::uint16_t x2 = mul_f16(x, x);
  const std::uint16_t x3 = mul_f16(x2, x);
  const std::uint16_t a = mul_f16(kC1F16, x3);
  const std::uint16_t u = add_f16(x, a);
  const std::uint16_t v = mul_f16(kC0F16, u);
  const std::uint16_t t = tanh_f16(v);
  const std::uint16_t s = add_f16(0x3C00, t);  // 1 + t
  const std::uint16_t h = mul_f16(0x3800, x);  // 0.5·x
  return mul_f16(h, s);
}

template <typename Bits, Bits (*F)(Bits)>
void gelu_flat(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share share = word_share(r[4], 4 / std::uint32_t{sizeof(Bits)}, worker);
  if (share.count == 0) return;
  const std::uint32_t offset = share.first * std::uint32_t{sizeof(Bits)};
  const auto in = memory.array<const Bits>(r[3] + offset, share.count);
  const auto out = memory.array<Bits>(r[2] + offset, share.count);
  for (std::uint32_t i = 0; i < share.count; ++i) out[i] = F(in[i]);
}

void gelu_relayout(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[4], columns = r[5];
  const Share mine = balanced_share(rows, worker);
  if (mine.count == 0 || columns == 0) return;
  const std::uint32_t panels = (columns + 15) / 16;
  for (std::uint32_t row = mine.first; row < mine.first + mine.count; ++row) {
    for (std::uint32_t j = 0; j < panels; ++j) {
      // Row `row` of panel j: 16 halves (32 bytes) at the same place in both layouts.
      const std::uint32_t at = 2 * 16 * (j * rows + row);
      const auto source = memory.array<const std::uint16_t>(r[3] + at, 16);
      const auto target = memory.array<std::uint16_t>(r[2] + at, 16);
      for (unsigned n = 0; n < 16; ++n) {
        target[n] = 16 * j + n < columns ? gelu_f16(source[kernels::amp::physical_column(n)]) : 0;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_gelu_f32,
                      (::tessera::device::gelu_flat<std::uint32_t, ::tessera::device::gelu_f32>))
TESSERA_DEVICE_KERNEL(tessera_gelu_f16,
                      (::tessera::device::gelu_flat<std::uint16_t, ::tessera::device::gelu_f16>))
TESSERA_DEVICE_KERNEL(tessera_gelu_c16_to_a16_f16, ::tessera::device::gelu_relayout)
