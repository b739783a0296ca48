// Row-wise softmax and f32 LayerNorm on row-major blocks (numerics:
// kernels/row_normalisation.hpp).
//
// tessera_softmax_rows_{f32,f16}: out row r = softmax(in row r).
//   $m2 out, $m3 in (rows × columns, row-major), $m4 rows, $m5 columns.
// tessera_layer_norm_rows_f32: out row r = LayerNorm(in row r)·γ + β.
//   $m2 out, $m3 in (rows × columns, row-major), $m4 affine
//   [γ(columns) ∣ β(columns)] f32, $m5 rows, $m6 columns, $m7 ε (Q30).
//
// tessera_layer_norm_rows_f16: the same registers, affine [γ ∣ β] f16;
//   layer_norm.hpp's numerics (the A16 kernel's bits) on whole rows. Fewer
//   than six rows of an even length are cut into the workers' column shares
//   and their statistics summed share by share (layer_norm_rows.hpp), so its
//   output shares no byte with the input (the portable device body has each
//   worker sum the whole row while others write theirs) nor with the affine
//   operand.
//
// Pointers are word-aligned. The output may alias the input exactly (a row
// is read whole before it is written) or share no byte with it; the
// LayerNorm output shares none with the affine operand (every row re-reads
// it). Zero rows or columns touch nothing. Rows go to the six workers
// balanced contiguous; no rounding here depends on the call's mode.
#include "kernels/row_normalisation.hpp"

#include <cmath>
#include <vector>

#include "kernels/activation_math.hpp"
#include "kernels/f16_vector.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/shape_checks.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3

// softmax registers
constexpr unsigned kSoftmaxRows = 4, kSoftmaxColumns = 5;
// layer_norm registers
constexpr unsigned kAffine = 4, kNormRows = 5, kNormColumns = 6, kEpsilon = 7;

template <unsigned S, unsigned Rows, unsigned Columns>
std::uint64_t block_bytes(const Registers& r) {
  return saturating_mul(saturating_mul(r[Rows], r[Columns]), S);
}

std::uint64_t affine_bytes(const Registers& r) {
  return r[kNormRows] == 0 ? 0 : std::uint64_t{r[kNormColumns]} * 8;
}
std::uint64_t affine_f16_bytes(const Registers& r) { return affine_bytes(r) / 2; }

// One row in place: x ← softmax(x).
void softmax_row(float* x, std::size_t n) {
  float m = x[0];
  for (std::size_t j = 1; j < n; ++j) {
    if (x[j] != x[j] || x[j] > m) m = x[j];  // a NaN stays the max: the row is NaN
  }
  float sum = 0.0F;
  for (std::size_t j = 0; j < n; ++j) {
    x[j] = exp_f32(x[j] - m);
    sum = j == 0 ? x[0] : sum + x[j];
  }
  const float reciprocal = 1.0F / sum;
  for (std::size_t j = 0; j < n; ++j) x[j] *= reciprocal;
  canonicalize_nans(x, n);
}

template <typename Bits>
void softmax_rows(KernelCall& call) {
  const std::uint64_t rows = call.reg(kSoftmaxRows), columns = call.reg(kSoftmaxColumns);
  call.cycles = softmax_rows_cycles(rows, columns);
  if (rows == 0 || columns == 0) return;
  const std::uint64_t count = rows * columns;
  const auto in = call.memory.read<Bits>(kIn, call.reg(kIn), count);
  const auto out = call.memory.write<Bits>(kOut, call.reg(kOut), count);
  std::vector<float> x(columns);
  for (std::uint64_t r = 0; r < rows; ++r) {
    const auto from = in.subspan(r * columns, columns);
    const auto to = out.subspan(r * columns, columns);
    if constexpr (sizeof(Bits) == 2) {
      widen_f16(from.data(), x.data(), columns);
    } else {
      for (std::size_t j = 0; j < columns; ++j) x[j] = from[j];
    }
    softmax_row(x.data(), columns);
    if constexpr (sizeof(Bits) == 2) {
      narrow_f16(x.data(), to.data(), columns);
    } else {
      for (std::size_t j = 0; j < columns; ++j) to[j] = x[j];
    }
  }
}

// One row: mean and clamped variance as layer_norm.hpp's f16 kernel, then
// ((x − mean)·rstd)·γ + β in f32.
void layer_norm_row(const float* x, const float* gamma, const float* beta, float epsilon, float* y,
                    std::size_t n) {
  float sum[4] = {0, 0, 0, 0}, squares[4] = {0, 0, 0, 0};
  for (std::size_t c = 0; c < n; ++c) {
    sum[c % 4] += x[c];
    squares[c % 4] += x[c] * x[c];
  }
  const float total = (sum[0] + sum[1]) + (sum[2] + sum[3]);
  const float total_squares = (squares[0] + squares[1]) + (squares[2] + squares[3]);
  const auto count = static_cast<float>(n);
  const float mean = total / count;
  float variance = total_squares / count - mean * mean;
  if (variance < 0.0F) variance = 0.0F;
  const float rstd = 1.0F / std::sqrt(variance + epsilon);
  for (std::size_t c = 0; c < n; ++c) {
    const float centred = x[c] - mean;
    const float scaled = centred * rstd;
    const float product = scaled * gamma[c];
    y[c] = product + beta[c];
  }
  canonicalize_nans(y, n);
}

void layer_norm_rows(KernelCall& call) {
  const std::uint64_t rows = call.reg(kNormRows), columns = call.reg(kNormColumns);
  call.cycles = layer_norm_rows_cycles(rows, columns);
  if (rows == 0 || columns == 0) return;
  const float epsilon = epsilon_value(call.reg(kEpsilon));
  const auto affine = call.memory.read<float>(kAffine, call.reg(kAffine), 2 * columns);
  const auto in = call.memory.read<float>(kIn, call.reg(kIn), rows * columns);
  const auto out = call.memory.write<float>(kOut, call.reg(kOut), rows * columns);
  const auto gamma = affine.first(columns);
  const auto beta = affine.subspan(columns, columns);
  std::vector<float> x(columns), y(columns);
  for (std::uint64_t r = 0; r < rows; ++r) {
    const auto from = in.subspan(r * columns, columns);
    for (std::size_t c = 0; c < columns; ++c) x[c] = from[c];  // read whole before writing
    layer_norm_row(x.data(), gamma.data(), beta.data(), epsilon, y.data(), columns);
    const auto to = out.subspan(r * columns, columns);
    for (std::size_t c = 0; c < columns; ++c) to[c] = y[c];
  }
}

void layer_norm_rows_f16(KernelCall& call) {
  const std::uint64_t rows = call.reg(kNormRows), columns = call.reg(kNormColumns);
  call.cycles = layer_norm_rows_f16_cycles(rows, columns);
  if (rows == 0 || columns == 0) return;
  const float epsilon = epsilon_value(call.reg(kEpsilon));
  const auto affine = call.memory.read<std::uint16_t>(kAffine, call.reg(kAffine), 2 * columns);
  const auto in = call.memory.read<std::uint16_t>(kIn, call.reg(kIn), rows * columns);
  const auto out = call.memory.write<std::uint16_t>(kOut, call.reg(kOut), rows * columns);
  std::vector<float> gamma(columns), beta(columns), x(columns);
  widen_f16(affine.data(), gamma.data(), columns);
  widen_f16(affine.data() + columns, beta.data(), columns);
  // Whole rows to the workers, or every row's statistics summed in the
  // workers' column shares (layer_norm_rows.hpp).
  const bool whole_rows = layer_norm_rows_f16_splits_rows(rows, columns, kWorkerCount);
  for (std::uint64_t r = 0; r < rows; ++r) {
    widen_f16(in.subspan(r * columns, columns).data(), x.data(), columns);
    std::uint16_t* row_out = out.subspan(r * columns, columns).data();
    if (whole_rows) {
      layer_norm_f16_row(x.data(), columns, gamma.data(), beta.data(), epsilon, row_out);
    } else {
      layer_norm_f16_row_in_shares(x.data(), columns, gamma.data(), beta.data(), epsilon, row_out,
                                   kWorkerCount);
    }
  }
}

Violation layer_norm_f16_precondition(const Registers& r) {
  const OperandExtent out{kOut, "normalised", block_bytes<2, kNormRows, kNormColumns>(r)};
  const OperandExtent in{kIn, "source", block_bytes<2, kNormRows, kNormColumns>(r)};
  const OperandExtent affine{kAffine, "affine", affine_f16_bytes(r)};
  if (auto v = misaligned(r, {kOut, kIn, kAffine}, 4)) return v;
  for (const auto& operand : {out, in, affine}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  if (auto v = overlaps_because(r, out, in, "a short row's columns are split over the workers")) {
    return v;
  }
  return overlaps(r, out, affine);
}

template <unsigned S>
Violation softmax_precondition(const Registers& r) {
  const OperandExtent out{kOut, "softmax", block_bytes<S, kSoftmaxRows, kSoftmaxColumns>(r)};
  const OperandExtent in{kIn, "source", block_bytes<S, kSoftmaxRows, kSoftmaxColumns>(r)};
  if (auto v = misaligned(r, {kOut, kIn}, 4)) return v;
  for (const auto& operand : {out, in}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  return overlaps_unless_aliased(r, out, in);
}

Violation layer_norm_precondition(const Registers& r) {
  const OperandExtent out{kOut, "normalised", block_bytes<4, kNormRows, kNormColumns>(r)};
  const OperandExtent in{kIn, "source", block_bytes<4, kNormRows, kNormColumns>(r)};
  const OperandExtent affine{kAffine, "affine", affine_bytes(r)};
  if (auto v = misaligned(r, {kOut, kIn, kAffine}, 4)) return v;
  for (const auto& operand : {out, in, affine}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  if (auto v = overlaps_unless_aliased(r, out, in)) return v;
  return overlaps(r, out, affine);
}

template <typename Bits>
KernelSpec softmax(std::string_view name) {
  constexpr unsigned s = sizeof(Bits);
  return KernelSpec{std::string(name),
                    KernelKind::kKernel,
                    {OperandSpec{kOut, Access::kWrite, "softmax",
                                 block_bytes<s, kSoftmaxRows, kSoftmaxColumns>},
                     OperandSpec{kIn, Access::kRead, "source",
                                 block_bytes<s, kSoftmaxRows, kSoftmaxColumns>}},
                    softmax_precondition<s>,
                    softmax_rows<Bits>};
}

}  // namespace

void add_row_normalisation_kernels(KernelRegistry& registry) {
  registry.add(softmax<float>(kSoftmaxRowsF32));
  registry.add(softmax<std::uint16_t>(kSoftmaxRowsF16));
  registry.add(KernelSpec{std::string(kLayerNormRowsF32),
                          KernelKind::kKernel,
                          {OperandSpec{kOut, Access::kWrite, "normalised",
                                       block_bytes<4, kNormRows, kNormColumns>},
                           OperandSpec{kIn, Access::kRead, "source",
                                       block_bytes<4, kNormRows, kNormColumns>},
                           OperandSpec{kAffine, Access::kRead, "affine", affine_bytes}},
                          layer_norm_precondition,
                          layer_norm_rows});
  registry.add(KernelSpec{std::string(kLayerNormRowsF16),
                          KernelKind::kKernel,
                          {OperandSpec{kOut, Access::kWrite, "normalised",
                                       block_bytes<2, kNormRows, kNormColumns>},
                           OperandSpec{kIn, Access::kRead, "source",
                                       block_bytes<2, kNormRows, kNormColumns>},
                           OperandSpec{kAffine, Access::kRead, "affine", affine_f16_bytes}},
                          layer_norm_f16_precondition,
                          layer_norm_rows_f16});
}

}  // namespace tessera::kernels
