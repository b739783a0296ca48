// Element-wise integer kernels. `tessera_add_u32` adds two word vectors
// (wrapping, as the hardware's integer add does): $m2 out, $m3 a, $m4 b,
// $m5 count. The output may alias an input; the model reads each element
// before writing it, like the device loop.
#include "kernels/costs.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kOut = kOutputRegister;
constexpr unsigned kLeft = 3;
constexpr unsigned kRight = 4;
constexpr unsigned kCount = 5;

std::uint64_t count_bytes(const Registers& r) { return std::uint64_t{r[kCount]} * 4; }

KernelSpec add_u32() {
  return KernelSpec{
      std::string(kAddU32),
      KernelKind::kKernel,
      {OperandSpec{kOut, Access::kWrite, "sum", count_bytes},
       OperandSpec{kLeft, Access::kRead, "left", count_bytes},
       OperandSpec{kRight, Access::kRead, "right", count_bytes}},
      [](const Registers& r) {
        return misaligned(r, {kOut, kLeft, kRight}, 4);
      },
      [](KernelCall& call) {
        const std::uint32_t count = call.reg(kCount);
        if (count != 0) {
          const auto a = call.memory.read<std::uint32_t>(kLeft, call.reg(kLeft), count);
          const auto b = call.memory.read<std::uint32_t>(kRight, call.reg(kRight), count);
          const auto out = call.memory.write<std::uint32_t>(kOut, call.reg(kOut), count);
          for (std::size_t i = 0; i < out.size(); ++i) out[i] = a[i] + b[i];
        }
        // Six workers, one element per worker cycle round (6 cycles) each.
        call.cycles = kKernelLaunchCycles + 6 * ((std::uint64_t{count} + 5) / 6);
      }};
}

}  // namespace

void add_elementwise_kernels(KernelRegistry& registry) { registry.add(add_u32()); }

}  // namespace tessera::kernels
