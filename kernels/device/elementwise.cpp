// Device sources of the element-wise kernels (host models and ABI:
// kernels/elementwise.cpp, float_add.cpp, float_mul.cpp; kernels/README.md):
//   tessera_add_u32, tessera_add_{f32,f16}, tessera_mul_{f32,f16}:
//     $m2 out, $m3 a, $m4 b, $m5 count — out[i] = a[i] op b[i].
//   tessera_add_row_broadcast_{f32,f16}:
//     $m2 out, $m3 a (rows × cols), $m4 b (cols), $m5 rows, $m6 cols.
// Elements are split over the workers balanced contiguous in whole words
// (word_share: pairs of f16), so no two workers store into one word; a worker
// reads element i before writing it, so out may alias a or b exactly. Zero
// work asks for no memory. Behind __IPU__: f16v2 and f32v2
// arithmetic on aligned word pairs, NaN lanes made canonical.
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"

#ifdef __IPU__
#include <ipu_vector_math>
#endif

namespace tessera::device {
namespace {

struct AddU32 {
  using Bits = std::uint32_t;
  static Bits apply(Bits a, Bits b) { return a + b; }  // wraps, as the integer add does
};
struct AddF32 {
  using Bits = std::uint32_t;
  static constexpr bool kFloat2 = true;
  static constexpr bool kIsAdd = true;
  static Bits apply(Bits a, Bits b) { return add_f32(a, b); }
};
struct AddF16 {
  using Bits = std::uint16_t;
  static constexpr bool kIsAdd = true;
  static Bits apply(Bits a, Bits b) { return add_f16(a, b); }
};
struct MulF32 {
  using Bits = std::uint32_t;
  static constexpr bool kFloat2 = true;
  static constexpr bool kIsAdd = false;
  static Bits apply(Bits a, Bits b) { return mul_f32(a, b); }
};
struct MulF16 {
  using Bits = std::uint16_t;
  static constexpr bool kIsAdd = false;
  static Bits apply(Bits a, Bits b) { return mul_f16(a, b); }
};

#ifdef __IPU__
// f16v2add / f16v2mul on whole words; the hardware's f16 add and product are
// the correctly rounded binary16 results, which are the model's, except for
// the NaN a lane makes: made canonical here [INF: payload rules].
template <typename Op>
std::uint32_t half2_words(std::uint32_t* out, const std::uint32_t* a, const std::uint32_t* b,
                          std::uint32_t words) {
  for (std::uint32_t i = 0; i < words; ++i) {
    half2 x, y;
    __builtin_memcpy(&x, &a[i], 4);
    __builtin_memcpy(&y, &b[i], 4);
    half2 z = Op::kIsAdd ? x + y : x * y;
    std::uint32_t bits;
    __builtin_memcpy(&bits, &z, 4);
    if ((bits & 0x7C00u) == 0x7C00u && (bits & 0x03FFu) != 0) bits = (bits & 0xFFFF0000u) | 0x7E00u;
    if ((bits & 0x7C000000u) == 0x7C000000u && (bits & 0x03FF0000u) != 0)
      bits = (bits & 0x0000FFFFu) | 0x7E000000u;
    out[i] = bits;
  }
  return 2 * words;
}

// f32v2add / f32v2mul on 64-bit pairs: IEEE binary32 with round to nearest
// even, the model's, except for NaN lanes, made canonical here [INF: the
// IPU's f32 subnormal handling is unconfirmed, float_arith.hpp].
template <typename Op>
std::uint32_t float2_pairs(std::uint32_t* out, const std::uint32_t* a, const std::uint32_t* b,
                           std::uint32_t pairs) {
  for (std::uint32_t i = 0; i < pairs; ++i) {
    float2 x, y;
    __builtin_memcpy(&x, &a[2 * i], 8);
    __builtin_memcpy(&y, &b[2 * i], 8);
    const float2 z = Op::kIsAdd ? x + y : x * y;
    out[2 * i] = canonical_f32(z[0]);
    out[2 * i + 1] = canonical_f32(z[1]);
  }
  return 2 * pairs;
}
#endif

template <typename Op>
void binary(const Registers& r, TileMemory& memory, unsigned worker) {
  using Bits = typename Op::Bits;
  const Share share = word_share(r[5], 4 / std::uint32_t{sizeof(Bits)}, worker);
  if (share.count == 0) return;
  const std::uint32_t offset = share.first * std::uint32_t{sizeof(Bits)};
  const auto a = memory.array<const Bits>(r[3] + offset, share.count);
  const auto b = memory.array<const Bits>(r[4] + offset, share.count);
  const auto out = memory.array<Bits>(r[2] + offset, share.count);
  std::uint32_t i = 0;
#ifdef __IPU__
  if constexpr (sizeof(Bits) == 2) {
    if (((r[2] + offset) & 3) == 0 && ((r[3] + offset) & 3) == 0 && ((r[4] + offset) & 3) == 0) {
      i = half2_words<Op>(reinterpret_cast<std::uint32_t*>(out.data()),
                          reinterpret_cast<const std::uint32_t*>(a.data()),
                          reinterpret_cast<const std::uint32_t*>(b.data()), share.count / 2);
    }
  } else if constexpr (requires { Op::kFloat2; }) {
    if (((r[2] + offset) & 7) == 0 && ((r[3] + offset) & 7) == 0 && ((r[4] + offset) & 7) == 0) {
      i = float2_pairs<Op>(out.data(), a.data(), b.data(), share.count / 2);
    }
  }
#endif
  for (; i < share.count; ++i) out[i] = Op::apply(a[i], b[i]);
}

// The rows × cols elements split in whole words (an f16 row of odd length
// ends mid-word, so a split by rows could give one word to two workers).
template <typename Op>
void row_broadcast(const Registers& r, TileMemory& memory, unsigned worker) {
  using Bits = typename Op::Bits;
  const std::uint32_t cols = r[6];
  if (r[5] == 0 || cols == 0) return;  // rows may be 2^32 − 1 with cols 0
  const Share share = word_share(r[5] * cols, 4 / std::uint32_t{sizeof(Bits)}, worker);
  if (share.count == 0) return;
  const std::uint32_t offset = share.first * std::uint32_t{sizeof(Bits)};
  const auto a = memory.array<const Bits>(r[3] + offset, share.count);
  const auto row = memory.array<const Bits>(r[4], cols);
  const auto out = memory.array<Bits>(r[2] + offset, share.count);
  for (std::uint32_t i = 0, c = share.first % cols; i < share.count; ++i) {
    out[i] = Op::apply(a[i], row[c]);
    if (++c == cols) c = 0;
  }
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_add_u32, ::tessera::device::binary<::tessera::device::AddU32>)
TESSERA_DEVICE_KERNEL(tessera_add_f32, ::tessera::device::binary<::tessera::device::AddF32>)
TESSERA_DEVICE_KERNEL(tessera_add_f16, ::tessera::device::binary<::tessera::device::AddF16>)
TESSERA_DEVICE_KERNEL(tessera_mul_f32, ::tessera::device::binary<::tessera::device::MulF32>)
TESSERA_DEVICE_KERNEL(tessera_mul_f16, ::tessera::device::binary<::tessera::device::MulF16>)
TESSERA_DEVICE_KERNEL(tessera_add_row_broadcast_f32,
                      ::tessera::device::row_broadcast<::tessera::device::AddF32>)
TESSERA_DEVICE_KERNEL(tessera_add_row_broadcast_f16,
                      ::tessera::device::row_broadcast<::tessera::device::AddF16>)
