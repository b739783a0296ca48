// Device sources of the element-wise kernels (host models and ABI:
// kernels/elementwise.cpp, float_add.cpp, float_mul.cpp; kernels/README.md):
//   tessera_add_u32, tessera_add_{f32,f16}, tessera_mul_{f32,f16}:
//     $m2 out, $m3 a, $m4 b, $m5 count — out[i] = a[i] op b[i].
//   tessera_add_row_broadcast_{f32,f16}:
//     $m2 out, $m3 a (rows × cols), $m4 b (cols), $m5 rows, $m6 cols.
// Elements are split over the workers balanced contiguous in whole words
// (word_share: pairs of f16), so no two workers store into one word; a worker
// reads element i before writing it, so out may alias a or b exactly. Zero
// work asks for no memory. Fast paths (TESSERA_DEVICE_FAST_PATHS:
// ipu_fast_paths.hpp): f16v4 / f32v2 arithmetic on 64-bit groups loaded and
// stored with ipu::load_postinc / store_postinc when all three pointers are
// 8-aligned, f16v2 on words when they are only 4-aligned; two-lane groups
// for the row broadcasts when the row length is even; NaN lanes made
// canonical, so the results are the models' bits under the emulation's
// hardware assumptions (tests/kernels/ipu_emulation/ipu_emulation.hpp).
#include <type_traits>

#include "kernels/device/canonical_lanes.hpp"
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/ipu_fast_paths.hpp"

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

#if TESSERA_DEVICE_FAST_PATHS
template <typename Op, typename Vector>
Vector apply_vector(const Vector& x, const Vector& y) {
  return canonical_lanes<typename Op::Bits>(Op::kIsAdd ? x + y : x * y);
}

// out[i] = a[i] op b[i] for whole Vector groups of `count` elements; the
// number of elements done. A group is loaded whole before it is stored, so
// out may alias a or b exactly.
template <typename Op, typename Vector>
std::uint32_t vector_groups(typename Op::Bits* out, const typename Op::Bits* a,
                            const typename Op::Bits* b, std::uint32_t count) {
  constexpr std::uint32_t kLanes = sizeof(Vector) / sizeof(typename Op::Bits);
  const auto* x = reinterpret_cast<const Vector*>(a);
  const auto* y = reinterpret_cast<const Vector*>(b);
  auto* z = reinterpret_cast<Vector*>(out);
  const std::uint32_t groups = count / kLanes;
  for (std::uint32_t g = 0; g < groups; ++g) {
    const Vector u = ipu::load_postinc(&x, 1);
    const Vector v = ipu::load_postinc(&y, 1);
    ipu::store_postinc(&z, apply_vector<Op>(u, v), 1);
  }
  return groups * kLanes;
}

// The two-lane vector of an element type: f32v2 or f16v2.
template <typename Bits>
using Pair = std::conditional_t<sizeof(Bits) == 4, float2, half2>;
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
#if TESSERA_DEVICE_FAST_PATHS
  if constexpr (requires { Op::kIsAdd; }) {
    const std::uint32_t addresses = (r[2] + offset) | (r[3] + offset) | (r[4] + offset);
    if ((addresses & 7) == 0) {
      using Group = std::conditional_t<sizeof(Bits) == 2, half4, float2>;
      i = vector_groups<Op, Group>(out.data(), a.data(), b.data(), share.count);
    } else if (sizeof(Bits) == 2 && (addresses & 3) == 0) {
      i = vector_groups<Op, half2>(out.data(), a.data(), b.data(), share.count);
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
  std::uint32_t i = 0, c = share.first % cols;
#if TESSERA_DEVICE_FAST_PATHS
  // Two-lane groups when a pair never straddles a row end (even row length,
  // even start column) and every pointer is aligned to the pair.
  using Vector = Pair<Bits>;
  const std::uint32_t addresses = (r[2] + offset) | (r[3] + offset) | r[4];
  if (cols % 2 == 0 && c % 2 == 0 && addresses % sizeof(Vector) == 0) {
    const auto* x = reinterpret_cast<const Vector*>(a.data());
    auto* z = reinterpret_cast<Vector*>(out.data());
    for (; i + 2 <= share.count; i += 2) {
      const Vector* y = reinterpret_cast<const Vector*>(row.data() + c);
      const Vector u = ipu::load_postinc(&x, 1);
      ipu::store_postinc(&z, apply_vector<Op>(u, ipu::load_postinc(&y, 1)), 1);
      c += 2;
      if (c == cols) c = 0;
    }
  }
#endif
  for (; i < share.count; ++i) {
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
