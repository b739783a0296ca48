// Device sources of the f32 ↔ f16 conversions (host models and ABI:
// kernels/convert.cpp):
//   tessera_convert_f32_to_f16, tessera_convert_f16_to_f32:
//   $m2 out, $m3 in, $m4 count.
// Elements are split balanced contiguous over the workers — for f32 → f16 in
// whole output words (word_share), where the model's stochastic rounding
// splits single elements; its draw order is the only thing that depends on
// it, and stochastic results are never bit-comparable with silicon anyway. f32 → f16 rounds to
// nearest even. Not here yet: stochastic rounding, which on the device is ESR set in $FP_ICTL
// around the loop with the hardware's generator deciding (never bit-comparable with the model's
// stream). f16 → f32 is exact.
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"

namespace tessera::device {
namespace {

void f32_to_f16(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share share = word_share(r[4], 2, worker);  // f16 outputs: whole words
  if (share.count == 0) return;
  const auto in = memory.array<const std::uint32_t>(r[3] + 4 * share.first, share.count);
  const auto out = memory.array<std::uint16_t>(r[2] + 2 * share.first, share.count);
  for (std::uint32_t i = 0; i < share.count; ++i) out[i] = narrow_f32(in[i]);
}

void f16_to_f32(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share share = balanced_share(r[4], worker);
  if (share.count == 0) return;
  const auto in = memory.array<const std::uint16_t>(r[3] + 2 * share.first, share.count);
  const auto out = memory.array<std::uint32_t>(r[2] + 4 * share.first, share.count);
  for (std::uint32_t i = 0; i < share.count; ++i) out[i] = widen_f16(in[i]);
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_convert_f32_to_f16, ::tessera::device::f32_to_f16)
TESSERA_DEVICE_KERNEL(tessera_convert_f16_to_f32, ::tessera::device::f16_to_f32)
