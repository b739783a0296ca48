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
      [](const Registers& r) { return misaligned(r, {kOut, kLeft, kRight}, 4); },
      [](KernelCall& call) {
        const std::uint32_t count = call.reg(kCount);
        for (std::uint32_t i = 0; i < count; ++i) {
          const std::uint32_t a = call.memory.read_u32(kLeft, call.reg(kLeft) + 4 * i);
          const std::uint32_t b = call.memory.read_u32(kRight, call.reg(kRight) + 4 * i);
          call.memory.write_u32(kOut, call.reg(kOut) + 4 * i, a + b);
        }
        // Six workers, one element per worker cycle round (6 cycles) each.
        call.cycles = kKernelLaunchCycles + 6 * ((std::uint64_t{count} + 5) / 6);
      }};
}

}  // namespace

void add_elementwise_kernels(KernelRegistry& registry) { registry.add(add_u32()); }

}  // namespace tessera::kernels
