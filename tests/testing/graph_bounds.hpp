#pragma once
// The error bounds of the plan-dependent operations (matmul, gelu, layer_norm,
// softmax, attention) against exact arithmetic: the one owner of the formulas
// that docs/GRAPH_FORMAT.md ("Numerics") states. Each function bounds, for one
// result element (or one row), |device − exact| for every plan the compiler
// may choose, where "every plan" means the device arithmetic model written
// next to each function (and in the document). The CPU reference
// (graph_reference.hpp) turns these into tolerances against its own,
// rounded, results.
//
// All inputs are the exact values of the operands (their f16/f32/F143 values
// as doubles). A bound is +infinity where the model does not constrain the
// result (an intermediate might overflow the dtype, or a perturbation is too
// large for the first-order reasoning to hold).

#include <cstdint>
#include <span>

#include "schema/model.hpp"

namespace tessera::testing::bounds {

// The rounding of one dtype: unit roundoff u (half an ulp of 1, RNE),
// eta (half the smallest subnormal: the absolute error of one rounding in the
// subnormal range) and the largest finite value.
struct Precision {
  double u;
  double eta;
  double max_finite;
};
// f16 or f32 (std::invalid_argument otherwise).
Precision precision_of(schema::DType dtype);

// The accuracy assumed of the device's elementary functions (exp, tanh,
// rsqrt, reciprocal) in `p`'s dtype: within 2 ulp, a relative error 4u.
double function_error(const Precision& p);

// (1 + u)^n − 1, rounded up: the relative error of a product of n roundings.
double gamma(double u, double n);

// f16 roundings on the path of one product in an f16 GEMM of depth K:
// ⌈K/16⌉ (one per 16-deep AMP pass; K blocks and K-split partial sums whose
// split points are multiples of 16 do not add any).
std::uint64_t f16_gemm_roundings(std::uint64_t k);

// matmul, one result element of depth K with magnitude Σ_k |a_k|·|b_k|
// (exact operand values). result f32 (f32·f32) or f16 (f16·f16 and the F143
// forms, on the operands' f16 expansions).
//   f32: products and partial sums in f32, any summation tree:
//        ((1 + u32)^K − 1)·magnitude + 2K·eta32
//   f16: products exact in f32, each 16-deep pass summed with ≤ 16 f32
//        roundings (15 adds and the incoming partial), the partial rounded to
//        f16 after every pass, R = ⌈K/16⌉:
//        ((1 + u32)^16·(1 + u16)^R − 1)·magnitude + 2R·eta16·(1 + u16)^R
// +inf when magnitude·(1 + γ) + abs exceeds the dtype's largest value (a
// partial sum may overflow) or is not finite.
double matmul_error_bound(schema::DType result, std::uint64_t k, double magnitude);

// gelu (tanh form) of the exact value x, every step in the dtype or wider
// (z = √(2/π)·(x + 0.044715·x³) with ≤ 8 roundings including the dtype's
// constants, tanh within function_error, then 0.5·x·(1 + t) with 3 roundings):
//   0.5|x|·Δt·(1+u)^3 + ((1+u)^3 − 1)·0.5|x|·(|1 + t| + Δt) + 4·eta, where
//   Δz = 8u|z|, s = sech²(max(0, |z| − Δz)) (the largest sech² on [z − Δz, z + Δz]),
//   Δt = s·Δz + e_f·(|t| + s·Δz).
double gelu_error_bound(schema::DType dtype, double x);

// softmax of one row x (exact values, finite), writing one bound per element
// into `out` (out.size() == x.size()). `input_error[j]` (empty: all zero) is
// an absolute error already present in the device's x_j (attention's scores).
// Model: m = the row's max; d_j = x_j − m rounded with relative error ud
// ((1 + u)(1 + u32)^2 − 1: f32 subtract, an f32 scale, a rounding to the
// dtype); e_j = exp(d_j) within function_error plus eta; their sum in f32
// (n − 1 roundings); y_j = e_j / sum with a reciprocal (function_error) and a
// multiply (u), plus eta.
void softmax_error_bounds(schema::DType dtype, std::span<const double> x,
                          std::span<const double> input_error, std::span<double> out);

// layer_norm of one row x [C] with gamma, beta [C] and epsilon, one bound per
// element into `out`. Model: Σx and Σx² accumulated in f32 (any order; the
// single-pass variance E[x²] − mean² is allowed, clamped at 0; a two-pass
// variance is more accurate), epsilon carried as f32 or Q30 fixed point
// (±2^−31), 1/√(var + ε) within function_error and rounded to the dtype, the
// mean rounded to the dtype, then (x − mean)·rstd·gamma + beta with four
// roundings in the dtype. Not bounded (+inf) when Σ|x| or Σx² could
// overflow f32 (f32 rows near the f32 maximum), or when x − mean, its product
// with rstd or that times gamma could overflow the dtype. See graph_bounds.cpp
// for the composition.
void layer_norm_error_bounds(schema::DType dtype, std::span<const double> x,
                             std::span<const double> gamma, std::span<const double> beta,
                             double epsilon, std::span<double> out);

// attention for one query row q [D] against keys k [T, D] and values v [T, D]
// (row-major), one bound per output column into `out` [D]. Model: scores by a
// GEMM of depth D (matmul_error_bound), scaled and soft-maxed as
// softmax_error_bounds with those score errors (online softmax across key
// blocks allowed: its running max, denominator and accumulator are f32, 2T
// more f32 roundings on the output), P·V by a GEMM of depth T, a final
// rounding of the f32 result to the dtype.
void attention_error_bounds(schema::DType dtype, std::span<const double> q,
                            std::span<const double> k, std::span<const double> v,
                            std::uint32_t keys, double scale, std::span<double> out);

}  // namespace tessera::testing::bounds
