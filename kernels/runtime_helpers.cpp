// The runtime helpers emitted code calls: worker barrier, cycle sample, word
// copy and word fill. Each is a real model over checked memory, with its
// footprints and cost; zero-length copies and fills are no-ops (the prior
// art's do-while loops ran ~2^32 times on zero, review-findings.md #3).
#include "kernels/costs.hpp"
#include "kernels/operand_checks.hpp"
#include "kernels/registry.hpp"

namespace tessera::kernels {
namespace {

constexpr unsigned kDestination = kOutputRegister;  // $m2
constexpr unsigned kSource = 3;                     // $m3
constexpr unsigned kCount = 4;                      // $m4

Violation word_aligned(const Registers& r, std::initializer_list<unsigned> regs) {
  return misaligned(r, regs, 4);
}

std::uint64_t count_bytes(const Registers& r) { return std::uint64_t{r[kCount]} * 4; }

KernelSpec worker_barrier() {
  return KernelSpec{
      std::string(kWorkerBarrier), KernelKind::kRuntimeHelper, {},
      [](const Registers&) { return std::optional<std::string>(); },
      [](KernelCall& call) { call.cycles = kWorkerBarrierCycles; }};
}

// Worker 0 stores the tile's cycle counter ($COUNT_L, low 32 bits) inside a
// runall/sync handoff: the sample is the counter at its first issue after the
// runall, and the supervisor goes on after the whole handoff (costs.hpp).
KernelSpec sample_cycles() {
  return KernelSpec{
      std::string(kSampleCycles),
      KernelKind::kRuntimeHelper,
      {OperandSpec{kDestination, Access::kWrite, "sample", [](const Registers&) { return 4u; }}},
      [](const Registers& r) { return word_aligned(r, {kDestination}); },
      [](KernelCall& call) {
        const std::uint64_t at = call.start_cycle + kCycleSampleReadCycles;
        call.memory.write_u32(kDestination, call.reg(kDestination), static_cast<std::uint32_t>(at));
        call.cycles = kWorkerBarrierCycles;
      }};
}

KernelSpec copy_words() {
  return KernelSpec{
      std::string(kCopyWords),
      KernelKind::kRuntimeHelper,
      {OperandSpec{kDestination, Access::kWrite, "destination", count_bytes},
       OperandSpec{kSource, Access::kRead, "source", count_bytes}},
      [](const Registers& r) { return word_aligned(r, {kDestination, kSource}); },
      [](KernelCall& call) {
        const std::uint32_t words = call.reg(kCount);
        // Six workers take balanced contiguous shares; the copy is in word
        // order either way, so the model copies word by word.
        for (std::uint32_t i = 0; i < words; ++i) {
          const std::uint32_t value = call.memory.read_u32(kSource, call.reg(kSource) + 4 * i);
          call.memory.write_u32(kDestination, call.reg(kDestination) + 4 * i, value);
        }
        call.cycles = words == 0 ? kKernelLaunchCycles : local_copy_cycles(std::uint64_t{words} * 4);
      }};
}

KernelSpec fill_words() {
  return KernelSpec{
      std::string(kFillWords),
      KernelKind::kRuntimeHelper,
      {OperandSpec{kDestination, Access::kWrite, "destination", count_bytes}},
      [](const Registers& r) { return word_aligned(r, {kDestination}); },
      [](KernelCall& call) {
        const std::uint32_t words = call.reg(kCount);
        for (std::uint32_t i = 0; i < words; ++i) {
          call.memory.write_u32(kDestination, call.reg(kDestination) + 4 * i, call.reg(kSource));
        }
        call.cycles = words == 0 ? kKernelLaunchCycles : local_copy_cycles(std::uint64_t{words} * 4);
      }};
}

}  // namespace

void add_runtime_helpers(KernelRegistry& registry) {
  registry.add(worker_barrier());
  registry.add(sample_cycles());
  registry.add(copy_words());
  registry.add(fill_words());
}

}  // namespace tessera::kernels
