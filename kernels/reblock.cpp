// Moving rows between the AMP output and activation layouts
// (kernels/amp_layout.hpp; kernels-siglip-f143.md §1.3).
//
// tessera_relayout_c16_to_a16_f16: out = in for `rows` rows and `columns`
//   logical columns, from the C16 layout a GEMM writes to the A16 layout
//   (undoing σ inside each panel); A16 padding columns are written +0.
//   $m2 out (A16), $m3 in (C16), $m4 rows, $m5 columns.
// tessera_reblock_{a16,c16}_to_a16_f16: copies rows
//   [src_start, src_start + copy) of a source shard of src_rows rows to rows
//   [dst_start, dst_start + copy) of a destination shard of dst_rows rows,
//   over the ⌈columns/16⌉ panels both shards have; the other destination rows
//   keep their bytes. A16 → A16 copies each row's 32 bytes per panel exactly
//   (padding included); C16 → A16 undoes σ and writes +0 in padding columns.
//   $m2 dst, $m3 src, $m4 src_rows, $m5 dst_rows, $m6 src_start,
//   $m7 dst_start, $m8 copy (rows), $m9 columns.
//   The prior art packed these into 10-bit fields (≤ 1023 rows); here each
//   is a whole register, so nothing is truncated (review-findings #15).
//
// Pointers are 8-byte aligned; the destination's footprint shares no byte
// with the source's. Rows are copied by strided workers on the device; the
// result does not depend on the order. Zero rows or columns touch nothing.
//
// Footprints are tight: from the pointer to the end of the last row moved in
// the last panel, ((panels − 1)·shard_rows + start + copy)·32 bytes; the
// rows in between that the call does not move are inside the footprint but
// untouched.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "kernels/kernel_shapes.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/shape_checks.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3

// relayout
constexpr unsigned kRows = 4;     // $m4
constexpr unsigned kColumns = 5;  // $m5

// reblock
constexpr unsigned kSourceRows = 4;        // $m4
constexpr unsigned kDestinationRows = 5;   // $m5
constexpr unsigned kSourceStart = 6;       // $m6
constexpr unsigned kDestinationStart = 7;  // $m7
constexpr unsigned kCopyRows = 8;          // $m8
constexpr unsigned kBlockColumns = 9;      // $m9

constexpr std::uint64_t kPanel = amp::kPanelColumns;
constexpr std::uint64_t kRowBytes = kPanel * 2;  // one row of one f16 panel

// The geometry of one call, from its registers.
struct RowMove {
  std::uint64_t source_rows, destination_rows, source_start, destination_start, rows, panels;
  std::uint64_t columns;

  static RowMove relayout(const Registers& r) {
    return {r[kRows], r[kRows], 0, 0, r[kRows], column_panels(r[kColumns]), r[kColumns]};
  }
  static RowMove reblock(const Registers& r) {
    return {r[kSourceRows],       r[kDestinationRows], r[kSourceStart],
            r[kDestinationStart], r[kCopyRows],        column_panels(r[kBlockColumns]),
            r[kBlockColumns]};
  }
  bool empty() const { return rows == 0 || panels == 0; }
  // Bytes from a shard's pointer to the end of the last row moved.
  std::uint64_t extent(std::uint64_t shard_rows, std::uint64_t start) const {
    if (empty()) return 0;
    return saturating_mul(
        saturating_add(saturating_mul(panels - 1, shard_rows), saturating_add(start, rows)),
        kRowBytes);
  }
  std::uint64_t source_bytes() const { return extent(source_rows, source_start); }
  std::uint64_t destination_bytes() const { return extent(destination_rows, destination_start); }
};

template <RowMove (*Geometry)(const Registers&)>
std::uint64_t source_bytes(const Registers& r) {
  return Geometry(r).source_bytes();
}
template <RowMove (*Geometry)(const Registers&)>
std::uint64_t destination_bytes(const Registers& r) {
  return Geometry(r).destination_bytes();
}

template <RowMove (*Geometry)(const Registers&)>
Violation move_precondition(const Registers& r) {
  const RowMove move = Geometry(r);
  if (move.source_start + move.rows > move.source_rows) {
    return fmt::format("rows [{}, {}) are not inside the source's {} rows ($m6 + $m8 > $m4)",
                       move.source_start, move.source_start + move.rows, move.source_rows);
  }
  if (move.destination_start + move.rows > move.destination_rows) {
    return fmt::format("rows [{}, {}) are not inside the destination's {} rows ($m7 + $m8 > $m5)",
                       move.destination_start, move.destination_start + move.rows,
                       move.destination_rows);
  }
  const OperandExtent out{kOut, "destination", move.destination_bytes()};
  const OperandExtent in{kIn, "source", move.source_bytes()};
  if (auto v = misaligned(r, {kOut, kIn}, 8)) return v;
  for (const auto& operand : {out, in}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  return overlaps_because(r, out, in, "rows are moved by six workers at once");
}

// Moves one panel's rows: from C16 (σ undone, padding +0) or A16 (exact).
template <bool kFromOutputLayout>
void move_rows(KernelSpan<const std::uint16_t> from, KernelSpan<std::uint16_t> to,
               std::uint64_t panel, std::uint64_t columns) {
  if constexpr (!kFromOutputLayout) {
    std::memcpy(to.data(), from.data(), to.size_bytes());
  } else {
    const std::uint64_t valid = std::min<std::uint64_t>(kPanel, columns - panel * kPanel);
    for (std::size_t row = 0; row < to.size(); row += kPanel) {
      const auto source = from.subspan(row, kPanel);
      const auto destination = to.subspan(row, kPanel);
      for (unsigned n = 0; n < kPanel; ++n) {
        destination[n] = n < valid ? source[amp::physical_column(n)] : std::uint16_t{0};
      }
    }
  }
}

// The rows a call moves through one operand, panel by panel. They are one
// contiguous range when the call moves every row of the shard (or there is
// one panel): then the model asks for one span and slices it, since what a
// span costs is per span, not per byte (kernels/README.md, "the span API").
// Otherwise it asks for each panel's rows, never for the rows between them,
// which a kWhole span would count as read and written.
template <typename T>
class PanelRows {
 public:
  PanelRows(KernelMemory& memory, unsigned reg, std::uint64_t base, std::uint64_t shard_rows,
            std::uint64_t start, const RowMove& move)
      : memory_(memory),
        reg_(reg),
        base_(base + start * kRowBytes),
        stride_(shard_rows * kRowBytes),
        elements_(move.rows * kPanel) {
    if (move.panels == 1 || move.rows == shard_rows) {
      all_ = ask(base_, move.panels * elements_);
      dense_ = true;
    }
  }
  KernelSpan<T> panel(std::uint64_t j) {
    return dense_ ? all_.subspan(j * elements_, elements_) : ask(base_ + j * stride_, elements_);
  }
  // Every panel's rows in one span, when they are contiguous.
  const KernelSpan<T>* all() const { return dense_ ? &all_ : nullptr; }

 private:
  KernelSpan<T> ask(std::uint64_t address, std::uint64_t count) {
    if constexpr (std::is_const_v<T>) {
      return memory_.read<std::remove_const_t<T>>(reg_, address, count);
    } else {
      return memory_.write<T>(reg_, address, count);
    }
  }

  KernelMemory& memory_;
  unsigned reg_;
  std::uint64_t base_, stride_, elements_;
  KernelSpan<T> all_;
  bool dense_ = false;
};

template <RowMove (*Geometry)(const Registers&), bool kFromOutputLayout>
void move_model(KernelCall& call) {
  const RowMove move = Geometry(call.registers);
  if (!move.empty()) {
    // The source is asked for first, as each panel's source span was.
    PanelRows<const std::uint16_t> from(call.memory, kIn, call.reg(kIn), move.source_rows,
                                        move.source_start, move);
    PanelRows<std::uint16_t> to(call.memory, kOut, call.reg(kOut), move.destination_rows,
                                move.destination_start, move);
    if (!kFromOutputLayout && from.all() != nullptr && to.all() != nullptr) {
      std::memcpy(to.all()->data(), from.all()->data(), to.all()->size_bytes());
    } else {
      for (std::uint64_t j = 0; j < move.panels; ++j) {
        const auto source = from.panel(j);  // asked for before the destination
        move_rows<kFromOutputLayout>(source, to.panel(j), j, move.columns);
      }
    }
  }
  call.cycles = panel_copy_cycles(move.rows, move.columns);
}

template <RowMove (*Geometry)(const Registers&), bool kFromOutputLayout>
KernelSpec row_move(std::string_view name) {
  return KernelSpec{std::string(name),
                    KernelKind::kKernel,
                    {OperandSpec{kOut, Access::kWrite, "destination", destination_bytes<Geometry>},
                     OperandSpec{kIn, Access::kRead, "source", source_bytes<Geometry>}},
                    move_precondition<Geometry>,
                    move_model<Geometry, kFromOutputLayout>};
}

}  // namespace

void add_reblock_kernels(KernelRegistry& registry) {
  registry.add(row_move<RowMove::relayout, true>(kRelayoutC16ToA16F16));
  registry.add(row_move<RowMove::reblock, false>(kReblockA16ToA16F16));
  registry.add(row_move<RowMove::reblock, true>(kReblockC16ToA16F16));
}

}  // namespace tessera::kernels
