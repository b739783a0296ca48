#pragma once
// The GEMM tests' plumbing: one call's operands in logical row-major order,
// packed into the AMP layouts with kernels/amp_layout.hpp, placed where the
// ABI wants them (A in standard memory, C at the start of the interleaved
// operand window, the expanded family's weights in interleaved memory), run
// through the simulator as emitted code calls a kernel, and C unpacked.

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/gemm.hpp"
#include "tests/kernels/kernel_runner.hpp"

namespace tessera::kernels::testing {

inline constexpr std::uint32_t kGemmLeftAt = 0x60000;             // standard memory
inline constexpr std::uint32_t kGemmWeightsAt = 0x68000;          // standard memory
inline constexpr std::uint32_t kGemmOutAt = 0x80000;              // interleaved window
inline constexpr std::uint32_t kGemmExpandedWeightsAt = 0x90000;  // interleaved memory

struct GemmOperands {
  GemmFamily family = GemmFamily::kF16;
  GemmVariant variant = GemmVariant::kInit;
  std::uint32_t rows = 0;
  std::uint32_t inner = 0;  // K, padded to whole passes
  std::uint32_t columns = 0;
  std::int32_t scale = 0;  // ISCL, f143 only
  // Element bits (f32 bits, f16 bits or F143 codes), row-major.
  std::vector<std::uint32_t> left;      // rows × inner
  std::vector<std::uint32_t> weights;   // inner × columns
  std::vector<std::uint32_t> partials;  // rows × columns, accumulate only

  std::string_view kernel() const;
  Registers registers() const;
  // The allocations, with one of them short: $m2 and $m4 by one element, $m3
  // by one byte of its read tail.
  std::vector<Buffer> buffers(unsigned short_reg = 0) const;
};

// Operands of `family` with every element zero (partials too, for the
// accumulate variant).
GemmOperands zero_gemm(GemmFamily family, GemmVariant variant, std::uint32_t rows,
                       std::uint32_t inner, std::uint32_t columns);

// The CPU reference of a GEMM call, written from kernels/README.md "GEMM" on
// the logical row-major operands (half.hpp and the F143 codec only
// convert): per output element +0 (init) or the partial, the products added
// in K order with one f32 rounding each (f32 products rounded first), the
// hiho families rounding to f16 after every pass; NaN results canonical.
// C's element bits in logical row-major order.
std::vector<std::uint32_t> gemm_reference(const GemmOperands& call);

// The hiho error bound (kernels/README.md "GEMM"): with P = K/d passes of d
// products, u = 2^-11 (f16) and γ_d = d·2^-24/(1 − d·2^-24) (d sequential
// f32 adds), θ = (1+u)(1+γ_d):
//   |C − exact| ≤ (θ^P − 1)·S + P·θ^P·2^-25,  S = |C0| + Σ_k |a_k·b_k|,
// the second term for f16 roundings in the subnormal range (absolute error
// ≤ 2^-25), as long as no partial overflows. It holds for any order of the
// adds inside a pass with the same roundings per pass.
double hiho_bound(std::uint32_t inner, unsigned pass, double sum_of_magnitudes);

// Runs the call; C's element bits in logical row-major order (a failed
// expectation when the run faults).
std::vector<std::uint32_t> run_gemm(const GemmOperands& call, sim::SimOptions options = {});

}  // namespace tessera::kernels::testing
