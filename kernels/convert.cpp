// f32 <-> f16 conversion.
//
// tessera_convert_f32_to_f16: out[i] = in[i] rounded to f16 under the call's
//   rounding mode (kernels/rounding.hpp): to nearest even by default, as
//   half.hpp converts (overflow to ±Inf, f16 subnormals, NaN payloads kept),
//   or stochastically — the device's f32→f16 conversions run with ESR set
//   (kernels-siglip-f143.md §2, attention_f32_to_f16). Elements are split
//   balanced-contiguous over the six workers; worker w rounds its elements in
//   order, one draw each from its stream.
// tessera_convert_f16_to_f32: out[i] = in[i], exactly.
//   $m2 out, $m3 in, $m4 count (elements).
//
// Pointers are word-aligned; the output shares no byte with the input (the
// element sizes differ, so even an exact alias would overwrite elements that
// other workers have not read yet). Zero elements touch nothing.
#include <bit>

#include "kernels/f16_vector.hpp"
#include "kernels/kernel_shapes.hpp"
#include "kernels/pointwise_costs.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/rounding.hpp"
#include "kernels/shape_checks.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;  // $m2
constexpr unsigned kIn = 3;                 // $m3
constexpr unsigned kCount = 4;              // $m4

template <unsigned S>
std::uint64_t count_bytes(const Registers& r) {
  return std::uint64_t{r[kCount]} * S;
}

template <unsigned OutBytes, unsigned InBytes>
Violation convert_precondition(const Registers& r) {
  const OperandExtent out{kOut, "converted", count_bytes<OutBytes>(r)};
  const OperandExtent in{kIn, "source", count_bytes<InBytes>(r)};
  if (auto v = misaligned(r, {kOut, kIn}, 4)) return v;
  for (const auto& operand : {out, in}) {
    if (auto v = beyond_address_space(r, operand)) return v;
  }
  return overlaps_because(r, out, in,
                          "the element sizes differ, so even an exact alias overwrites elements "
                          "another worker has not read");
}

void f32_to_f16(KernelCall& call) {
  const std::uint64_t count = call.reg(kCount);
  if (count != 0) {
    const auto in = call.memory.read<float>(kIn, call.reg(kIn), count);
    const auto out = call.memory.write<std::uint16_t>(kOut, call.reg(kOut), count);
    if (call.rounding == Rounding::kNearestEven) {
      narrow_f16(in.data(), out.data(), out.size());
    } else {
      for (unsigned w = 0; w < kWorkerCount; ++w) {
        RandomStream& stream = *worker_stream(call, w);
        const std::uint64_t begin = worker_begin(count, w);
        const auto mine_in = in.subspan(begin, worker_share(count, w));
        const auto mine_out = out.subspan(begin, mine_in.size());
        for (std::size_t i = 0; i < mine_in.size(); ++i) {
          mine_out[i] =
              round_f16_stochastic(std::bit_cast<std::uint32_t>(mine_in[i]), stream.next());
        }
      }
    }
  }
  call.cycles = convert_cycles(count);
}

void f16_to_f32(KernelCall& call) {
  const std::uint64_t count = call.reg(kCount);
  if (count != 0) {
    const auto in = call.memory.read<std::uint16_t>(kIn, call.reg(kIn), count);
    const auto out = call.memory.write<float>(kOut, call.reg(kOut), count);
    widen_f16(in.data(), out.data(), out.size());
  }
  call.cycles = convert_cycles(count);
}

}  // namespace

void add_convert_kernels(KernelRegistry& registry) {
  registry.add(KernelSpec{std::string(kConvertF32ToF16),
                          KernelKind::kKernel,
                          {OperandSpec{kOut, Access::kWrite, "converted", count_bytes<2>},
                           OperandSpec{kIn, Access::kRead, "source", count_bytes<4>}},
                          convert_precondition<2, 4>,
                          f32_to_f16});
  registry.add(KernelSpec{std::string(kConvertF16ToF32),
                          KernelKind::kKernel,
                          {OperandSpec{kOut, Access::kWrite, "converted", count_bytes<4>},
                           OperandSpec{kIn, Access::kRead, "source", count_bytes<2>}},
                          convert_precondition<4, 2>,
                          f16_to_f32});
}

}  // namespace tessera::kernels
