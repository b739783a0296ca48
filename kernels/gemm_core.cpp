// The GEMM arithmetic (kernels/gemm_core.hpp): a scalar path written for
// clarity and a vector path written for speed, with the same bits. The
// vector functions carry their own target attribute and run only after
// vector_path_available() says so; nothing else in the build assumes more
// than the baseline x86-64 (or any other) instruction set.
#include "kernels/gemm_core.hpp"

#include <bit>
#include <stdexcept>

#include "kernels/amp_layout.hpp"
#include "kernels/costs.hpp"
#include "kernels/half.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#define TESSERA_GEMM_VECTOR 1
#else
#define TESSERA_GEMM_VECTOR 0
#endif

namespace tessera::kernels::gemm {
namespace {

constexpr unsigned kColumns = amp::kPanelColumns;
constexpr std::uint32_t kF32QuietNanBits = 0x7FC00000;

// A C16 panel row is 16 contiguous physical columns, column c at offset c
// (the core's `out` contract, from the one owner of the layout).
static_assert(amp::output_offset(2, amp::logical_column(5), 7) == 2 * kColumns + 5);
static_assert(amp::output_offset(3, 16 + amp::logical_column(9), 7) ==
              7 * kColumns + 3 * kColumns + 9);

void check_shape(const ColumnGroup& g, std::size_t out_size) {
  if (g.pass == 0 || g.inner % g.pass != 0 || g.left.size() != std::size_t{g.rows} * g.inner ||
      g.weights.size() != std::size_t{g.inner} * kColumns ||
      out_size != std::size_t{g.rows} * kColumns) {
    throw std::logic_error("GEMM column group: operand sizes do not match its shape");
  }
}

// Where row `row`'s slice of pass `pass_index` starts in A (its d values are
// contiguous there: the A_d layout stores each d-wide panel row-major).
std::size_t left_row(const ColumnGroup& g, std::uint32_t pass_index, std::uint32_t row) {
  return static_cast<std::size_t>(
      amp::left_offset(row, std::uint64_t{pass_index} * g.pass, g.rows, g.pass));
}

float canonical_f32(float value) {
  return value != value ? std::bit_cast<float>(kF32QuietNanBits) : value;
}

// ---- Scalar path

// Rows go to the six workers balanced contiguous, as on the device, so each
// rounding knows the worker whose generator a stochastic rounding would draw.
void hiho_scalar(const ColumnGroup& g, KernelSpan<std::uint16_t> out,
                 const GemmRounding& rounding) {
  const std::uint32_t passes = g.inner / g.pass;
  std::uint32_t row = 0;
  for (unsigned worker = 0; worker < kWorkerCount; ++worker) {
    const auto end = static_cast<std::uint32_t>(row + worker_share(g.rows, worker));
    for (; row < end; ++row) {
      for (unsigned c = 0; c < kColumns; ++c) {
        float acc = g.init ? 0.0F : f16_to_f32(out[row * kColumns + c]);
        for (std::uint32_t p = 0; p < passes; ++p) {
          const std::size_t a = left_row(g, p, row);
          const std::size_t b = std::size_t{p} * g.pass * kColumns + c;
          for (std::uint32_t k = 0; k < g.pass; ++k) {
            acc = acc + g.left[a + k] * g.weights[b + std::size_t{k} * kColumns];
          }
          const std::uint16_t partial = rounding.to_f16(acc, worker);
          if (p + 1 == passes) {
            out[row * kColumns + c] = partial;
          } else {
            acc = f16_to_f32(partial);
          }
        }
      }
    }
  }
}

void f32_scalar(const ColumnGroup& g, KernelSpan<float> out) {
  const std::uint32_t passes = g.inner / g.pass;
  for (std::uint32_t row = 0; row < g.rows; ++row) {
    for (unsigned c = 0; c < kColumns; ++c) {
      float acc = g.init ? 0.0F : out[row * kColumns + c];
      for (std::uint32_t p = 0; p < passes; ++p) {
        const std::size_t a = left_row(g, p, row);
        const std::size_t b = std::size_t{p} * g.pass * kColumns + c;
        for (std::uint32_t k = 0; k < g.pass; ++k) {
          const float product = g.left[a + k] * g.weights[b + std::size_t{k} * kColumns];
          acc = acc + product;
        }
      }
      out[row * kColumns + c] = canonical_f32(acc);
    }
  }
}

// ---- Vector path: 16 columns are two 8-lane registers; four rows at a time
// keep eight independent accumulators in flight.

#if TESSERA_GEMM_VECTOR
#define TESSERA_VECTOR __attribute__((target("avx2,fma,f16c")))

constexpr int kRoundNearestEven = _MM_FROUND_TO_NEAREST_INT;

TESSERA_VECTOR inline __m256 load_f16(const std::uint16_t* at) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)));  // NOLINT
}

TESSERA_VECTOR inline __m256 round_trip_f16(__m256 value) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(value, kRoundNearestEven));
}

// GemmRounding::to_f16 of eight partials in round-to-nearest-even mode.
TESSERA_VECTOR inline void store_f16(std::uint16_t* at, __m256 value) {
  const __m128i h = _mm256_cvtps_ph(value, kRoundNearestEven);
  const __m128i magnitude = _mm_and_si128(h, _mm_set1_epi16(0x7FFF));
  const __m128i nan = _mm_cmpgt_epi16(magnitude, _mm_set1_epi16(static_cast<short>(kF16Infinity)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(at),  // NOLINT
                   _mm_blendv_epi8(h, _mm_set1_epi16(static_cast<short>(kF16QuietNan)), nan));
}

TESSERA_VECTOR inline void store_f32(float* at, __m256 value) {
  const __m256 nan = _mm256_cmp_ps(value, value, _CMP_UNORD_Q);
  _mm256_storeu_ps(
      at,
      _mm256_blendv_ps(
          value, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kF32QuietNanBits))), nan));
}

template <unsigned R>
TESSERA_VECTOR void hiho_rows(const ColumnGroup& g, std::uint32_t row, std::uint16_t* out) {
  const std::uint32_t passes = g.inner / g.pass;
  __m256 lo[R];
  __m256 hi[R];
#pragma GCC unroll 4
  for (unsigned i = 0; i < R; ++i) {
    std::uint16_t* at = out + std::size_t{row + i} * kColumns;
    lo[i] = g.init ? _mm256_setzero_ps() : load_f16(at);
    hi[i] = g.init ? _mm256_setzero_ps() : load_f16(at + 8);
  }
  for (std::uint32_t p = 0; p < passes; ++p) {
    const float* a[R];
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; ++i) a[i] = g.left.data() + left_row(g, p, row + i);
    const float* b = g.weights.data() + std::size_t{p} * g.pass * kColumns;
    for (std::uint32_t k = 0; k < g.pass; ++k) {
      const __m256 b_lo = _mm256_loadu_ps(b + std::size_t{k} * kColumns);
      const __m256 b_hi = _mm256_loadu_ps(b + std::size_t{k} * kColumns + 8);
#pragma GCC unroll 4
      for (unsigned i = 0; i < R; ++i) {
        const __m256 x = _mm256_broadcast_ss(a[i] + k);
        lo[i] = _mm256_fmadd_ps(x, b_lo, lo[i]);  // exact product: same as mul + add
        hi[i] = _mm256_fmadd_ps(x, b_hi, hi[i]);
      }
    }
    if (p + 1 < passes) {
#pragma GCC unroll 4
      for (unsigned i = 0; i < R; ++i) {
        lo[i] = round_trip_f16(lo[i]);
        hi[i] = round_trip_f16(hi[i]);
      }
    }
  }
#pragma GCC unroll 4
  for (unsigned i = 0; i < R; ++i) {
    std::uint16_t* at = out + std::size_t{row + i} * kColumns;
    store_f16(at, lo[i]);
    store_f16(at + 8, hi[i]);
  }
}

TESSERA_VECTOR void hiho_vector(const ColumnGroup& g, std::uint16_t* out) {
  std::uint32_t row = 0;
  for (; row + 4 <= g.rows; row += 4) hiho_rows<4>(g, row, out);
  for (; row < g.rows; ++row) hiho_rows<1>(g, row, out);
}

template <unsigned R>
TESSERA_VECTOR void f32_rows(const ColumnGroup& g, std::uint32_t row, float* out) {
  const std::uint32_t passes = g.inner / g.pass;
  __m256 lo[R];
  __m256 hi[R];
#pragma GCC unroll 4
  for (unsigned i = 0; i < R; ++i) {
    float* at = out + std::size_t{row + i} * kColumns;
    lo[i] = g.init ? _mm256_setzero_ps() : _mm256_loadu_ps(at);
    hi[i] = g.init ? _mm256_setzero_ps() : _mm256_loadu_ps(at + 8);
  }
  for (std::uint32_t p = 0; p < passes; ++p) {
    const float* a[R];
#pragma GCC unroll 4
    for (unsigned i = 0; i < R; ++i) a[i] = g.left.data() + left_row(g, p, row + i);
    const float* b = g.weights.data() + std::size_t{p} * g.pass * kColumns;
    for (std::uint32_t k = 0; k < g.pass; ++k) {
      const __m256 b_lo = _mm256_loadu_ps(b + std::size_t{k} * kColumns);
      const __m256 b_hi = _mm256_loadu_ps(b + std::size_t{k} * kColumns + 8);
#pragma GCC unroll 4
      for (unsigned i = 0; i < R; ++i) {
        const __m256 x = _mm256_broadcast_ss(a[i] + k);
        // Rounded product, then rounded sum: never fused (f32 products are
        // not exact).
        lo[i] = _mm256_add_ps(lo[i], _mm256_mul_ps(x, b_lo));
        hi[i] = _mm256_add_ps(hi[i], _mm256_mul_ps(x, b_hi));
      }
    }
  }
#pragma GCC unroll 4
  for (unsigned i = 0; i < R; ++i) {
    float* at = out + std::size_t{row + i} * kColumns;
    store_f32(at, lo[i]);
    store_f32(at + 8, hi[i]);
  }
}

TESSERA_VECTOR void f32_vector(const ColumnGroup& g, float* out) {
  std::uint32_t row = 0;
  for (; row + 4 <= g.rows; row += 4) f32_rows<4>(g, row, out);
  for (; row < g.rows; ++row) f32_rows<1>(g, row, out);
}

TESSERA_VECTOR void widen_vector(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_f16(in + i));
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}
#endif

}  // namespace

bool vector_path_available() noexcept {
#if TESSERA_GEMM_VECTOR
  static const bool available = __builtin_cpu_supports("avx2") != 0 &&
                                __builtin_cpu_supports("fma") != 0 &&
                                __builtin_cpu_supports("f16c") != 0;
  return available;
#else
  return false;
#endif
}

void hiho_column_group(const ColumnGroup& group, KernelSpan<std::uint16_t> out,
                       const GemmRounding& rounding, Path path) {
  check_shape(group, out.size());
#if TESSERA_GEMM_VECTOR
  if (path == Path::kVector && rounding.nearest_even() && vector_path_available()) {
    hiho_vector(group, out.data());
    return;
  }
#endif
  (void)path;
  hiho_scalar(group, out, rounding);
}

void f32_column_group(const ColumnGroup& group, KernelSpan<float> out, Path path) {
  check_shape(group, out.size());
#if TESSERA_GEMM_VECTOR
  if (path == Path::kVector && vector_path_available()) {
    f32_vector(group, out.data());
    return;
  }
#endif
  (void)path;
  f32_scalar(group, out);
}

void widen_f16(std::span<const std::uint16_t> in, std::span<float> out, Path path) {
  if (in.size() != out.size()) throw std::logic_error("widen_f16: sizes differ");
#if TESSERA_GEMM_VECTOR
  if (path == Path::kVector && vector_path_available()) {
    widen_vector(in.data(), out.data(), in.size());
    return;
  }
#endif
  (void)path;
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = f16_to_f32(in[i]);
}

}  // namespace tessera::kernels::gemm
