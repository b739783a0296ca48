// Floating-point element-wise adds (element arithmetic: float_arith.hpp).
//
// tessera_add_{f32,f16}: out[i] = a[i] + b[i] for i < count.
//   $m2 out, $m3 a, $m4 b, $m5 count (elements).
// tessera_add_row_broadcast_{f32,f16}: out[r][c] = a[r][c] + b[c], row-major.
//   $m2 out, $m3 a, $m4 b (one row), $m5 rows, $m6 cols.
//   NumPy broadcasting of b against a's trailing dimension (a bias, or a
//   scalar with cols = 1); every other broadcast the compiler materialises
//   with copies (kernels/README.md).
//
// Pointers are word-aligned. The output may alias an input exactly (the
// residual add is in place) but not overlap it partially; the broadcast row
// is re-read for every row, so the output must not overlap it at all. Zero
// elements is legal and touches nothing (review-findings.md #3).
#include <type_traits>

#include "kernels/costs.hpp"
#include "kernels/f16_vector.hpp"
#include "kernels/float_arith.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kLeft = 3;               // $m3 a
constexpr unsigned kRight = 4;              // $m4 b
constexpr unsigned kCount = 5;              // $m5 (add)
constexpr unsigned kRows = 5;               // $m5 (row broadcast)
constexpr unsigned kCols = 6;               // $m6 (row broadcast)

template <typename E>
std::uint64_t count_bytes(const Registers& r) {
  return std::uint64_t{r[kCount]} * E::kBytes;
}

template <typename E>
std::uint64_t matrix_bytes(const Registers& r) {
  return std::uint64_t{r[kRows]} * r[kCols] * E::kBytes;
}

// The row is read only when there is a row to add it to.
template <typename E>
std::uint64_t row_bytes(const Registers& r) {
  return r[kRows] == 0 ? 0 : std::uint64_t{r[kCols]} * E::kBytes;
}

// out[i] = a[i] + b[i] over three spans of one length, in element order (so
// an exactly aliased output reads element i before writing it).
template <typename E>
void add_elements(KernelSpan<const typename E::Bits> a, KernelSpan<const typename E::Bits> b,
                  KernelSpan<typename E::Bits> out) {
  if constexpr (std::is_same_v<E, F16Element>) {
    // Eight at a time where the host can (the same bits: f16_vector.hpp).
    add_f16(a.data(), b.data(), out.data(), out.size());
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = E::add(a[i], b[i]);
  }
}

template <typename E>
KernelSpec add(std::string_view name) {
  return KernelSpec{std::string(name),
                    KernelKind::kKernel,
                    {OperandSpec{kOut, Access::kWrite, "sum", count_bytes<E>},
                     OperandSpec{kLeft, Access::kRead, "left", count_bytes<E>},
                     OperandSpec{kRight, Access::kRead, "right", count_bytes<E>}},
                    [](const Registers& r) -> Violation {
                      return elementwise_binary_violation(r, {kOut, "sum", count_bytes<E>(r)},
                                                          {kLeft, "left", count_bytes<E>(r)},
                                                          {kRight, "right", count_bytes<E>(r)});
                    },
                    [](KernelCall& call) {
                      const std::uint64_t count = call.reg(kCount);
                      if (count != 0) {
                        using Bits = typename E::Bits;
                        const auto a = call.memory.read<Bits>(kLeft, call.reg(kLeft), count);
                        const auto b = call.memory.read<Bits>(kRight, call.reg(kRight), count);
                        add_elements<E>(a, b, call.memory.write<Bits>(kOut, call.reg(kOut), count));
                      }
                      call.cycles = add_cycles(count, E::kBytes);
                    }};
}

template <typename E>
KernelSpec add_row_broadcast(std::string_view name) {
  return KernelSpec{
      std::string(name),
      KernelKind::kKernel,
      {OperandSpec{kOut, Access::kWrite, "sum", matrix_bytes<E>},
       OperandSpec{kLeft, Access::kRead, "matrix", matrix_bytes<E>},
       OperandSpec{kRight, Access::kRead, "row", row_bytes<E>}},
      [](const Registers& r) -> Violation {
        const OperandExtent out{kOut, "sum", matrix_bytes<E>(r)};
        const OperandExtent matrix{kLeft, "matrix", matrix_bytes<E>(r)};
        const OperandExtent row{kRight, "row", row_bytes<E>(r)};
        if (auto v = misaligned(r, {kOut, kLeft, kRight}, 4)) return v;
        for (const auto& operand : {out, matrix, row}) {
          if (auto v = beyond_address_space(r, operand)) return v;
        }
        if (auto v = overlaps_unless_aliased(r, out, matrix)) return v;
        return overlaps(r, out, row);
      },
      [](KernelCall& call) {
        const std::uint64_t rows = call.reg(kRows);
        const std::uint64_t cols = call.reg(kCols);
        // No row loop at all for empty rows: rows may be 2^32 − 1 with cols 0.
        if (rows != 0 && cols != 0) {
          using Bits = typename E::Bits;
          const auto matrix = call.memory.read<Bits>(kLeft, call.reg(kLeft), rows * cols);
          const auto row = call.memory.read<Bits>(kRight, call.reg(kRight), cols);
          const auto out = call.memory.write<Bits>(kOut, call.reg(kOut), rows * cols);
          for (std::uint64_t r = 0; r < rows; ++r) {
            add_elements<E>(matrix.subspan(r * cols, cols), row, out.subspan(r * cols, cols));
          }
        }
        call.cycles = row_broadcast_add_cycles(rows, cols, E::kBytes);
      }};
}

}  // namespace

void add_float_add_kernels(KernelRegistry& registry) {
  registry.add(add<F32Element>(kAddF32));
  registry.add(add<F16Element>(kAddF16));
  registry.add(add_row_broadcast<F32Element>(kAddRowBroadcastF32));
  registry.add(add_row_broadcast<F16Element>(kAddRowBroadcastF16));
}

}  // namespace tessera::kernels
