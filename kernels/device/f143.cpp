// Device sources of the F143 (FP8 1.4.3) kernels (host models and ABI:
// kernels/f143_kernels.cpp; the codec's rules: kernels/f143.hpp):
//   tessera_quantize_f16_to_f143: $m2 codes, $m3 in (f16), $m4 count, $m5 scale
//   tessera_expand_f143_to_f16:   $m2 out (f16), $m3 codes, $m4 count, $m5 scale
//   tessera_quantize_a16_to_a32_f143: $m2 out (A32), $m3 in (A16), $m4 rows,
//                                     $m5 columns, $m6 scale
// The count is a multiple of 4 (precondition): the flat kernels split whole
// words of four codes balanced contiguous over the workers, so no two workers
// write one word (the model's stochastic partition is per element; to nearest
// even, as here, the partition does not change a bit). The shard kernel
// splits rows balanced contiguous.
//
// The codec here works on the f16's integer significand and exponent (the
// host's f143::encode works on f32 with frexp): one rounding to the F143 grid
// whose unit is 2^(e−3) for a normal F143 exponent e, 2^−10 below 2^−7.
// Decided: no hardware fast path. On silicon it would be f16v8tof8 /
// f8v4tof16 with the scale in the FP8 metadata (the prior art's, reference
// §1.3); whether their rounding, saturation (±240, or NaN?) and NaN rule are
// these is undocumented [INF], and F143 results are defined bit for bit —
// no bound to absorb a difference — so an emulation of those instructions
// could only restate this codec as an assumption. This source keeps the
// integer codec, on the device too, until silicon shows they match.
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"

namespace tessera::device {
namespace {

constexpr std::uint8_t kF143Nan = 0x80;
constexpr std::uint8_t kF143MaxFinite = 0x7F;

int bit_length(std::uint32_t value) {
  int length = 0;
  while (value != 0) {
    value >>= 1;
    ++length;
  }
  return length;
}

// round-half-even(M · 2^shift) for M < 2^11 and any shift ≤ 3.
std::uint32_t scale_round(std::uint32_t m, int shift) {
  if (shift >= 0) return m << shift;
  const int drop = -shift;
  if (drop > 12) return 0;  // M·2^−drop < 2^11 / 2^13: below half a unit
  const std::uint32_t kept = m >> drop;
  const std::uint32_t rest = m & ((1u << drop) - 1);
  const std::uint32_t half = 1u << (drop - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u) != 0)) ? 1u : 0u);
}

// The F143 code of f16 `h` at `scale`: the stored value is h·2^−scale.
std::uint8_t encode(std::uint16_t h, int scale) {
  const std::uint32_t exponent = (std::uint32_t{h} >> 10) & 0x1Fu;
  const std::uint32_t fraction = std::uint32_t{h} & 0x3FFu;
  const std::uint32_t sign = (h & 0x8000u) != 0 ? 0x80u : 0x00u;
  if (exponent == 0x1F)
    return fraction != 0 ? kF143Nan : static_cast<std::uint8_t>(sign | kF143MaxFinite);
  // y = M·2^E exactly.
  const std::uint32_t m = exponent == 0 ? fraction : (fraction | 0x400u);
  if (m == 0) return 0x00;
  const int e_field = exponent == 0 ? 1 : static_cast<int>(exponent);
  const int big_e = e_field - 25 - scale;
  const int e = big_e + bit_length(m) - 1;                             // ⌊log2 y⌋
  if (e > 7) return static_cast<std::uint8_t>(sign | kF143MaxFinite);  // ≥ 256 > 240
  const int unit = e - 3 > -10 ? e - 3 : -10;
  const std::uint32_t q = scale_round(m, big_e - unit);  // y in units of 2^unit
  if (q == 0) return 0x00;                               // +0 whatever the sign: never the NaN code
  // Below 2^−6 the code is the count of 2^−10 units (0x08 = 2^−7 is also
  // the first normal); above, exponent field (e + 8) and q − 8 eighths,
  // where q = 16 carries into the next exponent by the addition itself.
  const std::uint32_t code = unit == -10 ? q : (static_cast<std::uint32_t>(e + 8) << 3) + q - 8;
  return static_cast<std::uint8_t>(sign | (code > kF143MaxFinite ? kF143MaxFinite : code));
}

// decode(code)·2^scale rounded to f16; the NaN code gives 0x7E00.
std::uint16_t expand(std::uint8_t code, int scale) {
  if (code == kF143Nan) return kF16CanonicalNan;
  const std::uint32_t e = (code >> 3) & 0xFu;
  const std::uint32_t m = code & 0x7u;
  // value = q·2^k, q ≤ 15, k in [−45, 35]: exact in f32.
  const std::uint32_t q = e == 0 ? m : 8 + m;
  const int k = (e == 0 ? -10 : static_cast<int>(e) - 11) + scale;
  const float value =
      static_cast<float>(q) * f32_from_bits(static_cast<std::uint32_t>(127 + k) << 23);
  const std::uint16_t magnitude = narrow_f32(f32_bits(value));
  return static_cast<std::uint16_t>(magnitude | ((code & 0x80u) != 0 ? 0x8000u : 0u));
}

int scale_of(std::uint32_t reg) { return static_cast<std::int32_t>(reg); }

void quantize_flat(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share words = balanced_share(r[4] / 4, worker);
  if (words.count == 0) return;
  const int scale = scale_of(r[5]);
  const auto in = memory.array<const std::uint16_t>(r[3] + 8 * words.first, 4 * words.count);
  const auto out = memory.array<std::uint8_t>(r[2] + 4 * words.first, 4 * words.count);
  for (std::uint32_t i = 0; i < out.size(); ++i) out[i] = encode(in[i], scale);
}

void expand_flat(const Registers& r, TileMemory& memory, unsigned worker) {
  const Share words = balanced_share(r[4] / 4, worker);
  if (words.count == 0) return;
  const int scale = scale_of(r[5]);
  // Decoded per code: a 256-entry table would be 512 bytes, twice a worker's
  // 0x100-byte stack.
  const auto in = memory.array<const std::uint8_t>(r[3] + 4 * words.first, 4 * words.count);
  const auto out = memory.array<std::uint16_t>(r[2] + 8 * words.first, 4 * words.count);
  for (std::uint32_t i = 0; i < out.size(); ++i) out[i] = expand(in[i], scale);
}

// A16 (16-column panels of rows × 16 f16) → A32 (32-column panels of rows ×
// 32 codes): row r's columns k…k+15 of A16 panel k/16 are 16 consecutive
// codes of A32 panel k/32. Columns past the logical ones are code 0x00.
void quantize_shard(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[4], columns = r[5];
  const Share mine = balanced_share(rows, worker);
  if (mine.count == 0 || columns == 0) return;
  const int scale = scale_of(r[6]);
  const std::uint32_t a32_panels = (columns + 31) / 32;
  for (std::uint32_t row = mine.first; row < mine.first + mine.count; ++row) {
    for (std::uint32_t k = 0; k < 32 * a32_panels; k += 16) {
      const auto codes =
          memory.array<std::uint8_t>(r[2] + (k / 32) * rows * 32 + row * 32 + k % 32, 16);
      const std::uint32_t valid = k < columns ? (columns - k < 16 ? columns - k : 16) : 0;
      if (valid == 0) {
        for (std::uint32_t n = 0; n < 16; ++n) codes[n] = 0;
        continue;
      }
      const auto source =
          memory.array<const std::uint16_t>(r[3] + 2 * ((k / 16) * rows * 16 + row * 16), 16);
      for (std::uint32_t n = 0; n < 16; ++n) codes[n] = n < valid ? encode(source[n], scale) : 0;
    }
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_quantize_f16_to_f143, ::tessera::device::quantize_flat)
TESSERA_DEVICE_KERNEL(tessera_expand_f143_to_f16, ::tessera::device::expand_flat)
TESSERA_DEVICE_KERNEL(tessera_quantize_a16_to_a32_f143, ::tessera::device::quantize_shard)
