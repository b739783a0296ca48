// Affine LayerNorm on the A16 activation layout, and the fused residual add
// + LayerNorm (numerics: kernels/layer_norm.hpp; kernels-siglip-f143.md §1.3).
//
// tessera_layer_norm_f16: out = LayerNorm(in)·γ + β, row by row.
//   $m2 out (A16), $m3 in (A16), $m4 affine, $m5 rows, $m6 columns, $m7 ε (Q30).
// tessera_add_layer_norm_f16: residual += right (in f16, written back), then
//   out = LayerNorm(residual)·γ + β.
//   $m2 out (A16), $m3 residual (A16, read and written), $m4 right (A16),
//   $m5 affine, $m6 rows, $m7 columns, $m8 ε (Q30).
//
// `columns` is the logical width; the A16 blocks hold ⌈columns/16⌉ panels
// and every padding column written (out, and the residual) is +0. The
// affine operand is [γ(columns) | β(columns)], f16. Rows are strided over the
// six workers (row r on worker r mod 6); under stochastic rounding each
// worker draws, for each of its rows in order: one per column for the
// residual add (fused kernel), one for the mean, one for 1/√(var + ε), then
// four per column in column order.
//
// Pointers are 8-byte aligned. The plain kernel's output may alias its input
// exactly (a row is read whole before it is written) but no other operand;
// the fused kernel's output and residual share no byte with any other
// operand. Zero rows or columns touch nothing.
#include "kernels/layer_norm.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "kernels/f16_vector.hpp"
#include "kernels/half.hpp"
#include "kernels/kernel_shapes.hpp"
#include "kernels/layer_norm_rows.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/rounding.hpp"
#include "kernels/shape_checks.hpp"

#if defined(__x86_64__)
#include <immintrin.h>  // SSE2, the x86-64 baseline
#endif

namespace tessera::kernels {
namespace {

constexpr std::uint64_t kPanel = amp::kPanelColumns;

// Register assignment of each variant.
struct Abi {
  bool residual;
  unsigned out = kOutputRegister, in, right, affine, rows, columns, epsilon;
};
constexpr Abi kPlain{false, kOutputRegister, 3, 0, 4, 5, 6, 7};
constexpr Abi kFused{true, kOutputRegister, 3, 4, 5, 6, 7, 8};

template <const Abi& A>
std::uint64_t block_bytes(const Registers& r) {
  return saturating_mul(panel_block_elements(r[A.rows], r[A.columns]), 2);
}
template <const Abi& A>
std::uint64_t affine_bytes(const Registers& r) {
  return r[A.rows] == 0 ? 0 : std::uint64_t{r[A.columns]} * 4;
}

// Row r's elements of one A16 panel.
template <typename T>
KernelSpan<T> panel_row(KernelSpan<T> block, std::uint64_t rows, std::uint64_t panel,
                        std::uint64_t r) {
  return block.subspan((panel * rows + r) * kPanel, kPanel);
}

// 32 bytes, a constant size the compiler inlines (a panel row is gathered
// and scattered once per row and panel).
void copy_panel_row(const std::uint16_t* from, std::uint16_t* to) {
  std::memcpy(to, from, kPanel * sizeof(std::uint16_t));
}

// Step 1 on n f32 values: Σx and Σx², four lanes combined.
struct Sums {
  float sum = 0.0F, squares = 0.0F;
};
Sums lane_sums(const float* x, std::size_t n) {
  float sum[4] = {0, 0, 0, 0}, squares[4] = {0, 0, 0, 0};
  // Whole groups of four first: lane j holds column 4i + j, so a 4-wide add
  // is the four lanes' next terms, in the same order as one column at a time.
  std::size_t c = 0;
#if defined(__x86_64__)
  __m128 lane_sums = _mm_setzero_ps(), lane_squares = _mm_setzero_ps();
  for (; c + 4 <= n; c += 4) {
    const __m128 v = _mm_loadu_ps(x + c);
    lane_sums = _mm_add_ps(lane_sums, v);
    lane_squares = _mm_add_ps(lane_squares, _mm_mul_ps(v, v));
  }
  _mm_storeu_ps(sum, lane_sums);
  _mm_storeu_ps(squares, lane_squares);
#else
  for (; c + 4 <= n; c += 4) {
    for (std::size_t j = 0; j < 4; ++j) {
      sum[j] += x[c + j];
      squares[j] += x[c + j] * x[c + j];
    }
  }
#endif
  for (; c < n; ++c) {
    sum[c % 4] += x[c];
    squares[c % 4] += x[c] * x[c];
  }
  return Sums{(sum[0] + sum[1]) + (sum[2] + sum[3]),
              (squares[0] + squares[1]) + (squares[2] + squares[3])};
}

// Step 2: the mean and (clamped) variance of n values from their sums.
std::pair<float, float> moments(Sums sums, std::size_t n) {
  const auto count = static_cast<float>(n);
  const float mean = sums.sum / count;
  float variance = sums.squares / count - mean * mean;
  if (variance < 0.0F) variance = 0.0F;
  return {mean, variance};
}

float inverse_deviation(float variance, float epsilon) {
  return 1.0F / std::sqrt(variance + epsilon);
}

class RowNorm {
 public:
  RowNorm(KernelCall& call, const Abi& abi)
      : call_(call),
        abi_(abi),
        rows_(call.reg(abi.rows)),
        columns_(call.reg(abi.columns)),
        panels_(column_panels(columns_)),
        epsilon_(epsilon_value(call.reg(abi.epsilon))) {}

  void run() {
    KernelMemory& memory = call_.memory;
    const std::uint64_t elements = rows_ * panels_ * kPanel;
    const auto affine =
        memory.read<std::uint16_t>(abi_.affine, call_.reg(abi_.affine), 2 * columns_);
    gamma_bits_ = affine.first(columns_);
    beta_bits_ = affine.subspan(columns_, columns_);
    gamma_.resize(columns_);
    beta_.resize(columns_);
    widen_f16(gamma_bits_.data(), gamma_.data(), columns_);
    widen_f16(beta_bits_.data(), beta_.data(), columns_);
    x_.resize(panels_ * kPanel);
    x_bits_.resize(panels_ * kPanel);
    if (abi_.residual) {
      right_bits_.resize(panels_ * kPanel);
      right_.resize(columns_);
    }

    KernelSpan<std::uint16_t> residual;
    KernelSpan<const std::uint16_t> in, right;
    if (abi_.residual) {
      residual = memory.read_write<std::uint16_t>(abi_.in, call_.reg(abi_.in), elements);
      right = memory.read<std::uint16_t>(abi_.right, call_.reg(abi_.right), elements);
      in = residual;
    } else {
      in = memory.read<std::uint16_t>(abi_.in, call_.reg(abi_.in), elements);
    }
    const auto out = memory.write<std::uint16_t>(abi_.out, call_.reg(abi_.out), elements);
    const bool nearest = call_.rounding == Rounding::kNearestEven;
    for (std::uint64_t r = 0; r < rows_; ++r) {
      // Gather the row (after the residual add) as f16 bits.
      for (std::uint64_t j = 0; j < panels_; ++j) {
        const auto x = panel_row(in, rows_, j, r);
        copy_panel_row(x.data(), x_bits_.data() + j * kPanel);
      }
      F16Rounding rounding(call_.rounding, worker_stream(call_, strided_worker(r)));
      if (abi_.residual) add_residual(residual, right, r, nearest, rounding);
      widen_f16(x_bits_.data(), x_.data(), columns_);
      if (nearest) {
        normalise_nearest(out, r);
      } else {
        normalise(out, r, rounding);
      }
    }
  }

 private:
  // residual' = residual + right for the row's logical columns, into x_bits_
  // and back into the residual (padding +0).
  void add_residual(KernelSpan<std::uint16_t> residual, KernelSpan<const std::uint16_t> right,
                    std::uint64_t r, bool nearest, F16Rounding& rounding) {
    for (std::uint64_t j = 0; j < panels_; ++j) {
      const auto y = panel_row(right, rows_, j, r);
      copy_panel_row(y.data(), right_bits_.data() + j * kPanel);
    }
    if (nearest) {
      widen_f16(x_bits_.data(), x_.data(), columns_);
      widen_f16(right_bits_.data(), right_.data(), columns_);
      for (std::size_t c = 0; c < columns_; ++c) x_[c] += right_[c];
      canonicalize_nans(x_.data(), columns_);
      narrow_f16(x_.data(), x_bits_.data(), columns_);
    } else {
      for (std::size_t c = 0; c < columns_; ++c)
        x_bits_[c] = rounding.add(x_bits_[c], right_bits_[c]);
    }
    std::fill(x_bits_.begin() + static_cast<std::ptrdiff_t>(columns_), x_bits_.end(),
              std::uint16_t{0});
    for (std::uint64_t j = 0; j < panels_; ++j) {
      const auto row = panel_row(residual, rows_, j, r);
      copy_panel_row(x_bits_.data() + j * kPanel, row.data());
    }
  }

  // Steps 3–4 to nearest: f32 vectors rounded to the f16 grid after each
  // operation, the same bits as one f16 operation each (f16_vector.hpp).
  void normalise_nearest(KernelSpan<std::uint16_t> out, std::uint64_t r) {
    layer_norm_f16_row(x_.data(), columns_, gamma_.data(), beta_.data(), epsilon_, x_bits_.data());
    std::fill(x_bits_.begin() + static_cast<std::ptrdiff_t>(columns_), x_bits_.end(),
              std::uint16_t{0});
    scatter(out, r);
  }

  // Steps 3–4 one rounding at a time (stochastic: one draw each).
  void normalise(KernelSpan<std::uint16_t> out, std::uint64_t r, F16Rounding& rounding) {
    const auto [mean, variance] = moments(lane_sums(x_.data(), columns_), columns_);
    const std::uint16_t m = rounding.round(std::bit_cast<std::uint32_t>(mean));
    const std::uint16_t s =
        rounding.round(std::bit_cast<std::uint32_t>(inverse_deviation(variance, epsilon_)));
    for (std::uint64_t c = 0; c < x_bits_.size(); ++c) {
      if (c >= columns_) {
        x_bits_[c] = 0;
        continue;
      }
      const std::uint16_t centred = rounding.sub(x_bits_[c], m);
      const std::uint16_t scaled = rounding.mul(centred, s);
      x_bits_[c] = rounding.add(rounding.mul(scaled, gamma_bits_[c]), beta_bits_[c]);
    }
    scatter(out, r);
  }

  void scatter(KernelSpan<std::uint16_t> out, std::uint64_t r) {
    for (std::uint64_t j = 0; j < panels_; ++j) {
      const auto row = panel_row(out, rows_, j, r);
      copy_panel_row(x_bits_.data() + j * kPanel, row.data());
    }
  }

  KernelCall& call_;
  const Abi& abi_;
  std::uint64_t rows_, columns_, panels_;
  float epsilon_;
  KernelSpan<const std::uint16_t> gamma_bits_, beta_bits_;
  std::vector<float> gamma_, beta_, x_;
  std::vector<std::uint16_t> x_bits_;
  std::vector<std::uint16_t> right_bits_;
  std::vector<float> right_;
};

template <const Abi& A>
void layer_norm(KernelCall& call) {
  const std::uint64_t rows = call.reg(A.rows), columns = call.reg(A.columns);
  if (rows != 0 && columns != 0) RowNorm(call, A).run();
  call.cycles = layer_norm_cycles(rows, columns, A.residual);
}

template <const Abi& A>
Violation precondition(const Registers& r) {
  const OperandExtent out{A.out, "normalised", block_bytes<A>(r)};
  const OperandExtent in{A.in, A.residual ? "residual" : "source", block_bytes<A>(r)};
  const OperandExtent affine{A.affine, "affine", affine_bytes<A>(r)};
  if (auto v = misaligned(r, {A.out, A.in, A.affine}, 8)) return v;
  if (A.residual) {
    if (auto v = misaligned(r, {A.right}, 8)) return v;
  }
  const OperandExtent right{A.right, "right", A.residual ? block_bytes<A>(r) : 0};
  for (const auto& operand : {out, in, affine, right}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  if (!A.residual) {
    if (auto v = overlaps_unless_aliased(r, out, in)) return v;
    return overlaps_because(r, out, affine, "every row re-reads the affine parameters");
  }
  constexpr std::string_view kWhy = "the output and the residual are written";
  for (const auto& other : {in, right, affine}) {
    if (auto v = overlaps_because(r, out, other, kWhy)) return v;
  }
  if (auto v = overlaps_because(r, in, right, kWhy)) return v;
  return overlaps_because(r, in, affine, kWhy);
}

}  // namespace

namespace {

// Steps 3–4 from the row's moments.
void normalise_row_f16(const float* x, std::size_t n, std::pair<float, float> row_moments,
                       const float* gamma, const float* beta, float epsilon, std::uint16_t* out) {
  const auto [mean, variance] = row_moments;
  const float m = f16_to_f32(f32_to_f16(mean));
  const float s = f16_to_f32(f32_to_f16(inverse_deviation(variance, epsilon)));
  normalise_affine_f16(x, m, s, gamma, beta, out, n);
}

}  // namespace

void layer_norm_f16_row(const float* x, std::size_t n, const float* gamma, const float* beta,
                        float epsilon, std::uint16_t* out) {
  normalise_row_f16(x, n, moments(lane_sums(x, n), n), gamma, beta, epsilon, out);
}

void layer_norm_f16_row_in_shares(const float* x, std::size_t n, const float* gamma,
                                  const float* beta, float epsilon, std::uint16_t* out,
                                  std::uint32_t workers) {
  Sums row;
  for (std::uint32_t w = 0; w < workers; ++w) {
    const ColumnShare share = layer_norm_rows_f16_share(static_cast<std::uint32_t>(n), workers, w);
    const Sums part = lane_sums(x + share.first, share.count);
    row.sum += part.sum;
    row.squares += part.squares;
  }
  normalise_row_f16(x, n, moments(row, n), gamma, beta, epsilon, out);
}

std::uint32_t epsilon_q30(double epsilon) {
  const double scaled = epsilon * std::ldexp(1.0, kEpsilonFractionBits);
  if (!std::isfinite(epsilon) || epsilon < 0 || std::round(scaled) > 4294967295.0) {
    throw std::invalid_argument(fmt::format(
        "LayerNorm epsilon {} is not in [0, (2^32 - 1)·2^-30], what a Q30 register holds",
        epsilon));
  }
  return static_cast<std::uint32_t>(std::round(scaled));
}

float epsilon_value(std::uint32_t q30) noexcept {
  return static_cast<float>(q30) * std::ldexp(1.0F, -kEpsilonFractionBits);
}

void add_layer_norm_kernels(KernelRegistry& registry) {
  registry.add(
      KernelSpec{std::string(kLayerNormF16),
                 KernelKind::kKernel,
                 {OperandSpec{kPlain.out, Access::kWrite, "normalised", block_bytes<kPlain>},
                  OperandSpec{kPlain.in, Access::kRead, "source", block_bytes<kPlain>},
                  OperandSpec{kPlain.affine, Access::kRead, "affine", affine_bytes<kPlain>}},
                 precondition<kPlain>,
                 layer_norm<kPlain>});
  registry.add(
      KernelSpec{std::string(kAddLayerNormF16),
                 KernelKind::kKernel,
                 {OperandSpec{kFused.out, Access::kWrite, "normalised", block_bytes<kFused>},
                  OperandSpec{kFused.in, Access::kReadWrite, "residual", block_bytes<kFused>},
                  OperandSpec{kFused.right, Access::kRead, "right", block_bytes<kFused>},
                  OperandSpec{kFused.affine, Access::kRead, "affine", affine_bytes<kFused>}},
                 precondition<kFused>,
                 layer_norm<kFused>});
}

}  // namespace tessera::kernels
