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
// Fast paths (TESSERA_DEVICE_FAST_PATHS), the f16 GeLUs only: the nine f16 steps on half2 pairs
// (f16v2 mul and add, each lane one rounding as the scalar steps) with the IPU's f16v2tanh
// (ipu_f16_functions.hpp, which says why the f32 GeLU keeps device_math.hpp's tanh), NaN lanes
// made canonical — the flat kernel on every whole pair of a worker's share, the relayout on
// every whole panel (a logical column pair is a physical pair of C16, σ moves pairs).
#include "kernels/amp_layout.hpp"
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/device_math.hpp"
#include "kernels/device/ipu_fast_paths.hpp"

#if TESSERA_DEVICE_FAST_PATHS
#include "kernels/device/canonical_lanes.hpp"
#include "kernels/device/ipu_f16_functions.hpp"
#endif

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

#if TESSERA_DEVICE_FAST_PATHS
half2 splat2(std::uint16_t bits) {
  const std::uint16_t lanes[2] = {bits, bits};
  half2 v;
  __builtin_memcpy(&v, lanes, sizeof v);
  return v;
}

// gelu_f16's steps, in its order, on two lanes.
half2 gelu_pair(half2 x) {
  const half2 x3 = (x * x) * x;
  const half2 u = x + splat2(kC1F16) * x3;
  const half2 t = ipu21::f16v2tanh(splat2(kC0F16) * u);
  return canonical_lanes<std::uint16_t>((splat2(0x3800) * x) * (splat2(0x3C00) + t));
}
#endif

template <typename Bits, Bits (*F)(Bits)>
void gelu_flat(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share share = word_share(r[4], 4 / std::uint32_t{sizeof(Bits)}, worker);
  if (share.count == 0) return;
  const std::uint32_t offset = share.first * std::uint32_t{sizeof(Bits)};
  const auto in = memory.array<const Bits>(r[3] + offset, share.count);
  const auto out = memory.array<Bits>(r[2] + offset, share.count);
  std::uint32_t i = 0;
#if TESSERA_DEVICE_FAST_PATHS
  // Whole words (a share starts on a word; the pointers are word-aligned); a
  // pair is loaded before it is stored, so out may alias in.
  if constexpr (sizeof(Bits) == 2) {
    const auto* from = reinterpret_cast<const half2*>(in.data());
    auto* to = reinterpret_cast<half2*>(out.data());
    for (; i + 2 <= share.count; i += 2) {
      ipu::store_postinc(&to, gelu_pair(ipu::load_postinc(&from, 1)), 1);
    }
  }
#endif
  for (; i < share.count; ++i) out[i] = F(in[i]);
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
#if TESSERA_DEVICE_FAST_PATHS
      if (16 * (j + 1) <= columns) {
        const auto* from = reinterpret_cast<const half2*>(source.data());
        auto* to = reinterpret_cast<half2*>(target.data());
        for (unsigned q = 0; q < 8; ++q) {
          const half2* pair = from + kernels::amp::physical_pair(q);
          ipu::store_postinc(&to, gelu_pair(ipu::load_postinc(&pair, 1)), 1);
        }
        continue;
      }
#endif
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
