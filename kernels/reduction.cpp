// Sum-reduction of partials gathered on one tile (element arithmetic:
// float_arith.hpp).
//
// tessera_sum_{f32,f16}: out[i] = Σ_{k<K} in_k[i], in_k = in + k·stride.
//   $m2 out, $m3 in, $m4 count (elements), $m5 K (partials), $m6 stride (bytes).
//
// The compiler gathers the K partials from other tiles into one buffer by
// exchange (whole words, hence the word-multiple stride), then calls this.
// Both types accumulate in f32 in partial order, in_0 + in_1 + … + in_{K-1}
// (starting from in_0, not from +0, so -0 sums stay -0), and round once at
// the end: f16 partials are widened exactly, and the one rounding happens
// after the last add, so an f16 sum does not overflow in the middle. K = 1 is
// a bit-exact copy (NaN payloads included); any add that makes a NaN gives
// the canonical quiet NaN.
//
// K ≥ 1 (an empty sum is a fill, not a reduction); partials do not overlap one
// another (stride ≥ count·size when K ≥ 2); the output may alias partial 0
// exactly (element i is written after all K of its reads) and must not
// otherwise overlap the partials. count = 0 is legal and touches nothing.
#include <algorithm>
#include <array>
#include <vector>

#include <fmt/format.h>

#include "kernels/costs.hpp"
#include "kernels/float_arith.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3
constexpr unsigned kCount = 4;              // $m4
constexpr unsigned kPartials = 5;           // $m5
constexpr unsigned kStride = 6;             // $m6

template <typename E>
std::uint64_t output_bytes(const Registers& r) {
  return std::uint64_t{r[kCount]} * E::kBytes;
}

// Partial K−1 starts (K−1)·stride bytes in and spans count elements.
template <typename E>
std::uint64_t partials_bytes(const Registers& r) {
  if (r[kCount] == 0 || r[kPartials] == 0) return 0;
  return std::uint64_t{r[kPartials] - 1} * r[kStride] + output_bytes<E>(r);
}

template <typename E>
KernelSpec sum(std::string_view name) {
  return KernelSpec{
      std::string(name),
      KernelKind::kKernel,
      {OperandSpec{kOut, Access::kWrite, "sum", output_bytes<E>},
       OperandSpec{kIn, Access::kRead, "partials", partials_bytes<E>}},
      [](const Registers& r) -> Violation {
        if (r[kPartials] == 0) {
          return std::string("$m5 (partials) = 0; a sum needs at least one partial");
        }
        if (r[kStride] % 4 != 0) {
          return fmt::format("$m6 (stride) = {} bytes is not a multiple of 4", r[kStride]);
        }
        if (r[kPartials] >= 2 && r[kStride] < output_bytes<E>(r)) {
          return fmt::format(
              "$m6 (stride) = {} bytes is less than a partial's {} bytes "
              "({} {} elements): the partials overlap",
              r[kStride], output_bytes<E>(r), r[kCount], E::kName);
        }
        const OperandExtent out{kOut, "sum", output_bytes<E>(r)};
        const OperandExtent in{kIn, "partials", partials_bytes<E>(r)};
        if (auto v = misaligned(r, {kOut, kIn}, 4)) return v;
        for (const auto& operand : {out, in}) {
          if (auto v = beyond_address_space(r, operand)) return v;
        }
        return overlaps_unless_aliased(r, out, in);
      },
      [](KernelCall& call) {
        const std::uint64_t count = call.reg(kCount);
        const std::uint64_t partials = call.reg(kPartials);
        if (count != 0) {
          using Bits = typename E::Bits;
          // One span per partial: the bytes between partials are not read.
          // (No reserve: K comes from a register; each span is checked as it
          // is granted, so a wild K faults before it costs memory.)
          std::vector<KernelSpan<const Bits>> in;
          for (std::uint64_t k = 0; k < partials; ++k) {
            in.push_back(call.memory.read<Bits>(kIn, call.reg(kIn) + k * call.reg(kStride), count));
          }
          const auto out = call.memory.write<Bits>(kOut, call.reg(kOut), count);
          // Blocks of elements keep the accumulator in cache while every
          // partial is added in order.
          constexpr std::size_t kBlock = 1024;
          std::array<std::uint32_t, kBlock> accumulator;
          for (std::uint64_t first = 0; first < count; first += kBlock) {
            const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, count - first));
            const auto partial0 = in[0].subspan(first, n);
            for (std::size_t i = 0; i < n; ++i) accumulator[i] = E::widen(partial0[i]);
            for (std::size_t k = 1; k < in.size(); ++k) {
              const auto partial = in[k].subspan(first, n);
              for (std::size_t i = 0; i < n; ++i) {
                accumulator[i] = add_f32_bits(accumulator[i], E::widen(partial[i]));
              }
            }
            const auto sums = out.subspan(first, n);
            for (std::size_t i = 0; i < n; ++i) sums[i] = E::narrow(accumulator[i]);
          }
        }
        call.cycles = sum_cycles(count, partials, E::kBytes);
      }};
}

}  // namespace

void add_reduction_kernels(KernelRegistry& registry) {
  registry.add(sum<F32Element>(kSumF32));
  registry.add(sum<F16Element>(kSumF16));
}

}  // namespace tessera::kernels
