// Device sources of the sum-reduction kernels (host models and ABI:
// kernels/reduction.cpp):
//   tessera_sum_{f32,f16}: $m2 out, $m3 in, $m4 count, $m5 K partials,
//   $m6 stride (bytes between partials) — out[i] = Σ_k in_k[i].
// Elements are split balanced contiguous over the workers in whole words
// (device_abi.hpp's word_share); each element
// accumulates in f32 in partial order starting from in_0 (so −0 sums stay
// −0) and rounds once at the end; K = 1 is a bit-exact copy (NaN payloads
// kept: widening and narrowing a NaN keeps its bits). out may alias
// partial 0 exactly: element i is written after its K reads.
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"

namespace tessera::device {
namespace {

struct F32 {
  using Bits = std::uint32_t;
  static std::uint32_t widen(Bits bits) { return bits; }
  static Bits narrow(std::uint32_t f32) { return f32; }
};
struct F16 {
  using Bits = std::uint16_t;
  static std::uint32_t widen(Bits bits) { return widen_f16(bits); }
  static Bits narrow(std::uint32_t f32) { return narrow_f32(f32); }
};

template <typename E>
void sum(const Registers& r, TileMemory& memory, unsigned worker) {
  using Bits = typename E::Bits;
  const Share share = word_share(r[4], 4 / std::uint32_t{sizeof(Bits)}, worker);
  const std::uint32_t partials = r[5];
  if (share.count == 0 || partials == 0) return;
  const std::uint32_t offset = share.first * std::uint32_t{sizeof(Bits)};
  const auto out = memory.array<Bits>(r[2] + offset, share.count);
  // Blocks of elements: the accumulators (64 bytes of the worker's 0x100-byte
  // stack) stay put while every partial streams past once.
  constexpr std::uint32_t kBlock = 16;
  std::uint32_t accumulator[kBlock];
  for (std::uint32_t first = 0; first < share.count; first += kBlock) {
    const std::uint32_t n = share.count - first < kBlock ? share.count - first : kBlock;
    const auto in0 =
        memory.array<const Bits>(r[3] + offset + first * std::uint32_t{sizeof(Bits)}, n);
    for (std::uint32_t i = 0; i < n; ++i) accumulator[i] = E::widen(in0[i]);
    for (std::uint32_t k = 1; k < partials; ++k) {
      const auto in = memory.array<const Bits>(
          r[3] + k * r[6] + offset + first * std::uint32_t{sizeof(Bits)}, n);
      for (std::uint32_t i = 0; i < n; ++i)
        accumulator[i] = add_f32(accumulator[i], E::widen(in[i]));
    }
    for (std::uint32_t i = 0; i < n; ++i) out[first + i] = E::narrow(accumulator[i]);
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_sum_f32, ::tessera::device::sum<::tessera::device::F32>)
TESSERA_DEVICE_KERNEL(tessera_sum_f16, ::tessera::device::sum<::tessera::device::F16>)
