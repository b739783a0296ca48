// Device sources of the C16 bias add and the row moves between the AMP
// layouts (host models and ABI: kernels/bias_add.cpp, kernels/reblock.cpp;
// the layouts and σ: kernels/amp_layout.hpp, included as the one owner —
// it is self-contained constexpr arithmetic, so popc builds it too):
//   tessera_add_bias_c16_{f16,f32}: $m2 out (C16), $m3 in (C16), $m4 bias
//     (σ-ordered, 16 per panel), $m5 rows, $m6 columns.
//   tessera_relayout_c16_to_a16_f16: $m2 out (A16), $m3 in (C16), $m4 rows,
//     $m5 columns.
//   tessera_reblock_{a16,c16}_to_a16_f16: $m2 dst, $m3 src, $m4 src rows,
//     $m5 dst rows, $m6 src start, $m7 dst start, $m8 copy rows, $m9 columns.
// Rows go to the workers balanced contiguous (the prior art strided them;
// no result depends on it). A row of one panel is 16 elements, contiguous in
// every layout here; C16 → A16 undoes σ and writes +0 in padding columns,
// A16 → A16 copies the 32 bytes exactly, padding included.
#include "kernels/amp_layout.hpp"
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"

namespace tessera::device {
namespace {

namespace amp = ::tessera::kernels::amp;

constexpr std::uint32_t kPanel = 16;

struct F16 {
  using Bits = std::uint16_t;
  static Bits add(Bits a, Bits b) { return add_f16(a, b); }
};
struct F32 {
  using Bits = std::uint32_t;
  static Bits add(Bits a, Bits b) { return add_f32(a, b); }
};

template <typename E>
void add_bias(const Registers& r, TileMemory& memory, unsigned worker) {
  using Bits = typename E::Bits;
  const std::uint32_t rows = r[5], columns = r[6];
  const Share mine = balanced_share(rows, worker);
  if (mine.count == 0 || columns == 0) return;
  const std::uint32_t panels = (columns + kPanel - 1) / kPanel;
  const std::uint32_t s = sizeof(Bits);
  const auto bias = memory.array<const Bits>(r[4], panels * kPanel);
  for (std::uint32_t j = 0; j < panels; ++j) {
    const std::uint32_t at = s * kPanel * (j * rows + mine.first);
    const auto in = memory.array<const Bits>(r[3] + at, mine.count * kPanel);
    const auto out = memory.array<Bits>(r[2] + at, mine.count * kPanel);
    for (std::uint32_t i = 0; i < mine.count * kPanel; ++i) {
      const unsigned c = i % kPanel;  // physical column: its bias is bias[16j + c]
      out[i] =
          kPanel * j + amp::logical_column(c) < columns ? E::add(in[i], bias[kPanel * j + c]) : 0;
    }
  }
}

// Rows [first, first + count) of the move, panel by panel.
struct Move {
  std::uint32_t source_rows, destination_rows, source_start, destination_start, rows, columns;
};

template <bool kFromC16>
void move_rows(const Registers& r, TileMemory& memory, const Move& move, unsigned worker) {
  const Share mine = balanced_share(move.rows, worker);
  if (mine.count == 0 || move.columns == 0) return;
  const std::uint32_t panels = (move.columns + kPanel - 1) / kPanel;
  for (std::uint32_t j = 0; j < panels; ++j) {
    const auto from = memory.array<const std::uint16_t>(
        r[3] + 2 * kPanel * (j * move.source_rows + move.source_start + mine.first),
        mine.count * kPanel);
    const auto to = memory.array<std::uint16_t>(
        r[2] + 2 * kPanel * (j * move.destination_rows + move.destination_start + mine.first),
        mine.count * kPanel);
    for (std::uint32_t row = 0; row < mine.count; ++row) {
      for (unsigned n = 0; n < kPanel; ++n) {
        if constexpr (kFromC16) {
          to[kPanel * row + n] = kPanel * j + n < move.columns
                                     ? from[kPanel * row + amp::physical_column(n)]
                                     : std::uint16_t{0};
        } else {
          to[kPanel * row + n] = from[kPanel * row + n];
        }
      }
    }
  }
}

void relayout(const Registers& r, TileMemory& memory, unsigned worker) {
  move_rows<true>(r, memory, Move{r[4], r[4], 0, 0, r[4], r[5]}, worker);
}

template <bool kFromC16>
void reblock(const Registers& r, TileMemory& memory, unsigned worker) {
  move_rows<kFromC16>(r, memory, Move{r[4], r[5], r[6], r[7], r[8], r[9]}, worker);
}

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_add_bias_c16_f16, ::tessera::device::add_bias<::tessera::device::F16>)
TESSERA_DEVICE_KERNEL(tessera_add_bias_c16_f32, ::tessera::device::add_bias<::tessera::device::F32>)
TESSERA_DEVICE_KERNEL(tessera_relayout_c16_to_a16_f16, ::tessera::device::relayout)
TESSERA_DEVICE_KERNEL(tessera_reblock_a16_to_a16_f16, ::tessera::device::reblock<false>)
TESSERA_DEVICE_KERNEL(tessera_reblock_c16_to_a16_f16, ::tessera::device::reblock<true>)
