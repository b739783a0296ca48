// Device sources of the A16 LayerNorm and the fused residual add + LayerNorm
// (host models and ABI: kernels/layer_norm.cpp; numerics: layer_norm.hpp):
//   tessera_layer_norm_f16: $m2 out (A16), $m3 in (A16), $m4 affine
//     [γ | β] f16, $m5 rows, $m6 columns, $m7 ε (Q30).
//   tessera_add_layer_norm_f16: $m2 out, $m3 residual (read, written back as
//     residual + right), $m4 right, $m5 affine, $m6 rows, $m7 columns, $m8 ε.
//   tessera_layer_norm_rows_f16: $m2 out, $m3 in (rows × columns, row-major),
//     $m4 affine, $m5 rows, $m6 columns, $m7 ε: the same numerics on
//     row-major rows; kernels/layer_norm_rows.hpp says whether a call's
//     workers take whole rows or column shares of every row — then each
//     worker sums its share, the six sums are added in worker order, and
//     each worker normalises and writes its share only (the fast path in two
//     supervised worker runs per row, the portable body with every worker
//     summing all six shares itself).
// Rows are strided over the workers (row r on worker r mod 6, the model's
// partition). Per row, with nothing row-sized on the worker's stack: (fused)
// residual ← f16(residual + right), padding +0; Σx and Σx² in f32 in four
// lanes by column mod 4, combined (l0 + l1) + (l2 + l3); mean and
// 1/√(var + ε) (variance clamped ≥ 0) rounded to f16; then per column
// f16(f16(f16(f16(x − mean)·rstd)·γ) + β), padding columns +0. Every f16
// operation is one f32 operation rounded once to nearest even (exact for
// f16 operands' sums and products: no double-rounding error). Fast paths
// (ipu_fast_paths.hpp), for a whole 16-column panel whose operands are
// 8-aligned: the residual add and the normalisation in f16v4 lanes (four
// 64-bit groups per panel row; f16v4add, f16v4sub, f16v4mul — each lane the
// same f16 operation, rounded once, as the scalar path), the result's NaN
// lanes made canonical (a NaN anywhere in the chain stays NaN to the end, so
// canonicalising once gives the scalar path's bits). The sums stay scalar.
// Not here: stochastic rounding (ESR on the device).
#include "kernels/device/canonical_lanes.hpp"
#include "kernels/device/device_abi.hpp"
#include "kernels/device/device_float.hpp"
#include "kernels/device/device_math.hpp"
#include "kernels/device/ipu_fast_paths.hpp"
#include "kernels/device/supervised_entry.hpp"
#include "kernels/layer_norm_rows.hpp"

namespace tessera::device {
namespace {

constexpr std::uint32_t kPanel = 16;

struct Abi {
  bool residual;
  unsigned in, right, affine, rows, columns, epsilon;
};
constexpr Abi kPlain{false, 3, 0, 4, 5, 6, 7};
constexpr Abi kFused{true, 3, 4, 5, 6, 7, 8};

std::uint16_t sub_f16(std::uint16_t a, std::uint16_t b) {
  return add_f16(a, static_cast<std::uint16_t>(b ^ 0x8000u));  // a − b = a + (−b), IEEE
}

// Row `row`'s 16 elements of panel j of an A16 block of `rows` rows.
Array<std::uint16_t> panel_row(TileMemory& memory, std::uint32_t base, std::uint32_t rows,
                               std::uint32_t j, std::uint32_t row) {
  return memory.array<std::uint16_t>(base + 2 * kPanel * (j * rows + row), kPanel);
}

#if TESSERA_DEVICE_FAST_PATHS
half4 splat(std::uint16_t bits) {
  const std::uint16_t lanes[4] = {bits, bits, bits, bits};
  half4 v;
  __builtin_memcpy(&v, lanes, sizeof v);
  return v;
}

// x ← x + y over one panel row (16 f16, four groups).
void add_panel(std::uint16_t* x, const std::uint16_t* y) {
  const auto* from_x = reinterpret_cast<const half4*>(x);
  const auto* from_y = reinterpret_cast<const half4*>(y);
  auto* to = reinterpret_cast<half4*>(x);
  for (std::uint32_t g = 0; g < kPanel / 4; ++g) {
    const half4 u = ipu::load_postinc(&from_x, 1);
    ipu::store_postinc(&to, canonical_lanes<std::uint16_t>(u + ipu::load_postinc(&from_y, 1)), 1);
  }
}

// out ← ((x − mean)·rstd)·γ + β over one panel row, γ and β the panel's 16 columns.
void normalise_panel(std::uint16_t* out, const std::uint16_t* x, const std::uint16_t* gamma,
                     const std::uint16_t* beta, std::uint16_t mean, std::uint16_t rstd) {
  const half4 m = splat(mean), s = splat(rstd);
  const auto* from = reinterpret_cast<const half4*>(x);
  const auto* g = reinterpret_cast<const half4*>(gamma);
  const auto* b = reinterpret_cast<const half4*>(beta);
  auto* to = reinterpret_cast<half4*>(out);
  for (std::uint32_t group = 0; group < kPanel / 4; ++group) {
    const half4 scaled = (ipu::load_postinc(&from, 1) - m) * s;
    const half4 y = scaled * ipu::load_postinc(&g, 1) + ipu::load_postinc(&b, 1);
    ipu::store_postinc(&to, canonical_lanes<std::uint16_t>(y), 1);
  }
}
#endif

template <const Abi& A>
void layer_norm(const Registers& r, TileMemory& memory, unsigned worker) {
  const std::uint32_t rows = r[A.rows], columns = r[A.columns];
  if (rows <= worker || columns == 0) return;
  const std::uint32_t panels = (columns + kPanel - 1) / kPanel;
  const float epsilon = static_cast<float>(r[A.epsilon]) * exact_power_of_two(-30);
  const auto gamma = memory.array<const std::uint16_t>(r[A.affine], columns);
  const auto beta = memory.array<const std::uint16_t>(r[A.affine] + 2 * columns, columns);
  for (std::uint32_t row = worker; row < rows; row += kWorkers) {
    if constexpr (A.residual) {
      for (std::uint32_t j = 0; j < panels; ++j) {
        const auto x = panel_row(memory, r[A.in], rows, j, row);
        const auto y = panel_row(memory, r[A.right], rows, j, row);
#if TESSERA_DEVICE_FAST_PATHS
        const std::uint32_t at = 2 * kPanel * (j * rows + row);
        if (kPanel * (j + 1) <= columns && ((r[A.in] + at) | (r[A.right] + at)) % 8 == 0) {
          add_panel(x.data(), y.data());
          continue;
        }
#endif
        for (std::uint32_t n = 0; n < kPanel; ++n) {
          x[n] = kPanel * j + n < columns ? add_f16(x[n], y[n]) : std::uint16_t{0};
        }
      }
    }
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float squares[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (std::uint32_t j = 0; j < panels; ++j) {
      const auto x = panel_row(memory, r[A.in], rows, j, row);
      for (std::uint32_t n = 0; n < kPanel && kPanel * j + n < columns; ++n) {
        const float v = f32_from_bits(widen_f16(x[n]));
        sum[n % 4] += v;  // column 16j + n is n mod 4 in its lane
        squares[n % 4] += v * v;
      }
    }
    const float count = static_cast<float>(columns);
    const float mean = ((sum[0] + sum[1]) + (sum[2] + sum[3])) / count;
    float variance = ((squares[0] + squares[1]) + (squares[2] + squares[3])) / count - mean * mean;
    if (variance < 0.0f) variance = 0.0f;
    const std::uint16_t m = narrow_f32(canonical_f32(mean));
    const std::uint16_t s = narrow_f32(canonical_f32(rsqrt_f32(variance + epsilon)));
    for (std::uint32_t j = 0; j < panels; ++j) {
      const auto x = panel_row(memory, r[A.in], rows, j, row);
      const auto out = panel_row(memory, r[2], rows, j, row);
#if TESSERA_DEVICE_FAST_PATHS
      const std::uint32_t at = 2 * kPanel * (j * rows + row);
      const std::uint32_t gamma_at = r[A.affine] + 2 * kPanel * j;
      if (kPanel * (j + 1) <= columns &&
          ((r[A.in] + at) | (r[2] + at) | gamma_at | (gamma_at + 2 * columns)) % 8 == 0) {
        normalise_panel(out.data(), x.data(), gamma.data() + kPanel * j,
                        beta.data() + kPanel * j, m, s);
        continue;
      }
#endif
      for (std::uint32_t n = 0; n < kPanel; ++n) {
        const std::uint32_t c = kPanel * j + n;
        if (c >= columns) {
          out[n] = 0;
          continue;
        }
        const std::uint16_t scaled = mul_f16(sub_f16(x[n], m), s);
        out[n] = add_f16(mul_f16(scaled, gamma[c]), beta[c]);
      }
    }
  }
}

// Step 1 on a share of a row: Σx and Σx² in four lanes by position in the
// share, combined (l0 + l1) + (l2 + l3).
struct Sums {
  float sum, squares;
};
Sums share_sums(Array<const std::uint16_t> x, std::uint32_t first, std::uint32_t count) {
  float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  float squares[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (std::uint32_t i = 0; i < count; ++i) {
    const float v = f32_from_bits(widen_f16(x[first + i]));
    sum[i % 4] += v;
    squares[i % 4] += v * v;
  }
  return {(sum[0] + sum[1]) + (sum[2] + sum[3]),
          (squares[0] + squares[1]) + (squares[2] + squares[3])};
}

// Steps 2–3: the row's f16 mean and 1/√(var + ε) from its sums.
struct RowStatistics {
  std::uint16_t mean, rstd;
};
RowStatistics statistics(Sums sums, std::uint32_t columns, float epsilon) {
  const float count = static_cast<float>(columns);
  const float mean = sums.sum / count;
  float variance = sums.squares / count - mean * mean;
  if (variance < 0.0f) variance = 0.0f;
  return {narrow_f32(canonical_f32(mean)),
          narrow_f32(canonical_f32(rsqrt_f32(variance + epsilon)))};
}

// A whole row's statistics (layer_norm.hpp steps 1–3).
RowStatistics row_statistics(Array<const std::uint16_t> x, float epsilon) {
  return statistics(share_sums(x, 0, x.size()), x.size(), epsilon);
}

// The row's sums from its workers' column shares (layer_norm_rows.hpp), added
// in worker order from +0.
template <typename ShareSums>
Sums sums_of_shares(ShareSums&& of_worker) {
  Sums row{0.0f, 0.0f};
  for (unsigned w = 0; w < kWorkers; ++w) {
    const Sums part = of_worker(w);
    row.sum += part.sum;
    row.squares += part.squares;
  }
  return row;
}

::tessera::kernels::ColumnShare column_share(std::uint32_t columns, unsigned worker) {
  return ::tessera::kernels::layer_norm_rows_f16_share(columns, kWorkers, worker);
}

// Step 4 on columns [first, first + count) of one row, one f16 rounding
// per operation.
void normalise_columns(Array<const std::uint16_t> x, Array<std::uint16_t> y,
                       Array<const std::uint16_t> gamma, Array<const std::uint16_t> beta,
                       RowStatistics s, std::uint32_t first, std::uint32_t count) {
  for (std::uint32_t c = first; c < first + count; ++c) {
    const std::uint16_t scaled = mul_f16(sub_f16(x[c], s.mean), s.rstd);
    y[c] = add_f16(mul_f16(scaled, gamma[c]), beta[c]);
  }
}

// A call's operands, row by row.
struct RowsCall {
  Array<const std::uint16_t> in;
  Array<std::uint16_t> out;
  Array<const std::uint16_t> gamma, beta;
  std::uint32_t rows, columns;
  float epsilon;

  Array<const std::uint16_t> x(std::uint32_t row) const { return in.sub(row * columns, columns); }
  Array<std::uint16_t> y(std::uint32_t row) const { return out.sub(row * columns, columns); }
};

RowsCall rows_call(const Registers& r, TileMemory& memory) {
  const std::uint32_t rows = r[5], columns = r[6];
  return RowsCall{memory.array<const std::uint16_t>(r[3], rows * columns),
                  memory.array<std::uint16_t>(r[2], rows * columns),
                  memory.array<const std::uint16_t>(r[4], columns),
                  memory.array<const std::uint16_t>(r[4] + 2 * columns, columns),
                  rows,
                  columns,
                  static_cast<float>(r[7]) * exact_power_of_two(-30)};
}

// Whole rows to the workers (odd-length rows in pairs: no two workers store
// into one word).
void whole_rows(const RowsCall& call, unsigned worker) {
  const Share rows = word_share(call.rows, call.columns % 2 == 0 ? 1 : 2, worker);
  for (std::uint32_t row = rows.first; row < rows.first + rows.count; ++row) {
    const auto x = call.x(row);
    normalise_columns(x, call.y(row), call.gamma, call.beta, row_statistics(x, call.epsilon), 0,
                      call.columns);
  }
}

// The portable body: with column shares, each worker sums every share
// itself, in worker order (the two-run program's bits, with no run between).
[[maybe_unused]] void layer_norm_rows_f16(const Registers& r, TileMemory& memory, unsigned worker) {
  if (r[5] == 0 || r[6] == 0) return;
  const RowsCall call = rows_call(r, memory);
  if (::tessera::kernels::layer_norm_rows_f16_splits_rows(call.rows, call.columns, kWorkers)) {
    whole_rows(call, worker);
    return;
  }
  const auto mine = column_share(call.columns, worker);
  if (mine.count == 0) return;
  for (std::uint32_t row = 0; row < call.rows; ++row) {
    const auto x = call.x(row);
    const Sums sums = sums_of_shares([&](unsigned w) {
      const auto share = column_share(call.columns, w);
      return share_sums(x, share.first, share.count);
    });
    normalise_columns(x, call.y(row), call.gamma, call.beta,
                      statistics(sums, call.columns, call.epsilon), mine.first, mine.count);
  }
}

#if TESSERA_DEVICE_FAST_PATHS
// The fast path: the supervisor runs the workers on whole rows once, or per
// row twice — each worker's share sums into the supervisor's `sums`, then,
// after the barrier, each adds the six and normalises its share.
struct LayerNormRowsProgram {
  enum Run : std::uint32_t { kWholeRows, kShareSums, kNormaliseShares };
  struct alignas(8) Step {
    RowsCall call;
    Sums* sums;  // one per worker
    std::uint32_t row;
    std::uint32_t run;
  };

  template <typename Workers>
  static void supervise(const Registers& r, TileMemory& memory, Workers& workers) {
    if (r[5] == 0 || r[6] == 0) return;  // zero work touches nothing
    Sums sums[kWorkers] = {};
    Step step{rows_call(r, memory), sums, 0, kWholeRows};
    if (::tessera::kernels::layer_norm_rows_f16_splits_rows(step.call.rows, step.call.columns,
                                                            kWorkers)) {
      workers.run(step);
      workers.wait();
      return;
    }
    for (std::uint32_t row = 0; row < step.call.rows; ++row) {
      workers.wait();  // the Step and the sums are the running workers' until they exit
      step.row = row;
      step.run = kShareSums;
      workers.run(step);
      workers.wait();
      step.run = kNormaliseShares;
      workers.run(step);
    }
    workers.wait();
  }

  static void work(const Step& step, unsigned worker) {
    const RowsCall& call = step.call;
    if (step.run == kWholeRows) {
      whole_rows(call, worker);
      return;
    }
    const auto mine = column_share(call.columns, worker);
    const auto x = call.x(step.row);
    if (step.run == kShareSums) {
      step.sums[worker] = share_sums(x, mine.first, mine.count);
      return;
    }
    if (mine.count == 0) return;
    const Sums row = sums_of_shares([&](unsigned w) { return step.sums[w]; });
    normalise_columns(x, call.y(step.row), call.gamma, call.beta,
                      statistics(row, call.columns, call.epsilon), mine.first, mine.count);
  }
};
#endif

}  // namespace
}  // namespace tessera::device

TESSERA_DEVICE_KERNEL(tessera_layer_norm_f16,
                      ::tessera::device::layer_norm<::tessera::device::kPlain>)
TESSERA_DEVICE_KERNEL(tessera_add_layer_norm_f16,
                      ::tessera::device::layer_norm<::tessera::device::kFused>)
TESSERA_DEVICE_SUPERVISED_KERNEL(tessera_layer_norm_rows_f16,
                                 ::tessera::device::LayerNormRowsProgram,
                                 ::tessera::device::layer_norm_rows_f16)
