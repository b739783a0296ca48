// Element-wise products (element arithmetic: float_arith.hpp).
//
// tessera_mul_{f32,f16}: out[i] = a[i] · b[i] for i < count.
//   $m2 out, $m3 a, $m4 b, $m5 count (elements).
//
// As the adds (float_add.cpp): word-aligned pointers; the output may alias an
// input exactly but not overlap it partially; zero elements touch nothing.
// f16 products are exact in f32 and rounded once to nearest even (the
// correctly rounded binary16 product); any NaN product is the canonical quiet
// NaN. Stochastic rounding is off for these kernels, as for the adds.
#include <array>

#include "kernels/f16_vector.hpp"
#include "kernels/float_arith.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/pointwise_kernels.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kLeft = 3;               // $m3 a
constexpr unsigned kRight = 4;              // $m4 b
constexpr unsigned kCount = 5;              // $m5

template <unsigned S>
std::uint64_t count_bytes(const Registers& r) {
  return std::uint64_t{r[kCount]} * S;
}

void multiply(KernelSpan<const std::uint32_t> a, KernelSpan<const std::uint32_t> b,
              KernelSpan<std::uint32_t> out) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = mul_f32_bits(a[i], b[i]);
}

// Widen a block, multiply in f32 (exact), round once; blocks keep an exactly
// aliased output behind its reads.
void multiply(KernelSpan<const std::uint16_t> a, KernelSpan<const std::uint16_t> b,
              KernelSpan<std::uint16_t> out) {
  constexpr std::size_t kBlock = 512;
  std::array<float, kBlock> x{}, y{};  // whole blocks are computed; the tail is ignored
  for (std::size_t first = 0; first < out.size(); first += kBlock) {
    const std::size_t n = std::min(kBlock, out.size() - first);
    widen_f16(a.subspan(first, n).data(), x.data(), n);
    widen_f16(b.subspan(first, n).data(), y.data(), n);
    for (std::size_t i = 0; i < kBlock; ++i) x[i] *= y[i];
    canonicalize_nans(x.data(), n);
    narrow_f16(x.data(), out.subspan(first, n).data(), n);
  }
}

template <typename Bits>
KernelSpec mul(std::string_view name) {
  constexpr unsigned s = sizeof(Bits);
  return KernelSpec{std::string(name),
                    KernelKind::kKernel,
                    {OperandSpec{kOut, Access::kWrite, "product", count_bytes<s>},
                     OperandSpec{kLeft, Access::kRead, "left", count_bytes<s>},
                     OperandSpec{kRight, Access::kRead, "right", count_bytes<s>}},
                    [](const Registers& r) -> Violation {
                      return elementwise_binary_violation(r, {kOut, "product", count_bytes<s>(r)},
                                                          {kLeft, "left", count_bytes<s>(r)},
                                                          {kRight, "right", count_bytes<s>(r)});
                    },
                    [](KernelCall& call) {
                      const std::uint64_t count = call.reg(kCount);
                      if (count != 0) {
                        const auto a = call.memory.read<Bits>(kLeft, call.reg(kLeft), count);
                        const auto b = call.memory.read<Bits>(kRight, call.reg(kRight), count);
                        multiply(a, b, call.memory.write<Bits>(kOut, call.reg(kOut), count));
                      }
                      call.cycles = mul_cycles(count, s);
                    }};
}

}  // namespace

void add_mul_kernels(KernelRegistry& registry) {
  registry.add(mul<std::uint32_t>(kMulF32));
  registry.add(mul<std::uint16_t>(kMulF16));
}

}  // namespace tessera::kernels
